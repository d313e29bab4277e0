"""The per-row steps as TorchScript modules: one module per compiled step of
:func:`~interactive_recsys.workflow._per_row.compiled_steps`, with its constants as buffers.

Every step maps ``(values, missing)`` to ``(values, missing)``: integer values (int64) carry
their nulls as a boolean ``missing`` mask (None: no null), floating ones as NaN, exactly as
the online transform's kernels (:mod:`interactive_recsys.loader`) carry them. Floating
values are computed in float64; a step whose offline output is float32 (LogOp, Normalize
of float32) hands on float32 values, which the next step widens again (exactly).
The arithmetic is the offline operators': ids are equal, LogOp is within 1 ulp of float32.

Examples
--------
>>> import torch
>>> x = torch.tensor([float("nan"), 3.0], dtype=torch.float64)
>>> x, missing = Fill(0.0, integer=False)(x, None)
>>> x, missing = Log1p()(x, missing)
>>> x.tolist()
[0.0, 1.3862943649291992]
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

from interactive_recsys.serving._hash import hash_float, hash_int, umod
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _as_float(x: Tensor, missing: Tensor | None) -> Tensor:
    """The values as float64, the nulls of integer values as NaN."""
    y = x.to(torch.float64)
    if x.is_floating_point():
        return y
    if missing is not None:
        y = torch.where(missing, torch.full_like(y, math.nan), y)
    return y


class Fill(nn.Module):
    """FillMissing and FillMedian: nulls (and NaN) become ``value``."""

    def __init__(self, value: float, integer: bool) -> None:
        super().__init__()
        self.register_buffer("value", torch.tensor(value, dtype=torch.int64 if integer
                                                   else torch.float64))

    def forward(self, x: Tensor, missing: Tensor | None) -> tuple[Tensor, Tensor | None]:
        if x.is_floating_point():
            x = x.to(torch.float64)
            return torch.where(torch.isnan(x), self.value, x), None
        if missing is not None:
            return torch.where(missing, self.value, x), None
        return x, None


class Clip(nn.Module):
    """Clip: values clamped to ``[low, high]`` (None: unbounded); nulls stay nulls."""

    def __init__(self, low: float | None, high: float | None, integer: bool) -> None:
        super().__init__()
        dtype = torch.int64 if integer else torch.float64
        lo, hi = (INT64_MIN, INT64_MAX) if integer else (-math.inf, math.inf)
        self.register_buffer("low", torch.tensor(lo if low is None else low, dtype=dtype))
        self.register_buffer("high", torch.tensor(hi if high is None else high, dtype=dtype))

    def forward(self, x: Tensor, missing: Tensor | None) -> tuple[Tensor, Tensor | None]:
        if x.is_floating_point():
            x = x.to(torch.float64)
        return torch.clamp(x, self.low, self.high), missing


class Log1p(nn.Module):
    """LogOp: ``log1p`` in float64, rounded to float32 as the offline output."""

    def forward(self, x: Tensor, missing: Tensor | None) -> tuple[Tensor, Tensor | None]:
        return torch.log1p(_as_float(x, missing)).to(torch.float32), None


class Affine(nn.Module):
    """Normalize and NormalizeMinMax: ``(x - shift) / scale`` in float64 (``scale`` a
    tensor, so no reciprocal is substituted), rounded to float32 where the output is."""

    def __init__(self, shift: float, scale: float, float32: bool) -> None:
        super().__init__()
        self.register_buffer("shift", torch.tensor(shift, dtype=torch.float64))
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float64))
        self.float32 = float32

    def forward(self, x: Tensor, missing: Tensor | None) -> tuple[Tensor, Tensor | None]:
        y = (_as_float(x, missing) - self.shift) / self.scale
        return (y.to(torch.float32) if self.float32 else y), None


class Ids(nn.Module):
    """HashBucket, and Categorify of numbers: the value's hash, its bucket
    (``FIRST_FREE_INDEX + hash % buckets``; one out-of-vocabulary id without buckets), then
    for Categorify its id in the vocabulary's sorted hashes (``keys``: the hash is a
    bijection on integers and floats, so a hash identifies its value); nulls and NaN get
    ``NULL_INDEX``."""

    def __init__(self, buckets: int, keys: np.ndarray | None = None,
                 ids: np.ndarray | None = None) -> None:
        super().__init__()
        self.buckets = int(buckets)
        self.residue = (1 << 64) % self.buckets if self.buckets else 0
        self.first_free, self.null = FIRST_FREE_INDEX, NULL_INDEX  # (no globals in TorchScript)
        keys = np.zeros(0, np.int64) if keys is None else keys
        ids = np.zeros(0, np.int64) if ids is None else ids
        self.register_buffer("keys", torch.as_tensor(np.ascontiguousarray(keys, np.int64)))
        self.register_buffer("ids", torch.as_tensor(np.ascontiguousarray(ids, np.int64)))

    def forward(self, x: Tensor, missing: Tensor | None) -> tuple[Tensor, Tensor | None]:
        if x.is_floating_point():
            x = x.to(torch.float64)
            null: Tensor | None = torch.isnan(x)
            h = hash_float(x)
        else:
            null = missing
            h = hash_int(x)
        out = buckets_of(h, self.buckets, self.residue, self.first_free)
        if self.keys.numel() > 0:
            at = torch.searchsorted(self.keys, h).clamp(max=self.keys.numel() - 1)
            out = torch.where(self.keys[at] == h, self.ids[at], out)
        if null is not None:
            out = torch.where(null, torch.full_like(out, self.null), out)
        return out, None


def buckets_of(h: Tensor, buckets: int, residue: int, first_free: int) -> Tensor:
    """The out-of-vocabulary id of each hash: ``first_free + h % buckets`` (``h`` read as
    uint64), or ``first_free`` for every value without buckets."""
    if buckets > 0:
        return umod(h, buckets, residue) + first_free
    return torch.full_like(h, first_free)


def step_module(step: tuple, integer: bool, vocabulary: tuple | None = None) -> nn.Module:
    """The module of one compiled step (``("clip", low, high)``...) on values that are
    integers (``integer``) or floats; ``vocabulary``: Categorify's ``(keys, ids)``."""
    kind = step[0]
    if kind == "fill":
        return Fill(step[1], integer)
    if kind == "clip":
        return Clip(step[1], step[2], integer)
    if kind == "log1p":
        return Log1p()
    if kind == "affine":
        return Affine(step[1], step[2], step[3] == "float32")
    if kind == "hash_bucket":
        return Ids(step[1])
    assert kind == "categorify" and vocabulary is not None, step
    return Ids(step[2] or 0, *vocabulary)
