"""Statistics per category, built like Categorify's vocabularies and looked up per row.

``JoinGroupby`` and ``TargetEncoding`` need one row of statistics per key value, for keys of
any cardinality. The build is the hash-partitioned tree reduction of :mod:`.vocabulary`:

1. each data partition aggregates its rows per key (``Backend.keyed_aggregate``) and splits
   the partial table into ``S`` tables by the value-defined hash of the key
   (:func:`~.vocabulary.split_counts`);
2. the ``P`` pieces of each split are merged in a tree, ``FAN_IN`` at a time, by the
   operator's merge function; a key lives in exactly one split, so the merges are exact;
3. each split is finished (statistics from the merged partial sums) and written as its own
   parquet file ``value, index, <statistics>`` under the workflow's artifacts.

``transform`` finds each row's key in its split through :class:`~.vocabulary.VocabTable`
(a hash index checked against the values) on either backend. No task holds more than one
split of a key's table.

>>> import pyarrow as pa
>>> merged = merge_moments([pa.table({"value": ["a"], "size": [2], "n0": [2], "s0": [3.0],
...                                   "m2_0": [0.5], "lo0": [1.0], "hi0": [2.0]}),
...                         pa.table({"value": ["a"], "size": [1], "n0": [1], "s0": [5.0],
...                                   "m2_0": [0.0], "lo0": [5.0], "hi0": [5.0]})], 1)
>>> merged["s0"].to_pylist(), round(merged["m2_0"][0].as_py(), 9)   # values 1, 2, 5
([8.0], 8.666666667)
"""

from __future__ import annotations

import math
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dask import delayed

from ..artifacts import key_directory, resolve
from . import vocabulary as vocab
from .base import OpContext

#: Rows per hash split, when the operator's ``split_out`` is not given (as Categorify).
ROWS_PER_SPLIT = 8_000_000
FAN_IN = 8


def num_splits(split_out: int | None, ctx: OpContext) -> int:
    """Hash splits of a statistics table: ``split_out`` or about 8M data rows per split."""
    if split_out:
        return split_out
    rows = ctx.extra.get("num_rows")
    if rows is None:
        rows = ctx.extra.get("npartitions", 1) * ROWS_PER_SPLIT // 16
    return max(1, min(64, math.ceil(rows / ROWS_PER_SPLIT)))


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


# ---- merges (run in the tree reduction) --------------------------------------------------------
def merge_sums(tables: list[pa.Table], keys: Sequence[str] = ("value",)) -> pa.Table:
    """Sum every non-key column over equal keys."""
    tables = [t for t in tables if t.num_rows] or tables[:1]
    if len(tables) == 1:
        return tables[0]
    merged = pa.concat_tables(tables, promote_options="permissive")
    names = [n for n in merged.column_names if n not in keys]
    summed = merged.group_by(list(keys), use_threads=False).aggregate(
        [(n, "sum") for n in names])
    return pa.table({**{k: summed[k] for k in keys}, **{n: summed[f"{n}_sum"] for n in names}})


def merge_moments(tables: list[pa.Table], columns: int) -> pa.Table:
    """Merge per-key ``size`` and, per value column ``i``, count ``n{i}``, sum ``s{i}``, sum of
    squared deviations ``m2_{i}`` (Chan et al.'s pairwise formula), min ``lo{i}``, max ``hi{i}``.
    """
    tables = [t for t in tables if t.num_rows] or tables[:1]
    if len(tables) == 1:
        return tables[0]
    t = pa.concat_tables(tables, promote_options="permissive")
    aggs = [("size", "sum")]
    for i in range(columns):
        aggs += [(f"n{i}", "sum"), (f"s{i}", "sum"), (f"lo{i}", "min"), (f"hi{i}", "max")]
    g = t.group_by("value", use_threads=False).aggregate(aggs)
    pos = pc.index_in(t["value"], value_set=g["value"]).to_numpy(zero_copy_only=False)
    out = {"value": g["value"], "size": g["size_sum"]}
    for i in range(columns):
        n_part = t[f"n{i}"].to_numpy().astype(np.float64)
        s_part = t[f"s{i}"].to_numpy()
        n_all = g[f"n{i}_sum"].to_numpy().astype(np.float64)
        mean_all = np.divide(g[f"s{i}_sum"].to_numpy(), n_all, out=np.zeros(len(n_all)),
                             where=n_all > 0)
        mean_part = np.divide(s_part, n_part, out=np.zeros(len(n_part)), where=n_part > 0)
        spread = t[f"m2_{i}"].to_numpy() + n_part * np.square(mean_part - mean_all[pos])
        out.update({f"n{i}": g[f"n{i}_sum"], f"s{i}": g[f"s{i}_sum"],
                    f"m2_{i}": pa.array(np.bincount(pos, weights=spread, minlength=len(n_all))),
                    f"lo{i}": g[f"lo{i}_min"], f"hi{i}": g[f"hi{i}_max"]})
    return pa.table(out)


