"""A 64-bit hash defined on values, not on a library.

``HashBucket`` and Categorify's ``num_buckets`` must give the same bucket on
pandas and on cuDF, so the hash is specified here from first principles and
computed with NumPy on Arrow buffers (the GPU backend hands its columns over as
Arrow arrays):

* integers and booleans: ``fmix64(int64(x) XOR INT_SEED)``;
* floats: the IEEE-754 bits of the float64 value (``-0.0`` counted as ``0.0``),
  mixed the same way with ``FLOAT_SEED``;
* strings: ``fmix64(sum_k word_k * P**k  XOR  len * LEN_SEED)`` where ``word_k`` is the
  k-th little-endian 8-byte word of the UTF-8 bytes (the last one zero-padded), ``P`` the
  64-bit FNV prime and arithmetic modulo ``2**64`` (an 8-character id is one word).

``fmix64`` is the finaliser of SplitMix64. Nulls hash to ``NULL_HASH``.

Examples
--------
>>> import pyarrow as pa
>>> hash_array(pa.array([1, None, 1]))[[0, 2]].tolist() == [hash_array(pa.array([1]))[0]] * 2
True
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INT_SEED = np.uint64(0x2545F4914F6CDD1D)
FLOAT_SEED = np.uint64(0x9E3779B97F4A7C15)
LEN_SEED = np.uint64(0xC2B2AE3D27D4EB4F)
NULL_HASH = np.uint64(0x5BD1E9955BD1E995)
_PRIME = np.uint64(0x100000001B3)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def fmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


_powers_cache = np.ones(1, dtype=np.uint64)


def _powers(n: int) -> np.ndarray:
    """``P**k mod 2**64`` for k in 0..n-1 (cached, grown on demand)."""
    global _powers_cache
    if len(_powers_cache) < n:
        size = max(n, 2 * len(_powers_cache))
        steps = np.full(size, _PRIME, dtype=np.uint64)
        steps[0] = 1
        with np.errstate(over="ignore"):
            _powers_cache = np.cumprod(steps, dtype=np.uint64)
    return _powers_cache[:n]


_byte_weights_cache = np.ones(0, dtype=np.uint64)


def _byte_weights(n: int) -> np.ndarray:
    """Weight of the byte at position j of a string: ``256**(j % 8) * P**(j // 8)``, so that
    summing weighted bytes equals summing little-endian 8-byte words times ``P**k``."""
    global _byte_weights_cache
    if len(_byte_weights_cache) < n:
        size = max(n, 2 * len(_byte_weights_cache), 64)
        j = np.arange(size)
        shifts = (np.uint64(8) * (j % 8).astype(np.uint64))
        with np.errstate(over="ignore"):
            _byte_weights_cache = (np.uint64(1) << shifts) * _powers((size + 7) // 8)[j // 8]
    return _byte_weights_cache[:n]


def _string_hash(arr: pa.Array) -> np.ndarray:
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    n = len(arr)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if wide else np.int32)[
        arr.offset: arr.offset + n + 1].astype(np.int64)
    data_buf = arr.buffers()[2]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    first, last = int(offsets[0]), int(offsets[-1])
    total = last - first
    sums = np.zeros(n, dtype=np.uint64)
    nonempty = lengths > 0
    width = int(lengths.max()) if n else 0
    if total and total == width * int(nonempty.sum()):
        # fast path: every non-empty string has the same length (typical of hashed ids):
        # the bytes are a matrix whose rows, zero-padded to 8 bytes, are read as words
        rows = data[first:last].reshape(-1, width)
        words = (width + 7) // 8
        if width % 8:
            padded = np.zeros((len(rows), words * 8), dtype=np.uint8)
            padded[:, :width] = rows
            rows = padded
        matrix = np.ascontiguousarray(rows).view("<u8")
        with np.errstate(over="ignore"):
            sums[nonempty] = matrix[:, 0] if words == 1 else \
                (matrix * _powers(words)).sum(axis=1, dtype=np.uint64)
    elif total:
        bytes_ = data[first:last].astype(np.uint64)
        rel = np.arange(total, dtype=np.int64) - np.repeat(starts - first, lengths)
        with np.errstate(over="ignore"):
            weighted = bytes_ * _byte_weights(width)[rel]
        sums[nonempty] = np.add.reduceat(weighted, (starts - first)[nonempty])
    with np.errstate(over="ignore"):
        return fmix64(sums ^ (lengths.astype(np.uint64) * LEN_SEED))


def _numeric_hash(arr: pa.Array) -> np.ndarray:
    if pa.types.is_floating(arr.type):
        values = arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        values = np.where(values == 0.0, 0.0, values)  # -0.0 and 0.0 hash alike
        return fmix64(values.view(np.uint64) ^ FLOAT_SEED)
    values = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    return fmix64(values.view(np.uint64) ^ INT_SEED)


def hash_array(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The value-defined uint64 hash of every element of an Arrow array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type):  # an all-null column (pandas writes all-None so)
        return np.full(len(arr), NULL_HASH, dtype=np.uint64)
    if pa.types.is_decimal(arr.type):  # by its exact text: equal decimals hash alike
        arr = pc.cast(arr, pa.large_string())
    elif pa.types.is_temporal(arr.type):  # timestamps, dates, times, durations: their ticks
        arr = arr.view(pa.int64()) if arr.type.bit_width == 64 else \
            arr.view(pa.int32()).cast(pa.int64())
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) \
            or pa.types.is_string_view(arr.type) or pa.types.is_binary(arr.type) \
            or pa.types.is_large_binary(arr.type):
        out = _string_hash(arr)
    elif pa.types.is_boolean(arr.type):
        out = _numeric_hash(arr.cast(pa.int64()))
    elif pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
        out = _numeric_hash(arr)
    else:
        raise TypeError(f"Cannot hash values of Arrow type {arr.type}; hash integers, floats, "
                        "booleans, strings, decimals or timestamps.")
    if arr.null_count:
        out = np.where(pc.is_null(arr).to_numpy(zero_copy_only=False), NULL_HASH, out)
    return out
