"""Chains of per-value steps (fill, clip, ``log1p``, affine) run block by block on one numeric
column: the whole chain on a block of :data:`~.buffers.BLOCK` values while it sits in the CPU
cache, then the next block.

Why: each step alone is a pass over the column in memory (read 8 bytes, write 8 a value),
and on the Criteo branch ``FillMissing -> Clip -> LogOp -> Normalize`` those passes, not the
arithmetic, are the cost; two threads share one memory bus, so they barely overlap. The
chain reads the column once and writes its result once.

Every result is the one the steps give one after the other (:mod:`.buffers`'s kernels),
bit for bit: the same operations on the same values, block by block (the tests compare
them on any data).

A step is a tuple, the same on both backends (see ``Backend.elementwise``):

* ``("fill", value)``: nulls (and NaN) become ``value``;
* ``("clip", lower, upper)``: either bound may be None;
* ``("log1p",)``: ``log(1 + x)`` in float64, stored as float32;
* ``("affine", shift, scale, dtype)``: ``(x - shift) / scale`` in float64, stored as
  ``dtype`` (float32 or float64).

>>> import pyarrow as pa
>>> col = pa.chunked_array([[3, None, -2]])
>>> run_chain(col, [("fill", 0), ("clip", 0, None), ("log1p",)]).to_pylist() == [
...     float(np.float32(np.log1p(3))), 0.0, 0.0]
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa

from .buffers import BLOCK, _array, allocate, numeric, valid, values

#: Integers below this (and not negative) take ``log1p`` from a table (in cache).
LOG_TABLE_SIZE = 1 << 16

Kernel = Callable[[np.ndarray, "np.ndarray | None", "_Scratch"], np.ndarray]


@cache
def log1p_table() -> np.ndarray:
    """float32 ``log1p`` of the integers ``0 .. LOG_TABLE_SIZE - 1`` (as computed in float64:
    the numbers :func:`.buffers.log1p_values` gives for them)."""
    return np.log1p(np.arange(LOG_TABLE_SIZE, dtype=np.int64), dtype=np.float64).astype(
        np.float32)


class _Scratch:
    """One block-sized array per dtype (and use), reused from block to block: a step may
    write its output over its input (same dtype), never over another use's array."""

    def __init__(self, n: int) -> None:
        self.n, self.arrays = n, {}

    def __call__(self, dtype: Any, n: int, use: str = "values") -> np.ndarray:
        key = (np.dtype(dtype), use)
        if key not in self.arrays:
            self.arrays[key] = np.empty(self.n, key[0])
        return self.arrays[key][:n]


def compile_chain(t: pa.DataType, steps: Sequence[tuple]) -> tuple[list[Kernel], pa.DataType,
                                                                    bool] | None:
    """The block kernels of ``steps`` on a column of type ``t``, the output type, and whether
    a fill makes every value valid; None when a step is not one the kernels take (the caller
    then runs the steps one by one). The steps' values are checked and converted by the
    caller (as the one-step kernels get them)."""
    kernels: list[Kernel] = []
    fills = False
    for kind, *args in steps:
        if not numeric(t):
            return None
        dtype = np.dtype(t.to_pandas_dtype())
        if kind == "fill":
            kernels.append(_fill_kernel(dtype, args[0]))
            fills = True
        elif kind == "clip":
            kernels.append(_clip_kernel(dtype, *args))
        elif kind == "log1p":
            kernels.append(_log1p_kernel(dtype))
            t = pa.float32()
        elif kind == "affine":
            shift, scale, out_type = args
            if not (pa.types.is_float32(out_type) or pa.types.is_float64(out_type)):
                return None
            kernels.append(_affine_kernel(shift, scale, np.dtype(out_type.to_pandas_dtype())))
            t = out_type
        else:
            return None
    return kernels, t, fills


def run_chain(col: pa.ChunkedArray, steps: Sequence[tuple]) -> pa.ChunkedArray | None:
    """``steps`` applied to ``col`` block by block (None: see :func:`compile_chain`).

    Steps' arguments must already be valid for the column (a fill value of its type, clip
    bounds representable in it): :meth:`.cpu.CpuBackend.elementwise` checks them."""
    compiled = compile_chain(col.type, steps)
    if compiled is None:
        return None
    kernels, out_type, fills = compiled
    return pa.chunked_array([_run_array(chunk, kernels, out_type, fills) for chunk in col.chunks],
                            out_type)


