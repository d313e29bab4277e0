"""Rows in the loader's columnar layout: NumPy arrays ready to be cut into batches.

A :class:`Block` is built once per parquet row group (in a reader thread) from an Arrow
table: continuous columns side by side in one float32 matrix, single-hot categorical ids
side by side in one ``[rows, n_single]`` int64 matrix (a shuffled gather then reads one
contiguous run of memory per row, as a batched gather from a row-major array does, instead
of one cache line per id; each batch is turned key-major in cache-sized chunks), multi-hot
columns as flat values + offsets. Concatenating, permuting and
gathering rows of blocks are whole-array NumPy operations; no step loops over rows in
Python.

Examples
--------
>>> import pyarrow as pa
>>> from interactive_recsys.loader._columns import Columns
>>> cols = Columns(cat=("c", "tags"), multi_hot=(False, True), cont=("x",), label=("y",),
...                extra=())
>>> table = pa.table({"c": [3, 4, 5], "tags": [[1, 2], [], [7]], "x": [0.5, 1.5, 2.5],
...                   "y": [0, 1, 0]})
>>> block = block_from_table(table, cols, "float32", "example")
>>> shuffled = block.take(np.array([2, 0, 1]))
>>> batch = shuffled.to_batch(0, 2)
>>> batch.sparse.values.tolist(), batch.sparse.lengths.tolist()
([5, 3, 7, 1, 2], [1, 1, 1, 2])
>>> batch.dense.tolist(), batch.labels.tolist()
([[2.5], [0.5]], [0.0, 0.0])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.errors import DatasetError
from interactive_recsys.loader._batch import Batch
from interactive_recsys.loader._columns import Columns
from interactive_recsys.loader._jagged import JaggedBatch, offsets_dtype


@dataclass(frozen=True)
class Block:
    """``rows`` rows: dense ``[rows, n_cont]``, labels ``[rows, n_label]``, single-hot ids
    ``[rows, n_single]``, multi-hot values and offsets, extras.

    ``multi_offsets[j]`` are absolute positions into ``multi_values[j]`` (``rows + 1`` of
    them), so slicing a block never copies values. ``dense`` is float32; the online
    transform's raw rows (:meth:`~.online.OnlineTransform.block`) carry it as int32 (null:
    :data:`NULL_INT32`) or float64 (null: NaN), and rows of both kinds gathered together
    become float64 (:func:`widen`).
    """

    cols: Columns
    rows: int
    dense: np.ndarray
    labels: np.ndarray
    single: np.ndarray
    multi_values: tuple[np.ndarray, ...]
    multi_offsets: tuple[np.ndarray, ...]
    extras: dict[str, np.ndarray]

    def read_only(self) -> Block:
        """This block with every array marked read-only (for the loader's cache)."""
        arrays = [self.dense, self.labels, self.single, *self.multi_values,
                  *self.multi_offsets, *self.extras.values()]
        for a in arrays:
            a.flags.writeable = False
        return self

    def slice(self, start: int, stop: int) -> Block:
        """Rows ``start:stop`` as views (no copy)."""
        return Block(self.cols, stop - start, self.dense[start:stop], self.labels[start:stop],
                     self.single[start:stop], self.multi_values,
                     tuple(o[start:stop + 1] for o in self.multi_offsets),
                     {k: v[start:stop] for k, v in self.extras.items()})

    def take(self, index: np.ndarray) -> Block:
        """Rows in the order of ``index`` (one gather per array, multi-hot included)."""
        return gather([self], index)

    def to_batch(self, start: int = 0, stop: int | None = None) -> Batch:
        """Rows ``start:stop`` as a :class:`Batch` (dense, labels, extras are views)."""
        stop = self.rows if stop is None else stop
        labels = self.labels[start:stop]
        if labels.shape[1] == 1:
            labels = labels[:, 0]
        elif labels.shape[1] == 0:
            labels = None
        return Batch(self.dense[start:stop], labels, self._jagged(start, stop),
                     {k: v[start:stop] for k, v in self.extras.items()},
                     list(self.cols.cont), list(self.cols.label))

    def _jagged(self, start: int, stop: int) -> JaggedBatch:
        """Rows ``start:stop`` of the categorical columns, key-major (one copy per key)."""
        n, keys = stop - start, list(self.cols.cat)
        if not any(self.cols.multi_hot):  # all single-hot: key-major already, or transposed
            rows = self.single[start:stop]
            values = (np.ascontiguousarray(rows.T) if self.single.flags.f_contiguous
                      else key_major(rows)).reshape(-1)
            lengths = np.ones(len(values), np.int32)
            offsets = np.arange(len(values) + 1, dtype=offsets_dtype(len(values)))
            return JaggedBatch(keys, values, lengths, offsets, [n] * len(keys),
                               list(range(0, n * len(keys) + 1, n)), n)
        segments, per_row = [], []
        single_i = multi_i = 0
        for multi in self.cols.multi_hot:
            if multi:
                off = self.multi_offsets[multi_i][start:stop + 1]
                segments.append(self.multi_values[multi_i][off[0]:off[-1]])
                per_row.append(np.diff(off))
                multi_i += 1
            else:
                segments.append(self.single[start:stop, single_i])
                per_row.append(None)
                single_i += 1
        length_per_key = [len(v) for v in segments]
        offset_per_key = [0, *itertools.accumulate(length_per_key)]
        values = np.empty(offset_per_key[-1], np.int64)
        lengths = np.ones(n * len(keys), np.int32)
        for k, (seg, lens) in enumerate(zip(segments, per_row, strict=True)):
            values[offset_per_key[k]:offset_per_key[k + 1]] = seg
            if lens is not None:
                lengths[k * n:(k + 1) * n] = lens
        offsets = np.zeros(len(lengths) + 1, offsets_dtype(len(values)))
        np.cumsum(lengths, out=offsets[1:])
        return JaggedBatch(keys, values, lengths, offsets, length_per_key, offset_per_key, n)


def concat_blocks(blocks: Sequence[Block]) -> Block:
    """One block of all rows of ``blocks``, in order."""
    if len(blocks) == 1:
        return blocks[0]
    first = blocks[0]
    values, offsets = [], []
    for j in range(len(first.multi_values)):
        segs = [b.multi_values[j][b.multi_offsets[j][0]:b.multi_offsets[j][-1]] for b in blocks]
        lens = np.concatenate([np.diff(b.multi_offsets[j]) for b in blocks])
        off = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        values.append(np.concatenate(segs))
        offsets.append(off)
    dtype = _dense_dtype(blocks)
    return Block(first.cols, sum(b.rows for b in blocks),
                 np.concatenate([widen(b.dense, dtype) for b in blocks]),
                 np.concatenate([b.labels for b in blocks]),
                 np.concatenate([b.single for b in blocks]), tuple(values),
                 tuple(offsets),
                 {k: np.concatenate([b.extras[k] for b in blocks]) for k in first.extras})


def gather(blocks: Sequence[Block], index: np.ndarray, key_major: bool = False) -> Block:
    """Rows ``index`` of the concatenation of ``blocks``, without concatenating them.

    With several blocks ``index`` must be sorted: each block then serves one contiguous
    run of it (and sorted gathers read memory almost sequentially). One block takes any
    order. With ``key_major`` the single-hot ids are gathered straight into key-major
    memory (the block's ``single`` is then a transposed view), a cache-sized chunk of rows
    at a time: what a batch needs, without a second pass over the ids.
    """
    first, n = blocks[0], len(index)
    if len(blocks) == 1:
        runs = [(first, index, 0, n)]
    else:
        bounds = np.cumsum([0] + [b.rows for b in blocks])
        cuts = np.searchsorted(index, bounds)
        runs = [(b, index[cuts[j]:cuts[j + 1]] - bounds[j], int(cuts[j]), int(cuts[j + 1]))
                for j, b in enumerate(blocks) if cuts[j + 1] > cuts[j]]
    dtype = _dense_dtype([block for block, _, _, _ in runs] or [first])
    dense = np.empty((n, first.dense.shape[1]), dtype)
    labels = np.empty((n, first.labels.shape[1]), first.labels.dtype)
    keys = first.single.shape[1]
    single = np.empty((keys, n) if key_major else (n, keys), np.int64)
    extras = {k: np.empty(n, v.dtype) for k, v in first.extras.items()}
    for block, local, start, stop in runs:  # local indices are in range: "clip" skips the
        # bounds check and the temporary copy that out= costs with mode="raise"
        if block.dense.dtype == dtype:
            np.take(block.dense, local, axis=0, out=dense[start:stop], mode="clip")
        else:
            dense[start:stop] = widen(np.take(block.dense, local, axis=0, mode="clip"), dtype)
        np.take(block.labels, local, axis=0, out=labels[start:stop], mode="clip")
        for k, v in block.extras.items():
            np.take(v, local, out=extras[k][start:stop], mode="clip")
        if not key_major:
            np.take(block.single, local, axis=0, out=single[start:stop], mode="clip")
            continue
        for at in range(0, len(local), _GATHER_CHUNK):
            chunk = local[at:at + _GATHER_CHUNK]
            single[:, start + at:start + at + len(chunk)] = np.take(
                block.single, chunk, axis=0, mode="clip").T
    if key_major:
        single = single.T
    values, offsets = [], []
    for j in range(len(first.multi_values)):
        parts = [_take_jagged(block.multi_values[j], block.multi_offsets[j], local)
                 for block, local, _, _ in runs]
        lens = np.concatenate([np.diff(o) for _, o in parts]) if parts else np.zeros(0, np.int64)
        off = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        values.append(np.concatenate([v for v, _ in parts]) if parts
                      else np.zeros(0, np.int64))
        offsets.append(off)
    return Block(first.cols, n, dense, labels, single, tuple(values), tuple(offsets), extras)


#: The null of an int32 ``dense`` block (the online transform's integer counters).
NULL_INT32 = -(2**31)


def _dense_dtype(blocks: Sequence[Block]) -> np.dtype:
    """The dtype of the blocks' dense rows together: theirs, or float64 when they differ."""
    dtypes = {b.dense.dtype for b in blocks}
    return dtypes.pop() if len(dtypes) == 1 else np.dtype(np.float64)


def widen(dense: np.ndarray, dtype: Any) -> np.ndarray:
    """``dense`` as ``dtype`` (float64 when widened), exactly: an int32 block's
    :data:`NULL_INT32` becomes NaN.

    >>> widen(np.array([[3, NULL_INT32]], np.int32), np.float64).tolist()
    [[3.0, nan]]
    """
    if dense.dtype == dtype:
        return dense
    out = dense.astype(dtype)
    if dense.dtype == np.int32:
        out[dense == NULL_INT32] = np.nan
    return out


#: Rows transposed at a time by :func:`key_major` (the chunk stays in the L2 cache).
_CHUNK_ROWS = 1024
#: Rows gathered and transposed at a time by ``gather(..., key_major=True)``.
_GATHER_CHUNK = 512


def key_major(single: np.ndarray) -> np.ndarray:
    """The ``[keys, rows]`` copy of a ``[rows, keys]`` matrix, transposed chunk by chunk.

    >>> key_major(np.arange(6).reshape(3, 2)).tolist()
    [[0, 2, 4], [1, 3, 5]]
    """
    rows, keys = single.shape
    out = np.empty((keys, rows), single.dtype)
    for start in range(0, rows, _CHUNK_ROWS):
        stop = min(start + _CHUNK_ROWS, rows)
        out[:, start:stop] = single[start:stop].T
    return out


def _take_jagged(values: np.ndarray, offsets: np.ndarray,
                 index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = offsets[:-1][index]
    lens = offsets[1:][index] - starts
    new = np.zeros(len(index) + 1, np.int64)
    np.cumsum(lens, out=new[1:])
    gather = np.repeat(starts - new[:-1], lens) + np.arange(new[-1], dtype=np.int64)
    return np.take(values, gather), new


# ---- Arrow -> Block --------------------------------------------------------------------------
def _numbers(col: pa.ChunkedArray, dtype: Any) -> np.ndarray:
    """A numeric column as a NumPy array of ``dtype`` (nulls as NaN for floats)."""
    target = pa.from_numpy_dtype(np.dtype(dtype))
    if col.type != target:
        col = pc.cast(col, target)
    return col.to_numpy(zero_copy_only=False)


def _no_nulls(col: pa.ChunkedArray, name: str, role: str, where: str, fix: str) -> None:
    if col.null_count:
        raise DatasetError(f"{role} column {name!r} has {col.null_count} null values in "
                           f"{where}. {fix}")


def block_from_table(table: pa.Table, cols: Columns, label_dtype: Any, where: str) -> Block:
    """Convert an Arrow table (one row group) into a :class:`Block`.

    ``where`` names the source (file and row group) in error messages.
    """
    n = table.num_rows
    dense = np.empty((n, len(cols.cont)), np.float32)
    for j, name in enumerate(cols.cont):
        dense[:, j] = _numbers(table.column(name), np.float32)
    labels = np.empty((n, len(cols.label)), label_dtype or _common_dtype(table, cols.label))
    for j, name in enumerate(cols.label):
        col = table.column(name)
        _no_nulls(col, name, "Label", where, "Drop those rows first (ops.Dropna()).")
        labels[:, j] = _numbers(col, labels.dtype)
    n_single = cols.multi_hot.count(False)
    single = np.empty((n, n_single), np.int64)
    multi_values, multi_offsets = [], []
    fix = "Encode nulls as ids first (ops.Categorify() maps them to 1, or ops.FillMissing())."
    i = 0
    for name, multi in zip(cols.cat, cols.multi_hot, strict=True):
        col = table.column(name)
        if not multi:
            _no_nulls(col, name, "Categorical", where, fix)
            _fill_column(single, i, _numbers(col, np.int64))
            i += 1
            continue
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        flat = pc.list_flatten(arr)  # null lists contribute no values
        _no_nulls(pa.chunked_array([flat]), name, "Multi-hot", where, fix)
        lens = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        multi_values.append(np.array(_numbers(pa.chunked_array([flat]), np.int64), copy=True))
        multi_offsets.append(offsets)
    extras = {name: np.array(table.column(name).to_numpy(zero_copy_only=False), copy=True)
              for name in cols.extra}
    return Block(cols, n, dense, labels, single, tuple(multi_values), tuple(multi_offsets),
                 extras)


def _fill_column(matrix: np.ndarray, j: int, values: np.ndarray) -> None:
    """``matrix[:, j] = values``, a cache-sized run of rows at a time."""
    for start in range(0, len(values), 16 * _CHUNK_ROWS):
        matrix[start:start + 16 * _CHUNK_ROWS, j] = values[start:start + 16 * _CHUNK_ROWS]


def _common_dtype(table: pa.Table, names: Sequence[str]) -> np.dtype:
    if not names:
        return np.dtype(np.float32)
    return np.result_type(*[table.schema.field(n).type.to_pandas_dtype() for n in names])
