"""Value counts on 64-bit keys that sort like the values: merged with NumPy, not by hashing.

Summing value counts is the Categorify fit's inner loop: every partition's counts are merged
with its neighbours' at each level of the tree (:mod:`.reduce`). Merged by value with a hash
table of strings, that cost grows faster than the data once the tables outgrow the CPU's
caches (millions of distinct ids). Most id columns of RecSys logs have a cheaper exact form:
each value maps, one to one and in order, to an unsigned 64-bit *key*:

* integers and booleans: the int64 value with its sign bit flipped;
* floats: the float64 bits, flipped so that they sort as the numbers (``-0.0`` is ``0.0``,
  one value, as the value hash and pandas count it);
* strings (and binary) of exactly 8 bytes, such as Criteo's hashed ids: their bytes, big-endian;
* strings of at most 7 bytes: their bytes zero-padded to 7, then the length.

Keys compare as the values do (strings byte-wise, as Arrow sorts them), so a table sorted by
key is sorted by value, and equal keys are equal values: there are no collisions to check.
Counts are merged by a stable sort of the concatenated, already sorted keys (NumPy's timsort
merges the runs) and a sum per run of equal keys (:func:`merge`). Values of any other kind
(longer or mixed strings, decimals, ...) keep Arrow's value/count tables, and a merge of
tables of different kinds falls back to them, so every input stays exact.

>>> import pyarrow as pa
>>> a = encode(pa.table({"value": ["b", "a"], "count": [1, 5]}))
>>> b = encode(pa.table({"value": ["a", "c"], "count": [7, 1]}))
>>> a.kind, a.keys.tolist() == sorted(a.keys.tolist())
('short', True)
>>> decode(merge([a, b])).to_pylist()
[{'value': 'a', 'count': 12}, {'value': 'b', 'count': 1}, {'value': 'c', 'count': 1}]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.hashing import FLOAT_SEED, INT_SEED, LEN_SEED, fmix64, hash_array

_TOP_BIT = np.uint64(1 << 63)
_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW_BYTE = np.uint64(0xFF)


@dataclass(frozen=True)
class KeyedCounts:
    """Counts of distinct values by their key: ``keys`` (uint64, ascending, unique),
    ``counts`` (int64), the key ``kind`` and the values' Arrow ``type``."""

    keys: np.ndarray
    counts: np.ndarray
    kind: str
    type: pa.DataType

    @property
    def num_rows(self) -> int:
        return len(self.keys)

    def __sizeof__(self) -> int:  # what Dask's memory accounting of a partial reads
        return self.keys.nbytes + self.counts.nbytes + 48


Counts = KeyedCounts | pa.Table


def _is_text(kind: pa.DataType) -> bool:
    return (pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind))


def _big_endian_bytes(words: np.ndarray) -> np.ndarray:
    """(n, 8) uint8 matrix of the big-endian bytes of a uint64 array."""
    return words.astype(">u8").view(np.uint8).reshape(-1, 8)


