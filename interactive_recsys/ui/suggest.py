"""Suggest: a complete, editable pipeline proposed from the column profile.

One rule per role, each decided from what the sample shows (:class:`.ColumnProfile`):

* **categorical** -> ``Categorify``; with a long tail (more than half of the distinct values
  of the sample seen only once) ``freq_threshold`` is the full-data count a value seen once
  in the sample stands for (``total_rows / sample_rows``, at least 2), so values rarer than
  that become out-of-vocabulary;
* **continuous** -> ``FillMissing`` -> ``Clip(min_value=0)`` when the column is a
  non-negative count (no negative value, or a few negative sentinel codes such as -1: at
  most :data:`MAX_SENTINELS` distinct negatives in under half of the rows) -> ``LogOp`` when
  such a column is skewed (skewness above :data:`SKEWED`) -> ``Normalize``;
* **label** -> ``AddTags(tags=["target"])``;
* **list** -> ``Categorify`` -> ``ValueCount``.

Columns that get the same steps share one branch.

>>> from interactive_recsys.ui.column_profile import ColumnProfile
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

from collections.abc import Sequence
from typing import Any

from .branches import Branch, Step
from .column_profile import ColumnProfile

#: Skewness above which a non-negative column is log-transformed.
SKEWED = 1.0
#: At most this many distinct negative values count as sentinel codes (like -1 for "unknown").
MAX_SENTINELS = 3


def tail_threshold(p: ColumnProfile) -> int:
    """``freq_threshold`` for a categorical column: 0 without a long tail.

    >>> from interactive_recsys.ui.column_profile import ColumnProfile
    >>> p = ColumnProfile("c", "string", "categorical", 0.0, 900, 600, 1000, False, 10_000,
    ...                   singletons=400)
    >>> tail_threshold(p)   # 400 of 600 values seen once; one sampled row ~ 10 rows
    10
    """
    if not p.distinct_in_sample or p.singletons * 2 <= p.distinct_in_sample:
        return 0
    scale = (p.total_rows / p.sample_rows) if p.total_rows and p.sample_rows else 1.0
    return max(2, round(scale))


def is_count(p: ColumnProfile) -> bool:
    """Whether a numeric column is a non-negative count (negative sentinels allowed)."""
    if p.minimum is None:
        return False
    if p.minimum >= 0:
        return True
    return (p.negative_distinct or 0) <= MAX_SENTINELS and (p.negative_fraction or 0) < 0.5


def column_steps(p: ColumnProfile) -> list[Step]:
    """The suggested steps for one column (see the module docstring)."""
    if p.role == "label":
        return [Step("AddTags", {"tags": ["target"]})]
    if p.role == "list":
        return [Step("Categorify"), Step("ValueCount")]
    if p.role == "categorical":
        threshold = tail_threshold(p)
        return [Step("Categorify", {"freq_threshold": threshold} if threshold else {})]
    steps = [Step("FillMissing")]
    if is_count(p):
        steps.append(Step("Clip", {"min_value": 0}))
        if p.skew is not None and p.skew > SKEWED:
            steps.append(Step("LogOp"))
    return [*steps, Step("Normalize")]


def _key(steps: Sequence[Step]) -> tuple[Any, ...]:
    return tuple((s.op, repr(sorted(s.params.items()))) for s in steps)


def suggest_branches(profile: Sequence[ColumnProfile]) -> list[Branch]:
    """Branches for every profiled column: categorical first, then continuous, list, label."""
    order = {"categorical": 0, "continuous": 1, "list": 2, "label": 3}
    groups: dict[tuple[Any, ...], Branch] = {}
    for p in sorted(profile, key=lambda p: order.get(p.role, 9)):
        steps = column_steps(p)
        branch = groups.setdefault((p.role, _key(steps)), Branch(steps=steps))
        branch.columns.append(p.name)
    return list(groups.values())


def explain(profile: Sequence[ColumnProfile]) -> str:
    """One line per branch kind: why its steps were chosen (shown next to Suggest)."""
    branches = suggest_branches(profile)
    parts = []
    for b in branches:
        chain = " -> ".join(s.op + (f"({', '.join(f'{k}={v!r}' for k, v in s.params.items())})"
                                    if s.params else "") for s in b.steps)
        parts.append(f"{len(b.columns)} column(s) -> {chain}")
    return "; ".join(parts)
