"""Drift of the fitted statistics of continuous columns between two fitted workflows: what
:func:`~interactive_recsys.vocabulary_diff` reports per column of a ``Normalize``,
``NormalizeMinMax``, ``FillMedian`` or ``DataStats`` step.

Each shift is the new statistic less the old one, in the unit the old step's output has:

* ``mean_shift`` and ``std_shift`` in old standard deviations (``Normalize``, ``DataStats``):
  a ``mean_shift`` of 0.5 puts the new data's mean at 0.5 in the old normalized output. An old
  std of 0 (or none) counts as 1, as ``Normalize`` then divides by 1;
* ``min_shift`` and ``max_shift`` in old ranges ``max - min`` (``NormalizeMinMax``): a
  ``max_shift`` of 0.25 puts the new maximum at 1.25 in the old scaled output (a range of 0
  counts as 1);
* ``median_shift`` in the column's own units (``FillMedian``'s output is the column itself,
  and its state keeps no spread).

A population stability index (PSI) is not given: it needs each column's histogram on both
datasets, and no fitted state keeps one (``Normalize`` keeps moments, ``NormalizeMinMax`` the
extremes, ``FillMedian`` the median only).

>>> shifts("Normalize", {"mean": 10.0, "std": 2.0}, {"mean": 11.0, "std": 3.0})
{'mean_shift': 0.5, 'std_shift': 0.5}
>>> shifts("NormalizeMinMax", {"min": 0.0, "max": 4.0}, {"min": -1.0, "max": 5.0})
{'min_shift': -0.25, 'max_shift': 0.25}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

#: The shift fields of the diff, in its column order.
SHIFT_FIELDS = ("mean_shift", "std_shift", "min_shift", "max_shift", "median_shift")

Stats = dict[str, float | None]


def _normalize(state: dict[str, Any]) -> Iterator[tuple[str, Stats]]:
    for column, mean in state.get("means", {}).items():
        yield column, {"mean": mean, "std": state.get("stds", {}).get(column)}


def _min_max(state: dict[str, Any]) -> Iterator[tuple[str, Stats]]:
    for column, low in state.get("mins", {}).items():
        yield column, {"min": low, "max": state.get("maxs", {}).get(column)}


def _median(state: dict[str, Any]) -> Iterator[tuple[str, Stats]]:
    for column, median in state.get("medians", {}).items():
        yield column, {"median": median}


def _data_stats(state: dict[str, Any]) -> Iterator[tuple[str, Stats]]:
    for column, report in state.get("columns", {}).items():
        if isinstance(report, dict) and report.get("mean") is not None:  # numeric columns
            yield column, {"mean": report["mean"], "std": report.get("std")}


#: The statistics of each operator's fitted state, per column (other statistics steps,
#: such as TargetEncoding's tables, are not compared).
EXTRACTORS: dict[str, Callable[[dict[str, Any]], Iterator[tuple[str, Stats]]]] = {
    "Normalize": _normalize, "NormalizeMinMax": _min_max, "FillMedian": _median,
    "DataStats": _data_stats}


def column_statistics(operator: str, state: dict[str, Any]) -> list[tuple[str, Stats]]:
    """``[(column, {statistic: value}), ...]`` of one fitted step of ``operator`` (none for
    an operator not in :data:`EXTRACTORS`).

    >>> column_statistics("FillMedian", {"medians": {"x": 2.5}})
    [('x', {'median': 2.5})]
    """
    extract = EXTRACTORS.get(operator)
    return list(extract(state)) if extract is not None else []


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _scale(value: float) -> float:
    """A unit for the shifts: ``value``, or 1 where it is 0 or unknown."""
    return value if math.isfinite(value) and value > 0 else 1.0


def _shift(old: float, new: float, unit: float) -> float:
    """``(new - old) / unit``; equal values (infinities included) shift by 0."""
    if old == new:
        return 0.0
    return (new - old) / unit


def shifts(operator: str, old: Stats, new: Stats) -> dict[str, float]:
    """The shift fields of one column (see the module docstring), from its old and new
    statistics; NaN where either is unknown (a column of no values).

    >>> shifts("FillMedian", {"median": 3.0}, {"median": None})
    {'median_shift': nan}
    """
    out = {}
    if "mean" in old:
        unit = _scale(_number(old.get("std")))
        out["mean_shift"] = _shift(_number(old["mean"]), _number(new.get("mean")), unit)
        out["std_shift"] = _shift(_number(old.get("std")), _number(new.get("std")), unit)
    if "min" in old:
        unit = _scale(_number(old.get("max")) - _number(old["min"]))
        out["min_shift"] = _shift(_number(old["min"]), _number(new.get("min")), unit)
        out["max_shift"] = _shift(_number(old.get("max")), _number(new.get("max")), unit)
    if "median" in old:
        out["median_shift"] = _shift(_number(old["median"]), _number(new.get("median")), 1.0)
    return out
