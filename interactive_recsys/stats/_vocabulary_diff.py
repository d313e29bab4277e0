"""What changed between two fitted workflows: each vocabulary, value by value, and each
fitted statistic of the continuous columns, read from their fitted states (no pass over data).

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
>>> day1 = wf.fit(pd.DataFrame({"c": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]}))
>>> day2 = day1.update(pd.DataFrame({"c": ["z", "b", "z"], "x": [5.0, 6.0, 7.0]}))
>>> diff = vocabulary_diff(day1, day2)
>>> diff[["column", "new_values", "dropped_values", "changed_ids", "new_share"]]
  column  new_values  dropped_values  changed_ids  new_share
0      c           1               0            0   0.333333
1      x        <NA>            <NA>         <NA>        NaN
>>> print(f"{diff.loc[1, 'mean_shift']:.3f}")   # the mean went from 2 to 4: 2 old stds up
2.449
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from interactive_recsys.errors import NotFittedError, ParameterError
from interactive_recsys.stats._statistics_drift import SHIFT_FIELDS, column_statistics, shifts
from interactive_recsys.stats._vocabulary_compare import SavedVocabulary, compare

#: The fields of the table, in order.
FIELDS = ("column", "operator", "present", "old_size", "new_size", "new_values",
          "dropped_values", "changed_ids", "new_share", *SHIFT_FIELDS)
#: The fields that count values (nullable integers: ``<NA>`` on the rows of statistics).
COUNT_FIELDS = ("old_size", "new_size", "new_values", "dropped_values", "changed_ids")
#: ``present``: the column is in both workflows, or in one only.
BOTH, OLD_ONLY, NEW_ONLY = "both", "old only", "new only"


def vocabulary_diff(old: Any, new: Any) -> pd.DataFrame:
    """What changed from fitted workflow ``old`` to fitted workflow ``new`` (say, yesterday's
    and today's, after :meth:`~interactive_recsys.Workflow.update`), one row per column.

    Rows of ``Categorify`` columns (``operator`` ``"Categorify"``, one row per output column),
    from the two vocabularies compared value by value:

    * ``old_size``, ``new_size``: the values each vocabulary gives an id of its own;
    * ``new_values``: values in the new vocabulary and not in the old one;
    * ``dropped_values``: values in the old vocabulary and not in the new one;
    * ``changed_ids``: values in both whose id differs. ``Workflow.update`` keeps every id, so
      it is 0 after an update; a refit from scratch renumbers by frequency, and trained
      embedding rows then no longer match their values;
    * ``new_share``: the share of the new workflow's non-null lookups (its counts, nulls left
      out) that went to the new values. After an update the new workflow's counts are of
      all the data it has seen (the old data and the update's), so this is the share of all
      of it; the new values' counts all come from the update's data (or from values below
      ``freq_threshold`` before it). None for a vocabulary given with
      ``Categorify(vocabulary=...)``, which is not counted.

    The columns of a joint group (``[["a", "b"]] >> Categorify()``) share one vocabulary:
    each gets its own row with the shared vocabulary's numbers (do not add them up). A combo
    group's one output column gets one row.

    Rows of continuous columns with fitted statistics (``Normalize``, ``NormalizeMinMax``,
    ``FillMedian``, ``DataStats``): ``mean_shift``, ``std_shift``, ``min_shift``,
    ``max_shift``, ``median_shift`` where the step keeps that statistic, each in the unit of
    the old step's output (old standard deviations, old ranges, or the column's own units
    for medians). No PSI is given: it
    needs histograms, which no fitted state keeps. Other statistics steps are not compared.

    A column (with its operator) in one workflow only gets a row whose ``present`` says
    ``"old only"`` or ``"new only"``, with its vocabulary's size where it has one and no
    other numbers; the others say ``"both"``. Rows come in the new workflow's order, then
    the old-only ones. Steps pair by output column and operator (the second ``Normalize`` of
    a column with the old workflow's second).

    Parameters
    ----------
    old, new : Workflow
        Two fitted workflows (loaded ones too: their artifacts are read where they are).

    Returns
    -------
    pandas.DataFrame
        One row per column, the fields ``column``, ``operator``, ``present``, ``old_size``,
        ``new_size``, ``new_values``, ``dropped_values``, ``changed_ids``, ``new_share``,
        ``mean_shift``, ``std_shift``, ``min_shift``, ``max_shift``, ``median_shift``: counts
        as nullable integers, shares and shifts as floats (``NaN`` where a row has none).

    Examples
    --------
    >>> import pandas as pd, interactive_recsys as irs
    >>> from interactive_recsys import ops
    >>> wf = irs.Workflow(["c"] >> ops.Categorify())
    >>> before = wf.fit(pd.DataFrame({"c": ["a", "a", "b"]}))
    >>> after = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["b", "b", "a"]}))
    >>> vocabulary_diff(before, after).loc[0, ["new_values", "changed_ids"]].tolist()
    [0, 2]
    """
    for name, wf in (("old", old), ("new", new)):
        _check_fitted(name, wf)
    old_rows, new_rows = _entries(old), _entries(new)
    rows = []
    for key, after in new_rows.items():
        before = old_rows.get(key)
        rows.append(_row(key, before, after))
    rows += [_row(key, before, None) for key, before in old_rows.items() if key not in new_rows]
    table = pd.DataFrame(rows, columns=list(FIELDS))
    for name in COUNT_FIELDS:
        table[name] = table[name].astype("Int64")
    for name in ("new_share", *SHIFT_FIELDS):
        table[name] = table[name].astype("float64")
    return table


def _check_fitted(name: str, wf: Any) -> None:
    if not hasattr(wf, "fitted_steps"):
        raise ParameterError(f"vocabulary_diff compares two fitted workflows; its {name!r} "
                             f"argument is a {type(wf).__name__}. Pass irs.Workflow objects "
                             "(irs.Workflow.load(path) for a saved one).")
    if not wf.fitted:
        raise NotFittedError(f"vocabulary_diff: the {name!r} workflow is not fitted; fit it "
                             "(wf.fit(data)) or load a fitted one first.")
    wf.verify_artifacts()


Key = tuple[str, str, int]  # column, operator, its occurrence among that column's steps


def _entries(wf: Any) -> dict[Key, tuple[str, Any]]:
    """Per (output column, operator, occurrence): ``("vocabulary", SavedVocabulary)`` or
    ``("statistics", {statistic: value})``, in graph order."""
    from interactive_recsys.ops._categorify import Categorify  # lazy: the operators

    seen: Counter[tuple[str, str]] = Counter()
    out: dict[Key, tuple[str, Any]] = {}

    def add(column: str, operator: str, entry: tuple[str, Any]) -> None:
        seen[column, operator] += 1
        out[column, operator, seen[column, operator]] = entry

    for step in wf.fitted_steps():
        operator = type(step.op).__name__
        if isinstance(step.op, Categorify):
            vocabs = step.state.get("vocabs", {})
            for column, key in step.op.output_names(list(step.groups)).items():
                add(column, "Categorify", ("vocabulary", SavedVocabulary.of(
                    wf.artifacts_dir, vocabs[key], wf.storage_options)))
            continue
        for column, stats in column_statistics(operator, step.state):
            add(column, operator, ("statistics", stats))
    return out


def _row(key: Key, before: tuple[str, Any] | None, after: tuple[str, Any] | None
         ) -> dict[str, Any]:
    column, operator, _ = key
    present = BOTH if before is not None and after is not None else (
        OLD_ONLY if after is None else NEW_ONLY)
    row: dict[str, Any] = {"column": column, "operator": operator, "present": present}
    kind = (after or before)[0]  # type: ignore[index]
    if kind == "vocabulary":
        old = before[1] if before is not None else None
        new = after[1] if after is not None else None
        row["old_size"] = int(old.info["size"]) if old is not None else None
        row["new_size"] = int(new.info["size"]) if new is not None else None
        if old is not None and new is not None:
            row.update(_vocabulary_fields(old, new))
    elif before is not None and after is not None:
        row.update(shifts(operator, before[1], after[1]))
    return row


def _vocabulary_fields(old: SavedVocabulary, new: SavedVocabulary) -> dict[str, Any]:
    change = compare(old, new)
    if "value_count" not in new.info:  # a given vocabulary (vocabulary=): nothing counted
        share = None
    else:
        lookups = int(new.info["value_count"]) - int(new.info["null_count"])
        share = change.new_count / lookups if lookups else 0.0
    return {"new_values": change.new_values, "dropped_values": change.dropped_values,
            "changed_ids": change.changed_ids, "new_share": share}
