"""Missing-value filling: a constant (FillMissing) or each column's median (FillMedian)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from interactive_recsys.ops._base import Operator, StatOperator, require_numeric
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema, Schema, is_integer_dtype
from interactive_recsys.tables._context import OpContext

#: Points kept per partition by the median sketch (exact for smaller partitions).
SKETCH_POINTS = 2001


def _fill(op: Operator, df: Any, values: dict[str, Any], ctx: OpContext) -> Any:
    b = ctx.backend
    out: dict[str, Any] = {}
    for name in df.columns:
        col = b.column(df, name)
        if op.add_binary_cols:
            out[f"{name}_filled"] = b.is_missing(col)
        out[name] = b.fill_missing(col, values[name])
    return b.with_columns(df, out)


def _fill_schema(op: Operator, input_schema: Schema) -> Schema:
    cols = []
    for col in input_schema.values():
        require_numeric(op, col)
        cols.append(col)
        if op.add_binary_cols:
            cols.append(ColumnSchema(f"{col.name}_filled", "bool", tags={"continuous"}))
    return Schema(cols)


class FillMissing(Operator):
    """Replace nulls (and NaN) by a constant.

    >>> import pandas as pd, interactive_recsys as irs
    >>> wf = irs.Workflow(["x"] >> FillMissing(0))
    >>> wf.fit_transform(pd.DataFrame({"x": [1, None]}))["x"].tolist()
    [1.0, 0.0]
    """

    summary = "Replace nulls and NaN by a constant"
    online = True
    fill_val = Param(0, kind="number", doc="Value written where data is missing.")
    add_binary_cols = Param(False, kind="bool", doc="Also output <col>_filled flags.")

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        return _fill_schema(self, input_schema)

    def elementwise(self, state: dict[str, Any] | None, column: str) -> tuple | None:
        return None if self.add_binary_cols else ("fill", self.fill_val)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return _fill(self, df, dict.fromkeys(df.columns, self.fill_val), ctx)


class FillMedian(StatOperator):
    """Replace nulls (and NaN) by the column's median over the whole dataset.

    Integer columns keep their dtype and get the median rounded half up.

    The median is exact when partitions hold at most 2,001 values and otherwise comes
    from a merged quantile sketch (error well under 0.1 percentile).

    ``Workflow.update`` refuses FillMedian: its state keeps the median only, and the median
    of all the days cannot be computed from each day's median (it needs every value, or a
    sketch whose error would grow with every update). Refit on all the days, or use
    ``FillMissing`` with a constant, which needs no statistics.
    """

    summary = "Replace nulls and NaN by the column median"
    online = True
    state_shape = {"medians": ("map", "number?")}
    per_column_state = ("medians",)
    add_binary_cols = Param(False, kind="bool", doc="Also output <col>_filled flags.")

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        return _fill_schema(self, input_schema)

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        b = ctx.backend
        return {name: sketch(b.finite_values(b.column(df, name))) for name in df.columns}

    def fit_combine(self, partials: list[Any]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {name: merge_sketches([p[name] for p in partials]) for name in partials[0]}

    def fit_finalize(self, partial: Any, ctx: OpContext) -> dict[str, Any]:
        return {"medians": {name: weighted_median(*sk) for name, sk in partial.items()}}

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: Any) -> dict[str, Any]:
        raise self.not_mergeable(ctx, "the median of all the data cannot be computed from "
                                      "the medians of its parts (the state keeps only the "
                                      "median, not the values)")

    def check_mergeable(self, state: dict[str, Any], ctx: OpContext) -> None:
        self.merge_state(state, state, ctx, None)

    def online_step(self, state: dict[str, Any] | None, column: str,
                    ctx: OpContext) -> tuple | None:
        """``("fill_median", median)``: integer columns get it rounded half up, as here."""
        if self.add_binary_cols:
            return None
        return ("fill_median", state["medians"][column] or 0.0)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        values = {}
        for n in df.columns:
            median = state["medians"][n] or 0.0
            # integer columns keep their dtype: their median is rounded half up
            values[n] = math.floor(median + 0.5) if is_integer_dtype(b.dtype(b.column(df, n))) \
                else median
        return _fill(self, df, values, ctx)


def sketch(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A (points, weights) summary of ``values``: exact when small, quantiles otherwise."""
    values = np.sort(values)
    if len(values) <= SKETCH_POINTS:
        return values, np.ones(len(values))
    qs = np.linspace(0, 1, SKETCH_POINTS)
    return np.quantile(values, qs), np.full(SKETCH_POINTS, len(values) / SKETCH_POINTS)


def merge_sketches(sketches: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    points = np.concatenate([s[0] for s in sketches])
    weights = np.concatenate([s[1] for s in sketches])
    order = np.argsort(points, kind="stable")
    points, weights = points[order], weights[order]
    if len(points) <= 4 * SKETCH_POINTS:
        return points, weights
    cum = np.cumsum(weights)
    targets = np.linspace(0, cum[-1], 4 * SKETCH_POINTS)
    idx = np.minimum(np.searchsorted(cum, targets), len(points) - 1)
    return points[idx], np.full(len(idx), cum[-1] / len(idx))


def weighted_median(points: np.ndarray, weights: np.ndarray) -> float | None:
    """The median of weighted points (midpoint of the two middle values when exact)."""
    if len(points) == 0:
        return None
    cum = np.cumsum(weights)
    half = cum[-1] / 2
    lo = int(np.searchsorted(cum, half, side="left"))
    if np.isclose(cum[lo], half) and lo + 1 < len(points):
        return float((points[lo] + points[lo + 1]) / 2)
    return float(points[lo])