def _run_array(arr: pa.Array, kernels: list[Kernel], out_type: pa.DataType,
               fills: bool) -> pa.Array:
    n = len(arr)
    x = values(arr)
    out, buf = allocate(n, out_type.to_pandas_dtype())
    scratch = _Scratch(min(BLOCK, n))
    masked = fills and bool(arr.null_count)  # the fill needs each block's validity
    with np.errstate(all="ignore"):
        for start in range(0, n, BLOCK):
            stop = min(start + BLOCK, n)
            v, ok = x[start:stop], valid(arr, start, stop) if masked else None
            for kernel in kernels:
                v = kernel(v, ok, scratch)
                if kernel.fills:  # type: ignore[attr-defined]
                    ok = None
            out[start:stop] = v
    return _array(out_type, n, buf, None if fills else arr)


def _kernel(fn: Callable, fills: bool = False) -> Kernel:
    fn.fills = fills  # type: ignore[attr-defined]
    return fn


def _fill_kernel(dtype: np.dtype, value: Any) -> Kernel:
    """As :func:`.buffers.fill_values`: ``fill + (x - fill) * valid`` on the values' bits."""
    bits = np.dtype(f"i{dtype.itemsize}")
    fill = np.asarray(value, dtype).view(bits)
    floats = dtype.kind == "f"

    def kernel(v: np.ndarray, ok: np.ndarray | None, scratch: _Scratch) -> np.ndarray:
        if floats:
            number = ~np.isnan(v)
            ok = number if ok is None else ok & number
        if ok is None:
            return v
        out = scratch(dtype, len(v))
        vi, oi = v.view(bits), out.view(bits)
        keep = scratch(bits, len(v), "mask")  # 1 or 0 in the values' width: a multiply of
        np.copyto(keep, ok, casting="unsafe")  # one type (SIMD), not of bool and integer
        if fill:
            np.subtract(vi, fill, out=oi)
            np.multiply(oi, keep, out=oi)
            np.add(oi, fill, out=oi)
        else:
            np.multiply(vi, keep, out=oi)
        return out
    return _kernel(kernel, fills=True)


def _clip_kernel(dtype: np.dtype, lower: Any, upper: Any) -> Kernel:
    """As :func:`.buffers.clip_values` (NumPy's maximum / minimum / clip)."""
    low, high = (None if b is None else np.asarray(b, dtype) for b in (lower, upper))

    def kernel(v: np.ndarray, ok: np.ndarray | None, scratch: _Scratch) -> np.ndarray:
        out = scratch(dtype, len(v))
        if high is None and low is None:
            out[:] = v
        elif high is None:
            np.maximum(v, low, out=out)
        elif low is None:
            np.minimum(v, high, out=out)
        else:
            np.clip(v, low, high, out=out)
        return out
    return _kernel(kernel)


def _log1p_kernel(dtype: np.dtype) -> Kernel:
    """As :func:`.buffers.log1p_values`: float64 ``log1p`` stored as float32. A block of
    integers, none negative, looks its values below ``LOG_TABLE_SIZE`` up
    (:func:`log1p_table`) and computes the others (a counter's long tail: a few)."""
    integers = dtype.kind in "iu"
    table = log1p_table() if integers else None

    def kernel(v: np.ndarray, ok: np.ndarray | None, scratch: _Scratch) -> np.ndarray:
        out = scratch(np.float32, len(v))
        if table is not None and len(v) and v.min() >= 0:
            if v.max() < LOG_TABLE_SIZE:
                if v.dtype == np.intp:
                    np.take(table, v, out=out, mode="wrap")
                    return out
                index = scratch(np.intp, len(v), "index")
                index[:] = v
            else:  # a tail of larger counters: those few computed, the rest looked up
                index = scratch(np.intp, len(v), "index")
                np.minimum(v, LOG_TABLE_SIZE - 1, out=index, casting="unsafe")
            np.take(table, index, out=out, mode="wrap")
            large = np.flatnonzero(v >= LOG_TABLE_SIZE)
            if len(large):
                out[large] = np.log1p(v[large], dtype=np.float64)
            return out
        tmp = scratch(np.float64, len(v))
        np.log1p(v, out=tmp, dtype=np.float64)
        out[:] = tmp
        return out
    return _kernel(kernel)


def _affine_kernel(shift: float, scale: float, out_dtype: np.dtype) -> Kernel:
    """As :func:`.buffers.affine_values`: ``(x - shift) / scale`` in float64."""
    def kernel(v: np.ndarray, ok: np.ndarray | None, scratch: _Scratch) -> np.ndarray:
        tmp = scratch(np.float64, len(v))
        np.subtract(v, np.float64(shift), out=tmp, dtype=np.float64)
        np.divide(tmp, np.float64(scale), out=tmp)
        if out_dtype == np.float64:
            return tmp
        out = scratch(out_dtype, len(v))
        out[:] = tmp
        return out
    return _kernel(kernel)
