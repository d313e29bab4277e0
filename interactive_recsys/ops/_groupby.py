"""Groupby: one row per key with aggregated columns, e.g. each user's history as lists.

Rows of a key may lie in any partitions: the workflow hash-partitions the rows by
``groupby_cols`` first (a Dask shuffle, see :meth:`~interactive_recsys.ops.Operator.shuffle_keys`),
so every key is aggregated whole (Dask's task-based shuffle; the dask config key
``interactive-recsys.shuffle-method`` names another, but ``"p2p"`` fails on list columns
with distributed 2026.8).
NVTabular's Groupby instead needs data already partitioned by key. Within a
key, rows are ordered by ``sort_cols`` (ties, and everything without ``sort_cols``, in dataset
order), which is the order of ``list`` values and what ``first``/``last`` mean.

A ``list`` of a list column is a list of lists (e.g. the genres of each item in a history).
Null keys form their own group. Aggregations skip nulls (``count`` counts non-null values;
``sum`` of no values is 0; ``first``/``last`` are the first/last non-null values).
Output columns: the keys, then ``<column><name_sep><aggregation>`` in input-column order;
output rows are sorted by key within each partition.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"user": [1, 2, 1, 1], "item": [7, 8, 9, 5], "ts": [2, 1, 3, 1]})
>>> op = Groupby(["user"], sort_cols=["ts"], aggs={"item": ["list", "count", "last"]})
>>> out = irs.Workflow(["user", "item", "ts"] >> op).fit_transform(df)
>>> [v.tolist() for v in out["item_list"]], out["item_count"].tolist(), out["item_last"].tolist()
([[5, 7, 9], [8]], [3, 1], [9, 8])
>>> list(out.columns)
['user', 'item_list', 'item_count', 'item_last']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import SchemaError
from interactive_recsys.ops._base import Operator
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import ColumnSchema, Schema, Tags, is_float_dtype, is_integer_dtype
from interactive_recsys.tables._context import OpContext

#: Supported aggregations (``list`` keeps every value in order).
AGGREGATIONS = ("list", "count", "first", "last", "sum", "mean", "min", "max", "std", "var")
_NUMERIC_ONLY = ("sum", "mean", "std", "var")


class Groupby(Operator):
    """Aggregate rows by key across all partitions (session / user-history lists)."""

    summary = "Aggregate rows per key into lists and statistics (shuffles by key)"
    category = "sequences"
    groupby_cols = Param(kind="strs", columns=True,
                         doc="Key columns: one output row per distinct key.")
    sort_cols = Param(None, kind="strs", nullable=True, columns=True,
                      doc="Order of rows within a key (e.g. a timestamp); None: dataset order.")
    aggs = Param("list", kind="any", doc="An aggregation, a list of them (for every non-key "
                 "column) or {column: [aggregations]}; among " + ", ".join(AGGREGATIONS) + ".")
    name_sep = Param("_", kind="str", doc="Separator in output names (column_sep_aggregation).")

    def check_params(self) -> None:
        if not self.groupby_cols:
            raise param_error("groupby_cols", "Groupby", "needs at least one "
                              "column.")
        aggs = self.aggs
        lists = aggs.values() if isinstance(aggs, dict) else [aggs]
        for value in lists:
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list | tuple) or not names or any(
                    n not in AGGREGATIONS for n in names):
                raise param_error("aggs", "Groupby", f"must be one of "
                                  f"{AGGREGATIONS}, a list of them, or a mapping of column "
                                  f"names to those. Got {aggs!r} instead.")
        if isinstance(aggs, dict):  # tuples become lists, as after a JSON round trip
            self._params["aggs"] = {k: v if isinstance(v, str) else list(v)
                                    for k, v in aggs.items()}
        elif isinstance(aggs, tuple):
            self._params["aggs"] = list(aggs)

    def shuffle_keys(self) -> list[str]:
        return list(self.groupby_cols)

    @property
    def changes_rows(self) -> bool:  # output row i is not input row i
        return True

    def plan(self, schema: Schema) -> list[tuple[str, str, str]]:
        """``(column, aggregation, output name)`` of every output column but the keys."""
        for name in [*self.groupby_cols, *(self.sort_cols or [])]:
            if name not in schema:
                raise SchemaError(f"Groupby reads column {name!r}, which is not among its input "
                                  f"columns {schema.names}; select it as input.")
            if schema[name].is_list:
                raise SchemaError(f"Groupby cannot group or sort by the list column {name!r}.")
        if isinstance(self.aggs, dict):
            wanted = {c: [a] if isinstance(a, str) else a for c, a in self.aggs.items()}
            for name in wanted:
                if name not in schema:
                    raise SchemaError(f"Groupby aggregates column {name!r}, which is not among "
                                      f"its input columns {schema.names}; select it as input.")
        else:
            names = [self.aggs] if isinstance(self.aggs, str) else self.aggs
            wanted = {c: names for c in schema.names if c not in self.groupby_cols}
        out = []
        for name in schema.names:
            for agg in wanted.get(name, []):
                col = schema[name]
                numeric = is_integer_dtype(col.dtype) or is_float_dtype(col.dtype)
                if (col.is_list and agg != "list") or (agg in _NUMERIC_ONLY and not numeric):
                    why = "a list column can only be collected ('list')" if col.is_list else \
                        "it needs a numeric column"
                    raise SchemaError(f"Groupby cannot compute {agg!r} of column {name!r} (dtype "
                                      f"{col.dtype}): {why}.")
                out.append((name, agg, f"{name}{self.name_sep}{agg}"))
        return out

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        """A key column holds its input values (one row per key)."""
        return output if output in self.groupby_cols and output in inputs else None

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        keys = [input_schema[k] for k in self.groupby_cols]
        return Schema(keys + [_aggregated(input_schema[c], a, n)
                              for c, a, n in self.plan(input_schema)])

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        schema = b.schema_of(df)
        keys = list(self.groupby_cols)
        order = keys + [c for c in self.sort_cols or [] if c not in keys]
        aggs = self.plan(schema)
        out = b.group_aggregate(b.sort_rows_by(df, order), keys, aggs)
        expected = self.output_schema(schema, ctx.groups)
        casts = {n: b.cast(b.column(out, n), expected[n].dtype) for n in expected.names
                 if b.dtype(b.column(out, n)) != expected[n].dtype}
        return b.with_columns(out, casts) if casts else out


def _aggregated(col: ColumnSchema, agg: str, name: str) -> ColumnSchema:
    """The schema of one aggregated column."""
    continuous = frozenset({Tags.CONTINUOUS.value})
    if agg == "list":
        props = {k: v for k, v in col.properties.items() if k != "value_count"}
        return ColumnSchema(name, f"list<{col.dtype}>", col.tags | {Tags.LIST.value}, props)
    if agg in ("first", "last", "min", "max"):
        return col.with_(name=name)
    if agg == "count":
        return ColumnSchema(name, "int64", continuous)
    dtype = "int64" if agg == "sum" and is_integer_dtype(col.dtype) else "float64"
    return ColumnSchema(name, dtype, continuous)
