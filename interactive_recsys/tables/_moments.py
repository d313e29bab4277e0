"""Moments of one numeric column, computed per partition and merged exactly: the statistics
behind ``Normalize`` and ``DataStats``; and the extremes alone (count, min, max), behind
``NormalizeMinMax``.

>>> import pandas as pd
>>> from interactive_recsys.backend import get_backend
>>> b = get_backend("cpu")
>>> parts = [column_moments(b, b.column(b.from_pandas(pd.DataFrame({"x": v})), "x"))
...          for v in ([1.0, 2.0], [3.0, None])]
>>> m = merge_summaries(parts)
>>> m["count"], m["mean"], m["missing"], round(m["root"] ** 2, 6)
(3.0, 2.0, 1.0, 2.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def column_moments(b: Any, col: Any) -> dict[str, float]:
    """count / mean / root (square root of the sum of squared deviations) / min / max.

    Values of 1e154 and more overflow the plain sum of squares, and below 1e-150 the squares
    underflow: those columns are scaled by their largest magnitude first, so mean and spread
    stay finite and exact whatever the partitioning."""
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):  # handled below
        m = dict(b.moments(col))
    largest = max(abs(m.get("min", 0.0)), abs(m.get("max", 0.0))) if m["count"] else 0.0
    if m["count"] and (not (math.isfinite(m["mean"]) and math.isfinite(m["m2"]))
                       or 0.0 < largest < 1e-150):
        finite = b.finite_values(col)
        scale = float(np.abs(finite).max())
        y = finite / scale
        mean_y = float(y.mean())
        m["mean"] = mean_y * scale
        m["root"] = scale * float(np.sqrt(np.square(y - mean_y).sum()))
    else:
        m["root"] = math.sqrt(max(m["m2"], 0.0))
    del m["m2"]
    return m


def column_extremes(b: Any, col: Any) -> dict[str, float]:
    """count / min / max of the finite values and the count of the others (what min-max
    scaling needs: one pass, no mean or spread)."""
    return dict(b.extremes(col))


def merge_extremes(parts: list[dict[str, float]]) -> dict[str, float]:
    """Merge count/min/max/missing summaries (other fields are ignored).

    >>> merge_extremes([{"count": 2.0, "min": 1.0, "max": 5.0, "missing": 0.0},
    ...                 {"count": 0.0, "min": math.nan, "max": math.nan, "missing": 3.0}])
    {'count': 2.0, 'missing': 3.0, 'min': 1.0, 'max': 5.0}
    """
    return {"count": sum(p["count"] for p in parts),
            "missing": sum(p["missing"] for p in parts),
            "min": min((p["min"] for p in parts if p["count"]), default=math.nan),
            "max": max((p["max"] for p in parts if p["count"]), default=math.nan)}


def merge_summaries(parts: list[dict[str, float]]) -> dict[str, float]:
    """Merge count/mean/root summaries (Chan et al.'s parallel variance, with the spread as a
    square root merged by ``hypot`` so that huge values never overflow)."""
    ext = merge_extremes(parts)
    out = {"count": 0.0, "mean": 0.0, "root": 0.0, "missing": ext["missing"],
           "min": ext["min"], "max": ext["max"]}
    for p in parts:
        if not p["count"]:
            continue
        if not out["count"]:  # the first summary is taken as is (exact)
            out.update(count=p["count"], mean=p["mean"], root=p["root"])
            continue
        n = out["count"] + p["count"]
        half_delta = p["mean"] / 2 - out["mean"] / 2  # halves: no overflow at +-1e308
        out["mean"] += half_delta * (2 * p["count"] / n)
        out["root"] = math.hypot(out["root"], p["root"], 2 * abs(half_delta) * math.sqrt(
            out["count"] * p["count"] / n))
        out["count"] = n
    return out
