"""The Run's "what changed" note, under its status line: the columns whose vocabulary or
fitted statistics differ from the previous Run's (:class:`~..model._run_diff.RunDiff`), as a
table with a legend; one line when nothing changed; nothing after a first Run.

>>> import pandas as pd
>>> from interactive_recsys.stats._vocabulary_diff import FIELDS
>>> from interactive_recsys.ui.builder.model._run_diff import RunDiff
>>> row = {"column": "C1", "operator": "Categorify", "present": "both", "old_size": 40,
...        "new_size": 38, "new_values": 0, "dropped_values": 2, "changed_ids": 5,
...        "new_share": 0.0}
>>> page = run_diff_html(RunDiff(pd.DataFrame([row], columns=FIELDS)))
>>> "Changes since the previous Run: 1 of 1 column" in page, ">C1<" in page
(True, True)
>>> run_diff_html(None)
''
"""

from __future__ import annotations

import html
import math
from typing import Any

from interactive_recsys.stats._statistics_drift import SHIFT_FIELDS
from interactive_recsys.ui._table_html import Column, table_html
from interactive_recsys.ui.builder.model._run_diff import RunDiff
from interactive_recsys.ui.builder.views._feedback import COLOURS

_SHIFT_HELP = {
    "mean_shift": "new mean less the old, in old standard deviations (Normalize, DataStats)",
    "std_shift": "new standard deviation less the old, in old standard deviations",
    "min_shift": "new minimum less the old, in old ranges max - min (NormalizeMinMax)",
    "max_shift": "new maximum less the old, in old ranges max - min (NormalizeMinMax)",
    "median_shift": "new median less the old, in the column's units (FillMedian)"}
COLUMNS = [
    Column("column", "column"), Column("operator", "step"),
    Column("present", "in", help="both Runs, or only the previous one (old only) or this "
           "one (new only)"),
    Column("old_size", "ids before", unit="values", numeric=True),
    Column("new_size", "ids now", unit="values", numeric=True),
    Column("new_values", "new", unit="values", numeric=True,
           help="values with an id now that had none before"),
    Column("dropped_values", "dropped", unit="values", numeric=True,
           help="values with an id before that have none now"),
    Column("changed_ids", "moved", unit="values", numeric=True,
           help="values whose id changed: trained embedding rows no longer match them"),
    Column("new_share", "new values' share", unit="% of lookups", numeric=True, decimals=2,
           help="the share of this Run's non-null lookups on the new values"),
    *(Column(name, name.replace("_", " "), numeric=True, help=_SHIFT_HELP[name])
      for name in SHIFT_FIELDS)]


def _shown(field: str, value: Any) -> Any:
    if field == "new_share" and isinstance(value, float) and not math.isnan(value):
        return value * 100
    if field in SHIFT_FIELDS and isinstance(value, float) and math.isfinite(value):
        return f"{value:+.4f}"
    return value


def run_diff_html(diff: RunDiff | None) -> str:
    """The note of ``diff`` (``""`` for ``None``: a first Run)."""
    if diff is None:
        return ""
    if diff.table is None:
        return (f"<div class='irs-run-diff' style='color:{COLOURS['info']}'>The changes since "
                f"the previous Run could not be computed ({html.escape(diff.error or '')}).</div>")
    changed, total = diff.changed, len(diff.table)
    if changed.empty:
        return (f"<div class='irs-run-diff'>Since the previous Run: no change in the "
                f"{total} column(s) with vocabularies or fitted statistics.</div>")
    shown = [c for c in COLUMNS if c.key in ("column", "operator", "present")
             or changed[c.key].notna().any()]
    rows = [{k: _shown(k, v) for k, v in row.items()} for row in changed.to_dict("records")]
    return (f"<div class='irs-run-diff'><b>Changes since the previous Run: {len(changed)} of "
            f"{total} column(s)</b> (irs.vocabulary_diff of the two fitted workflows; a Run "
            "refits, so ids follow this Run's counts)"
            f"{table_html(shown, rows, css_class='irs-run-diff-table')}</div>")
