"""NumPy kernels on the value buffers of Arrow arrays: fill, clip, ``log1p`` and moments of
plain numeric columns (integers, float32, float64) in a pass or two, their outputs written
straight into buffers of Arrow's memory pool.

Why not ``pyarrow.compute`` or plain NumPy:

* Arrow's ``fill_null`` selects value by value (about 6 ns a value); here the validity
  bitmap is unpacked (one bit a value) and the fill is arithmetic (about 1 ns a value).
* A fresh NumPy array for a column of a 500k-row partition is 4 MB that is page-faulted in
  anew for every column (about 2 ms on a VM, against 0.3 ms of arithmetic). Outputs here
  come from Arrow's pool (jemalloc, see :func:`._arrow.prefer_jemalloc`), which keeps freed
  pages for the next column and partition, and they become Arrow arrays without a copy.
* Temporaries (``log1p``'s float64 values, the moments' deviations) are computed in blocks
  that stay in the CPU cache.

Every result is the one the plain kernels give, bit for bit (the same operations on the same
values, only written elsewhere): the tests compare them.

>>> arr = pa.array([3, None, -2])
>>> fill_values(arr, 0).to_pylist(), clip_values(arr, 0, None).to_pylist()
([3, 0, -2], [3, None, 0])
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Values per block of a blocked kernel (float64: 512 KB, within a core's L2 cache).
BLOCK = 1 << 16


def numeric(t: pa.DataType) -> bool:
    """Whether an Arrow array of type ``t`` stores its values as one plain NumPy-typed buffer."""
    return pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t)


def allocate(n: int, dtype: Any) -> tuple[np.ndarray, pa.Buffer]:
    """An uninitialised NumPy array of ``n`` values in a buffer of Arrow's memory pool (which
    the array views: fill it, then wrap the buffer in an Arrow array without a copy)."""
    dtype = np.dtype(dtype)
    buf = pa.allocate_buffer(n * dtype.itemsize)
    return (np.frombuffer(buf, dtype=dtype, count=n) if n else np.empty(0, dtype)), buf


def values(arr: pa.Array) -> np.ndarray:
    """The value buffer of a numeric array as NumPy, without a copy (slots under nulls hold
    anything)."""
    dtype = np.dtype(arr.type.to_pandas_dtype())
    if len(arr) == 0 or arr.buffers()[1] is None:
        return np.zeros(len(arr), dtype)
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=arr.offset + len(arr))[arr.offset:]


def valid(arr: pa.Array, start: int = 0, stop: int | None = None) -> np.ndarray | None:
    """The validity bitmap of ``arr[start:stop]`` as NumPy bools (None when ``arr`` has no
    nulls)."""
    if not arr.null_count:
        return None
    stop = len(arr) if stop is None else stop
    first = arr.offset + start
    bits = np.frombuffer(arr.buffers()[0], np.uint8)[first // 8:(arr.offset + stop + 7) // 8]
    shift = first % 8
    return np.unpackbits(bits, count=shift + stop - start,
                         bitorder="little")[shift:].view(bool)


def _array(out_type: pa.DataType, n: int, buf: pa.Buffer, like: pa.Array | None = None) -> pa.Array:
    """An array over ``buf``; with ``like``, its validity bitmap (nulls stay null)."""
    if like is None or not like.null_count:
        return pa.Array.from_buffers(out_type, n, [None, buf], null_count=0)
    validity = like.buffers()[0]
    if like.offset % 8:  # the output starts at 0: a bitmap starting there
        validity = pa.py_buffer(np.packbits(valid(like), bitorder="little"))
    elif like.offset:
        validity = validity.slice(like.offset // 8)
    return pa.Array.from_buffers(out_type, n, [validity, buf], null_count=like.null_count)


def map_values(col: pa.Array | pa.ChunkedArray, fn: Any, out_type: pa.DataType) -> Any:
    """``fn(values, out)`` (elementwise, NumPy, writing ``out``) on the value buffer of ``col``,
    keeping its validity bitmap as is: slots under nulls are computed too (any value) and
    stay null.

    >>> map_values(pa.array([1, None]), lambda v, out: np.negative(v, out=out),
    ...            pa.int64()).to_pylist()
    [-1, None]
    """
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([map_values(c, fn, out_type) for c in col.chunks], out_type)
    out, buf = allocate(len(col), out_type.to_pandas_dtype())
    fn(values(col), out)
    return _array(out_type, len(col), buf, col)


def fill_values(arr: pa.Array | pa.ChunkedArray, value: Any) -> Any:
    """Nulls (and NaN in a float column) replaced by ``value``, already of the column's type
    (as ``pyarrow.compute.fill_null`` after NaN turned null); an array with nothing to fill
    comes back as it is.

    Arithmetic rather than a select: on the integers of the same width (a float's bits),
    ``fill + (x - fill) * valid`` is ``x`` where valid and ``fill`` elsewhere (wrapping
    around in between is harmless), with no branch per value; the validity bitmap is
    unpacked block by block (in cache).
    """
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([fill_values(c, value) for c in arr.chunks], arr.type)
    x = values(arr)
    floats = x.dtype.kind == "f"
    if not arr.null_count and not (floats and np.isnan(x).any()):
        return arr  # nothing to fill: the (immutable) array itself
    out, buf = allocate(len(arr), x.dtype)
    bits = np.dtype(f"i{x.dtype.itemsize}")
    fill = np.asarray(value, x.dtype).view(bits)
    with np.errstate(over="ignore"):
        for start in range(0, len(x), BLOCK):
            stop = min(start + BLOCK, len(x))
            ok = valid(arr, start, stop)
            if floats:
                number = ~np.isnan(x[start:stop])
                ok = number if ok is None else ok & number
            xi, oi = x[start:stop].view(bits), out[start:stop].view(bits)
            if fill:
                np.subtract(xi, fill, out=oi)
                np.multiply(oi, ok, out=oi)
                np.add(oi, fill, out=oi)
            else:
                np.multiply(xi, ok, out=oi)
    return _array(arr.type, len(arr), buf)


def clip_values(arr: pa.Array | pa.ChunkedArray, lower: Any, upper: Any) -> Any:
    """Values clipped to ``[lower, upper]`` (each None or representable in the column's type);
    nulls stay null. NumPy's SIMD loops: several times Arrow's element-wise min and max; an
    integer array already within the bounds comes back as it is."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([clip_values(c, lower, upper) for c in arr.chunks], arr.type)
    dtype = np.dtype(arr.type.to_pandas_dtype())
    low, high = (None if b is None else np.asarray(b, dtype) for b in (lower, upper))
    if dtype.kind in "iu" and arr.null_count < len(arr):  # (floats: NaN would need a pass)
        lo, hi = (m.as_py() for m in pc.min_max(arr).values())  # of the valid values: one
        if (low is None or lo >= low) and (high is None or hi <= high):  # read, no write
            return arr  # nothing to clip: the (immutable) array itself

    def clip(v: np.ndarray, out: np.ndarray) -> None:
        if high is None:
            np.maximum(v, low, out=out)
        elif low is None:
            np.minimum(v, high, out=out)
        else:
            np.clip(v, low, high, out=out)
    return map_values(arr, clip, arr.type)


def log1p_values(arr: pa.Array | pa.ChunkedArray) -> Any:
    """``log(1 + x)`` computed in float64, stored as float32 (values below -1 give NaN);
    nulls stay null.

    Integers spanning at most 65,536 values and fewer than an eighth of their rows
    (counters: most of them) look their result up in a table of ``log1p`` over that span
    (in cache): the same numbers, without a logarithm per row. The span is that of the
    whole column, every chunk (row group) of it, so one table serves them all.
    """
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    table, lo = _log1p_table([values(c) for c in chunks])

    def log1p(v: np.ndarray, out: np.ndarray) -> None:
        if table is not None:
            _take(table, v, lo, out)
            return
        tmp = np.empty(min(BLOCK, len(v)), np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            for start in range(0, len(v), BLOCK):
                part = v[start:start + BLOCK]
                block = tmp[:len(part)]
                np.log1p(part, out=block, dtype=np.float64)
                out[start:start + len(part)] = block
    return map_values(arr, log1p, pa.float32())


def _log1p_table(parts: list[np.ndarray]) -> tuple[np.ndarray | None, int]:
    """The float32 ``log1p`` of every integer from the least to the largest value of
    ``parts`` (all slots, those under nulls too) and that least value, when the span is
    below an eighth of the rows and 65,536; else ``(None, 0)``."""
    n = sum(len(v) for v in parts)
    limit = min(n // 8, 1 << 16)
    if not parts or parts[0].dtype.kind not in "iu" or not limit:
        return None, 0
    first = next((v for v in parts if len(v)), None)
    if first is None or int(np.ptp(first[:BLOCK])) >= limit:  # a quick no
        return None, 0
    lows, highs = zip(*((int(m.as_py()) for m in pc.min_max(pa.array(v)).values())
                        for v in parts if len(v)), strict=True)
    lo, hi = min(lows), max(highs)
    if hi - lo >= limit:
        return None, 0
    wide = np.uint64 if first.dtype == np.uint64 else np.int64
    span = np.arange(hi - lo + 1, dtype=wide) + wide(lo)  # the same integers
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log1p(span, dtype=np.float64).astype(np.float32), lo


def affine_values(arr: pa.Array | pa.ChunkedArray, shift: float, scale: float,
                  out_type: pa.DataType) -> Any:
    """``(x - shift) / scale`` computed in float64 (integers past 2**53: the nearest float),
    stored as ``out_type`` (float32 or float64; beyond float32's range: infinite); nulls stay
    null."""
    def affine(v: np.ndarray, out: np.ndarray) -> None:
        tmp = np.empty(min(BLOCK, len(v)), np.float64)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for start in range(0, len(v), BLOCK):
                part = v[start:start + BLOCK]
                block = tmp[:len(part)]
                np.subtract(part, np.float64(shift), out=block, dtype=np.float64)
                np.divide(block, np.float64(scale), out=block)
                out[start:start + len(part)] = block
    return map_values(arr, affine, out_type)


def _take(table: np.ndarray, v: np.ndarray, lo: int, out: np.ndarray) -> None:
    """``out = table[v - lo]``, block by block (``lo <= v``, ``v - lo < len(table)``: the
    span covers every slot, those under nulls too); ``wrap``: NumPy's fastest mode."""
    if lo == 0 and v.dtype == np.intp:
        np.take(table, v, out=out, mode="wrap")
        return
    index = np.empty(min(BLOCK, len(v)), np.intp)
    for start in range(0, len(v), BLOCK):
        part, at = v[start:start + BLOCK], index[:min(BLOCK, len(v) - start)]
        if v.dtype == np.uint64:  # the differences are below len(table): as uint64, then intp
            np.subtract(part, np.uint64(lo), out=at.view(np.uint64))
        else:
            np.subtract(part, lo, out=at, dtype=np.intp)
        np.take(table, at, out=out[start:start + len(part)], mode="wrap")


def pairwise_sum(leaf: Any, start: int, stop: int) -> float:
    """``np.sum`` of the values ``leaf(i, j)`` makes for rows ``i:j``, bit for bit: NumPy
    sums a contiguous float64 array pairwise (halves rounded down to a multiple of 8, down
    to 128 values); this follows the same tree down to blocks of at most :data:`BLOCK`
    rows, each summed by NumPy, so each block's values are made in cache and dropped.

    >>> x = np.random.default_rng(0).random(300_001)
    >>> bool(pairwise_sum(lambda i, j: x[i:j].sum(), 0, len(x)) == x.sum())
    True
    """
    n = stop - start
    if n <= BLOCK:
        return leaf(start, stop)
    half = n // 2
    half -= half % 8
    return pairwise_sum(leaf, start, start + half) + pairwise_sum(leaf, start + half, stop)


def extremes(parts: list[np.ndarray]) -> tuple[float, float]:
    """The least and largest value of non-empty arrays, as floats (NaN if any is NaN).

    >>> extremes([np.array([3, 1]), np.array([7.5])])
    (1.0, 7.5)
    """
    return float(np.min([p.min() for p in parts])), float(np.max([p.max() for p in parts]))


def dense_moments(arr: pa.ChunkedArray) -> dict[str, float] | None:
    """:func:`.arrow.moments` of a numeric column without nulls, NaN or infinities (None for
    any other column): the same operations on the same float64 values, bit for bit, but
    without the filtered copy and block by block (:func:`pairwise_sum`). The min and max are
    taken on the chunks as they are; each block of the sums is converted to float64 (ints past
    2**53: the nearest float, as Arrow's cast) as it is read from its chunk (or gathered from
    the chunks it spans), in cache."""
    if arr.null_count or not numeric(arr.type) or len(arr) == 0:
        return None
    parts = [values(c) for c in arr.chunks if len(c)]
    # the conversion to float64 keeps the order: the extremes of the converted values
    lo, hi = extremes(parts)
    if not (np.isfinite(lo) and np.isfinite(hi)):  # NaN or an infinity: filtered instead
        return None
    tmp = np.empty(min(BLOCK, len(arr)), np.float64)
    block_of = _block_reader(parts, tmp)

    def deviations(center: np.float64, square: bool) -> Any:
        def leaf(i: int, j: int) -> float:
            block = tmp[:j - i]
            np.subtract(block_of(i, j), center, out=block, dtype=np.float64)
            if square:
                np.square(block, out=block)
            return block.sum()
        return leaf

    shift = np.float64(parts[0][0])  # shifted mean: exact for constant columns
    mean = float(shift + pairwise_sum(deviations(shift, False), 0, len(arr)) / len(arr))
    m2 = float(pairwise_sum(deviations(np.float64(mean), True), 0, len(arr)))
    return {"count": float(len(arr)), "mean": mean, "m2": m2, "min": lo, "max": hi,
            "missing": 0.0}


def _block_reader(parts: list[np.ndarray], tmp: np.ndarray) -> Any:
    """``read(i, j)``: rows ``i:j`` of the concatenated ``parts``: a view of the part that
    holds them all, else converted to float64 into ``tmp[:j - i]`` from the parts they span."""
    starts = np.cumsum([0] + [len(p) for p in parts]).tolist()

    def read(i: int, j: int) -> np.ndarray:
        k = bisect.bisect_right(starts, i) - 1
        if j <= starts[k + 1]:
            return parts[k][i - starts[k]:j - starts[k]]
        at = i
        while at < j:
            stop = min(j, starts[k + 1])
            tmp[at - i:stop - i] = parts[k][at - starts[k]:stop - starts[k]]
            at, k = stop, k + 1
        return tmp[:j - i]
    return read
