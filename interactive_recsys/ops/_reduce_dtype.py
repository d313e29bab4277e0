"""ReduceDtypeSize: the smallest dtype that holds each numeric column's observed values.

``fit`` finds the range of the finite values of every selected column; ``transform`` casts:

* signed integers to the smallest of ``int8, int16, int32, int64`` holding ``[min, max]``
  (unsigned ones to ``uint8 ... uint64``);
* floats to ``float32`` when every finite value lies within float32's range (rounding
  each value to about 7 significant digits), else they stay ``float64``;
* lists of numbers element-wise; other columns (strings, booleans) pass unchanged.

The reduced dtypes are known after ``fit`` (the schema predicted before it shows the input
dtypes). Values outside the fitted range in later data would not fit: transform new data
with the dtypes checked, or keep the input dtypes for it.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"a": [1, 300, 7], "b": [0.5, 2.0, None], "c": [-1, 2, 3]})
>>> wf = irs.Workflow(["a", "b", "c"] >> ReduceDtypeSize())
>>> wf.fit(df).output_schema.dtypes
{'a': 'int16', 'b': 'float32', 'c': 'int8'}
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.ops._base import StatOperator
from interactive_recsys.schema import ColumnSchema, element_dtype, is_float_dtype, is_integer_dtype
from interactive_recsys.tables._context import OpContext

SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOAT32_MAX = float(np.finfo(np.float32).max)


def smallest_dtype(dtype: str, low: float | None, high: float | None) -> str:
    """The smallest dtype of ``dtype``'s family (int, uint, float) holding ``[low, high]``
    (integers compared exactly: Python ``int`` bounds for integer columns)."""
    if low is None or high is None:  # no finite value: anything holds it
        low = high = 0
    if is_float_dtype(dtype):
        return "float32" if max(abs(low), abs(high)) <= FLOAT32_MAX else dtype
    family = UNSIGNED if dtype.startswith("uint") else SIGNED
    for candidate in family:
        info = np.iinfo(candidate)
        if info.min <= low and high <= info.max:
            return candidate
    return dtype


def integer_range(values: pa.ChunkedArray) -> tuple[int | None, int | None]:
    """The exact (Python ``int``) minimum and maximum of integer values; ``None`` when
    there is none.

    >>> integer_range(pa.chunked_array([[2**63 - 1, None, -(2**63)]]))
    (-9223372036854775808, 9223372036854775807)
    """
    found = pc.min_max(values)
    return found["min"].as_py(), found["max"].as_py()


class ReduceDtypeSize(StatOperator):
    """Cast numeric columns to the smallest dtype holding their values (see the module)."""

    summary = "Cast numeric columns to the smallest dtype holding their range"
    state_shape = {"dtypes": ("map", "str")}
    category = "statistics"

    @staticmethod
    def _reducible(dtype: str) -> bool:
        return is_integer_dtype(dtype) or is_float_dtype(dtype)

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        if state is None or col.name not in state["dtypes"]:
            return col
        new = state["dtypes"][col.name]
        return col.with_(dtype=f"list<{new}>" if col.is_list else new)

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, Any]:
        b = ctx.backend
        out = {}
        for name in df.columns:
            col = b.column(df, name)
            dtype = b.dtype(col)
            if not self._reducible(dtype):
                continue
            values = b.list_values(col) if dtype.startswith("list<") else col
            if is_integer_dtype(dtype):  # exact integers (floats would round past 2**53)
                low, high = integer_range(b.to_arrow_array(values))
            else:
                with np.errstate(over="ignore", invalid="ignore"):  # only min and max are used
                    m = b.moments(values)
                low, high = (m["min"], m["max"]) if m["count"] else (None, None)
            out[name] = {"dtype": element_dtype(dtype), "min": low, "max": high}
        return out

    def fit_combine(self, partials: list[dict[str, Any]]) -> dict[str, Any]:
        out = {}
        for name, first in partials[0].items():
            lows = [p[name]["min"] for p in partials if p[name]["min"] is not None]
            highs = [p[name]["max"] for p in partials if p[name]["max"] is not None]
            out[name] = {"dtype": first["dtype"], "min": min(lows, default=None),
                         "max": max(highs, default=None)}
        return out

    def fit_finalize(self, partial: dict[str, Any], ctx: OpContext) -> dict[str, Any]:
        return {"dtypes": {n: smallest_dtype(p["dtype"], p["min"], p["max"])
                           for n, p in partial.items()},
                "ranges": {n: [p["min"], p["max"]] for n, p in partial.items()}}

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        out = {}
        for name, new in state["dtypes"].items():
            col = b.column(df, name)
            dtype = b.dtype(col)
            if element_dtype(dtype) != new:
                out[name] = b.cast(col, f"list<{new}>" if dtype.startswith("list<") else new)
        return b.with_columns(df, out) if out else df
