"""Clip numeric columns to a range."""

from __future__ import annotations

from typing import Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.ops._base import Operator, require_numeric, transform_elementwise
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema
from interactive_recsys.tables._context import OpContext


class Clip(Operator):
    """Clip values to ``[min_value, max_value]``; nulls stay null, the dtype is kept.

    >>> import pandas as pd, interactive_recsys as irs
    >>> irs.Workflow(["x"] >> Clip(min_value=0)).fit_transform(
    ...     pd.DataFrame({"x": [-2, 5]}))["x"].tolist()
    [0, 5]
    """

    summary = "Clip numeric values to a range"
    online = True
    min_value = Param(None, kind="number", nullable=True, doc="Lower bound (None: no bound).")
    max_value = Param(None, kind="number", nullable=True, doc="Upper bound (None: no bound).")

    def check_params(self) -> None:
        if self.min_value is None and self.max_value is None:
            raise ParameterError("Clip needs min_value, max_value or both; both are None.")
        if None not in (self.min_value, self.max_value) and self.min_value > self.max_value:
            raise ParameterError(f"Clip's min_value ({self.min_value}) is above its max_value "
                                 f"({self.max_value}); swap them.")

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        require_numeric(self, col)
        return col

    def elementwise(self, state: dict[str, Any] | None, column: str) -> tuple:
        return ("clip", self.min_value, self.max_value)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return transform_elementwise(self, df, state, ctx)
