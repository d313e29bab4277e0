"""Suggest: a complete, editable pipeline proposed from the column profile.

One rule per role, each decided from what the sample shows (:class:`.ColumnProfile`):

* **categorical** -> ``Categorify``, every value kept while all tables fit
  ``memory_budget`` (16 GiB of fp32 weights); past it a ``freq_threshold`` chosen by its
  effect (``_vocab_budget``) from the counts of every row (``_vocab_measure``), at most
  ``max_loss`` (1%) of a column's non-null lookups lost, then smaller embedding dimensions for
  the largest tables (:mod:`._vocab_choose`); never on a column whose whole table is small
  (under 1 MiB);
* **continuous** -> ``FillMissing`` -> ``Clip(min_value=0)`` when the column is a
  non-negative count (no negative value, or a few negative sentinel codes such as -1: at
  most :data:`MAX_SENTINELS` distinct negatives in under half of the rows) -> ``LogOp`` when
  such a column is skewed (skewness above :data:`SKEWED`) -> ``Normalize``;
* **label** -> ``AddTags(tags=["target"])``;
* **list** -> ``Categorify`` -> ``ValueCount``.

Columns that get the same steps share one branch.

>>> from interactive_recsys.ui.builder._column_profile import ColumnProfile
>>> def col(name, role, **kw):
...     base = dict(dtype="int64", null_fraction=0.0, distinct=10, distinct_in_sample=10,
...                 sample_rows=100, exact=True, total_rows=100)
...     return ColumnProfile(name=name, role=role, **{**base, **kw})
>>> profile = [col("y", "label"), col("n", "continuous", minimum=0.0, negative_fraction=0.0,
...            negative_distinct=0, skew=4.0), col("c", "categorical", dtype="string")]
>>> for b in suggest_branches(profile):
...     print(b.columns, [s.op for s in b.steps])
['c'] ['Categorify']
['n'] ['FillMissing', 'Clip', 'LogOp', 'Normalize']
['y'] ['AddTags']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from interactive_recsys.ui.builder._branches import Branch, Step
from interactive_recsys.ui.builder._column_profile import ColumnProfile
from interactive_recsys.ui.builder.suggest._vocab_budget import (
    MAX_LOSS,
    MEMORY_BUDGET,
    VocabChoice,
    column_options,
)
from interactive_recsys.ui.builder.suggest._vocab_choose import Shortfall, choose, shortfall
from interactive_recsys.ui.builder.suggest._vocab_measure import MeasuredColumn

#: Skewness above which a non-negative column is log-transformed.
SKEWED = 1.0
#: At most this many distinct negative values count as sentinel codes (like -1 for "unknown").
MAX_SENTINELS = 3


class VocabPlan(NamedTuple):
    """The vocabulary and dimension of every categorical column (:func:`vocab_plan`)."""

    choices: list[VocabChoice]
    #: all the tables fit the memory budget
    fits: bool
    #: when they do not: by how much, and what loss would fit (:class:`.Shortfall`)
    shortfall: Shortfall | None = None

    @property
    def dims(self) -> dict[str, int]:
        """``{column: dim}`` of the tables whose dimension Suggest lowered below NVTabular's
        rule, the per-table ``dims`` that :class:`~interactive_recsys.stats.EmbeddingReport`
        and :func:`interactive_recsys.torchrec.embedding_configs` take."""
        return suggested_dims(self.choices)


def suggested_dims(choices: Sequence[VocabChoice]) -> dict[str, int]:
    """``{column: dim}`` of the ``choices`` whose dimension is lower than the rule's."""
    return {c.column: c.option.dim for c in choices if c.option.dim != c.option.rule_dim}


def vocab_plan(profile: Sequence[ColumnProfile], max_loss: float = MAX_LOSS,
               memory_budget: int | str = MEMORY_BUDGET,
               measured: Mapping[str, MeasuredColumn] | None = None) -> VocabPlan:
    """The vocabulary choice of every categorical column, whether the tables fit, and when
    they do not the :class:`.Shortfall`.

    ``measured``: exact counts per column (:func:`.measure_columns`); a column without them
    is estimated from the profile's sample.

    >>> from interactive_recsys.ui.builder._column_profile import ColumnProfile
    >>> p = ColumnProfile("c", "string", "categorical", 0.0, 603, 603, 1000, True, 1000,
    ...                   histogram=((1, 600), (100, 3)))   # 60% of the rows are singletons
    >>> [c.option.freq_threshold for c in vocab_plan([p])[0]]   # keep them all
    [0]
    """
    measured = measured or {}
    columns, counted = {}, {}
    for p in profile:
        if p.role != "categorical":
            continue
        m = measured.get(p.name)
        if m is not None:
            columns[p.name] = (column_options(dict(m.histogram), m.rows, m.rows, m.distinct),
                               m.distinct)
            counted[p.name] = m.rows
        else:
            columns[p.name] = (column_options(dict(p.histogram), p.sample_rows, p.total_rows,
                                              p.distinct), p.distinct)
    choices, fits = choose(columns, max_loss, memory_budget, counted)
    return VocabPlan(choices, fits,
                     None if fits else shortfall(columns, max_loss, memory_budget))


