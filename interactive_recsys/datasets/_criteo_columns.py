"""The rows of the synthetic Criteo data: labels, heavy-tailed counts and power-law
categoricals as 8-character hex strings, each column with Criteo-like nulls.

Column ``j`` of ``C1..C26`` draws popularity ranks ``r`` in ``[0, K_j)`` from a *bounded*
power law: the floor of a continuous power law ``p(x) ~ x ** -zipf_exponent`` truncated to
``[1, K_j + 1)``, sampled by inverse CDF, minus one. Rank ``r`` maps to a fixed string by a
keyed bijective 32-bit integer mix of ``(column, r)``, so a column never gives two ranks
the same string, and the same rank gets a different string in another column. The
strings do not depend on the seed.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from interactive_recsys.datasets._criteo_kaggle import KAGGLE_NULL_GROUPS

if TYPE_CHECKING:
    pass
from interactive_recsys.datasets._criteo import (
    _NULL_GROUPS,
    CRITEO_CATEGORICAL,
    CRITEO_CONTINUOUS,
    CRITEO_LABEL,
)

# Count features: floor of a Lomax (Pareto II) draw -> (median, tail index alpha, maximum).
# Medians, tails and maxima roughly follow the Criteo Kaggle train set.
_COUNT_SHAPES: dict[str, tuple[float, float, int]] = {
    "I1": (1.5, 1.2, 5775),
    "I2": (3.0, 0.6, 257675),
    "I3": (7.5, 1.1, 65535),
    "I4": (4.5, 2.0, 969),
    "I5": (2500.0, 0.75, 23159456),
    "I6": (40.0, 1.0, 431037),
    "I7": (3.5, 0.9, 56311),
    "I8": (7.5, 2.0, 6047),
    "I9": (41.0, 1.1, 29019),
    "I10": (0.9, 3.0, 11),
    "I11": (1.5, 1.5, 231),
    "I12": (0.4, 0.8, 4008),
    "I13": (5.5, 1.8, 7393),
}

_LABEL_RATE = 0.25
# Weak label signal: positives get 1.5x larger counts here ...
_LABEL_COUNT_LIFT = {"I1": 1.5, "I7": 1.5, "I11": 1.5}
# ... and half of the positives move one popularity rank down (rank r -> r + 1) here.
_LABEL_RANK_SHIFT = ("C14", "C17")
# I2 is sometimes negative in Criteo: P(I2 = -1), P(-2), P(-3).
_I2_NEGATIVE = ((-1, 0.095), (-2, 0.004), (-3, 0.001))
_DICTIONARY_MAX = 2**16  # vocabularies up to this size are written dictionary-encoded


def _criteo_table(n: int, params: dict[str, Any], index: int) -> pa.Table:
    """Draw one file's worth of synthetic Criteo rows."""
    cardinalities = params["cardinalities"]
    exponents = params["zipf_exponent"]
    if not isinstance(exponents, list):
        exponents = [exponents] * len(cardinalities)
    kaggle = params.get("profile") == "kaggle"
    rng = np.random.default_rng([params["seed"], index])
    u_label = rng.random(n, dtype=np.float32)
    label = u_label < _LABEL_RATE
    shifted = u_label < _LABEL_RATE / 2  # half of the positives
    nulls = _null_masks(rng, n, KAGGLE_NULL_GROUPS if kaggle else _NULL_GROUPS)
    columns = {CRITEO_LABEL: pa.array(label.astype(np.int64))}
    for name in CRITEO_CONTINUOUS:
        values = _counts(rng, n, name, label)
        columns[name] = pa.array(values, mask=nulls.get(name), type=pa.int64())
    offsets = _string_offsets(n)
    for name, k, exponent in zip(CRITEO_CATEGORICAL, cardinalities, exponents, strict=True):
        ranks = _power_law_ranks(rng, n, k, exponent)
        if name in _LABEL_RANK_SHIFT:
            ranks = (ranks + shifted) % np.int32(k)
        columns[name] = _categorical_column(name, ranks, k, nulls.get(name), offsets)
    return pa.table(columns)


def _null_masks(
    rng: np.random.Generator, n: int, groups: Sequence[tuple[tuple[str, ...], float]]
) -> dict[str, np.ndarray]:
    """One boolean null mask per column with nulls; grouped columns share a mask."""
    masks = {}
    for names, rate in groups:
        mask = rng.random(n, dtype=np.float32) < rate
        masks.update(dict.fromkeys(names, mask))
    return masks


def _counts(rng: np.random.Generator, n: int, name: str, label: np.ndarray) -> np.ndarray:
    """Heavy-tailed int64 counts for column ``name``: a floored, capped Lomax draw."""
    median, alpha, cap = _COUNT_SHAPES[name]
    scale = median / (2.0 ** (1.0 / alpha) - 1.0)  # Lomax median = scale * (2**(1/a) - 1)
    u = rng.random(n, dtype=np.float32)
    x = np.power(np.float32(1.0) - u, np.float32(-1.0 / alpha)) - np.float32(1.0)
    x *= np.float32(scale)
    if name in _LABEL_COUNT_LIFT:
        x *= np.where(label, np.float32(_LABEL_COUNT_LIFT[name]), np.float32(1.0))
    values = np.minimum(x, np.float32(cap)).astype(np.int64)
    if name == "I2":
        u_neg = rng.random(n, dtype=np.float32)
        low = np.float32(0.0)
        for value, prob in _I2_NEGATIVE:
            values[(u_neg >= low) & (u_neg < low + np.float32(prob))] = value
            low += np.float32(prob)
    return values


