"""DifferenceLag: the change since the previous (or to the next) row of the same key.

Rows of a key may lie in any partitions: the workflow first hash-partitions the rows by
``partition_cols`` (a Dask shuffle, see :meth:`~interactive_recsys.ops.Operator.shuffle_keys`), so
each key's rows meet in one partition, in dataset order. They are then sorted by ``partition_cols``
and ``sort_cols`` (stable: rows that tie keep their dataset order), and each row is compared with
the row ``shift`` places before it. Without ``sort_cols`` the dataset order is the time order,
as with NVTabular, but the data need not be pre-sorted or pre-partitioned by key.

The output rows are grouped by key, so every column needed downstream must be an input of
this operator (it passes them through).

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"user": [1, 2, 1, 1], "ts": [10, 5, 30, 15]})
>>> out = irs.Workflow(["user", "ts"] >> DifferenceLag(["user"], sort_cols=["ts"])
...                    ).fit_transform(df)
>>> out.values.tolist()
[[1, 10, <NA>], [1, 15, 5], [1, 30, 15], [2, 5, <NA>]]
>>> list(out.columns)
['user', 'ts', 'ts_difference_lag_1']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import SchemaError
from interactive_recsys.ops._base import Operator
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import ColumnSchema, Schema, Tags, is_float_dtype, is_integer_dtype
from interactive_recsys.tables._context import OpContext


class DifferenceLag(Operator):
    """``x - x[shift rows before]`` within each key (null where there is no such row)."""

    summary = "Difference to the previous/next row of the same key (shuffles by key)"
    category = "sequences"
    partition_cols = Param(kind="strs", columns=True,
                         doc="Key columns: rows are compared within a key.")
    shift = Param(1, kind="int", doc="Rows back to compare with (negative: rows ahead).")
    sort_cols = Param(None, kind="strs", nullable=True, columns=True,
                      doc="Order of rows within a key (e.g. a timestamp); None: dataset order.")
    columns = Param(None, kind="strs", nullable=True, columns=True,
                    doc="Columns to difference; None: every numeric input column but the keys.")

    def check_params(self) -> None:
        if not self.partition_cols:
            raise param_error("partition_cols", "DifferenceLag", "needs at "
                              "least one column.")
        if self.shift == 0:
            raise param_error("shift", "DifferenceLag", "must not be 0 (a row "
                              "minus itself); use 1 for the previous row, -1 for the next.")

    def shuffle_keys(self) -> list[str]:
        return list(self.partition_cols)

    @property
    def changes_rows(self) -> bool:  # output row i is not input row i
        return True

    def output_name(self, column: str) -> str:
        return f"{column}_difference_lag_{self.shift}"

    def diff_columns(self, schema: Schema) -> list[str]:
        """The columns that get a difference column (checked)."""
        needed = [*self.partition_cols, *(self.sort_cols or []), *(self.columns or [])]
        for name in needed:
            if name not in schema:
                raise SchemaError(f"DifferenceLag reads column {name!r}, which is not among its "
                                  f"input columns {schema.names}; select it as input.")
        if self.columns is None:
            return [c.name for c in schema.values() if c.name not in self.partition_cols
                    and not c.is_list and (is_integer_dtype(c.dtype) or is_float_dtype(c.dtype))]
        for name in self.columns:
            col = schema[name]
            if col.is_list or not (is_integer_dtype(col.dtype) or is_float_dtype(col.dtype)):
                raise SchemaError(f"DifferenceLag needs numeric columns to difference, but column "
                                  f"{name!r} has dtype {col.dtype}; leave it out of 'columns'.")
        return list(self.columns)

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        added = []
        for name in self.diff_columns(input_schema):
            dtype = "float64" if is_float_dtype(input_schema[name].dtype) else "int64"
            added.append(ColumnSchema(self.output_name(name), dtype, {Tags.CONTINUOUS}))
        return input_schema + Schema(added)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        schema = b.schema_of(df)
        keys = list(self.partition_cols)
        df = b.sort_rows_by(df, keys + [c for c in self.sort_cols or [] if c not in keys])
        return b.with_columns(df, {self.output_name(c): b.difference_lag(df, keys, c, self.shift)
                                   for c in self.diff_columns(schema)})
