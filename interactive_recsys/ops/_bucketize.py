"""Bucket continuous values by fixed boundaries."""

from __future__ import annotations

import itertools
from typing import Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.ops._base import Operator, require_numeric
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema, Tags
from interactive_recsys.tables._context import OpContext


class Bucketize(Operator):
    """Bucket id = number of boundaries ``<= x`` (so ``len(boundaries) + 1`` buckets).

    Like ``numpy.digitize(x, boundaries)``; nulls stay null.

    >>> import pandas as pd, interactive_recsys as irs
    >>> irs.Workflow(["x"] >> Bucketize([0, 10])).fit_transform(
    ...     pd.DataFrame({"x": [-1, 0, 5, 10, 99]}))["x"].tolist()
    [0, 1, 1, 2, 2]
    """

    summary = "Bucket values by fixed boundaries"
    boundaries = Param(kind="numbers", doc="Sorted bucket boundaries.")

    def check_params(self) -> None:
        b = self.boundaries
        if not b:
            raise ParameterError("Bucketize's boundaries is empty; give at least one boundary.")
        if any(x >= y for x, y in itertools.pairwise(b)):
            raise ParameterError(f"Bucketize's boundaries must be strictly increasing. Got {b}.")

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        require_numeric(self, col)
        props = {**col.properties, "cardinality": len(self.boundaries) + 1}
        return col.with_(dtype="int64", properties=props).with_tags(
            add=[Tags.CATEGORICAL], remove=[Tags.CONTINUOUS])

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        return b.with_columns(df, {n: b.digitize(b.column(df, n), self.boundaries)
                                   for n in df.columns})