def value_bytes(values: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """Each value as 8 bytes that sort like the values (an ``(n, 8)`` uint8 matrix), and
    string lengths; None when the values need more than 8 bytes or are not integers,
    booleans or strings."""
    n = len(values)
    if pa.types.is_boolean(values.type) or (pa.types.is_integer(values.type)
                                            and values.type != pa.uint64()):
        ints = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return _big_endian_bytes(ints.view(np.uint64) ^ _TOP_BIT), np.zeros(n, np.uint8)
    if values.type == pa.uint64():
        return _big_endian_bytes(values.to_numpy(zero_copy_only=False)), np.zeros(n, np.uint8)
    if not _is_text(values.type):
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


def _string_keys(values: pa.Array) -> tuple[np.ndarray, str] | None:
    """Keys of strings of exactly 8 bytes (``fixed8``) or of at most 7 (``short``)."""
    encoded = value_bytes(values)
    if encoded is None:
        return None
    matrix, lengths = encoded
    if len(lengths) and (lengths == 8).all():
        kind = "fixed8"
    elif not len(lengths) or lengths.max() <= 7:
        kind = "short"
        matrix[:, 7] = lengths
    else:
        return None
    return np.ascontiguousarray(matrix).view(">u8").ravel().astype(np.uint64), kind


def _keys(values: pa.Array) -> tuple[np.ndarray, str] | None:
    kind = values.type
    if pa.types.is_boolean(kind) or (pa.types.is_integer(kind) and kind != pa.uint64()):
        ints = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return ints.view(np.uint64) ^ _TOP_BIT, "int"
    if pa.types.is_floating(kind):
        floats = values.cast(pa.float64()).to_numpy(zero_copy_only=False)
        bits = np.where(floats == 0.0, 0.0, floats).view(np.uint64)
        negative = (bits & _TOP_BIT) != 0
        return np.where(negative, bits ^ _ALL_BITS, bits | _TOP_BIT), "float"
    if _is_text(kind):
        return _string_keys(values)
    return None


def encode(counts: pa.Table) -> Counts:
    """A ``value``/``count`` table as :class:`KeyedCounts` sorted by key, or as a table
    when its values have no key; null values are left out, counts are int64."""
    keyed = encode_parts([counts])
    if keyed is not None:
        return keyed
    if counts["value"].null_count:
        counts = counts.filter(pc.is_valid(counts["value"]))
    return counts.set_column(1, "count", pc.cast(counts["count"], pa.int64()))


def encode_parts(parts: list[pa.Table]) -> KeyedCounts | None:
    """The summed counts of several ``value``/``count`` tables (values may repeat across
    them, such as the row groups of a partition), keyed and sorted with one sort; None
    when their values have no common kind of key."""
    found, kinds = [], []
    for counts in parts:
        values = counts["value"]
        values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        valid = None
        if values.null_count:
            valid = pc.is_valid(values)
            values = values.filter(valid)
        keys = _keys(values)
        if keys is None:
            return None
        number = counts["count"] if valid is None else counts["count"].filter(valid)
        found.append((keys[0], number.to_numpy().astype(np.int64)))
        kinds.append((keys[1], values.type))
    present = {k for k, (keys, _) in zip(kinds, found, strict=True) if len(keys)}
    if len(present) > 1:  # an empty part has no kind of its own
        return None
    kind, type_ = present.pop() if present else kinds[0]
    keys = np.concatenate([k for k, _ in found])
    number = np.concatenate([n for _, n in found])
    order = np.argsort(keys)  # unstable: equal keys are summed anyway
    return _sum_runs(keys[order], number[order], kind, type_)


def _values(counts: KeyedCounts) -> pa.Array:
    keys, kind = counts.keys, counts.kind
    if kind == "int":
        return pa.array((keys ^ _TOP_BIT).view(np.int64)).cast(counts.type)
    if kind == "float":
        negative = (keys & _TOP_BIT) == 0
        bits = np.where(negative, keys ^ _ALL_BITS, keys ^ _TOP_BIT)
        return pa.array(bits.view(np.float64)).cast(counts.type)
    matrix = keys.astype(">u8").view(np.uint8).reshape(-1, 8)
    if kind == "fixed8":
        lengths = np.full(len(keys), 8, dtype=np.int64)
        data = matrix.ravel()
    else:
        lengths = matrix[:, 7].astype(np.int64)
        data = matrix[:, :7][np.arange(7) < lengths[:, None]]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    binary = pa.Array.from_buffers(pa.large_binary(), len(keys),
                                   [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())])
    return binary.cast(counts.type) if pa.types.is_binary(counts.type) or \
        pa.types.is_large_binary(counts.type) else binary.view(pa.large_string()).cast(counts.type)


def decode(counts: Counts, rows: np.ndarray | None = None) -> pa.Table:
    """The ``value``/``count`` table of :class:`KeyedCounts` (sorted by value), or of its
    ``rows`` in that order (taken from the keys, before any string is made); tables pass.

    >>> c = encode(pa.table({"value": ["b", "a", "c"], "count": [1, 2, 3]}))
    >>> decode(c, np.array([2, 0]))["value"].to_pylist()
    ['c', 'a']
    """
    if isinstance(counts, pa.Table):
        return counts if rows is None else counts.take(pa.array(rows))
    if rows is not None:
        counts = KeyedCounts(counts.keys[rows], counts.counts[rows], counts.kind, counts.type)
    return pa.table({"value": _values(counts), "count": pa.array(counts.counts, pa.int64())})


def _sum_runs(keys: np.ndarray, number: np.ndarray, kind: str, type_: pa.DataType) -> KeyedCounts:
    """Sum the counts of each run of equal keys (``keys`` sorted)."""
    if not len(keys):
        return KeyedCounts(keys, number, kind, type_)
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    return KeyedCounts(keys[starts], np.add.reduceat(number, starts), kind, type_)


