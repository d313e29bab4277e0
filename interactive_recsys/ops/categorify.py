"""Categorify: map categorical values to contiguous embedding-table rows.

Index layout (the same for every column and backend)::

    0                 padding (never emitted; free for padded lists)
    1                 null
    2 .. 2+B-1        out-of-vocabulary: B = num_buckets hashed buckets, or one index (2)
    2+B ..            the vocabulary, by descending frequency, ties by ascending value

``cardinality = 2 + B + vocabulary size`` (B is 1 when ``num_buckets`` is not set).
The layout's constants are :mod:`..tables.layout`'s. Vocabularies are parquet files
(``value, count, index``) under the workflow's artifacts, readable by people; see
:mod:`..tables.vocabulary` for how they are built.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"c": ["b", "a", "b", None, "z"]})
>>> wf = irs.Workflow(["c"] >> Categorify())
>>> wf.fit_transform(df)["c"].tolist()   # b: 2 times -> 3; then a, z by value -> 4, 5
[3, 4, 3, 1, 5]
>>> wf.transform(pd.DataFrame({"c": ["new"]}))["c"].tolist()  # unseen -> OOV index 2
[2]
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..artifacts import key_directory, resolve
from ..errors import ParameterError, SchemaError
from ..schema import ColumnSchema, Schema, Tags, element_dtype
from ..tables import vocabulary as vocab
from ..tables.layout import FIRST_FREE_INDEX, MAX_BUCKETS, NULL_INDEX
from ..tables.reduce import (
    MAX_SPLITS,
    ROWS_PER_SPLIT,
    Graph,
    estimated_rows,
    listed,
    num_splits,
    pick,
    tree,
)
from .base import OpContext, StatOperator, group_names
from .hash_bucket import check_index_dtype, encode_column, require_hashable
from .params import Param
from .state_check import TABLE


class Categorify(StatOperator):
    """Encode categorical columns as contiguous integer ids (see the module docstring)."""

    summary = "Map categories to contiguous ids by frequency"
    category = "categorical"
    dictionary_input = True
    freq_threshold = Param(0, kind="int", low=0,
                           doc="Values seen fewer times than this become out-of-vocabulary.")
    max_size = Param(None, kind="int", low=1, nullable=True,
                     doc="Keep at most this many (most frequent) values per vocabulary.")
    num_buckets = Param(None, kind="int", low=1, high=MAX_BUCKETS, nullable=True,
                        doc="Hash out-of-vocabulary values into this many buckets.")
    encode_type = Param("joint", choices=("joint", "combo"),
                        doc="Column groups: one shared vocabulary (joint) or one for the "
                            "combination (combo).")
    dtype = Param("int64", choices=("int32", "int64"), doc="Output index dtype.")
    split_out = Param(None, kind="int", low=1, high=MAX_SPLITS, nullable=True,
                      doc="Hash splits of the vocabulary build (None: about 8M rows each).")
    state_shape = {"vocabs": ("map", {**TABLE, "cardinality": "int"})}

    @property
    def oov_buckets(self) -> int:
        return self.num_buckets or 1

    @property
    def first_vocab_index(self) -> int:
        return FIRST_FREE_INDEX + self.oov_buckets

    # ---- keys: one vocabulary per plain column, joint group or combo group ------------------
    def vocab_keys(self, groups: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        keys = group_names(self, groups)
        seen: dict[str, tuple[str, ...]] = {}
        for group in keys.values():
            if len(group) > 1 and self.encode_type == "combo":
                continue
            for n in group:  # joint encoding: one output per column
                if n in seen and seen[n] != group:
                    raise SchemaError(f"Categorify encodes column {n!r} in group {list(seen[n])}"
                                      f" and in {list(group)}; its one output cannot hold both. "
                                      "Select each column in one group only.")
                seen[n] = group
        return keys

    def output_names(self, groups: list[tuple[str, ...]]) -> dict[str, str]:
        """Output column -> vocabulary key."""
        out = {}
        for key, group in self.vocab_keys(groups).items():
            if len(group) > 1 and self.encode_type == "combo":
                out[key] = key
            else:
                out.update(dict.fromkeys(group, key))
        return out

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        groups = list(groups)
        for group in groups:
            for n in group:
                require_hashable(self, input_schema[n])
            dtypes = {element_dtype(input_schema[n].dtype) for n in group}
            if len(group) > 1 and self.encode_type == "joint" and len(dtypes) > 1:
                raise SchemaError(f"Categorify(encode_type='joint') needs one dtype within the "
                                  f"group {list(group)}; got {sorted(dtypes)}. Cast the columns "
                                  "first or use encode_type='combo'.")
        cols = []
        for name, key in self.output_names(groups).items():
            base = input_schema[name] if name in input_schema else ColumnSchema(name, "string")
            props = dict(base.properties)
            props["domain"] = key
            if state is not None:
                props["cardinality"] = state["vocabs"][key]["cardinality"]
            else:
                props.pop("cardinality", None)
            dtype = f"list<{self.dtype}>" if base.is_list else self.dtype
            cols.append(base.with_(name=name, dtype=dtype, properties=props).with_tags(
                add=[Tags.CATEGORICAL], remove=[Tags.CONTINUOUS]))
        return Schema(cols)

    def _values(self, df: Any, group: tuple[str, ...], ctx: OpContext) -> Any:
        """The flat values a vocabulary is built from / looked up in."""
        b = ctx.backend
        cols = [b.column(df, n) for n in group]
        cols = [b.list_values(c) if b.dtype(c).startswith("list<") else c for c in cols]
        if len(group) == 1:
            return cols[0]
        if self.encode_type == "combo":
            return b.join_as_strings(cols)
        return b.concat_columns(cols)

    # ---- fit ------------------------------------------------------------------------------
    def splits(self, ctx: OpContext) -> int:
        return num_splits(ctx.extra.get("num_rows"), ctx.extra.get("npartitions", 1),
                          self.split_out)

    def rank_block(self, splits: int, ctx: OpContext) -> int:
        """How many splits one ranking block holds: as many as hold about ``ROWS_PER_SPLIT``
        data rows together (a split holds at most ``rows / splits`` values), so small data is
        ranked in one block (one sort, cost linear in ``split_out``) and large data keeps each
        task's memory bounded."""
        rows = estimated_rows(ctx.extra.get("num_rows"), ctx.extra.get("npartitions", 1))
        return max(1, min(splits, ROWS_PER_SPLIT * splits // max(rows, 1)))

    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, Any]:
        b = ctx.backend
        out = {}
        splits = self.splits(ctx)
        for key, group in self.vocab_keys(ctx.groups).items():
            values = self._values(df, group, ctx)
            counts = vocab.value_dtype_table(b.value_counts(values))
            nulls = int(b.null_mask(values).sum())
            out[key] = {"splits": vocab.split_counts(counts, splits), "nulls": nulls,
                        "rows": b.length(values)}
        return out

    def fit_graph(self, partials: list[Any], ctx: OpContext) -> Any:
        """The Dask graph of the whole vocabulary build; returns a delayed state.

        The graph is written as one low-level graph (:class:`~..tables.reduce.Graph`):
        building it costs time linear in its tasks, whatever ``split_out`` is."""
        splits = self.splits(ctx)
        directory = os.path.join(ctx.artifacts_dir or ".", ctx.node_id)
        g = Graph(ctx.node_id)
        states = {}
        for number, key in enumerate(self.vocab_keys(ctx.groups)):
            key_dir = key_directory(directory, number)  # never the column name (it is data)
            per_key = [g.task("pick", pick, p.key, key) for p in partials]
            reduced = [_reduce_split(g, per_key, s, self.freq_threshold)
                       for s in range(splits)]
            keys = ([g.task("keys", vocab.rank_keys, r) for r in reduced]
                    if splits > 1 else [None])
            blocks = _blocks(g, reduced, keys, self.rank_block(splits, ctx))
            ranks = [_rank(g, reduced, keys, s, blocks) for s in range(splits)]
            written = [g.task("write", vocab.write_split, reduced[s], ranks[s],
                              self.first_vocab_index, self.max_size, key_dir, s,
                              ctx.storage_options)
                       for s in range(splits)]
            totals = tree(per_key, _sum_totals, g.tasks("totals"), first=_sum_totals)
            states[key] = g.task("vocab", _vocab_state, totals, splits,
                                 self.first_vocab_index, key_dir, *written)
        names = list(states)
        return g.delayed(g.task("state", _state, names, directory, self, *states.values()),
                         partials)

    def state_keys(self, groups: Sequence[tuple[str, ...]]) -> dict[str, list[str]]:
        return {"vocabs": list(self.vocab_keys(list(groups)))}

    # ---- transform ------------------------------------------------------------------------
    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        out, drop = {}, []
        for key, group in self.vocab_keys(ctx.groups).items():
            info = state["vocabs"][key]

            def encode(values: Any, info: dict = info) -> np.ndarray:
                return self._encode(values, info, ctx)

            if len(group) > 1 and self.encode_type == "combo":
                out[key] = b.from_indices(encode(self._values(df, group, ctx)))
                drop += [n for n in group if n != key]
            else:
                for name in group:
                    out[name] = encode_column(ctx, b.column(df, name), encode)
        result = b.with_columns(df, out)
        if drop:
            result = b.select(result, [n for n in result.columns if n not in drop])
        return result

    def _encode(self, values: Any, info: dict[str, Any], ctx: OpContext) -> np.ndarray:
        b = ctx.backend
        coded = b.dictionary_codes(values)
        if coded is not None:  # look up each distinct value once; code -1 (null) -> the last
            codes, dictionary = coded
            ids = self._encode(dictionary, info, ctx)
            return np.append(ids, ids.dtype.type(NULL_INDEX))[codes]
        splits = info["splits"]
        hashes = b.hash64(values)
        if self.num_buckets:
            result = (FIRST_FREE_INDEX + hashes % np.uint64(self.num_buckets)).astype(np.int64)
        else:
            result = np.full(b.length(values), FIRST_FREE_INDEX, dtype=np.int64)
        directory = resolve(ctx.artifacts_dir, info["path"], "vocabulary path")
        if splits == 1:
            table = vocab.load_split(directory, 0, ctx.storage_options)
            pos = b.lookup(values, table, hashes)
            found = pos >= 0
            result[found] = table.index[pos[found]]
        else:
            which = hashes % np.uint64(splits)
            for s in range(splits):
                rows = np.flatnonzero(which == s)
                if not len(rows):
                    continue
                table = vocab.load_split(directory, s, ctx.storage_options)
                pos = b.lookup(b.take(values, rows), table, hashes[rows])
                found = pos >= 0
                result[rows[found]] = table.index[pos[found]]
        result[b.null_mask(values)] = NULL_INDEX
        return result.astype(self.dtype)

    def check_params(self) -> None:
        check_index_dtype(self, self.first_vocab_index + (self.max_size or 0))
        if self.freq_threshold and self.max_size:
            raise ParameterError("Categorify takes freq_threshold or max_size, not both; "
                                 "choose one way to bound the vocabulary.")


# ---- graph helpers (plain functions so Dask tasks are named and picklable) -------------------
def _sum_split(items: list[dict[str, Any]], split: int) -> pa.Table:
    return vocab.sum_counts([i["splits"][split] for i in items])


def _reduce_split(g: Graph, per_key: list[str], split: int, threshold: int) -> str:
    counts = tree(per_key, vocab.sum_counts, g.tasks("count"),
                  first=functools.partial(_sum_split, split=split))
    return g.task("threshold", _apply_threshold, counts, threshold)


def _apply_threshold(counts: pa.Table, threshold: int) -> pa.Table:
    if threshold > 1:
        counts = counts.filter(pa.compute.greater_equal(counts["count"], threshold))
    return counts


def _blocks(g: Graph, reduced: list[str], keys: list[Any],
            block: int) -> list[tuple[int, str]]:
    """The splits gathered ``block`` at a time: ``(first split, key of (tables, keys))``."""
    if len(reduced) == 1:
        return []
    out = []
    for first in range(0, len(reduced), block):
        last = min(first + block, len(reduced))
        out.append((first, g.task("gather", _gather, last - first,
                                  *reduced[first:last], *keys[first:last])))
    return out


def _gather(n: int, *items: Any) -> dict[str, Any]:
    """A block of splits ranked together: the rank of each of its values among the block's
    (splits concatenated in order, ``offsets`` where each starts), and what other splits
    compare with: the sorted rank keys, or the values and counts where there are no keys."""
    tables, keys = items[:n], items[n:]
    offsets = np.cumsum([0] + [t.num_rows for t in tables])
    table = pa.concat_tables([t.select(["value", "count"]) for t in tables],
                             promote_options="permissive")
    if all(k is not None for k in keys):
        row_keys = np.concatenate([k[0] for k in keys])
        order = np.argsort(row_keys, kind="stable")
        rank = np.empty(len(row_keys), dtype=np.int64)
        rank[order] = np.arange(len(row_keys))
        return {"offsets": offsets, "rank": rank, "sorted": row_keys[order], "table": table}
    return {"offsets": offsets, "rank": vocab.local_rank(table), "sorted": None,
            "table": table}


def _rank(g: Graph, reduced: list[str], keys: list[Any], s: int,
          blocks: list[tuple[int, str]]) -> str:
    """Global rank of the values of split ``s``: within its own block, their rank among the
    block's values; for every other block, how many of its values sort before (by
    :func:`vocab.rank_keys` where the values have keys). Small data is one block: the rank is
    read off one sort, and the cost is linear in ``split_out``."""
    if not blocks:
        return g.task("rank", _local_rank, reduced[s], keys[s])
    parts = [g.task("rank", _rank_in_block, reduced[s], keys[s], s, first, block)
             for first, block in blocks]
    return parts[0] if len(parts) == 1 else g.task("rank", listed(vocab.add_vectors), *parts)


def _rank_in_block(a: pa.Table, a_keys: Any, s: int, first: int,
                   block: dict[str, Any]) -> np.ndarray:
    """How many values of ``block`` sort before each of ``a``'s (split ``s``)."""
    offsets = block["offsets"]
    if first <= s < first + len(offsets) - 1:  # a's own block: its rank there
        return block["rank"][offsets[s - first]:offsets[s - first + 1]]
    if a_keys is not None and block["sorted"] is not None:
        return np.searchsorted(block["sorted"], a_keys[0]).astype(np.int64)
    return vocab.count_before(a, block["table"])  # no keys on one side: compare values


def _local_rank(counts: pa.Table, keys: Any) -> np.ndarray:
    return vocab.local_rank(counts) if keys is None else vocab.count_before_keys(keys, keys)


def _count_before(a: pa.Table, b: pa.Table, a_keys: Any, b_keys: Any) -> np.ndarray:
    if a_keys is None or b_keys is None:
        return vocab.count_before(a, b)
    return vocab.count_before_keys(a_keys, b_keys)


def _sum_totals(items: list[dict[str, Any]]) -> dict[str, int]:
    return {"nulls": sum(i["nulls"] for i in items), "rows": sum(i["rows"] for i in items)}


def _vocab_state(totals: dict[str, int], splits: int, first_index: int, directory: str,
                 *written: dict[str, int]) -> dict[str, Any]:
    size = sum(w["size"] for w in written)
    in_vocab = sum(w["count"] for w in written)
    return {"path": directory, "splits": splits, "size": size,
            "cardinality": first_index + size, "null_count": totals["nulls"],
            "value_count": totals["rows"], "oov_count": totals["rows"] - totals["nulls"]
            - in_vocab}


def _state(names: list[str], directory: str, op: Categorify,
           *infos: dict[str, Any]) -> dict[str, Any]:
    states = dict(zip(names, infos, strict=True))
    for info in states.values():
        check_index_dtype(op, info["cardinality"])
        info["path"] = os.path.relpath(info["path"], os.path.dirname(directory))
    return {"vocabs": states}
