"""Operators that change only the schema: tags and properties; the data passes unchanged.

Tags say what a column is for (``target``, ``item``, ``user``...) to the loaders and model
code downstream; properties carry free-form facts (an embedding size, a domain name).

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> wf = irs.Workflow(["click"] >> AddTags(["target"]) >> AddProperties({"positive": 1}))
>>> out = wf.fit_transform(pd.DataFrame({"click": [0, 1]}))
>>> col = wf.output_schema["click"]
>>> sorted(col.tags), col.properties, out["click"].tolist()
(['target'], {'positive': 1}, [0, 1])
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.ops._base import Operator
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import ColumnSchema
from interactive_recsys.tables._context import OpContext


class AddTags(Operator):
    """Add tags to every selected column (and optionally remove others)."""

    summary = "Add tags (target, item, user...) to columns; data unchanged"
    category = "schema"
    schema_only = True
    tags = Param(kind="strs", doc="Tags to add, e.g. ['target'] or ['item', 'id'].")
    remove = Param((), kind="strs", doc="Tags to remove.")

    def check_params(self) -> None:
        both = sorted(set(self.tags) & set(self.remove))
        if both:
            raise ParameterError(f"AddTags would both add and remove the tags {both}; list "
                                 "each tag in 'tags' or in 'remove', not both.")

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        return col.with_tags(add=self.tags, remove=self.remove)

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        return output if output in inputs else None

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return df


class AddProperties(Operator):
    """Set properties (JSON values) on every selected column."""

    summary = "Set schema properties (JSON values) on columns; data unchanged"
    category = "schema"
    schema_only = True
    properties = Param(kind="any", doc="Property names and JSON values, e.g. {'domain': 'x'}.")

    def check_params(self) -> None:
        props = self.properties
        ok = isinstance(props, dict) and all(isinstance(k, str) for k in props)
        if ok:
            try:
                json.dumps(props, allow_nan=False)
            except (TypeError, ValueError):
                ok = False
        if not ok:
            raise param_error("properties", "AddProperties", f"must be a mapping "
                              f"of strings to JSON values (numbers, strings, lists...). Got "
                              f"{props!r} instead.")

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        return col.with_(properties={**col.properties, **self.properties})

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        return output if output in inputs else None

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return df
