"""After a Run: the lookups each ``Categorify`` really lost, against what Suggest promised.

A fitted ``Categorify`` records per vocabulary the rows looked up, the nulls and the
out-of-vocabulary lookups; :func:`check_oov` turns them into the share of non-null lookups
lost and flags every column over the ``max_loss`` budget. Each warning carries the fix: the
``freq_threshold`` of the smallest table within the budget when the column's counts were
measured, else removing it; a loss Suggest chose on purpose (the tables did not fit the memory
budget otherwise) says so, and that a larger memory budget keeps more.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> frame = pd.DataFrame({"c": ["a"] * 8 + ["b", "c"]})
>>> wf = irs.Workflow(["c"] >> ops.Categorify(freq_threshold=3))
>>> _ = wf.fit(frame)
>>> for w in check_oov(wf, max_loss=0.01):  # doctest: +NORMALIZE_WHITESPACE
...     print(w.text())  # b and c: 2 of 10 lookups lost
c lost 20.00% of its non-null lookups, over the 1.0% budget (freq_threshold=3): remove
the freq_threshold (keep every value) and Run again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from interactive_recsys.ops._categorify import Categorify
from interactive_recsys.stats._lookup_loss import fitted_lookup_loss
from interactive_recsys.ui.builder.suggest._vocab_budget import MAX_LOSS, VocabChoice
from interactive_recsys.ui.builder.suggest._vocab_measure import MeasuredColumn


@dataclass(frozen=True)
class OOVWarning:
    """A column whose Run lost more lookups than its budget allowed, and the fix."""

    column: str
    lost: float
    allowed: float
    freq_threshold: int
    #: the threshold to use instead (0: none, keep every value)
    fix_threshold: int = 0
    #: Suggest chose this loss to fit the memory budget (it said so in its card)
    chosen: bool = False

    def text(self) -> str:
        fix = (f"use freq_threshold={self.fix_threshold}" if self.fix_threshold
               else "remove the freq_threshold (keep every value)")
        head = (f"{self.column} lost {self.lost:.2%} of its non-null lookups, over the "
                f"{self.allowed:.1%} budget (freq_threshold={self.freq_threshold})")
        if self.chosen:
            return (f"{head}, as Suggest chose to fit the embeddings' memory budget: raise that "
                    f"budget and Suggest again, or {fix} if the memory allows it.")
        return f"{head}: {fix} and Run again."


def lost_lookups(workflow: Any) -> dict[str, tuple[float, int]]:
    """Per output column of every fitted ``Categorify``: the share of its non-null lookups
    sent out of vocabulary (``stats._lookup_loss.fitted_lookup_loss``,
    as the Embeddings tab shows it), and the operator's ``freq_threshold``."""
    thresholds = {column: int(step.op.freq_threshold)
                  for step in workflow.fitted_steps(Categorify)
                  for column in step.op.output_names(list(step.groups))}
    return {column: (loss.share, thresholds[column])
            for column, loss in fitted_lookup_loss(workflow).items()}


def oov_summary(workflow: Any, max_loss: float = MAX_LOSS) -> str:
    """What a Run with every column within its lookup budget lost, for the status line: the
    column that lost most and the budget (or that none lost any); empty without a fitted
    ``Categorify``, or when a column is over the budget (:func:`check_oov` flags it then).

    >>> import pandas as pd, interactive_recsys as irs
    >>> from interactive_recsys import ops
    >>> frame = pd.DataFrame({"a": ["x"] * 99 + ["y"], "b": ["u", "v"] * 50})
    >>> wf = irs.Workflow(["a", "b"] >> ops.Categorify(freq_threshold=2)).fit(frame)
    >>> oov_summary(wf, max_loss=0.01)  # y: 1 of a's 100 lookups
    'lookups lost: at most 1.00% of non-null lookups (a), within the 1.0% budget'
    >>> oov_summary(wf, max_loss=0.005), oov_summary(irs.Workflow(["a"] >> ops.Normalize()))
    ('', '')
    >>> oov_summary(irs.Workflow(["a", "b"] >> ops.Categorify()).fit(frame))
    'no lookup lost in any of the 2 columns'
    """
    lost = lost_lookups(workflow)
    if not lost:
        return ""
    column = max(lost, key=lambda c: lost[c][0])
    worst = lost[column][0]
    if worst > max_loss + 1e-9:
        return ""
    if worst == 0:
        return f"no lookup lost in any of the {len(lost)} columns"
    return (f"lookups lost: at most {worst:.2%} of non-null lookups ({column}), within the "
            f"{max_loss:.1%} budget")


def _fix(m: MeasuredColumn | None, allowed: float) -> int:
    """The threshold of the smallest table that loses at most ``allowed`` of ``m``'s lookups
    (0: none)."""
    if m is None:
        return 0
    best = 0
    for k, _ in m.histogram:  # thresholds k + 1 drop the values seen k times or fewer
        if k + 1 >= 2 and m.lost(k + 1) <= allowed:
            best = k + 1
    return best


def check_oov(workflow: Any, choices: Sequence[VocabChoice] = (), *,
              max_loss: float = MAX_LOSS,
              measured: Mapping[str, MeasuredColumn] | None = None) -> list[OOVWarning]:
    """The columns of a fitted ``workflow`` that lost more than ``max_loss`` of their
    lookups; those where Suggest's ``choices`` (with the same threshold) promised that loss are
    marked ``chosen``."""
    promised = {c.column: c.option for c in choices}
    measured = measured or {}
    warnings = []
    for column, (lost, threshold) in lost_lookups(workflow).items():
        if lost > max_loss + 1e-9:
            option = promised.get(column)
            chosen = option is not None and option.freq_threshold == threshold \
                and lost <= option.lost_bound + 1e-9
            warnings.append(OOVWarning(column, lost, max_loss, threshold,
                                       _fix(measured.get(column), max_loss), chosen))
    return warnings
