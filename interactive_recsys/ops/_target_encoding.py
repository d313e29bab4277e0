"""TargetEncoding: smoothed mean of a target per category, out-of-fold on the training data.

The encoding of a category with ``count`` rows of mean target ``mean_cat`` is::

    (mean_cat * count + mean_global * p_smooth) / (count + p_smooth)

Select the categorical columns; the target and the ``fold_cols`` come from the workflow
input if not selected too (NVTabular's form ``["C1"] >> TargetEncoding("label")``). Every other
selected group (a column, or a group of columns whose combination is the key) is encoded
into ``TE_<key>_<target>``. Rows whose target is missing do not count; a null or unseen
category gets ``mean_global``.

**Training data versus new data.** A model must not see a row's own target through its
encoding, so on the training data each row is encoded from the *other* folds only:

* every row belongs to fold ``hash(fold columns, fold_seed) % kfold``; the hash is defined
  on the row's values (:mod:`interactive_recsys.hashing`), so ``fit`` and ``transform``
  assign the same fold to a row, on either backend, however the data is partitioned;
* ``Workflow.fit_transform(data)`` and ``Workflow.transform(data, training=True)`` use
  out-of-fold statistics: ``count``, ``mean_cat`` *and* ``mean_global`` are computed without
  the row's fold, so its own target never contributes to its encoding;
* ``Workflow.transform(data)`` (new data: validation, test, serving) uses the statistics of
  all the fitted rows.

Rows equal in every fold column share a fold. ``fold_cols`` defaults to every column the
operator reads (categories and target); rows with the same category and target then fall in
one fold, which biases their out-of-fold encodings. Select a column that tells rows apart (an
interaction id or a timestamp) and name it in ``fold_cols``, as below.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"item": ["a", "a", "a", "b"], "ts": [1, 2, 3, 4],
...                    "click": [1, 0, 1, 0]})
>>> te = ["item", "click", "ts"] >> TargetEncoding("click", p_smooth=1, fold_cols=["ts"])
>>> wf = irs.Workflow(te).fit(df)
>>> new = wf.transform(pd.DataFrame({"item": ["a", "z"], "click": [0, 0], "ts": [9, 9]}))
>>> new["TE_item_click"].round(4).tolist()   # (2 + 0.5) / (3 + 1); unseen: mean 0.5
[0.625, 0.5]
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import merge_sums
from interactive_recsys.errors import SchemaError
from interactive_recsys.ops._base import StateFolders, StatOperator, group_names, merged_directory
from interactive_recsys.ops._hashed_cross import row_hash
from interactive_recsys.ops._state_check import TABLE
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema, Schema, Tags, is_numeric_dtype
from interactive_recsys.store._artifacts import key_directory
from interactive_recsys.tables import _keyed_statistics as ks
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._reduce import (
    MAX_SPLITS,
    delayed_task,
    delayed_tasks,
    num_splits,
    tree,
)

_FOLD_SALT = np.uint64(0xD6E8FEB86659FD93)


def fold_ids(df: Any, columns: list[str], kfold: int, seed: int, ctx: OpContext) -> np.ndarray:
    """The fold of every row: a value-defined hash of ``columns`` and ``seed``, mod ``kfold``."""
    h = row_hash(df, columns, ctx, np.uint64(seed) ^ _FOLD_SALT)
    return (h % np.uint64(kfold)).astype(np.int64)


class TargetEncoding(StatOperator):
    """Out-of-fold smoothed target mean per category (see the module docstring)."""

    summary = "Smoothed target mean per category, out-of-fold on training data"
    state_shape = {"tables": ("map", TABLE),
                   "folds": {"count": ("list", "number?"), "sum": ("list", "number?")}}
    category = "categorical"
    target = Param(kind="str", columns=True,
                   doc="The numeric target column (select it too).")
    kfold = Param(5, kind="int", low=1, high=1000,
                  doc="Folds of the out-of-fold encoding of the training data (1: no folds, "
                      "the training rows see their own targets, as NVTabular's kfold=1).")
    p_smooth = Param(20, kind="number", low=0, doc="Weight of the global mean (smoothing).")
    fold_seed = Param(42, kind="int", low=0, high=2**63 - 1, doc="Seed of the fold hash.")
    fold_cols = Param(None, kind="strs", nullable=True, columns=True,
                      doc="Columns hashed into a row's fold (None: every column read).")
    out_dtype = Param("float32", choices=("float32", "float64"), doc="Output dtype.")
    split_out = Param(None, kind="int", low=1, high=MAX_SPLITS, nullable=True,
                      doc="Hash splits of the statistics build (None: about 8M rows each).")

    # ---- columns --------------------------------------------------------------------------
    def dependencies(self) -> list[str]:
        """Columns read from the workflow input when not selected (NVTabular's form
        ``["C1"] >> TargetEncoding("label")``)."""
        return self.named_columns("target", "fold_cols")

    def state_keys(self, groups: Sequence[tuple[str, ...]]) -> dict[str, list[str]]:
        return {"tables": list(self.key_groups([tuple(g) for g in groups]))}

    def check_state(self, state: dict[str, Any]) -> None:
        """Also check that the state holds one count and one sum per fold (``kfold``): a
        saved workflow whose ``kfold`` was changed by hand would fail at transform."""
        super().check_state(state)
        for name in ("count", "sum"):
            if len(state["folds"][name]) != self.kfold:
                raise ValueError(f"folds.{name} has {len(state['folds'][name])} entries, but "
                                 f"kfold is {self.kfold}")

    def key_groups(self, groups: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        """Key name -> key columns: every selected group but the target and fold columns."""
        skip = {(self.target,), *((c,) for c in self.fold_cols or ())}
        return group_names(self, [g for g in groups if tuple(g) not in skip],
                           outputs=lambda key: [self.output_name(key)])

    def fold_columns(self, groups: list[tuple[str, ...]]) -> list[str]:
        if self.fold_cols is not None:
            return list(self.fold_cols)
        return list(dict.fromkeys(n for g in groups for n in g))

    def output_name(self, key: str) -> str:
        return f"TE_{key}_{self.target}"

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        groups = [tuple(g) for g in groups]
        name = type(self).__name__
        if self.target not in input_schema:
            raise SchemaError(f"{name} needs its target column {self.target!r} in its input; "
                              f"select it next to the categories, e.g. [..., {self.target!r}] "
                              f">> {name}({self.target!r}).")
        col = input_schema[self.target]
        if col.is_list or not is_numeric_dtype(col.dtype):
            raise SchemaError(f"{name} needs a numeric target, but column {self.target!r} has "
                              f"dtype {col.dtype}. Encode it as numbers first (e.g. "
                              f"ops.LambdaOp('x == \"yes\"', dtype='int8')).")
        for c in self.fold_columns(groups):
            if c not in input_schema:
                raise SchemaError(f"{name} hashes the fold column {c!r} (fold_cols) but it is "
                                  "not in its input; select it too.")
            if input_schema[c].is_list:
                raise SchemaError(f"{name} cannot hash the list column {c!r} into folds "
                                  "(fold_cols); use plain columns.")
        keys = self.key_groups(groups)
        if not keys:
            raise SchemaError(f"{name} has no categorical column to encode: select the "
                              f"categories next to the target {self.target!r}.")
        cols = []
        for key, group in keys.items():
            if self.target in group:
                raise SchemaError(f"{name} cannot encode the group {list(group)}: it holds the "
                                  f"target {self.target!r} itself. Select the target on its own.")
            for n in group:
                if input_schema[n].is_list:
                    raise SchemaError(f"{name} cannot encode the list column {n!r}; encode "
                                      "plain columns.")
            cols.append(ColumnSchema(self.output_name(key), self.out_dtype, {Tags.CONTINUOUS},
                                     {"source": list(group), "target": self.target}))
        return Schema(cols)

    # ---- fit ------------------------------------------------------------------------------
    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, Any]:
        b = ctx.backend
        folds = b.from_numpy(fold_ids(df, self.fold_columns(ctx.groups), self.kfold,
                                      self.fold_seed, ctx))
        target = {"y": b.cast(b.column(df, self.target), "float64")}
        aggs = [("n", "y", "count"), ("s", "y", "sum")]
        splits = num_splits(ctx.run.num_rows, ctx.run.npartitions,
                            self.split_out)
        tables = {}
        for key, group in self.key_groups(ctx.groups).items():
            t = b.keyed_aggregate({"value": ks.key_values(df, group, ctx), "fold": folds},
                                  target, aggs)
            tables[key] = vocab.split_counts(ks.canonical_keys(_sums(t, ["value", "fold"])),
                                             splits)
        return {"tables": tables,
                "global": _sums(b.keyed_aggregate({"fold": folds}, target, aggs), ["fold"])}

    def fit_graph(self, partials: list[Any], ctx: OpContext) -> Any:
        keys = list(self.key_groups(ctx.groups))
        prefix = ctx.node_id
        per_table = [delayed_task(prefix, "pick", operator.itemgetter("tables"), p)
                     for p in partials]
        splits = num_splits(ctx.run.num_rows, ctx.run.npartitions,
                            self.split_out)
        tables = ks.fit_tables(per_table, ctx, keys, splits,
                               functools.partial(merge_sums, keys=("value", "fold")),
                               self.finish)
        per_fold = [delayed_task(prefix, "pick", operator.itemgetter("global"), p)
                    for p in partials]
        totals = tree(per_fold, functools.partial(merge_sums, keys=("fold",)),
                      delayed_tasks(prefix, "global"))
        return delayed_task(prefix, "state", self._state, tables, totals)

    def finish(self, merged: pa.Table, key: str) -> pa.Table:
        """One row per category: its count ``n{f}`` and target sum ``s{f}`` in each fold."""
        values = pc.unique(merged["value"])
        rows = pc.index_in(merged["value"], value_set=values).to_numpy(zero_copy_only=False)
        folds = merged["fold"].to_numpy()
        n = np.zeros((len(values), self.kfold), dtype=np.int64)
        s = np.zeros((len(values), self.kfold), dtype=np.float64)
        np.add.at(n, (rows, folds), merged["n"].to_numpy())
        np.add.at(s, (rows, folds), merged["s"].to_numpy())
        return pa.table({"value": values, **{f"n{f}": n[:, f] for f in range(self.kfold)},
                         **{f"s{f}": s[:, f] for f in range(self.kfold)}})

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: StateFolders) -> dict[str, Any]:
        """Per category and fold: target counts and sums added; the folds' totals too."""
        tables = {}
        for number, key in enumerate(self.key_groups(ctx.groups)):
            before, after = (ks.read_splits(root, state["tables"][key], ctx.storage_options)
                             for root, state in ((folders.old, old), (folders.new, new)))
            tables[key] = ks.merge_tables(
                before, after, merge_sums, lambda table, key: table, key,
                ctx.artifacts_dir or ".",
                key_directory(merged_directory(ctx), number, "table"),
                old["tables"][key]["splits"], ctx.storage_options)
        folds = {name: [a + b for a, b in zip(old["folds"][name], new["folds"][name],
                                               strict=True)] for name in ("count", "sum")}
        return {"tables": tables, "folds": folds}

    def _state(self, tables: dict[str, Any], totals: pa.Table) -> dict[str, Any]:
        count = np.zeros(self.kfold, dtype=np.int64)
        total = np.zeros(self.kfold, dtype=np.float64)
        count[totals["fold"].to_numpy()] = totals["n"].to_numpy()
        total[totals["fold"].to_numpy()] = totals["s"].to_numpy()
        if count.sum() == 0:
            raise SchemaError(f"TargetEncoding found no non-missing value of its target "
                              f"{self.target!r}; fit it on rows with known targets.")
        return {"tables": tables, "folds": {"count": count.tolist(), "sum": total.tolist()}}

    # ---- transform ------------------------------------------------------------------------
    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        fold_count = np.asarray(state["folds"]["count"], dtype=np.float64)
        fold_sum = np.asarray(state["folds"]["sum"], dtype=np.float64)
        global_mean = fold_sum.sum() / fold_count.sum()
        training = ctx.run.training and self.kfold > 1
        if training:  # sums over the other folds only (never a total minus the row's fold,
            # so not even a rounding error of the row's own target reaches its encoding)
            folds = fold_ids(df, self.fold_columns(ctx.groups), self.kfold, self.fold_seed, ctx)
            others = folds[:, None] != np.arange(self.kfold)[None, :]
            prior_n = others @ fold_count
            prior = np.where(prior_n > 0, (others @ fold_sum) / np.where(prior_n > 0, prior_n, 1),
                             global_mean)
        out = {}
        for key, group in self.key_groups(ctx.groups).items():
            found = ks.lookup(ks.key_values(df, group, ctx), state["tables"][key], ctx)
            n_fold = np.column_stack([ks.filled(found[f"n{f}"], pa.float64()).to_numpy()
                                      for f in range(self.kfold)])
            s_fold = np.column_stack([ks.filled(found[f"s{f}"], pa.float64()).to_numpy()
                                      for f in range(self.kfold)])
            if training:  # leave the row's own fold out
                n, s, mean = (n_fold * others).sum(axis=1), (s_fold * others).sum(axis=1), prior
            else:
                n, s, mean = n_fold.sum(axis=1), s_fold.sum(axis=1), np.full(len(n_fold),
                                                                               global_mean)
            denom = n + self.p_smooth
            encoded = np.where(denom > 0, (s + mean * self.p_smooth)
                               / np.where(denom > 0, denom, 1), mean)
            out[self.output_name(key)] = b.from_numpy(encoded.astype(self.out_dtype))
        return b.select(b.with_columns(df, out), list(out))


def _sums(table: pa.Table, keys: list[str]) -> pa.Table:
    """A partial per-key table with count ``n`` as int64 and sum ``s`` as float64 (0 if none)."""
    return pa.table({**{k: table[k] for k in keys},
                     "n": ks.filled(table["n"], pa.int64()),
                     "s": ks.filled(table["s"], pa.float64())})
