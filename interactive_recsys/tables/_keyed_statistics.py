"""Statistics per category, built like Categorify's vocabularies and looked up per row.

``JoinGroupby`` and ``TargetEncoding`` need one row of statistics per key value, for keys of
any cardinality. The build is the hash-partitioned tree reduction of :mod:`.vocabulary`:

1. each data partition aggregates its rows per key (``Backend.keyed_aggregate``) and splits
   the partial table into ``S`` tables by the value-defined hash of the key
   (:func:`~.vocabulary.split_counts`; ``S`` from :func:`~.reduce.num_splits`);
2. the partials are merged ``FAN_IN`` partitions at a time, every key and split at once
   (:func:`~.reduce.first_level`), then each split's pieces in a tree (:func:`~.reduce.tree`),
   by the operator's merge function (``merge_sums``, ``merge_moments`` of
   :mod:`..backend.arrow`); a key lives in exactly one split, so the merges are exact;
3. each split is finished (statistics from the merged partial sums) and written as its own
   parquet file ``value, index, <statistics>`` under the workflow's artifacts.

``transform`` finds each row's key in its split through :class:`~.vocabulary.VocabTable`
(a hash index checked against the values) on either backend. No task holds more than one
split of a key's table; the loaded splits share the one cache of :mod:`.cache`.

>>> import pyarrow as pa
>>> from interactive_recsys.backend import merge_moments
>>> merged = merge_moments([pa.table({"value": ["a"], "size": [2], "n0": [2], "s0": [3.0],
...                                   "m2_0": [0.5], "lo0": [1.0], "hi0": [2.0]}),
...                         pa.table({"value": ["a"], "size": [1], "n0": [1], "s0": [5.0],
...                                   "m2_0": [0.0], "lo0": [5.0], "hi0": [5.0]})], 1)
>>> merged["s0"].to_pylist(), round(merged["m2_0"][0].as_py(), 9)   # values 1, 2, 5
([8.0], 8.666666667)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import key_directory, resolve
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._cache import TABLES
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._reduce import (
    delayed_task,
    delayed_tasks,
    first_level_by_keys,
    pick,
    tree,
)


def key_values(df: Any, group: Sequence[str], ctx: OpContext) -> Any:
    """The key column of a group: the column itself, or one string per row for several."""
    b = ctx.backend
    if len(group) == 1:
        return b.column(df, group[0])
    return b.join_as_strings([b.column(df, n) for n in group])


def canonical_keys(table: pa.Table) -> pa.Table:
    """Keys as one Arrow type per kind (strings as large strings), so tables concatenate."""
    value = table["value"]
    if pa.types.is_string(value.type) or pa.types.is_string_view(value.type):
        table = table.set_column(0, "value", pc.cast(value, pa.large_string()))
    return table


def filled(col: pa.ChunkedArray | pa.Array, dtype: pa.DataType, value: Any = 0) -> pa.Array:
    return pc.fill_null(pc.cast(col, dtype), pa.scalar(value, dtype))


# ---- the Dask graph ----------------------------------------------------------------------------
def _merge_split(items: list[list[pa.Table]], split: int, merge: Callable) -> pa.Table:
    return merge([item[split] for item in items])


def _merge_partials(items: list[dict[str, list[pa.Table]]], merge: Callable,
                    keys: Sequence[str]) -> dict[str, list[pa.Table]]:
    """Partials of several partitions as one, for ``keys``: per key, each split's tables
    merged."""
    return {key: [merge([item[key][s] for item in items]) for s in range(len(items[0][key]))]
            for key in keys}


def fit_tables(partials: list[Any], ctx: OpContext, keys: Sequence[str], splits: int,
               merge: Callable[[list[pa.Table]], pa.Table],
               finish: Callable[[pa.Table, str], pa.Table]) -> dict[str, Any]:
    """Delayed ``{key: {"path", "splits", "size", "sums"}}`` of the statistics tables.

    Each partial is ``{key: [split tables]}``; ``finish(merged, key)`` turns a merged split
    into its output columns (plus ``value``). ``path`` is relative to the artifacts directory.
    """
    prefix = ctx.node_id
    directory = os.path.join(ctx.artifacts_dir or ".", ctx.node_id)
    tables = {}
    firsts = first_level_by_keys(partials, list(keys),
                                 functools.partial(_merge_partials, merge=merge),
                                 delayed_tasks(prefix, "merge"),
                                 cut=delayed_tasks(prefix, "chunk"))
    for number, key in enumerate(keys):
        key_dir = key_directory(directory, number, "table")  # never the column name
        per_key = [delayed_task(prefix, "pick", pick, p, key) for p in firsts[key]]
        written = []
        for s in range(splits):
            merged = tree(per_key, merge, delayed_tasks(prefix, "merge"),
                          first=functools.partial(_merge_split, split=s, merge=merge))
            written.append(delayed_task(prefix, "write", write_split, merged, finish, key,
                                        key_dir, s, ctx.storage_options))
        tables[key] = delayed_task(prefix, "table", _table_state, written,
                                   os.path.relpath(key_dir, os.path.dirname(directory)), splits)
    return tables


def write_split(merged: pa.Table, finish: Callable, key: str, directory: str,
                split: int, storage_options: Any = None) -> dict:
    """Finish one split, write it (atomically) as ``value, index, <statistics>``."""
    table = finish(canonical_keys(merged), key)
    table = table.append_column("index", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    vocab.write_table_file(table, vocab.split_path(directory, split), storage_options)
    sums = {n: float(pc.sum(table[n]).as_py() or 0) for n in table.column_names
            if n not in ("value", "index") and not n.startswith(PARTIAL)
            and (pa.types.is_integer(table[n].type) or pa.types.is_floating(table[n].type))}
    return {"size": table.num_rows, "sums": sums}


def _table_state(written: list[dict], path: str, splits: int) -> dict[str, Any]:
    sums: dict[str, float] = {}
    for w in written:
        for n, v in w["sums"].items():
            sums[n] = sums.get(n, 0.0) + v
    return {"path": path, "splits": splits,
            "size": sum(w["size"] for w in written), "sums": sums}


# ---- incremental updates (``Workflow.update``) -----------------------------------------------
#: Prefix of the partial-sum columns a statistics table keeps for exact merges (never looked up).
PARTIAL = "__irs_partial_"


def read_splits(root: str | None, info: dict[str, Any], storage_options: Any = None) -> pa.Table:
    """Every split of a statistics table written by :func:`fit_tables`, without ``index``."""
    directory = resolve(root, info["path"], "statistics table path")
    tables = [canonical_keys(storage.read_table(vocab.split_path(directory, s), storage_options))
              for s in range(info["splits"])]
    return pa.concat_tables(tables, promote_options="permissive").drop_columns(["index"])


def merge_tables(old: pa.Table, new: pa.Table, merge: Callable[[list[pa.Table]], pa.Table],
                 finish: Callable[[pa.Table, str], pa.Table], key: str, root: str,
                 directory: str, splits: int, storage_options: Any = None) -> dict[str, Any]:
    """Merge two partial tables of one key with the fit's own ``merge``, finish and write the
    result in ``splits`` splits under ``directory``; the state entry (``path`` relative to
    the artifacts folder ``root``), as :func:`fit_tables` gives it."""
    merged = canonical_keys(merge([canonical_keys(old), canonical_keys(new)]))
    pieces = vocab.split_counts(merged, splits)
    written = [write_split(p, finish, key, directory, s, storage_options)
               for s, p in enumerate(pieces)]
    return _table_state(written, os.path.relpath(directory, root), splits)


def partial_columns(table: pa.Table) -> pa.Table:
    """``value`` and the :data:`PARTIAL` columns of a stored table, without their prefix."""
    names = [n for n in table.column_names if n.startswith(PARTIAL)]
    return pa.table({"value": table["value"],
                     **{n[len(PARTIAL):]: table[n] for n in names}})


# ---- lookups -----------------------------------------------------------------------------------
class _Loaded(NamedTuple):
    """One split ready for lookups: the keys' hash index and the statistics columns."""

    positions: vocab.VocabTable
    columns: pa.Table

    @classmethod
    def load(cls, table: pa.Table) -> _Loaded:
        kept = [n for n in table.column_names if n not in ("value", "index")
                and not n.startswith(PARTIAL)]
        return cls(vocab.VocabTable.load(table), table.select(kept).combine_chunks())

    @property
    def nbytes(self) -> int:
        return self.positions.nbytes + self.columns.nbytes


def lookup(values: Any, info: dict[str, Any], ctx: OpContext) -> pa.Table:
    """The statistics row of each value (all nulls where the key is null or unknown)."""
    b = ctx.backend
    directory = resolve(ctx.artifacts_dir, info["path"], "statistics table path")
    hashes = b.hash64(values)
    splits = info["splits"]
    pieces, rows_of = [], []
    for s, rows in enumerate(vocab.split_rows(hashes, splits)):
        if not len(rows) and s:
            continue
        positions, table = TABLES.get(vocab.split_path(directory, s), _Loaded.load,
                                      ctx.storage_options)
        part = values if splits == 1 else b.take(values, rows)
        pos = b.lookup(part, positions, hashes[rows])
        pieces.append(table.take(pa.array(pos, mask=pos < 0)))
        rows_of.append(rows)
    result = pa.concat_tables(pieces)
    if splits > 1:
        result = result.take(pa.array(np.argsort(np.concatenate(rows_of), kind="stable")))
    nulls = b.null_mask(values)
    if nulls.any():
        result = pa.table({n: pc.if_else(pa.array(nulls), pa.scalar(None, c.type), c)
                           for n, c in zip(result.column_names, result.columns, strict=True)})
    return result
