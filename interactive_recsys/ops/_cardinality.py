"""DropLowCardinality: drop the columns with fewer than ``min_cardinality`` distinct values.

Distinct non-missing values are counted through their 64-bit value hash; each partition
keeps at most ``min_cardinality`` of them per column, so the fit holds little memory
whatever the cardinality. List columns count their elements. The kept columns are known
after ``fit`` (the schema predicted before it keeps every column).

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"a": [1, 1, 1], "b": ["x", "y", "x"], "c": [1.0, None, 1.0]})
>>> wf = irs.Workflow(["a", "b", "c"] >> DropLowCardinality())
>>> list(wf.fit_transform(df).columns)   # a and c hold one value each
['b']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interactive_recsys.ops._base import StatOperator
from interactive_recsys.params import Param
from interactive_recsys.schema import Schema
from interactive_recsys.tables._context import OpContext


class DropLowCardinality(StatOperator):
    """Drop columns with fewer than ``min_cardinality`` distinct values (see the module)."""

    summary = "Drop columns with fewer than min_cardinality distinct values"
    state_shape = {"keep": ("list", "str"), "dropped": ("list", "str")}
    category = "statistics"
    min_cardinality = Param(2, kind="int", low=1,
                            doc="Columns with fewer distinct non-missing values are dropped.")

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        if state is None:
            return input_schema
        return Schema(input_schema[n] for n in input_schema.names if n in state["keep"])

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, np.ndarray]:
        b = ctx.backend
        out = {}
        for name in df.columns:
            col = b.column(df, name)
            values = b.list_values(col) if b.dtype(col).startswith("list<") else col
            hashes = b.hash64(values)[~b.missing_mask(values)]
            out[name] = np.unique(hashes)[:self.min_cardinality]
        return out

    def fit_combine(self, partials: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        return {n: np.unique(np.concatenate([p[n] for p in partials]))[:self.min_cardinality]
                for n in partials[0]}

    def fit_finalize(self, partial: dict[str, np.ndarray], ctx: OpContext) -> dict[str, Any]:
        counts = {n: len(h) for n, h in partial.items()}
        return {"keep": [n for n, c in counts.items() if c >= self.min_cardinality],
                "dropped": [n for n, c in counts.items() if c < self.min_cardinality]}

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return ctx.backend.select(df, [n for n in df.columns if n in state["keep"]])
