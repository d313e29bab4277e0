"""Logarithm of counters."""

from __future__ import annotations

from typing import Any

from interactive_recsys.ops._base import Operator, require_numeric, transform_elementwise
from interactive_recsys.schema import ColumnSchema, Tags
from interactive_recsys.tables._context import OpContext


class LogOp(Operator):
    """``log(1 + x)`` as float32 (values below -1 give NaN: clip them first).

    >>> import pandas as pd, interactive_recsys as irs
    >>> out = irs.Workflow(["x"] >> LogOp()).fit_transform(pd.DataFrame({"x": [0, 9]}))
    >>> [round(v, 4) for v in out["x"].tolist()]
    [0.0, 2.3026]
    """

    summary = "log(1 + x), as float32"
    online = True

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        require_numeric(self, col)
        return col.with_(dtype="float32").with_tags(add=[Tags.CONTINUOUS],
                                                     remove=[Tags.CATEGORICAL])

    def elementwise(self, state: dict[str, Any] | None, column: str) -> tuple:
        return ("log1p",)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return transform_elementwise(self, df, state, ctx)
