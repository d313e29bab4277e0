"""Categorify: map categorical values to contiguous embedding-table rows.

Index layout (the same for every column and backend)::

    0                 padding (never emitted; free for padded lists)
    1                 null
    2 .. 2+B-1        out-of-vocabulary: B = num_buckets hashed buckets, or one index (2)
    2+B ..            the vocabulary, by descending frequency, ties by ascending value

``cardinality = 2 + B + vocabulary size`` (B is 1 when ``num_buckets`` is not set).
Vocabularies are parquet files (``value, count, index``) under the workflow's
artifacts, readable by people; see :mod:`.vocabulary` for how they are built.

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

import math
import os
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
from dask import delayed

from ..artifacts import key_directory, resolve
from ..errors import ParameterError, SchemaError
from ..schema import ColumnSchema, Schema, Tags, element_dtype
from . import vocabulary as vocab
from .base import OpContext, StatOperator, group_names
from .hash_bucket import (
    FIRST_FREE_INDEX,
    MAX_BUCKETS,
    NULL_INDEX,
    check_index_dtype,
    encode_column,
    require_hashable,
)
from .params import Param
from .state_check import TABLE

#: Rows per hash split of the vocabulary build, when ``split_out`` is not given.
ROWS_PER_SPLIT = 8_000_000
FAN_IN = 8
#: Most hash splits a vocabulary build takes (``split_out``): ranking costs a task per pair
#: of splits, so the graph grows as ``splits ** 2``.
MAX_SPLITS = 256


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

    def output_schema(self, input_schema: Schema, groups, state=None) -> Schema:
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
        if self.split_out:
            return self.split_out
        rows = ctx.extra.get("num_rows")
        if rows is None:  # e.g. csv input: assume about 500k rows per partition
            rows = ctx.extra.get("npartitions", 1) * ROWS_PER_SPLIT // 16
        return max(1, min(64, math.ceil(rows / ROWS_PER_SPLIT)))

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
        """The Dask graph of the whole vocabulary build; returns a delayed state."""
        splits = self.splits(ctx)
        directory = os.path.join(ctx.artifacts_dir or ".", ctx.node_id)
        prefix = ctx.node_id
        states = {}
        for number, key in enumerate(self.vocab_keys(ctx.groups)):
            key_dir = key_directory(directory, number)  # never the column name (it is data)
            per_key = [_task(prefix, "pick", _pick, p, key) for p in partials]
            reduced = [_reduce_split(prefix, per_key, s, self.freq_threshold)
                       for s in range(splits)]
            keys = ([_task(prefix, "keys", vocab.rank_keys, r) for r in reduced]
                    if splits > 1 else [None])
            ranks = [_rank(prefix, reduced, keys, s) for s in range(splits)]
            written = [_task(prefix, "write", vocab.write_split, reduced[s], ranks[s],
                             self.first_vocab_index, self.max_size,
                             key_dir, s) for s in range(splits)]
            totals = _tree(prefix, "totals", _sum_totals, per_key)
            states[key] = _task(prefix, "vocab", _vocab_state, written, totals, splits,
                                self.first_vocab_index, key_dir)
        return _task(prefix, "state", _state, states, directory, self)

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
            table = vocab.load_split(directory, 0)
            pos = b.lookup(values, table, hashes)
            found = pos >= 0
            result[found] = table.index[pos[found]]
        else:
            which = hashes % np.uint64(splits)
            for s in range(splits):
                rows = np.flatnonzero(which == s)
                if not len(rows):
                    continue
                table = vocab.load_split(directory, s)
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
def _task(prefix: str, what: str, func: Any, *args: Any) -> Any:
    return delayed(func, pure=False)(*args, dask_key_name=f"{prefix}-{what}-"
                                                           f"{uuid.uuid4().hex[:12]}")


def _tree(prefix: str, what: str, combine: Any, items: list[Any]) -> Any:
    while len(items) > 1:
        items = [_task(prefix, what, combine, items[i:i + FAN_IN])
                 for i in range(0, len(items), FAN_IN)]
    return _task(prefix, what, combine, items) if items else None


def _pick(partial: dict[str, Any], key: str) -> dict[str, Any]:
    return partial[key]


def _sum_split(items: list[Any], split: int) -> pa.Table:
    return vocab.sum_counts([i["splits"][split] if isinstance(i, dict) else i for i in items])


def _reduce_split(prefix: str, per_key: list[Any], split: int, threshold: int) -> Any:
    level = [_task(prefix, "count", _sum_split, per_key[i:i + FAN_IN], split)
             for i in range(0, len(per_key), FAN_IN)]
    while len(level) > 1:
        level = [_task(prefix, "count", vocab.sum_counts, level[i:i + FAN_IN])
                 for i in range(0, len(level), FAN_IN)]
    return _task(prefix, "threshold", _apply_threshold, level[0], threshold)


def _apply_threshold(counts: pa.Table, threshold: int) -> pa.Table:
    if threshold > 1:
        counts = counts.filter(pa.compute.greater_equal(counts["count"], threshold))
    return counts


def _rank(prefix: str, reduced: list[Any], keys: list[Any], s: int) -> Any:
    """Global rank of the values of split ``s``: its own rank plus, for every other split,
    how many values there sort before (by :func:`vocab.rank_keys` where the values have
    keys)."""
    parts = [_task(prefix, "rank", _local_rank, reduced[s], keys[s])]
    parts += [_task(prefix, "rank", _count_before, reduced[s], reduced[t], keys[s], keys[t])
              for t in range(len(reduced)) if t != s]
    return parts[0] if len(parts) == 1 else _task(prefix, "rank", vocab.add_vectors, parts)


def _local_rank(counts: pa.Table, keys: Any) -> np.ndarray:
    return vocab.local_rank(counts) if keys is None else vocab.count_before_keys(keys, keys)


def _count_before(a: pa.Table, b: pa.Table, a_keys: Any, b_keys: Any) -> np.ndarray:
    if a_keys is None or b_keys is None:
        return vocab.count_before(a, b)
    return vocab.count_before_keys(a_keys, b_keys)


def _sum_totals(items: list[dict[str, Any]]) -> dict[str, int]:
    return {"nulls": sum(i["nulls"] for i in items), "rows": sum(i["rows"] for i in items)}


def _vocab_state(written: list[dict[str, int]], totals: dict[str, int], splits: int,
                 first_index: int, directory: str) -> dict[str, Any]:
    size = sum(w["size"] for w in written)
    in_vocab = sum(w["count"] for w in written)
    return {"path": directory, "splits": splits, "size": size,
            "cardinality": first_index + size, "null_count": totals["nulls"],
            "value_count": totals["rows"], "oov_count": totals["rows"] - totals["nulls"]
            - in_vocab}


def _state(states: dict[str, dict[str, Any]], directory: str, op: Categorify) -> dict[str, Any]:
    for info in states.values():
        check_index_dtype(op, info["cardinality"])
        info["path"] = os.path.relpath(info["path"], os.path.dirname(directory))
    return {"vocabs": states}
