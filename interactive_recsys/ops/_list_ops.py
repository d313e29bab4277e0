"""List-column operators: ListSlice (keep part of every list) and ValueCount (list lengths).

Both work on the offsets of the list columns (vectorized, no per-row Python) through the
backend (:meth:`~interactive_recsys.backend.Backend.list_slice`,
:meth:`~interactive_recsys.backend.Backend.list_length_range`).

Examples
--------
>>> import pandas as pd, pyarrow as pa, interactive_recsys as irs
>>> df = pd.DataFrame({"h": pd.Series([[1, 2, 3], [4]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
>>> [v.tolist() for v in irs.Workflow(["h"] >> ListSlice(-2, pad=True)).fit_transform(df)["h"]]
[[2, 3], [4, 0]]
>>> wf = irs.Workflow(["h"] >> ValueCount()).fit(df)
>>> wf.output_schema["h"].properties["value_count"]
{'min': 1, 'max': 3}
"""

from __future__ import annotations

from typing import Any

from interactive_recsys.errors import SchemaError
from interactive_recsys.ops._base import Operator, StatOperator
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import ColumnSchema, is_numeric_dtype
from interactive_recsys.tables._context import OpContext


def require_list(op: Operator, col: ColumnSchema) -> None:
    """Raise a clear error when ``col`` is not a list column."""
    if not col.is_list:
        raise SchemaError(f"{type(op).__name__} works on list columns, but column {col.name!r} "
                          f"has dtype {col.dtype}. Select only list columns (e.g. a Groupby "
                          "'list' aggregation or a multi-hot column).")


class ListSlice(Operator):
    """``row[start:end]`` of every list, with Python's slice rules (negative counts from the
    end); with ``pad=True`` every non-null row is padded at the end with ``pad_value`` to the
    slice's length (null rows stay null)."""

    summary = "Keep a slice of every list (e.g. the last 20 items), optionally padded"
    category = "sequences"
    start = Param(kind="int", doc="First position kept (negative: from the end).")
    end = Param(None, kind="int", nullable=True,
                doc="Position after the last kept (negative: from the end); None: to the end.")
    pad = Param(False, kind="bool", doc="Pad every list to the slice's length.")
    pad_value = Param(0, kind="scalar", doc="Value appended when padding.")

    def check_params(self) -> None:
        if self.pad and self.pad_length is None:
            raise param_error("pad", "ListSlice", f"needs a slice of fixed "
                              f"length (start and end both >= 0, or start < 0 and end < 0 or "
                              f"None); [{self.start}:{self.end}] has none.")

    @property
    def pad_length(self) -> int | None:
        """The length every padded row gets, or None when the slice's length varies."""
        start, end = self.start, self.end
        if start >= 0 and end is not None and end >= 0:
            length = end - start
        elif start < 0 and (end is None or end < 0):
            length = (0 if end is None else end) - start
        else:
            return None
        return length if length > 0 else None

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        require_list(self, col)
        props = {k: v for k, v in col.properties.items() if k != "value_count"}
        if self.pad:
            if isinstance(self.pad_value, str) != (not is_numeric_dtype(col.dtype)):
                raise SchemaError(f"ListSlice cannot pad column {col.name!r} ({col.dtype}) with "
                                  f"{self.pad_value!r}; use a pad_value of the element type.")
            props["value_count"] = {"min": self.pad_length, "max": self.pad_length}
        return col.with_(properties=props)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        length = self.pad_length if self.pad else None
        return b.with_columns(df, {n: b.list_slice(b.column(df, n), self.start, self.end, length,
                                                   self.pad_value) for n in df.columns})


class ValueCount(StatOperator):
    """Record the shortest and longest list of each list column in the schema, as the
    ``value_count`` property ``{"min": ..., "max": ...}`` (data unchanged)."""

    summary = "Record min/max list length in the schema (value_count)"
    state_shape = {"value_count": ("map", "any")}
    category = "sequences"

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        require_list(self, col)
        if state is None or state["value_count"].get(col.name) is None:
            return col
        return col.with_(properties={**col.properties,
                                     "value_count": dict(state["value_count"][col.name])})

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, Any]:
        b = ctx.backend
        return {n: b.list_length_range(b.column(df, n)) for n in df.columns}

    def fit_combine(self, partials: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for part in partials:
            for name, rng in part.items():
                old = out.get(name)
                out[name] = rng if old is None else old if rng is None else (
                    min(old[0], rng[0]), max(old[1], rng[1]))
        return out

    def fit_finalize(self, partial: dict[str, Any], ctx: OpContext) -> dict[str, Any]:
        return {"value_count": {n: None if r is None else {"min": int(r[0]), "max": int(r[1])}
                                for n, r in partial.items()}}

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: Any) -> dict[str, Any]:
        """The shortest and longest lists of both datasets."""
        ranges = [{n: None if r is None else (r["min"], r["max"])
                   for n, r in s["value_count"].items()} for s in (old, new)]
        return self.fit_finalize(self.fit_combine(ranges), ctx)

    def update_changes_seen_rows(self, old: dict[str, Any], merged: dict[str, Any]) -> bool:
        return False  # the data passes unchanged

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return df
