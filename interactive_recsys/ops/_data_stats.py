"""DataStats: a report of every selected column; the data passes unchanged.

Per column: ``dtype``, ``rows``, ``missing`` (null, or NaN) and ``missing_pct``,
``cardinality`` (distinct non-missing values, counted through their 64-bit value hash), and
for numeric columns ``min``, ``max``, ``mean``, ``std`` (``ddof=1``) of the finite values.
For list columns ``missing`` counts null lists and the other figures describe the elements.
The report is the operator's fitted state: read it with
``DataStats.report``. The state also keeps each column's moments and its
distinct value hashes (a parquet file under the artifacts), so ``Workflow.update`` merges new data
into the report exactly.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> wf = irs.Workflow(["x", "c"] >> DataStats())
>>> _ = wf.fit(pd.DataFrame({"x": [1.0, 3.0, None, 5.0], "c": ["a", "b", "a", None]}))
>>> list(DataStats.report(wf))   # one report per DataStats step
['datastats-1']
>>> report = DataStats.report(wf)["datastats-1"]
>>> report["x"]["mean"], report["x"]["std"], report["x"]["missing_pct"], report["c"]["cardinality"]
(3.0, 2.0, 25.0, 2)
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pyarrow as pa

from interactive_recsys.ops._base import StateFolders, StatOperator, merged_directory
from interactive_recsys.schema import is_numeric_dtype
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._moments import column_moments, merge_summaries
from interactive_recsys.tables._vocabulary import write_table_file


class DataStats(StatOperator):
    """Per-column min/max/mean/std/cardinality/% missing (see the module docstring)."""

    summary = "Report min/max/mean/std/cardinality/% missing per column; data unchanged"
    state_shape = {"columns": ("map", "any")}
    category = "statistics"

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, dict[str, Any]]:
        b = ctx.backend
        out = {}
        for name in df.columns:
            col = b.column(df, name)
            dtype = b.dtype(col)
            values = b.list_values(col) if dtype.startswith("list<") else col
            present = ~b.missing_mask(values)
            out[name] = {"dtype": dtype, "rows": b.length(col),
                         "missing": int(b.missing_mask(col).sum()),
                         "hashes": np.unique(b.hash64(values)[present]),
                         "moments": column_moments(b, values) if is_numeric_dtype(dtype)
                         else None}
        return out

    def fit_combine(self, partials: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        out = {}
        for name, first in partials[0].items():
            parts = [p[name] for p in partials]
            out[name] = {"dtype": first["dtype"], "rows": sum(p["rows"] for p in parts),
                         "missing": sum(p["missing"] for p in parts),
                         "hashes": np.unique(np.concatenate([p["hashes"] for p in parts])),
                         "moments": merge_summaries([p["moments"] for p in parts])
                         if first["moments"] is not None else None}
        return out

    def fit_finalize(self, partial: dict[str, Any], ctx: OpContext) -> dict[str, Any]:
        return self._state(partial, os.path.join(ctx.artifacts_dir or ".", ctx.node_id), ctx)

    def _state(self, partial: dict[str, Any], directory: str,
               ctx: OpContext) -> dict[str, Any]:
        """The report, the moments, and the distinct hashes written under ``directory``."""
        columns, moments, hashes = {}, {}, {}
        for number, (name, p) in enumerate(partial.items()):
            rows = p["rows"]
            report = {"dtype": p["dtype"], "rows": rows, "missing": p["missing"],
                      "missing_pct": 100.0 * p["missing"] / rows if rows else 0.0,
                      "cardinality": len(p["hashes"]),
                      "min": None, "max": None, "mean": None, "std": None}
            m = p["moments"]
            if m is not None and m["count"]:
                report.update(min=m["min"], max=m["max"], mean=m["mean"],
                              std=m["root"] / math.sqrt(m["count"] - 1)
                              if m["count"] > 1 else None)
            columns[name] = report
            moments[name] = m
            path = os.path.join(directory, f"hashes-{number:03d}.parquet")
            write_table_file(pa.table({"hash": pa.array(p["hashes"], pa.uint64())}), path,
                             ctx.storage_options)
            hashes[name] = os.path.relpath(path, ctx.artifacts_dir or ".")
        return {"columns": columns, "moments": moments, "hashes": hashes}

    def check_mergeable(self, state: dict[str, Any], ctx: OpContext) -> None:
        if "hashes" not in state or "moments" not in state:
            raise self.not_mergeable(ctx, "it was fitted by a version that did not keep its "
                                          "moments and value hashes")

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: StateFolders) -> dict[str, Any]:
        """The report of both datasets: counts added, moments and distinct hashes merged."""
        self.check_mergeable(old, ctx)
        partial = {}
        for name, report in new["columns"].items():
            before = old["columns"][name]
            parts = [_hashes(folders.old, old["hashes"][name], ctx),
                     _hashes(folders.new, new["hashes"][name], ctx)]
            moments = [m and {k: math.nan if v is None else v for k, v in m.items()}
                       for m in (old["moments"][name], new["moments"][name])]
            partial[name] = {"dtype": report["dtype"],
                             "rows": before["rows"] + report["rows"],
                             "missing": before["missing"] + report["missing"],
                             "hashes": np.union1d(*parts),
                             "moments": merge_summaries(moments) if moments[1] else None}
        return self._state(partial, merged_directory(ctx), ctx)

    def update_changes_seen_rows(self, old: dict[str, Any], merged: dict[str, Any]) -> bool:
        return False  # the data passes unchanged

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return df

    @staticmethod
    def report(workflow: Any) -> dict[str, dict[str, dict[str, Any]]]:
        """``{step id: {column: figures}}`` of every fitted DataStats step of ``workflow``."""
        return {step.node_id: step.state["columns"]
                for step in workflow.fitted_steps(DataStats)}


def _hashes(root: str | None, relative: str, ctx: OpContext) -> np.ndarray:
    path = resolve(root, relative, "value hashes path")
    return storage.read_table(path, ctx.storage_options)["hash"].to_numpy()
