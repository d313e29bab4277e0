"""The table of :func:`~interactive_recsys.vocabulary_diff` as aligned text (what ``irs update``
prints): the vocabularies first, then the statistics, each with only the fields its rows
have; counts with thousands separators, shares in percent, shifts signed; a field a row has
no number for is left blank.

>>> table = pd.DataFrame({"column": ["C1", "I1"], "operator": ["Categorify", "Normalize"],
...     "present": ["both", "both"], "old_size": pd.array([1200, None], "Int64"),
...     "new_size": pd.array([1254, None], "Int64"),
...     "new_values": pd.array([54, None], "Int64"),
...     "dropped_values": pd.array([0, None], "Int64"),
...     "changed_ids": pd.array([0, None], "Int64"), "new_share": [0.0123, float("nan")],
...     "mean_shift": [float("nan"), 0.0456], "std_shift": [float("nan"), -0.01]})
>>> print(diff_text(table))
Vocabularies (Categorify):
  column  present  old_size  new_size  new_values  dropped_values  changed_ids  new_share
  C1      both        1,200     1,254          54               0            0      1.23%
Statistics (shifts in the old output's units: mean and std in old stds):
  column  operator   present  mean_shift  std_shift
  I1      Normalize  both        +0.0456    -0.0100
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from interactive_recsys.stats._statistics_drift import SHIFT_FIELDS

VOCABULARY_FIELDS = ("column", "present", "old_size", "new_size", "new_values",
                     "dropped_values", "changed_ids", "new_share")
STATISTICS_FIELDS = ("column", "operator", "present", *SHIFT_FIELDS)
#: What each shift field is measured in, said in the statistics block's title.
UNITS = {"mean_shift": "mean and std in old stds", "min_shift": "min and max in old ranges",
         "median_shift": "medians in the column's units"}
TEXT_FIELDS = ("column", "operator", "present")


def diff_text(table: pd.DataFrame, indent: str = "  ") -> str:
    """The vocabulary block and the statistics block of ``table`` (a
    :func:`~interactive_recsys.vocabulary_diff` result); ``"No vocabulary or fitted
    statistic to compare."`` when it has no rows."""
    if table.empty:
        return "No vocabulary or fitted statistic to compare."
    vocab = table[table["operator"] == "Categorify"]
    stats = table[table["operator"] != "Categorify"]
    blocks = []
    if not vocab.empty:
        blocks.append("Vocabularies (Categorify):\n"
                      + _aligned(vocab, VOCABULARY_FIELDS, indent))
    if not stats.empty:
        fields = [f for f in STATISTICS_FIELDS
                  if f in TEXT_FIELDS or (f in stats and stats[f].notna().any())]
        units = "; ".join(text for f, text in UNITS.items() if f in fields)
        title = f"Statistics (shifts in the old output's units: {units}):" if units \
            else "Statistics:"
        blocks.append(title + "\n" + _aligned(stats, fields, indent))
    return "\n".join(blocks)


def _cell(field: str, value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if field in TEXT_FIELDS:
        return str(value)
    if field == "new_share":
        return f"{value:.2%}"
    if field in SHIFT_FIELDS:
        return f"{value:+.4f}" if math.isfinite(value) else f"{value:+}"
    return f"{int(value):,}"


def _aligned(rows: pd.DataFrame, fields: Sequence[str], indent: str) -> str:
    """``fields`` of ``rows`` as columns of text: names left-aligned, numbers right-aligned,
    two spaces apart."""
    cells = [[_cell(f, v) for f, v in zip(fields, row, strict=True)]
             for row in rows[list(fields)].itertuples(index=False)]
    widths = [max([len(f), *(len(r[i]) for r in cells)]) for i, f in enumerate(fields)]

    def line(values: Sequence[str]) -> str:
        parts = [v.ljust(w) if f in TEXT_FIELDS else v.rjust(w)
                 for f, v, w in zip(fields, values, widths, strict=True)]
        return (indent + "  ".join(parts)).rstrip()

    return "\n".join([line(list(fields)), *(line(r) for r in cells)])
