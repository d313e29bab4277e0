"""Standardisation (z-score) and min-max scaling of continuous columns.

Statistics use the finite values only: nulls and NaN are skipped, and so are
infinities (which stay infinite after scaling). The standard deviation is the
population one by default (``ddof=0``, as scikit-learn's ``StandardScaler``); ``ddof=1``
gives the sample one (pandas' ``std()``, NVTabular's ``Normalize``).

Both keep their merged statistics of each column in their state (``moments``), so
``Workflow.update`` merges new data into them exactly: Normalize the count, mean, spread, min
and max (Chan et al.'s parallel formula, ``tables._moments.merge_summaries``, as the
fit's own tree does); NormalizeMinMax the count, min and max only, one pass over the data
(``tables._moments.merge_extremes``).
"""

from __future__ import annotations

import math
from typing import Any

from interactive_recsys.ops._base import (
    StateFolders,
    StatOperator,
    no_rows_error,
    require_numeric,
    transform_elementwise,
)
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema, Tags
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._moments import (
    column_extremes,
    column_moments,
    merge_extremes,
    merge_summaries,
)


class _Moments(StatOperator, register=False):
    """Shared fit of Normalize and NormalizeMinMax: per column, a summary of each partition
    (``summarize``: count, mean, spread, min, max) merged by ``merge``."""

    summarize = staticmethod(column_moments)
    merge = staticmethod(merge_summaries)

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        require_numeric(self, col)
        return col.with_(dtype=self.out_dtype).with_tags(add=[Tags.CONTINUOUS],
                                                          remove=[Tags.CATEGORICAL])

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, dict[str, float]]:
        b = ctx.backend
        return {n: self.summarize(b, b.column(df, n)) for n in df.columns}

    def fit_combine(self, partials: list[Any]) -> dict[str, dict[str, float]]:
        return {name: self.merge([p[name] for p in partials]) for name in partials[0]}

    def finish(self, partial: dict[str, dict[str, float]], ctx: OpContext) -> dict[str, Any]:
        raise NotImplementedError

    def fit_finalize(self, partial: Any, ctx: OpContext) -> dict[str, Any]:
        self.check_rows(partial, ctx)
        return {**self.finish(partial, ctx), "moments": partial}

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: StateFolders) -> dict[str, Any]:
        """The state of a fit on both datasets: their moments merged exactly."""
        self.check_mergeable(old, ctx)
        merged = {n: self.merge([_restored(old["moments"][n]), _restored(m)])
                  for n, m in new["moments"].items()}
        return {**self.finish(merged, ctx), "moments": merged}

    def check_mergeable(self, state: dict[str, Any], ctx: OpContext) -> None:
        if "moments" not in state:
            raise self.not_mergeable(ctx, "it was fitted by a version that did not keep its "
                                          "moments")

    def check_rows(self, partial: dict[str, dict[str, float]], ctx: OpContext) -> None:
        """Refuse to fit on no rows at all (e.g. a Filter upstream dropped every row)."""
        if partial and all(m["count"] == 0 and m["missing"] == 0 for m in partial.values()):
            raise no_rows_error(self, ctx)


def _restored(m: dict[str, Any]) -> dict[str, float]:
    """Moments read back from JSON (where NaN, the min of no values, is null)."""
    return {k: math.nan if v is None else v for k, v in m.items()}


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else x


class Normalize(_Moments):
    """Standardise: ``(x - mean) / std``, computed in float64, as float32 (``out_dtype``; std
    0 or all-missing: divide by 1).

    >>> import pandas as pd, interactive_recsys as irs
    >>> irs.Workflow(["x"] >> Normalize()).fit_transform(pd.DataFrame({"x": [1, 3]}))["x"].tolist()
    [-1.0, 1.0]
    """

    summary = "Standardise to mean 0, std 1 (float32)"
    online = True
    state_shape = {"means": ("map", "number?"), "stds": ("map", "number>=0?")}
    per_column_state = ("means", "stds")
    ddof = Param(0, kind="int", low=0, high=1,
                 doc="Delta degrees of freedom of the std: 0 population, 1 sample (as pandas).")
    out_dtype = Param("float32", choices=("float32", "float64"),
                      doc="Output dtype (the values are computed in float64, then cast).")

    def finish(self, partial: Any, ctx: OpContext) -> dict[str, Any]:
        means, stds = {}, {}
        for name, m in partial.items():
            if m["count"] == 0:
                means[name], stds[name] = None, None
                continue
            std = m["root"] / math.sqrt(max(m["count"] - self.ddof, 1))
            # rounding leaves a constant column a std of ~1e-16 x its mean: that is zero, and
            # so is a spread in the subnormal range (below 1e-300), which no partitioning of
            # the sums can reproduce exactly
            floor = max(1e-10 * abs(m["mean"]), 1e-300)
            means[name], stds[name] = m["mean"], std if std > floor else 0.0
        return {"means": means, "stds": stds}

    def elementwise(self, state: dict[str, Any] | None, column: str) -> tuple:
        mean, std = state["means"][column] or 0.0, state["stds"][column] or 0.0
        return ("affine", mean, std if std > 0 else 1.0, self.out_dtype)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return transform_elementwise(self, df, state, ctx)


class NormalizeMinMax(_Moments):
    """Scale to ``[0, 1]``: ``(x - min) / (max - min)``, computed in float64, as float32
    (``out_dtype``; constant column: 0)."""

    summary = "Scale to [0, 1] with the min and max (float32)"
    online = True
    state_shape = {"mins": ("map", "number?"), "maxs": ("map", "number?")}
    per_column_state = ("mins", "maxs")
    summarize = staticmethod(column_extremes)  # one pass: no mean or spread
    merge = staticmethod(merge_extremes)
    out_dtype = Param("float32", choices=("float32", "float64"),
                      doc="Output dtype (the values are computed in float64, then cast).")

    def finish(self, partial: Any, ctx: OpContext) -> dict[str, Any]:
        return {"mins": {n: _none_if_nan(m["min"]) for n, m in partial.items()},
                "maxs": {n: _none_if_nan(m["max"]) for n, m in partial.items()}}

    def elementwise(self, state: dict[str, Any] | None, column: str) -> tuple:
        lo, hi = state["mins"][column], state["maxs"][column]
        lo = 0.0 if lo is None else lo
        span = (hi - lo) if hi is not None and hi > lo else 1.0
        return ("affine", lo, span, self.out_dtype)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return transform_elementwise(self, df, state, ctx)
