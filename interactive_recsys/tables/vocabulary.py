"""Building vocabularies of any size with bounded memory per task.

The build is a hash-partitioned tree reduction:

1. each data partition counts its values and splits the counts into ``S`` tables
   by the value-defined hash (:func:`split_counts`);
2. the ``P`` pieces of each split are summed in a tree, ``fan_in`` at a time
   (:func:`sum_counts`); a value lives in exactly one split, so the sums are exact;
3. the global rank of a value in the order *descending count, ascending value*
   is its rank inside its split plus, for every other split, the number of
   values there that sort before it (:func:`count_before`, one task per pair of
   splits, each holding two splits only). Integers, booleans and strings of at
   most 8 bytes (hashed ids) get order-preserving byte keys (:func:`rank_keys`),
   sorted once per split, so a pair costs one binary search instead of a sort;
4. each split is written as its own parquet file of ``value, count, index``
   sorted by index (:func:`write_split`).

No task ever holds more than two splits of a vocabulary (the tree and the split count are
:mod:`.reduce`'s). Statistics tables are ``pyarrow.Table`` on every backend.

>>> import pyarrow as pa
>>> t = sum_counts([pa.table({"value": ["a", "b"], "count": [1, 5]}),
...                 pa.table({"value": ["a"], "count": [7]})])
>>> sorted(zip(t["value"].to_pylist(), t["count"].to_pylist()))
[('a', 8), ('b', 5)]
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import storage
from ..backend import sum_counts as sum_counts  # the tree's combine step, re-exported
from ..hashing import hash_array
from .cache import TABLES

SORT_KEYS = [("count", "descending"), ("value", "ascending")]


def split_counts(counts: pa.Table, splits: int) -> list[pa.Table]:
    """Split a value/count table into ``splits`` tables by the hash of the value."""
    if splits == 1:
        return [counts]
    part = hash_array(counts["value"]) % np.uint64(splits)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(splits + 1))
    # one take per split: each split owns its buffers (a slice of one big table would keep,
    # and be counted by Dask's ``sizeof`` as, the whole table's buffers)
    return [counts.take(pa.array(order[bounds[s]:bounds[s + 1]])) for s in range(splits)]


def sort_order(counts: pa.Table) -> np.ndarray:
    """Row order by descending count, ties by ascending value."""
    fast = _lexsort_order(counts)
    if fast is not None:
        return fast
    return pc.sort_indices(counts, sort_keys=SORT_KEYS).to_numpy()


def _lexsort_order(counts: pa.Table) -> np.ndarray | None:
    """:func:`sort_order` by a NumPy lexsort of (count, the value's 8 sort bytes, length)
    when every value has such bytes (integers, strings of at most 8 bytes such as hashed
    ids): about twice as fast as Arrow's sort on strings. None for other values.

    >>> t = pa.table({"value": ["b", "a", "ab", "c", None], "count": [2, 2, 2, 5, 2]})
    >>> _lexsort_order(t).tolist() == pc.sort_indices(t, sort_keys=SORT_KEYS).to_numpy().tolist()
    True
    """
    values = counts["value"]
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(values.type) or not len(values):
        return None
    nulls = pc.is_null(values).to_numpy(zero_copy_only=False)
    if nulls.any():  # Arrow puts a null value after the others of its count
        text = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
        empty = "" if text else (b"" if pa.types.is_binary(values.type) else 0)
        try:
            values = pc.fill_null(values, pa.scalar(empty).cast(values.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    encoded = _value_bytes(values)
    if encoded is None:
        return None
    value_bytes, lengths = encoded
    words = np.ascontiguousarray(value_bytes).view(">u8").ravel()
    count = counts["count"].to_numpy(zero_copy_only=False).astype(np.int64)
    return np.lexsort((lengths, words, nulls, -count))


def local_rank(counts: pa.Table) -> np.ndarray:
    """Rank of each row inside its own table (0 = most frequent)."""
    rank = np.empty(counts.num_rows, dtype=np.int64)
    rank[sort_order(counts)] = np.arange(counts.num_rows)
    return rank


def count_before(a: pa.Table, b: pa.Table) -> np.ndarray:
    """For each row of ``a``, how many rows of ``b`` sort before it (values are disjoint)."""
    if a.num_rows == 0 or b.num_rows == 0:
        return np.zeros(a.num_rows, dtype=np.int64)
    both = pa.concat_tables([a.select(["value", "count"]), b.select(["value", "count"])],
                            promote_options="permissive")
    order = sort_order(both)
    from_b = (order >= a.num_rows).astype(np.int64)
    b_before = np.cumsum(from_b)
    out = np.empty(a.num_rows, dtype=np.int64)
    is_a = order < a.num_rows
    out[order[is_a]] = b_before[is_a]
    return out


#: Bytes of a rank key: 8 for the count, 8 for the value, 1 for a string's length.
KEY_WIDTH = 17
_TOP_BIT = np.uint64(1 << 63)


def _big_endian_bytes(words: np.ndarray) -> np.ndarray:
    """(n, 8) uint8 matrix of the big-endian bytes of a uint64 array."""
    return words.astype(">u8").view(np.uint8).reshape(-1, 8)


def _value_bytes(values: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """Each value as 8 bytes that sort like the values, and string lengths; None when the
    values need more than 8 bytes or are not integers, booleans or strings."""
    n = len(values)
    if pa.types.is_boolean(values.type) or (pa.types.is_integer(values.type)
                                            and values.type != pa.uint64()):
        ints = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return _big_endian_bytes(ints.view(np.uint64) ^ _TOP_BIT), np.zeros(n, np.uint8)
    if values.type == pa.uint64():
        return _big_endian_bytes(values.to_numpy(zero_copy_only=False)), np.zeros(n, np.uint8)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
            or pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        return None
    values = values.cast(pa.large_binary())
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset:
                                                                  values.offset + n + 1]
    lengths = np.diff(offsets)
    if n and lengths.max() > 8:
        return None
    out = np.zeros((n, 8), dtype=np.uint8)
    first, last = (int(offsets[0]), int(offsets[-1])) if n else (0, 0)
    if last > first:
        data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[first:last]
        if lengths.min() == lengths.max():  # one common length (hashed ids): a reshape
            out[:, :lengths[0]] = data.reshape(n, int(lengths[0]))
        else:
            rows = np.repeat(np.arange(n), lengths)
            cols = np.arange(last - first) - np.repeat(offsets[:-1] - first, lengths)
            out[rows, cols] = data
    return out, lengths.astype(np.uint8)


def rank_keys(counts: pa.Table) -> tuple[np.ndarray, np.ndarray] | None:
    """Byte keys that sort like :data:`SORT_KEYS` (descending count, ascending value), in
    row order and sorted; None when the values have no such key (floats, longer strings).

    A key is the big-endian complement of the count, the value's bytes (strings
    zero-padded, integers with the sign bit flipped) and the string's length, so that
    comparing keys byte by byte compares (count, value) as Arrow's sort does.

    >>> t = pa.table({"value": ["b", "a", "ab", "c"], "count": [2, 2, 2, 5]})
    >>> keys, ordered = rank_keys(t)
    >>> np.searchsorted(ordered, keys).tolist() == local_rank(t).tolist() == [3, 1, 2, 0]
    True
    """
    values = counts["value"]
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    encoded = _value_bytes(values)
    if encoded is None:
        return None
    value_bytes, lengths = encoded
    key = np.empty((len(values), KEY_WIDTH), dtype=np.uint8)
    count = counts["count"].to_numpy().astype(np.int64)
    key[:, :8] = _big_endian_bytes((np.iinfo(np.int64).max - count).astype(np.uint64))
    key[:, 8:16] = value_bytes
    key[:, 16] = lengths
    keys = key.view(f"S{KEY_WIDTH}").ravel()
    return keys, np.sort(keys, kind="stable")


def count_before_keys(a_keys: tuple[np.ndarray, np.ndarray],
                      b_keys: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """:func:`count_before` from the :func:`rank_keys` of both tables (a binary search)."""
    return np.searchsorted(b_keys[1], a_keys[0]).astype(np.int64)


def add_vectors(vectors: list[np.ndarray]) -> np.ndarray:
    return functools.reduce(np.add, vectors)


def split_path(directory: str, split: int) -> str:
    return storage.join(directory, f"part.{split:05d}.parquet")


def write_split(counts: pa.Table, rank: np.ndarray, first_index: int, max_size: int | None,
                directory: str, split: int, storage_options: Any = None) -> dict[str, int]:
    """Write one split's ``value, count, index`` rows sorted by index; return its size.
    ``directory`` may be an fsspec URL (opened with ``storage_options``)."""
    keep = rank < max_size if max_size is not None else np.ones(len(rank), dtype=bool)
    table = counts.filter(pa.array(keep)).append_column(
        "index", pa.array(rank[keep] + first_index, type=pa.int64()))
    table = table.take(pc.sort_indices(table, sort_keys=[("index", "ascending")]))
    path = split_path(directory, split)
    storage.write_table(table, path, storage_options)
    TABLES.put(path, table, VocabTable.load, storage_options)  # lookups here need no re-read
    return {"size": table.num_rows, "count": int(pc.sum(table["count"]).as_py() or 0)}


class VocabTable:
    """One split of a vocabulary, ready for lookups: values, their indices, and a hash index.

    ``positions`` finds values through their 64-bit value hash in a ``pandas.Index`` whose
    hash table is built once per process (Arrow's ``index_in`` rebuilds its table on every
    call), then checks that the values really match, so a hash collision never maps a value
    to another's id.
    """

    def __init__(self, values: pa.Array, index: np.ndarray) -> None:
        self.values, self.index = values, index
        self._by_hash: pd.Index | None = None
        self._width: int | None = None

    @classmethod
    def load(cls, table: pa.Table) -> VocabTable:
        """The lookup table of a split file's ``value`` and ``index`` columns."""
        return cls(table["value"].combine_chunks(), table["index"].to_numpy())

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + self.index.nbytes + HASH_INDEX_BYTES_PER_ENTRY * len(self.index)

    def _may_collide(self, values: pa.Array | pa.ChunkedArray) -> bool:
        """Whether equal hashes could still hide different values.

        The hash is a bijection on 64-bit integers and floats, and on strings of one
        common length of at most 8 bytes (one word, see :mod:`..hashing`): there, equal
        hashes mean equal values and the check is skipped.
        """
        kind = self.values.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) \
                or pa.types.is_temporal(kind) or pa.types.is_null(kind):
            return False
        if pa.types.is_decimal(kind):
            return True
        if self._width is None:
            lengths = pc.binary_length(self.values)
            low, high = pc.min_max(lengths).values()
            self._width = high.as_py() if low.as_py() == high.as_py() else -1
        if not 0 < self._width <= 8:
            return True
        low, high = pc.min_max(pc.binary_length(values)).values()
        return not (low.as_py() in (None, self._width) and high.as_py() in (None, self._width))

    def by_hash(self) -> pd.Index | None:
        if self._by_hash is None:
            hashes = pd.Index(hash_array(self.values))
            self._by_hash = hashes if hashes.is_unique else pd.Index([], dtype="uint64")
            self._exact_only = not hashes.is_unique
        return None if self._exact_only else self._by_hash

    def positions(self, values: pa.Array | pa.ChunkedArray, hashes: np.ndarray) -> np.ndarray:
        """Row of each value in this table, -1 when absent (or null)."""
        index = self.by_hash()
        if index is None:  # two vocabulary values share a hash: exact lookup
            pos = pc.index_in(values, value_set=self.values)
            return pc.fill_null(pos, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        pos = index.get_indexer(hashes)
        found = pos >= 0
        if found.any() and self._may_collide(values):
            candidates = self.values.take(pa.array(np.where(found, pos, 0)))
            same = pc.fill_null(pc.equal(values, candidates), False)
            pos[found & ~same.to_numpy(zero_copy_only=False)] = -1
        return pos.astype(np.int64)


#: Bytes a vocabulary lookup entry costs beyond its value and index (hash + hash table).
HASH_INDEX_BYTES_PER_ENTRY = 32


def load_split(directory: str, split: int, storage_options: Any = None) -> VocabTable:
    """One split of a vocabulary, cached per process (:mod:`.cache`) until the file changes."""
    return TABLES.get(split_path(directory, split), VocabTable.load, storage_options)


def read_vocabulary(directory: str, splits: int, storage_options: Any = None) -> pa.Table:
    """The whole vocabulary (``value, count, index``) sorted by index; for people, not for jobs."""
    tables = [storage.read_table(split_path(directory, s), storage_options)
              for s in range(splits)]
    table = pa.concat_tables(tables)
    return table.take(pc.sort_indices(table, sort_keys=[("index", "ascending")]))


def value_dtype_table(counts: Any) -> pa.Table:
    """Normalise a value/count table: drop nulls, counts as int64."""
    counts = counts.filter(pc.is_valid(counts["value"]))
    return counts.set_column(1, "count", pc.cast(counts["count"], pa.int64()))
