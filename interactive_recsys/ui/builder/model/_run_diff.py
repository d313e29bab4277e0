"""What a Run changed against the previous one: the vocabularies and fitted statistics of the
Run's workflow compared with those of the workflow it refit from (``fit(..., reuse=)``: the
previous Run's, or a loaded one), by :func:`~interactive_recsys.vocabulary_diff`.

The Studio has no update action of its own: a Run fits the whole dataset again, reusing the
steps that did not change. Its ids are then those of a refit (renumbered by frequency), so a
Run after an edit of a threshold, or on data whose files changed, shows which values came,
went and moved. Plain Python: the view draws :class:`RunDiff` (``views._run_diff``).

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> m = BuilderModel(pd.DataFrame({"c": ["x", "y", "x", "z"]}))
>>> m.add_step(["c"], "Categorify")
(0, 0)
>>> _ = m.run(); _ = m.wait_run(60); m.run_diff is None   # the first Run: nothing before it
True
>>> m.update_step(0, 0, params={"freq_threshold": 2})
>>> _ = m.run(); _ = m.wait_run(60)
>>> m.run_diff.changed[["column", "new_values", "dropped_values", "changed_ids"]].values.tolist()
[['c', 0, 2, 0]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from interactive_recsys.stats._statistics_drift import SHIFT_FIELDS
from interactive_recsys.stats._vocabulary_diff import BOTH, vocabulary_diff

#: The count fields that say a vocabulary changed when above 0.
CHANGE_COUNTS = ("new_values", "dropped_values", "changed_ids")


@dataclass(frozen=True)
class RunDiff:
    """The diff of a Run's workflow against the previous one (``table``: one row per column,
    :func:`~interactive_recsys.vocabulary_diff`), or why it could not be computed
    (``error``)."""

    table: pd.DataFrame | None
    error: str | None = None

    @property
    def changed(self) -> pd.DataFrame:
        """The rows where something changed: a column added or removed, values new, dropped
        or moved, a statistic shifted."""
        if self.table is None:
            return pd.DataFrame()
        t = self.table
        moved = (t["present"] != BOTH)
        for name in CHANGE_COUNTS:
            moved |= t[name].fillna(0).astype("int64") > 0
        for name in SHIFT_FIELDS:
            moved |= t[name].fillna(0.0) != 0.0
        return t[moved.to_numpy(dtype=bool)].reset_index(drop=True)


def run_diff(previous: Any, current: Any) -> RunDiff | None:
    """The :class:`RunDiff` of ``current`` (a Run's fitted workflow) against ``previous``
    (the workflow it refit from); ``None`` when there is none (the first Run). A diff that
    fails (the previous workflow's files removed meanwhile, say) is a :class:`RunDiff`
    whose ``error`` names why: the Run itself has succeeded."""
    if previous is None or not getattr(previous, "fitted", False):
        return None
    try:
        return RunDiff(vocabulary_diff(previous, current))
    except Exception as exc:  # shown next to the Run's status, never raised into the Run
        why = (str(exc).splitlines() or [""])[0][:300]
        return RunDiff(None, f"{type(exc).__name__}: {why}")


__all__ = ["RunDiff", "run_diff"]
