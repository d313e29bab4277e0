"""The value-defined hash of :mod:`~interactive_recsys.hashing` in TorchScript.

A saved serving module (:class:`~interactive_recsys.serving.TorchTransform`) runs where
this package is not installed, so the hash that ``HashBucket`` and Categorify's
``num_buckets`` use is written here again, in operations TorchScript compiles and saves:
integers and floats as int64 tensors in wrapping arithmetic (a logical right shift is an
arithmetic one masked), strings from their UTF-8 bytes (a TorchScript ``str`` is its UTF-8
bytes: ``len`` counts them and iterating gives them one by one). The tests compare every
function with :func:`~interactive_recsys.hashing.hash_array`, bit for bit.

Examples
--------
>>> import numpy as np, pyarrow as pa, torch
>>> from interactive_recsys.hashing import hash_array
>>> words = ["", "a", "é", "12345678", "a longer string of several words", None]
>>> hashes, nulls = hash_strings(words)
>>> want = hash_array(pa.array(words)).view(np.int64)
>>> bool((hashes.numpy()[:5] == want[:5]).all()), nulls.tolist()
(True, [False, False, False, False, False, True])
>>> x = torch.tensor([0, -5, 2**62])
>>> bool((hash_int(x).numpy() == hash_array(pa.array(x.numpy())).view(np.int64)).all())
True
>>> umod(torch.tensor([-1]), 10, 2**64 % 10).tolist() == [(2**64 - 1) % 10]
True
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def signed(u: np.uint64 | int) -> int:
    """The int64 with the bits of the uint64 ``u``.

    >>> signed(2**64 - 1)
    -1
    """
    return int(np.array(u, np.uint64).view(np.int64))


def _lsr(z: Tensor, s: int) -> Tensor:
    """Logical right shift of int64 bits."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def fmix64(z: Tensor) -> Tensor:
    """SplitMix64's finaliser on int64 tensors (wrapping, as the uint64 original). The
    literals here and below are :mod:`~interactive_recsys.hashing`'s constants as int64
    (:func:`signed`): TorchScript compiles no global variable."""
    z = z + -7046029254386353131
    z = (z ^ _lsr(z, 30)) * -4658895280553007687
    z = (z ^ _lsr(z, 27)) * -7723592293110705685
    return z ^ _lsr(z, 31)


def hash_int(x: Tensor) -> Tensor:
    """The hash of int64 values (integers and booleans)."""
    return fmix64(x ^ 2685821657736338717)


def float_bits(x: Tensor) -> Tensor:
    """The IEEE-754 bits of float64 values as int64, computed from their sign, exponent and
    mantissa (TorchScript has no ``view(dtype)``); any NaN gives some value."""
    a = x.abs()
    mantissa, exponent = torch.frexp(a)  # a = mantissa * 2**exponent, mantissa in [0.5, 1)
    normal = ((exponent.to(torch.int64) + 1022) << 52) + (
        (mantissa * 2 - 1) * 4503599627370496.0).to(torch.int64)  # 2**52
    subnormal = (a * 2.0 ** 537 * 2.0 ** 537).to(torch.int64)  # a / 2**-1074, exactly
    bits = torch.where(a >= 2.2250738585072014e-308, normal, subnormal)  # 2**-1022
    bits = torch.where(torch.isinf(a), torch.full_like(bits, 2047 << 52), bits)
    bits = torch.where(torch.isnan(a), torch.zeros_like(bits), bits)
    return torch.where(torch.signbit(x), bits | (-9223372036854775807 - 1), bits)


def hash_float(x: Tensor) -> Tensor:
    """The hash of float64 values (``-0.0`` as ``0.0``; missing values are masked after)."""
    x = torch.where(x == 0, torch.zeros_like(x), x)
    return fmix64(float_bits(x) ^ -7046029254386353131)


def umod(z: Tensor, n: int, residue: int) -> Tensor:
    """``z % n`` with ``z``'s bits read as uint64 (``0 < n < 2**63``), in int64;
    ``residue`` is ``2**64 % n`` (TorchScript has no integer above int64 to compute it)."""
    r = torch.remainder(z, n)  # in [0, n): z's residue; a negative z is z + 2**64 unsigned
    shifted = torch.where(r >= n - residue, r - (n - residue), r + residue)
    return torch.where(z < 0, shifted, r)


def hash_bytes(data: Tensor, lengths: Tensor) -> Tensor:
    """The hash of strings given as their UTF-8 bytes one after another (``data``, int64)
    and their byte lengths: ``fmix64(sum_k word_k * P**k XOR len * LEN_SEED)``."""
    n = lengths.numel()
    row = torch.repeat_interleave(torch.arange(n), lengths)
    starts = torch.cumsum(lengths, 0) - lengths
    at = torch.arange(data.numel()) - starts[row]  # each byte's place in its string
    word = torch.div(at, 8, rounding_mode="floor")
    words = int(word.max()) + 1 if data.numel() else 1
    powers = torch.full([words], 1099511628211, dtype=torch.int64)
    powers[0] = 1
    powers = torch.cumprod(powers, 0)  # P**k, wrapping
    weight = torch.bitwise_left_shift(torch.ones_like(at), (at % 8) * 8) * powers[word]
    sums = torch.zeros(n, dtype=torch.int64).index_add_(0, row, data * weight)
    return fmix64(sums ^ (lengths * -4417276706812531889))


@torch.jit.script
def hash_strings(values: list[str | None]) -> tuple[Tensor, Tensor]:
    """The hash of each string (int64 bits of the uint64 hash) and where a value is None
    (its hash is then meaningless). Compiled even when called from Python, so that a string
    is always its UTF-8 bytes."""
    data: list[int] = []
    lengths: list[int] = []
    nulls: list[bool] = []
    for v in values:
        if v is None:
            lengths.append(0)
            nulls.append(True)
        else:
            for c in v:
                data.append(ord(c))
            lengths.append(len(v))
            nulls.append(False)
    hashes = hash_bytes(torch.tensor(data, dtype=torch.int64),
                        torch.tensor(lengths, dtype=torch.int64))
    return hashes, torch.tensor(nulls, dtype=torch.bool)