# ---- the Dask graph ----------------------------------------------------------------------------
def task(prefix: str, what: str, func: Callable, *args: Any) -> Any:
    return delayed(func, pure=False)(*args, dask_key_name=f"{prefix}-{what}-"
                                                           f"{uuid.uuid4().hex[:12]}")


def _pick(partial: dict[str, Any], key: str) -> Any:
    return partial[key]


def _merge_split(items: list[list[pa.Table]], split: int, merge: Callable) -> pa.Table:
    return merge([item[split] for item in items])


def tree(prefix: str, what: str, combine: Callable, items: list[Any]) -> Any:
    """Combine delayed items ``FAN_IN`` at a time until one is left."""
    while len(items) > 1:
        items = [task(prefix, what, combine, items[i:i + FAN_IN])
                 for i in range(0, len(items), FAN_IN)]
    return items[0]


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
    for number, key in enumerate(keys):
        key_dir = key_directory(directory, number, "table")  # never the column name
        per_key = [task(prefix, "pick", _pick, p, key) for p in partials]
        written = []
        for s in range(splits):
            level = [task(prefix, "merge", _merge_split, per_key[i:i + FAN_IN], s, merge)
                     for i in range(0, len(per_key), FAN_IN)]
            merged = tree(prefix, "merge", merge, level)
            written.append(task(prefix, "write", write_split, merged, finish, key, key_dir, s))
        tables[key] = task(prefix, "table", _table_state, written,
                           os.path.relpath(key_dir, os.path.dirname(directory)), splits)
    return tables


def write_split(merged: pa.Table, finish: Callable, key: str, directory: str,
                split: int) -> dict:
    """Finish one split, write it (atomically) as ``value, index, <statistics>``."""
    table = finish(canonical_keys(merged), key)
    table = table.append_column("index", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    os.makedirs(directory, exist_ok=True)
    path = vocab.split_path(directory, split)
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    sums = {n: float(pc.sum(table[n]).as_py() or 0) for n in table.column_names
            if n not in ("value", "index") and (pa.types.is_integer(table[n].type)
                                               or pa.types.is_floating(table[n].type))}
    return {"size": table.num_rows, "sums": sums}


def _table_state(written: list[dict], path: str, splits: int) -> dict[str, Any]:
    sums: dict[str, float] = {}
    for w in written:
        for n, v in w["sums"].items():
            sums[n] = sums.get(n, 0.0) + v
    return {"path": path, "splits": splits,
            "size": sum(w["size"] for w in written), "sums": sums}


# ---- lookups -----------------------------------------------------------------------------------
class _StatsCache:
    """Loaded statistics tables, least recently used first out, bounded in bytes like the
    vocabulary cache (:func:`~.vocabulary.cache_budget`); at least one table is kept."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, int], tuple[vocab.VocabTable, pa.Table]] = \
            OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str) -> tuple[vocab.VocabTable, pa.Table]:
        key = (path, os.stat(path).st_mtime_ns)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        table = pq.read_table(path)
        entry = (vocab.VocabTable(table["value"].combine_chunks(), table["index"].to_numpy()),
                 table.drop_columns(["value", "index"]).combine_chunks())
        with self._lock:
            self._items[key] = entry
            budget = vocab.cache_budget()
            while len(self._items) > 1 and sum(v.nbytes + t.nbytes for v, t in
                                               self._items.values()) > budget:
                self._items.popitem(last=False)
        return entry


TABLES = _StatsCache()


def lookup(values: Any, info: dict[str, Any], ctx: OpContext) -> pa.Table:
    """The statistics row of each value (all nulls where the key is null or unknown)."""
    b = ctx.backend
    directory = resolve(ctx.artifacts_dir, info["path"], "statistics table path")
    hashes = b.hash64(values)
    splits = info["splits"]
    which = hashes % np.uint64(splits) if splits > 1 else np.zeros(len(hashes), dtype=np.uint64)
    pieces, rows_of = [], []
    for s in range(splits):
        rows = np.flatnonzero(which == s) if splits > 1 else np.arange(len(hashes))
        if not len(rows) and s:
            continue
        positions, table = TABLES.get(vocab.split_path(directory, s))
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
