"""Rename columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.ops._base import Operator
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema, Schema
from interactive_recsys.tables._context import OpContext


class Rename(Operator):
    """Rename columns with a mapping, a prefix and/or a postfix.

    >>> import pandas as pd, interactive_recsys as irs
    >>> wf = irs.Workflow(["a"] >> Rename(postfix="_x"))
    >>> wf.fit_transform(pd.DataFrame({"a": [1]})).columns.tolist()
    ['a_x']
    """

    summary = "Rename columns"
    category = "columns"
    schema_only = True
    mapping = Param({}, kind="mapping", doc="Old name -> new name.")
    prefix = Param("", kind="str", doc="Text put before each name.")
    postfix = Param("", kind="str", doc="Text put after each name.")

    def check_params(self) -> None:
        if not (self.mapping or self.prefix or self.postfix):
            raise ParameterError("Rename needs a mapping, a prefix or a postfix; all are empty.")

    def new_name(self, name: str) -> str:
        return f"{self.prefix}{self.mapping.get(name, name)}{self.postfix}"

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        return next((n for n in inputs if self.new_name(n) == output), None)

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        return Schema(c.with_(name=self.new_name(c.name)) for c in input_schema.values())

    def column_schema(self, col: ColumnSchema,
                      state: dict[str, Any] | None) -> ColumnSchema:  # pragma: no cover
        return col.with_(name=self.new_name(col.name))

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return ctx.backend.rename(df, {n: self.new_name(n) for n in df.columns})
