"""Row filters: keep rows by an expression (Filter) or drop rows with missing values (Dropna).

A row filter drops rows from the whole workflow output, wherever it stands in the
graph; statistics downstream of it see only the kept rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.ops._base import RowFilter
from interactive_recsys.ops._expressions import evaluate, names_in, parse
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import Schema
from interactive_recsys.tables._context import OpContext


class Filter(RowFilter):
    """Keep the rows where a boolean expression over the selected columns is true.

    >>> import pandas as pd, interactive_recsys as irs
    >>> wf = irs.Workflow(["r"] >> Filter("r >= 4"))
    >>> wf.fit_transform(pd.DataFrame({"r": [3, 5]}))["r"].tolist()
    [5]
    """

    summary = "Keep rows where an expression is true"
    expr = Param(kind="str", doc="Boolean expression, e.g. 'rating >= 4'.")

    def check_params(self) -> None:
        try:
            parse(self.expr)
        except ParameterError as exc:
            raise param_error("expr", "Filter", f"is invalid: {exc}") from None

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        missing = names_in(self.expr) - set(input_schema.names)
        if missing:
            raise SchemaError(f"Filter({self.expr!r}) reads {sorted(missing)}, which are not "
                              f"among its selected columns {input_schema.names}.")
        return input_schema

    def row_mask(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        cols = {n: b.series(b.column(df, n)) for n in df.columns}
        result = evaluate(self.expr, cols)
        if not hasattr(result, "dtype") or "bool" not in str(result.dtype):
            raise SchemaError(f"Filter({self.expr!r}) must give booleans; it gave "
                              f"{getattr(result, 'dtype', type(result).__name__)}.")
        return b.from_series(result)


class Dropna(RowFilter):
    """Drop the rows where any selected column is null (or NaN).

    >>> import pandas as pd, interactive_recsys as irs
    >>> irs.Workflow(["a"] >> Dropna()).fit_transform(pd.DataFrame({"a": [1, None]}))["a"].tolist()
    [1.0]
    """

    summary = "Drop rows with missing values"

    def row_mask(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        keep = None
        for n in df.columns:
            present = b.invert(b.is_missing(b.column(df, n)))
            keep = present if keep is None else b.logical_and(keep, present)
        return keep
