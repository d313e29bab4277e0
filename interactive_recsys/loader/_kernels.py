"""The online transform's per-row kernels in PyTorch: the same numbers as the offline operators.

Every function takes and returns tensors on one device and never reads a value back to the
host (no ``.item()``, ``.tolist()``, boolean-mask indexing or ``nonzero``): on a GPU each
call only queues kernels on the current stream.

* :func:`fmix64`, :func:`hash_int`, :func:`hash_float`: :mod:`~interactive_recsys.hashing`'s
  value-defined hash in wrapping int64 arithmetic (a logical right shift is an arithmetic one
  masked), bit for bit the NumPy uint64 result;
* :func:`umod`: ``uint64 % n`` of hashes held as int64;
* :func:`lookup`: the id of each hash in a vocabulary's sorted keys (``searchsorted``).

Examples
--------
>>> import numpy as np, pyarrow as pa, torch
>>> from interactive_recsys.hashing import hash_array
>>> x = np.array([0, 1, -5, 2**62], np.int64)
>>> bool((hash_int(torch.from_numpy(x)).numpy().view(np.uint64) == hash_array(pa.array(x))).all())
True
>>> umod(torch.tensor([-1]), 10).tolist() == [(2**64 - 1) % 10]
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interactive_recsys.hashing import _GOLDEN, _M1, _M2, FLOAT_SEED, INT_SEED


def signed(u: np.uint64 | int) -> int:
    """The int64 with the bits of the uint64 ``u``."""
    return int(np.array(u, np.uint64).view(np.int64))


GOLDEN, M1, M2 = signed(_GOLDEN), signed(_M1), signed(_M2)
INT_SEED_S, FLOAT_SEED_S = signed(INT_SEED), signed(FLOAT_SEED)


def _lsr(z: Any, s: int) -> Any:
    """Logical right shift of int64 bits."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def fmix64(z: Any) -> Any:
    """SplitMix64's finaliser on int64 tensors (wrapping, as the uint64 original)."""
    z = z + GOLDEN
    z = (z ^ _lsr(z, 30)) * M1
    z = (z ^ _lsr(z, 27)) * M2
    return z ^ _lsr(z, 31)


def hash_int(x: Any) -> Any:
    """The hash of int64 values (integers and booleans)."""
    return fmix64(x ^ INT_SEED_S)


def hash_float(x: Any) -> Any:
    """The hash of float64 values (``-0.0`` as ``0.0``; missing values are masked after)."""
    import torch

    x = torch.where(x == 0, torch.zeros_like(x), x).contiguous()
    return fmix64(x.view(torch.int64) ^ FLOAT_SEED_S)


def umod(z: Any, n: int) -> Any:
    """``z % n`` with ``z``'s bits read as uint64 (``0 < n < 2**63``), in int64."""
    import torch

    r = torch.remainder(z, n)  # in [0, n): z's residue; a negative z is z + 2**64 unsigned
    c = (1 << 64) % n
    if not c:
        return r
    shifted = torch.where(r >= n - c, r - (n - c), r + c)  # (r + c) % n, without overflow
    return torch.where(z < 0, shifted, r)


def lookup(keys: Any, ids: Any, hashes: Any, otherwise: Any) -> Any:
    """``ids[i]`` where ``hashes`` equals ``keys[i]`` (``keys`` sorted as int64), else
    ``otherwise``."""
    import torch

    if not len(keys):
        return otherwise
    at = torch.searchsorted(keys, hashes).clamp_(max=len(keys) - 1)
    return torch.where(keys[at] == hashes, ids[at], otherwise)
