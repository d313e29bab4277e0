"""Building vocabularies of any size with bounded memory per task.

The build is a hash-partitioned tree reduction:

1. each data partition counts its values and splits the counts into ``S`` tables
   by the value-defined hash (:func:`split_counts`);
2. the ``P`` pieces of each split are summed in a tree, ``fan_in`` at a time
   (:func:`sum_counts`); a value lives in exactly one split, so the sums are exact;
3. the global rank of a value in the order *descending count, ascending value* is
   placed from ranges of value sorted on their own and the ranges' count histograms
   (:mod:`.ranking`), in time linear in the vocabulary;
4. each split is written as its own parquet file of ``value, count, index``
   in the order of the value hash, so it is read as a lookup table with nothing to sort
   (:func:`write_split`, :class:`VocabTable`).

Counts travel keyed by 64-bit keys that sort like the values where the values have them
(:mod:`..backend.keyed_counts`: integers, floats, strings of at most 8 bytes), and are
merged with NumPy. No task ever holds more than about one split of a vocabulary (the tree
and the split count are :mod:`.reduce`'s). Statistics tables are ``pyarrow.Table`` on every backend.

>>> import pyarrow as pa
>>> t = sum_counts([pa.table({"value": ["a", "b"], "count": [1, 5]}),
...                 pa.table({"value": ["a"], "count": [7]})])
>>> sorted(zip(t["value"].to_pylist(), t["count"].to_pylist()))
[('a', 8), ('b', 5)]
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.backend import merge_sums
from interactive_recsys.errors import WorkflowFormatError
from interactive_recsys.hashing import hash_array
from interactive_recsys.store import storage
from interactive_recsys.store._outputs import atomic_file, output_error
from interactive_recsys.tables._cache import TABLES
from interactive_recsys.tables._vocabulary_check import (
    FIX,
    check_vocabulary,
    read_checked,
    split_path,
)

SORT_KEYS = [("count", "descending"), ("value", "ascending")]


def split_counts(counts: kc.Counts, splits: int) -> list[kc.Counts]:
    """Split a count table (keyed or by value) into ``splits`` by the hash of the value.

    Each split owns its buffers (a slice of one big table would keep, and be counted by
    Dask's ``sizeof`` as, the whole table's buffers)."""
    if splits == 1:
        return [counts]
    return kc.split(counts, splits, kc.value_hashes(counts))


def split_rows(hashes: np.ndarray, splits: int) -> list[np.ndarray]:
    """The rows of each hash split (``hashes % splits``, as :func:`split_counts` cuts a
    table), each in row order: one linear grouping (:func:`~..backend.keyed_counts.group_rows`)
    rather than one pass over the rows per split, which grew with splits x rows.

    >>> [r.tolist() for r in split_rows(np.array([5, 2, 7, 4], np.uint64), 3)]
    [[], [2, 3], [0, 1]]
    """
    if splits == 1:
        return [np.arange(len(hashes))]
    order, edges = kc.group_rows(hashes % np.uint64(splits), splits)
    return [order[edges[s]:edges[s + 1]] for s in range(splits)]


def sum_counts(parts: list[kc.Counts]) -> kc.Counts:
    """Sum the counts of equal values: by key (:mod:`..backend.keyed_counts`) when every
    part is keyed alike, else by value with Arrow (the tree's combine step)."""
    merged = kc.merge(parts)
    return merged if merged is not None else merge_sums([kc.decode(p) for p in parts])


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
    encoded = kc.value_bytes(values)
    if encoded is None:
        return None
    value_bytes, lengths = encoded
    words = np.ascontiguousarray(value_bytes).view(">u8").ravel()
    count = counts["count"].to_numpy(zero_copy_only=False).astype(np.int64)
    return np.lexsort((lengths, words, nulls, -count))


def write_table_file(table: pa.Table, path: str, storage_options: Any = None,
                     **options: Any) -> None:
    """Write a statistics table atomically (``options``: of ``pq.write_table``); a failed
    write (disk full, ``ulimit -f``, no permission) is an
    :class:`~interactive_recsys.store._outputs.OutputError` naming the file and the fix, and leaves
    no part of it. ``path`` may be an fsspec URL (one PUT: whole or absent)."""
    if storage.is_remote(path):
        storage.write_table(table, path, storage_options, **options)
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_file(path) as tmp:
            pq.write_table(table, tmp, **options)
    except (OSError, pa.ArrowException) as exc:
        found = re.search(r"errno (\d+)", str(exc), re.IGNORECASE)
        code = getattr(exc, "errno", None) or (int(found[1]) if found else errno.EIO)
        raise output_error(path, OSError(code, os.strerror(code), path)) from exc


def write_split(counts: kc.Counts, rank: np.ndarray, first_index: int, max_size: int | None,
                directory: str, split: int, storage_options: Any = None) -> dict[str, int]:
    """Write one split's ``value, count, index`` rows in value-hash order; return its size.
    ``directory`` may be an fsspec URL (opened with ``storage_options``)."""
    hashes = kc.value_hashes(counts)
    kept = np.flatnonzero(rank < max_size) if max_size is not None else None
    if kept is not None:
        hashes = hashes[kept]
    order = np.argsort(hashes)  # in hash order: a lookup table as it is read
    rows = order if kept is None else kept[order]
    hashes = hashes[order]
    table = kc.decode(counts, rows).append_column(
        "index", pa.array(rank[rows] + first_index, type=pa.int64()))
    path = split_path(directory, split)
    # distinct values (hashed ids hardly compress; statistics of a table in hash order are
    # of no use): uncompressed, without statistics, it writes and reads 2-3x faster
    write_table_file(table, path, storage_options, use_dictionary=["count"],
                     compression="none", write_statistics=False)
    TABLES.put(path, table, lambda t: VocabTable.load(t, hashes),  # lookups here need no
               storage_options)                                   # re-read
    return {"size": table.num_rows, "count": int(pc.sum(table["count"]).as_py() or 0)}


class VocabTable:
    """One split of a vocabulary, ready for lookups: sorted value hashes and the ids.

    The values' 64-bit hashes are kept sorted (with each hash's row, where the table is not
    stored in hash order already), and a lookup sorts its queries' hashes and merges them in
    with ``np.searchsorted``: 12 bytes a value (hash and int32 id), no hash table to build,
    and one pass over the keys per lookup. The values themselves are kept only where equal
    hashes could hide different values (strings of mixed lengths or longer than 8 bytes,
    decimals): a match is then checked against the value, so a hash collision never maps a
    value to another's id. Where the hash is a bijection (integers, floats, strings of one
    common length of at most 8 bytes such as Criteo's ids) no value is kept: a query of
    another length cannot be in the table.

    >>> t = VocabTable(pa.array(["b", "a", "c"]), np.array([4, 3, 5]))
    >>> q = pa.array(["c", "x", "a"])
    >>> t.positions(q, hash_array(q)).tolist()   # rows of the table, -1: absent
    [2, -1, 1]
    """

    def __init__(self, values: pa.Array, index: np.ndarray,
                 hashes: np.ndarray | None = None) -> None:
        self._kind = values.type
        self._width = _common_width(values)
        hashes = hash_array(values) if hashes is None else hashes
        order = None if _is_sorted(hashes) else np.argsort(hashes)
        keys = hashes if order is None else hashes[order]
        unique = len(keys) < 2 or bool((keys[1:] != keys[:-1]).all())
        #: the sorted hashes (None: two values share a hash, lookups match values exactly)
        self._keys = keys if unique else None
        self._rows = None if order is None or not unique else order.astype(
            np.int32 if len(order) < 2**31 else np.int64)
        self.index = _narrow(np.asarray(index))
        self.values = values if not unique or self._checks_values() else None

    @classmethod
    def load(cls, table: pa.Table, hashes: np.ndarray | None = None) -> VocabTable:
        """The lookup table of a split file's ``value`` and ``index`` columns."""
        return cls(table["value"].combine_chunks(), table["index"].to_numpy(), hashes)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self._keys, self._rows, self.index, self.values)
                   if a is not None)

    def _checks_values(self) -> bool:
        """Whether a hash match must be checked against the value (the hash is no
        bijection on this table's values)."""
        return pa.types.is_decimal(self._kind) or (
            self._width is not None and not 0 < self._width <= 8)

    def _may_collide(self, values: pa.Array | pa.ChunkedArray) -> bool:
        """Whether equal hashes could still hide different values.

        The hash is a bijection on 64-bit integers and floats, and on strings of one
        common length of at most 8 bytes (one word, see :mod:`..hashing`): there, equal
        hashes mean equal values and the check is skipped.
        """
        if self._checks_values():
            return True
        if self._width is None:  # integers, floats, booleans, times
            return False
        low, high = pc.min_max(pc.binary_length(values)).values()
        return not (low.as_py() in (None, self._width) and high.as_py() in (None, self._width))

    def positions(self, values: pa.Array | pa.ChunkedArray, hashes: np.ndarray) -> np.ndarray:
        """Row of each value in this table, -1 when absent (or null)."""
        if self._keys is None:  # two vocabulary values share a hash: exact lookup
            pos = pc.index_in(values, value_set=self.values)
            return pc.fill_null(pos, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        pos = self._find(hashes)
        found = pos >= 0
        if found.any() and self._may_collide(values):
            if self.values is None:  # one common width: a value of another is not here
                same = ~self._other_width(values)
            else:
                candidates = self.values.take(pa.array(np.where(found, pos, 0)))
                same = pc.fill_null(pc.equal(values, candidates), False).to_numpy(
                    zero_copy_only=False)
            pos[found & ~same] = -1
        return pos

    def _find(self, hashes: np.ndarray) -> np.ndarray:
        """Row of each hash among the keys (-1: absent), the queries merged in sorted."""
        pos = np.full(len(hashes), -1, dtype=np.int64)
        order = np.argsort(hashes)  # sorted queries walk the keys once (10x faster)
        hit, rows = self._find_sorted(hashes[order])
        pos[order[hit]] = rows
        return pos

    def _find_sorted(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For sorted query hashes: which are among the keys, and the rows of those."""
        keys = self._keys
        if not len(keys) or not len(wanted):
            return np.zeros(len(wanted), bool), np.zeros(0, np.int64)
        at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        hit = keys[at] == wanted
        return hit, (at[hit] if self._rows is None else self._rows[at[hit]])

    def ids(self, pos: np.ndarray, otherwise: np.ndarray) -> np.ndarray:
        """The id at each of :meth:`positions`' rows, ``otherwise`` where it is -1."""
        if not len(self.index):
            return otherwise
        return np.where(pos >= 0, self.index[pos], otherwise)  # -1 reads the last id: unused

    def _other_width(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Where a value's byte length is not this table's common width (nulls included)."""
        lengths = pc.fill_null(pc.binary_length(values), -1)
        return lengths.to_numpy(zero_copy_only=False) != self._width

    def _keys_only(self) -> bool:
        """Whether a lookup needs nothing but the sorted hashes (and the common width)."""
        return self._keys is not None and self.values is None


def split_ids(tables: Sequence[VocabTable], values: pa.Array | pa.ChunkedArray,
              hashes: np.ndarray, otherwise: np.ndarray) -> np.ndarray:
    """Each value's id in a vocabulary of hash splits (value ``v`` lives in split
    ``hash(v) % len(tables)``; one split: the table itself), ``otherwise`` where it is absent.

    The queries are sorted by hash once and grouped by split (a radix pass), and each
    split's sorted block is merged into that split's keys: a few array operations per
    split, instead of cutting the values into one lookup per split, which cost
    ``splits x row groups x columns`` value copies and checks a partition (their sum grew
    with the square of the rows: 13 splits and 400 partitions at 100M Kaggle-profile rows).

    >>> parts = [VocabTable(pa.array(v), np.array(i)) for v, i in (([], []), ([], []))]
    >>> q = pa.array(["a", "b"])
    >>> parts[int(hash_array(q)[0] % 2)] = VocabTable(pa.array(["a"]), np.array([7]))
    >>> split_ids(parts, q, hash_array(q), np.array([2, 2])).tolist()
    [7, 2]
    """
    splits = len(tables)
    if splits == 1:
        return tables[0].ids(tables[0].positions(values, hashes), otherwise)
    present = [t for t in tables if len(t.index)]
    if not present or not all(
            t._keys_only() and t._kind == present[0]._kind and t._width == present[0]._width
            for t in present):
        result = otherwise.copy()
        for s, rows in enumerate(split_rows(hashes, splits)):
            if len(rows):
                t, part = tables[s], values.take(pa.array(rows))
                result[rows] = t.ids(t.positions(part, hashes[rows]), result[rows])
        return result
    order = np.argsort(hashes)
    by_split, edges = kc.group_rows(hashes[order] % np.uint64(splits), splits)  # stable:
    rows = order[by_split]  # each split's block stays in hash order
    result = otherwise.copy()
    for s, table in enumerate(tables):
        block = rows[edges[s]:edges[s + 1]]
        if len(block) and len(table.index):
            hit, at = table._find_sorted(hashes[block])
            result[block[hit]] = table.index[at]
    if present[0]._may_collide(values):  # one common width: a value of another is not here
        other = present[0]._other_width(values)
        result[other] = otherwise[other]
    return result


def _is_sorted(a: np.ndarray) -> bool:
    return len(a) < 2 or bool((a[1:] >= a[:-1]).all())


def _narrow(index: np.ndarray) -> np.ndarray:
    """Ids as int32 where they fit (a lookup table's ids are most of its bytes)."""
    if index.dtype == np.int64 and len(index) and \
            -(2**31) <= index.min() and index.max() < 2**31:
        return index.astype(np.int32)
    return index


def _common_width(values: pa.Array) -> int | None:
    """Strings and binaries: their one common byte length, -1 when lengths differ (0 when
    empty); None for other types."""
    kind = values.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
            or pa.types.is_string_view(kind)):
        return None
    low, high = pc.min_max(pc.binary_length(values)).values()
    if low.as_py() is None:
        return 0
    return high.as_py() if low.as_py() == high.as_py() else -1


def load_split(directory: str, split: int, storage_options: Any = None,
               bounds: tuple[int, int] | None = None) -> VocabTable:
    """One split of a vocabulary, cached per process (:mod:`.cache`) until the file changes.
    ``bounds``: ``(first id, cardinality)``; a file read with ids outside is refused
    (:func:`.vocabulary_check.check_vocabulary`), naming it."""
    path = split_path(directory, split)
    if bounds is None:
        return TABLES.get(path, VocabTable.load, storage_options)

    def checked(table: pa.Table) -> VocabTable:
        check_vocabulary(table, path, first_index=bounds[0], cardinality=bounds[1],
                         whole=False)
        return VocabTable.load(table)

    try:
        return TABLES.get(path, checked, storage_options)
    except pa.ArrowInvalid as exc:  # replaced by another file after the load's checks
        raise WorkflowFormatError(f"{path!r} is not a parquet file ({str(exc)[:160]}). "
                                  f"{FIX}") from None


def read_vocabulary(directory: str, splits: int, storage_options: Any = None) -> pa.Table:
    """The whole vocabulary (``value, count, index``) sorted by index; for people, not for jobs."""
    tables = [read_checked(split_path(directory, s), storage_options) for s in range(splits)]
    table = pa.concat_tables(tables)
    return table.take(pc.sort_indices(table, sort_keys=[("index", "ascending")]))


def value_dtype_table(counts: Any) -> pa.Table:
    """Normalise a value/count table: drop nulls, counts as int64."""
    counts = counts.filter(pc.is_valid(counts["value"]))
    return counts.set_column(1, "count", pc.cast(counts["count"], pa.int64()))
