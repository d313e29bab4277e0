"""JoinGroupby: statistics of continuous columns per category, joined back to every row.

Select the categorical columns; the continuous ones (``cont_cols``) are read from the
workflow input if not selected too (NVTabular's form ``["C6"] >> JoinGroupby(cont_cols=["I5"])``,
where ``I5`` does not become an output), or from the selection. Every other selected group is
a key: a plain column, or a group of columns (``[["a", "b"]]``) whose
combination is the key. The outputs, named like NVTabular's, are ``<key>_count`` (rows of
the category in the fitted data) and ``<key>_<cont>_<stat>`` for every other statistic.

* ``sum``, ``mean``, ``std``, ``var`` are float64 (``std``/``var`` with ``ddof=1`` as pandas);
  ``min``/``max`` keep the continuous column's dtype; ``count`` is int64;
* missing values (null or NaN) of a continuous column are skipped; a category with none
  gets a null mean/min/max, a null std/var below two values, and a sum of 0;
* a category not seen by ``fit`` gets count 0 and nulls; a null key gets nulls.

The statistics are built with the hash-partitioned tree reduction of
``tables._keyed_statistics`` (bounded memory per task, any cardinality) and stored as
parquet under the artifacts.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"item": ["a", "b", "a", "a"], "price": [1.0, 5.0, 2.0, 6.0]})
>>> wf = irs.Workflow(["item", "price"] >> JoinGroupby(["price"], stats=["count", "mean"]))
>>> wf.fit_transform(df)
   item_count  item_price_mean
0           3              3.0
1           1              5.0
2           3              3.0
3           3              3.0
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import merge_moments
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.ops._base import StateFolders, StatOperator, group_names, merged_directory
from interactive_recsys.ops._state_check import TABLE
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import ColumnSchema, Schema, Tags, is_numeric_dtype
from interactive_recsys.store._artifacts import key_directory
from interactive_recsys.tables import _keyed_statistics as ks
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._reduce import MAX_SPLITS, delayed_task, num_splits

STATS = ("count", "sum", "mean", "std", "var", "min", "max")


class JoinGroupby(StatOperator):
    """Per-category statistics of ``cont_cols`` joined to each row (see the module docstring)."""

    summary = "Per-category count/sum/mean/std/var/min/max of continuous columns"
    state_shape = {"tables": ("map", TABLE)}
    category = "statistics"
    cont_cols = Param((), kind="strs", columns=True,
                      doc="Continuous columns to summarise per category (select them too, "
                          "or give a step: cont_cols=node).")
    stats = Param(STATS, kind="strs", doc="Statistics: count, sum, mean, std, var, min, max.")
    split_out = Param(None, kind="int", low=1, high=MAX_SPLITS, nullable=True,
                      doc="Hash splits of the statistics build (None: about 8M rows each).")

    def check_params(self) -> None:
        unknown = [s for s in self.stats if s not in STATS]
        if unknown or not self.stats:
            raise param_error("stats", "JoinGroupby", f"must list some of "
                              f"{', '.join(STATS)}. Got {list(self.stats)!r} instead.")
        if len(set(self.stats)) != len(self.stats) or len(set(self.cont_cols)) != len(
                self.cont_cols):
            raise param_error(("stats", "cont_cols"), "JoinGroupby", "must "
                              "not repeat a name.")
        if any(s != "count" for s in self.stats) and not self.cont_cols:
            raise ParameterError("JoinGroupby needs 'cont_cols' for statistics other than "
                                 f"'count' (stats={list(self.stats)!r}); name the continuous "
                                 "columns, e.g. cont_cols=['price'], or use stats=['count'].")

    # ---- columns --------------------------------------------------------------------------
    def dependencies(self) -> list[str]:
        """Columns read from the workflow input when not selected (NVTabular's form
        ``["C6"] >> JoinGroupby(cont_cols=["I5"])``)."""
        return self.named_columns("cont_cols")

    def state_keys(self, groups: Sequence[tuple[str, ...]]) -> dict[str, list[str]]:
        return {"tables": list(self.key_groups([tuple(g) for g in groups]))}

    def key_groups(self, groups: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        """Output prefix -> key columns: every selected group but the continuous columns."""
        conts = {(c,) for c in self.cont_cols}
        return group_names(self, [g for g in groups if tuple(g) not in conts],
                           outputs=lambda key: [n for n, _, _ in self.output_names(key)])

    def output_names(self, key: str) -> list[tuple[str, str | None, str]]:
        """``(output column, continuous column or None, statistic)`` of one key."""
        out = [(f"{key}_count", None, "count")] if "count" in self.stats else []
        return out + [(f"{key}_{c}_{s}", c, s) for c in self.cont_cols for s in self.stats
                      if s != "count"]

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        groups = [tuple(g) for g in groups]
        for c in self.cont_cols:
            if c not in input_schema:
                raise SchemaError(f"JoinGroupby needs the continuous column {c!r} (cont_cols) in "
                                  f"its input; select it next to the categories, e.g. "
                                  f"[..., {c!r}] >> JoinGroupby(cont_cols=[{c!r}]).")
            col = input_schema[c]
            if col.is_list or not is_numeric_dtype(col.dtype):
                raise SchemaError(f"JoinGroupby needs numeric continuous columns, but column "
                                  f"{c!r} (cont_cols) has dtype {col.dtype}. Cast or encode it "
                                  "first.")
        keys = self.key_groups(groups)
        if not keys:
            raise SchemaError("JoinGroupby has no categorical column to group by: select the "
                              f"categories next to the continuous columns {list(self.cont_cols)}.")
        cols = []
        for key, group in keys.items():
            for n in group:
                if input_schema[n].is_list:
                    raise SchemaError(f"JoinGroupby cannot group by the list column {n!r}; "
                                      "group by plain columns.")
            for name, cont, stat in self.output_names(key):
                if stat == "count":
                    dtype = "int64"
                elif stat in ("min", "max"):
                    dtype = input_schema[cont].dtype
                else:
                    dtype = "float64"
                cols.append(ColumnSchema(name, dtype, {Tags.CONTINUOUS},
                                         {"source": list(group), "statistic": stat}))
        return Schema(cols)

    # ---- fit ------------------------------------------------------------------------------
    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, list[pa.Table]]:
        b = ctx.backend
        conts = {f"x{i}": b.column(df, c) for i, c in enumerate(self.cont_cols)}
        aggs = [("size", "", "size")]
        for i in range(len(self.cont_cols)):
            aggs += [(f"n{i}", f"x{i}", "count"), (f"s{i}", f"x{i}", "sum"),
                     (f"v{i}", f"x{i}", "var0"), (f"lo{i}", f"x{i}", "min"),
                     (f"hi{i}", f"x{i}", "max")]
        splits = num_splits(ctx.run.num_rows, ctx.run.npartitions,
                            self.split_out)
        out = {}
        for key, group in self.key_groups(ctx.groups).items():
            t = b.keyed_aggregate({"value": ks.key_values(df, group, ctx)}, conts, aggs)
            cols = {"value": t["value"], "size": pc.cast(t["size"], pa.int64())}
            for i in range(len(self.cont_cols)):
                n = pc.cast(t[f"n{i}"], pa.int64())
                cols.update({f"n{i}": n, f"s{i}": ks.filled(t[f"s{i}"], pa.float64()),
                             f"m2_{i}": pc.multiply(ks.filled(t[f"v{i}"], pa.float64()),
                                                    pc.cast(n, pa.float64())),
                             f"lo{i}": t[f"lo{i}"], f"hi{i}": t[f"hi{i}"]})
            out[key] = vocab.split_counts(ks.canonical_keys(pa.table(cols)), splits)
        return out

    def fit_graph(self, partials: list[Any], ctx: OpContext) -> Any:
        keys = list(self.key_groups(ctx.groups))
        splits = num_splits(ctx.run.num_rows, ctx.run.npartitions,
                            self.split_out)
        tables = ks.fit_tables(partials, ctx, keys, splits,
                               functools.partial(merge_moments, columns=len(self.cont_cols)),
                               self.finish)
        return delayed_task(ctx.node_id, "state", _state, tables)

    def finish(self, merged: pa.Table, key: str) -> pa.Table:
        """The output statistics of one key's merged split (plus its ``value`` column)."""
        cols = {"value": merged["value"]}
        index = {c: i for i, c in enumerate(self.cont_cols)}
        for name, cont, stat in self.output_names(key):
            if stat == "count":
                cols[name] = pc.cast(merged["size"], pa.int64())
                continue
            i = index[cont]
            n = merged[f"n{i}"].to_numpy().astype(np.float64)
            if stat == "sum":
                cols[name] = pc.cast(merged[f"s{i}"], pa.float64())
            elif stat == "mean":
                cols[name] = pa.array(merged[f"s{i}"].to_numpy() / np.where(n > 0, n, 1),
                                      mask=n == 0)
            elif stat in ("var", "std"):
                var = merged[f"m2_{i}"].to_numpy() / np.where(n > 1, n - 1, 1)
                cols[name] = pa.array(np.sqrt(var) if stat == "std" else var, mask=n < 2)
            else:
                cols[name] = merged[f"{'lo' if stat == 'min' else 'hi'}{i}"]
        for name in merged.column_names[1:]:  # the partial sums, for exact merges (update)
            cols[ks.PARTIAL + name] = merged[name]
        return pa.table(cols)

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: StateFolders) -> dict[str, Any]:
        """Per category: counts and sums added, spreads merged by Chan et al.'s formula,
        min and max of both, exactly as the fit's tree merges partitions."""
        merge = functools.partial(merge_moments, columns=len(self.cont_cols))
        tables = {}
        for number, key in enumerate(self.key_groups(ctx.groups)):
            before = ks.read_splits(folders.old, old["tables"][key], ctx.storage_options)
            if not any(n.startswith(ks.PARTIAL) for n in before.column_names):
                raise self.not_mergeable(ctx, "it was fitted by a version that did not keep "
                                              "its partial sums")
            after = ks.read_splits(folders.new, new["tables"][key], ctx.storage_options)
            tables[key] = ks.merge_tables(
                ks.partial_columns(before), ks.partial_columns(after), merge, self.finish, key,
                ctx.artifacts_dir or ".",
                key_directory(merged_directory(ctx), number, "table"),
                old["tables"][key]["splits"], ctx.storage_options)
        return _state(tables)

    # ---- transform ------------------------------------------------------------------------
    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        out = {}
        for key, group in self.key_groups(ctx.groups).items():
            values = ks.key_values(df, group, ctx)
            found = ks.lookup(values, state["tables"][key], ctx)
            for name, _, stat in self.output_names(key):
                col = found[name]
                if stat == "count":  # an unseen category was seen 0 times
                    known = pa.array(~b.null_mask(values))
                    col = pc.if_else(known, pc.fill_null(col, 0), pa.scalar(None, pa.int64()))
                out[name] = b.from_arrow_array(col)
        names = list(out)
        return b.select(b.with_columns(df, out), names)


def _state(tables: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tables": tables}