def is_count(p: ColumnProfile) -> bool:
    """Whether a numeric column is a non-negative count (negative sentinels allowed)."""
    if p.minimum is None:
        return False
    if p.minimum >= 0:
        return True
    return (p.negative_distinct or 0) <= MAX_SENTINELS and (p.negative_fraction or 0) < 0.5


def column_steps(p: ColumnProfile, freq_threshold: int = 0) -> list[Step]:
    """The suggested steps for one column (see the module docstring); ``freq_threshold``
    for a categorical one."""
    if p.role == "label":
        return [Step("AddTags", {"tags": ["target"]})]
    if p.role == "list":
        return [Step("Categorify"), Step("ValueCount")]
    if p.role == "categorical":
        return [Step("Categorify", {"freq_threshold": freq_threshold} if freq_threshold else {})]
    steps = [Step("FillMissing")]
    if is_count(p):
        steps.append(Step("Clip", {"min_value": 0}))
        if p.skew is not None and p.skew > SKEWED:
            steps.append(Step("LogOp"))
    return [*steps, Step("Normalize")]


def profile_defaults(op: str, columns: Sequence[Any],
                     profile: Sequence[ColumnProfile]) -> dict[str, Any]:
    """Parameters a click on ``op`` takes from the profile of the ticked ``columns``:
    ``Clip(min_value=0)`` for counts (never negative, or a few sentinel codes), and
    ``AddTags(tags=["target"])`` for label columns -- else none (the operator's defaults).

    >>> from interactive_recsys.ui.builder._column_profile import ColumnProfile
    >>> n = ColumnProfile("n", "int64", "continuous", 0.0, 5, 5, 10, True, 10, minimum=0.0)
    >>> y = ColumnProfile("y", "int64", "label", 0.0, 2, 2, 10, True, 10, minimum=0.0)
    >>> profile_defaults("Clip", ["n"], [n, y]), profile_defaults("AddTags", ["y"], [n, y])
    ({'min_value': 0}, {'tags': ['target']})
    >>> profile_defaults("AddTags", ["n"], [n, y])
    {}
    """
    by_name = {p.name: p for p in profile}
    chosen = [by_name.get(c) for c in columns if isinstance(c, str)]
    if not chosen or any(p is None for p in chosen):
        return {}
    if op == "Clip" and all(is_count(p) for p in chosen):
        return {"min_value": 0}
    if op == "AddTags" and all(p.role == "label" for p in chosen):
        return {"tags": ["target"]}
    return {}


def _key(steps: Sequence[Step]) -> tuple[Any, ...]:
    return tuple((s.op, repr(sorted(s.params.items()))) for s in steps)


def suggest_branches(profile: Sequence[ColumnProfile],
                     choices: Sequence[VocabChoice] | None = None) -> list[Branch]:
    """Branches for every profiled column: categorical first, then continuous, list, label.

    ``choices``: the vocabulary plan (default :func:`vocab_plan` with its defaults)."""
    if choices is None:
        choices = vocab_plan(profile)[0]
    thresholds = {c.column: c.option.freq_threshold for c in choices}
    order = {"categorical": 0, "continuous": 1, "list": 2, "label": 3}
    groups: dict[tuple[Any, ...], Branch] = {}
    for p in sorted(profile, key=lambda p: order.get(p.role, 9)):
        steps = column_steps(p, thresholds.get(p.name, 0))
        branch = groups.setdefault((p.role, _key(steps)), Branch(steps=steps))
        branch.columns.append(p.name)
    return list(groups.values())


def explain(branches: Sequence[Branch]) -> str:
    """One line per branch kind: why its steps were chosen (shown next to Suggest)."""
    parts = []
    for b in branches:
        chain = " -> ".join(s.op + (f"({', '.join(f'{k}={v!r}' for k, v in s.params.items())})"
                                    if s.params else "") for s in b.steps)
        parts.append(f"{len(b.columns)} column(s) -> {chain}")
    return "; ".join(parts)