def merge(parts: list[Counts]) -> KeyedCounts | None:
    """Sum the counts of equal values of keyed tables of one kind and type, by key; None
    for any other mix (the caller sums those by value with Arrow, exact for every type)."""
    nonempty = [p for p in parts if p.num_rows] or parts[:1]
    first = nonempty[0]
    if not all(isinstance(p, KeyedCounts) and p.kind == first.kind and p.type == first.type
               for p in nonempty):
        return None
    if len(nonempty) == 1:
        return first
    keys = np.concatenate([p.keys for p in nonempty])
    number = np.concatenate([p.counts for p in nonempty])
    order = np.argsort(keys, kind="stable")  # NumPy's timsort: a merge of the sorted runs
    return _sum_runs(keys[order], number[order], first.kind, first.type)


def value_hashes(counts: Counts) -> np.ndarray:
    """The value hash (:func:`..hashing.hash_array`) of each value (from the key alone)."""
    if isinstance(counts, pa.Table):
        return hash_array(counts["value"])
    keys, kind = counts.keys, counts.kind
    with np.errstate(over="ignore"):
        if kind == "int":
            return fmix64((keys ^ _TOP_BIT) ^ INT_SEED)
        if kind == "float":
            negative = (keys & _TOP_BIT) == 0
            return fmix64(np.where(negative, keys ^ _ALL_BITS, keys ^ _TOP_BIT) ^ FLOAT_SEED)
        words = keys.byteswap()  # the bytes read little-endian: the value's first word
        if kind == "fixed8":
            return fmix64(words ^ (np.uint64(8) * LEN_SEED))
        lengths = keys & _LOW_BYTE
        return fmix64((words & np.uint64(0x00FFFFFFFFFFFFFF)) ^ (lengths * LEN_SEED))


def group_rows(labels: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows grouped by label (``0 <= label < groups``), each group in row order, and
    where each group starts and ends in that order (``groups + 1`` edges).

    A stable argsort of the labels as 8- or 16-bit integers where they fit (NumPy's radix
    sort: linear, one pass a byte; 4-6x its merge sort of 64-bit labels on a million rows).

    >>> order, edges = group_rows(np.array([2, 0, 2, 1]), 3)
    >>> order.tolist(), edges.tolist()
    ([1, 3, 0, 2], [0, 1, 2, 4])
    """
    labels = np.asarray(labels)
    small = (labels.astype(np.uint8) if groups <= 1 << 8
             else labels.astype(np.uint16) if groups <= 1 << 16 else labels)
    order = np.argsort(small, kind="stable")
    edges = np.zeros(groups + 1, np.int64)
    np.cumsum(np.bincount(small, minlength=groups), out=edges[1:])
    return order, edges


def split(counts: Counts, splits: int, value_hashes: np.ndarray) -> list[Counts]:
    """``counts`` split into ``splits`` parts by ``value_hashes % splits`` (each part keeps
    its own order and buffers)."""
    order, bounds = group_rows(value_hashes % np.uint64(splits), splits)
    pieces = [order[bounds[s]:bounds[s + 1]] for s in range(splits)]
    if isinstance(counts, pa.Table):
        return [counts.take(pa.array(rows)) for rows in pieces]
    return [KeyedCounts(counts.keys[rows], counts.counts[rows], counts.kind, counts.type)
            for rows in pieces]


def at_least(counts: Counts, threshold: int) -> Counts:
    """The values counted at least ``threshold`` times (all of them when it is 0 or 1)."""
    if threshold <= 1:
        return counts
    if isinstance(counts, pa.Table):
        return counts.filter(pc.greater_equal(counts["count"], threshold))
    keep = counts.counts >= threshold
    return KeyedCounts(counts.keys[keep], counts.counts[keep], counts.kind, counts.type)


def at_most(counts: Counts, limit: int | None) -> Counts:
    """The values counted at most ``limit`` times (all of them when it is None)."""
    if limit is None:
        return counts
    if isinstance(counts, pa.Table):
        return counts.filter(pc.less_equal(counts["count"], limit))
    keep = counts.counts <= limit
    return KeyedCounts(counts.keys[keep], counts.counts[keep], counts.kind, counts.type)


def total(counts: Counts) -> int:
    """The sum of the counts."""
    if isinstance(counts, pa.Table):
        return int(pc.sum(counts["count"]).as_py() or 0)
    return int(counts.counts.sum())