def _power_law_ranks(rng: np.random.Generator, n: int, k: int, exponent: float) -> np.ndarray:
    """Int32 ranks in ``[0, k)`` from a bounded power law, ``P(r) ~ (r + 1) ** -exponent``.

    Inverse-CDF sampling of the continuous density ``x ** -exponent`` truncated to
    ``[1, k + 1)``; the rank is ``floor(x) - 1``.

    Examples
    --------
    >>> r = _power_law_ranks(np.random.default_rng(0), 100_000, 1000, 1.1)
    >>> int(r.min()), int(r.max()) < 1000, bool((r == 0).mean() > (r == 10).mean() * 5)
    (0, True, True)
    """
    x = rng.random(n)
    if abs(exponent - 1.0) < 1e-9:
        x *= math.log(k + 1.0)  # x = (k + 1) ** u
    else:
        a = 1.0 - exponent  # x = (1 + u * ((k + 1) ** a - 1)) ** (1 / a)
        x *= (k + 1.0) ** a - 1.0
        np.log1p(x, out=x)
        x *= 1.0 / a
    np.exp(x, out=x)
    ranks = x.astype(np.int32)
    ranks -= 1
    return np.minimum(ranks, k - 1, out=ranks)


def _categorical_column(
    name: str, ranks: np.ndarray, k: int, null_mask: np.ndarray | None, offsets: pa.Buffer
) -> pa.Array:
    """Hex strings for the ranks of column ``name``.

    Small vocabularies give a dictionary array (cheap to build and to write as parquet, read
    back as plain strings); large ones map each rank straight to its string.
    """
    keys = _column_keys(name)
    if k > min(_DICTIONARY_MAX, len(ranks)):
        return _hex_strings(_mix32(ranks.view(np.uint32), keys), null_mask, offsets)
    vocab = _hex_strings(_mix32(np.arange(k, dtype=np.uint32), keys), None, _string_offsets(k))
    indices = pa.array(ranks, mask=null_mask)
    return pa.DictionaryArray.from_arrays(indices, vocab, safe=False)


def _string_offsets(n: int) -> pa.Buffer:
    """Arrow int32 offsets of ``n`` strings of 8 bytes each."""
    return pa.py_buffer(np.arange(0, 8 * n + 1, 8, dtype=np.int32))


@functools.cache
def _column_keys(name: str) -> tuple[np.uint32, np.uint32]:
    """Two fixed 32-bit keys for a column, derived from its name."""
    return np.uint32(zlib.crc32(name.encode())), np.uint32(zlib.crc32(f"{name}/2".encode()))


def _mix32(x: np.ndarray, keys: tuple[np.uint32, np.uint32]) -> np.ndarray:
    """Keyed bijective mix of uint32 values (xor-shift-multiply steps of ``lowbias32``).

    Examples
    --------
    >>> ids = _mix32(np.arange(5, dtype=np.uint32), _column_keys("C1"))
    >>> len(set(ids.tolist()))
    5
    """
    x = x ^ keys[0]
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= keys[1]
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


@functools.cache
def _hex_lookup() -> np.ndarray:
    """Table mapping a little-endian uint16 to the 4 hex characters of its two bytes."""
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    byte = np.arange(256)
    pairs = np.stack([digits[byte >> 4], digits[byte & 15]], axis=1)  # (256, 2) ASCII
    half = np.arange(65536)
    chars = np.concatenate([pairs[half & 0xFF], pairs[half >> 8]], axis=1)  # (65536, 4)
    return np.ascontiguousarray(chars).view("<u4").ravel()


def _hex_strings(ids: np.ndarray, null_mask: np.ndarray | None, offsets: pa.Buffer) -> pa.Array:
    """Arrow strings of 8 hex characters: the 4 little-endian bytes of each uint32 id.

    Examples
    --------
    >>> ids = np.array([0x641EFD68, 1], dtype=np.uint32)
    >>> _hex_strings(ids, np.array([False, True]), _string_offsets(2)).to_pylist()
    ['68fd1e64', None]
    """
    halves = ids.astype("<u4", copy=False).view("<u2")
    data = pa.py_buffer(_hex_lookup()[halves])
    n = len(ids)
    if null_mask is None or not null_mask.any():
        return pa.StringArray.from_buffers(n, offsets, data, null_count=0)
    validity = pa.py_buffer(np.packbits(~null_mask, bitorder="little"))
    return pa.StringArray.from_buffers(n, offsets, data, validity, int(null_mask.sum()))
