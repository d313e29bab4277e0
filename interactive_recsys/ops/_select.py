"""SelectColumns and DropColumns: keep or drop some of the columns a step produces.

Input selections (``["a", "b"] >> op``) pick columns of the dataset; this operator picks
columns of an operator's output, e.g. the list columns of a Groupby before a ListSlice:

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> sessions = ["user", "item"] >> ops.Groupby(["user"])
>>> last = sessions >> SelectColumns(["item_list"]) >> ops.ListSlice(-1)
>>> wf = irs.Workflow((sessions >> SelectColumns(["user"])) + last)
>>> out = wf.fit_transform(pd.DataFrame({"user": [1, 1, 2], "item": [5, 6, 7]}))
>>> out["user"].tolist(), [v.tolist() for v in out["item_list"]]
([1, 2], [[6], [7]])

``node["a"]`` and ``node - ["a"]`` (as in NVTabular) are these operators after ``node``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import SchemaError
from interactive_recsys.ops._base import Operator
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import Schema
from interactive_recsys.tables._context import OpContext


class SelectColumns(Operator):
    """Keep only ``columns`` (in that order) of the incoming columns."""

    summary = "Keep some of the incoming columns"
    category = "columns"
    keeps_columns = True
    schema_only = True
    columns = Param(kind="strs", doc="Names of the columns to keep, in output order.")

    def check_params(self) -> None:
        if not self.columns:
            raise param_error("columns", "SelectColumns", "needs at least one "
                              "column name.")

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        missing = [c for c in self.columns if c not in input_schema]
        if missing:
            raise SchemaError(f"SelectColumns keeps {missing}, which are not among the incoming "
                              f"columns {input_schema.names}.")
        return input_schema.select(self.columns)

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        return output if output in inputs else None

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return ctx.backend.select(df, self.columns)


class DropColumns(Operator):
    """Keep every incoming column but ``columns`` (``node - ["a"]``).

    >>> import pandas as pd, interactive_recsys as irs
    >>> node = ["a", "b", "c"] >> DropColumns(["b"])
    >>> irs.Workflow(node).fit_transform(pd.DataFrame({"a": [1], "b": [2], "c": [3]}))
       a  c
    0  1  3
    """

    summary = "Drop some of the incoming columns"
    category = "columns"
    keeps_columns = True
    schema_only = True
    columns = Param(kind="strs", doc="Names of the columns to drop.")

    def check_params(self) -> None:
        if not self.columns:
            raise param_error("columns", "DropColumns", "needs at least one column name.")

    def kept(self, names: Sequence[str]) -> list[str]:
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise SchemaError(f"DropColumns drops {missing}, which are not among the incoming "
                              f"columns {list(names)}; fix the names.")
        kept = [n for n in names if n not in self.columns]
        if not kept:
            raise SchemaError(f"DropColumns would drop every incoming column {list(names)}; "
                              "keep at least one.")
        return kept

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        return input_schema.select(self.kept(input_schema.names))

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        return output if output in inputs else None

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return ctx.backend.select(df, self.kept(list(df.columns)))
