"""The online transform's columns in groups: the columns with the same steps run together.

The standard Criteo workflow gives two groups, 26 categorical columns (Categorify of strings)
and 13 continuous ones (FillMissing, Clip, LogOp, Normalize): each step is then one kernel
over ``[columns, rows]`` (constants as per-column tensors; the vocabularies side by side in
one padded ``[columns, longest]`` matrix for one batched ``searchsorted``), about 30 kernels a
batch rather than one per column and step. The arithmetic is the per-column one of
:mod:`.kernels`, so the results do not depend on the grouping.

Examples
--------
>>> import torch
>>> g = Group(rows=[0, 1], source="dense", null_bits=None, absent_bits=None,
...           steps=[("fill", np.array([0.0, 5.0])), ("log1p",)])
>>> x = torch.tensor([[float("nan"), float("nan")], [1.0, 3.0]], dtype=torch.float64)
>>> run(g, x, None, g.tensors("cpu", dense=True)).tolist()
[[0.0, 1.7917594909667969], [0.6931471824645996, 1.3862943649291992]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interactive_recsys.loader import _kernels as kernels
from interactive_recsys.schema import is_float_dtype, is_integer_dtype
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: Largest padded vocabulary matrix of one group (bytes: keys and ids); a group whose
#: vocabularies would need more is split into one group per column.
MAX_TABLE_BYTES = 2**30


@dataclass
class Group:
    """Columns (``rows``: their places among the categorical or continuous columns) whose
    sources are of one kind (``source``: ``"int"``, ``"float"``, ``"hash"`` of a string,
    ``"ids"`` looked up on the CPU, or ``"dense"``: float64 with NaN for missing) and whose
    steps are the same but for their constants (numpy arrays, one entry per column)."""

    rows: list[int]
    source: str
    null_bits: list[int] | None
    absent_bits: list[int] | None
    steps: list[tuple]

    def tensors(self, device: Any, dense: bool, put: Any = None) -> dict[str, Any]:
        """The constants as tensors on ``device``, shaped to broadcast over the rows
        (``[g]`` for dense ``[rows, g]`` data, ``[g, 1]`` for categorical ``[g, rows]``)."""
        import torch

        def to(a: np.ndarray, shaped: bool = True) -> Any:
            t = torch.as_tensor(np.ascontiguousarray(a))
            if shaped and not dense:
                t = t.reshape(-1, 1)
            return t.to(device) if put is None else put(t)

        out: dict[str, Any] = {"index": to(np.array(self.rows, np.int64), shaped=False)}
        for name, bits in (("null", self.null_bits), ("absent", self.absent_bits)):
            if bits is not None:
                b = np.array(bits, np.int64)
                out[f"{name}_word"], out[f"{name}_shift"] = to(b // 64, False), to(b % 64)
        for i, step in enumerate(self.steps):
            if step[0] in ("fill", "clip", "affine", "hash_bucket"):
                out[i] = tuple(to(a) for a in step[1:] if isinstance(a, np.ndarray))
            elif step[0] == "categorify":
                _, buckets, residues, keys, ids, lengths = step
                out[i] = (None if buckets is None else (to(buckets), to(residues)),
                          to(keys, False), to(ids, False), to(lengths))
        return out


def _kind(chain: Any) -> str:
    if chain.cpu_lookup is not None:
        return "ids"
    if is_float_dtype(chain.dtype):
        return "float"
    if is_integer_dtype(chain.dtype) or chain.dtype == "bool":
        return "int"
    return "hash"


def _signature(chain: Any, categorical: bool) -> tuple:
    names = []
    for s in chain.steps:
        names.append((s[0], bool(s[2])) if s[0] == "categorify" else
                     (s[0], s[3]) if s[0] == "affine" else (s[0],))
    source = _kind(chain) if categorical else "dense"
    return (source, chain.null_bit is not None, chain.absent_bit is not None, tuple(names))


def build_groups(chains: Sequence[Any], categorical: bool) -> list[Group]:
    """The chains (:class:`~.online.Chain`) of the categorical or the continuous columns,
    grouped by their steps."""
    by: dict[tuple, list[int]] = {}
    for i, chain in enumerate(chains):
        by.setdefault(_signature(chain, categorical), []).append(i)
    groups = []
    for signature, rows in by.items():
        members = [chains[i] for i in rows]
        if any(name[0] == "categorify" for name in signature[3]) and len(rows) > 1:
            longest = max(len(s[1][0]) for c in members for s in c.steps if s[0] == "categorify")
            if 16 * longest * len(rows) > MAX_TABLE_BYTES:
                groups += [_group([r], [c], signature[0]) for r, c in zip(rows, members,
                                                                         strict=True)]
                continue
        groups.append(_group(rows, members, signature[0]))
    return groups


def _group(rows: list[int], chains: list[Any], source: str) -> Group:
    steps = []
    kind = "float" if source in ("float", "dense") else "int"
    for i, first in enumerate(chains[0].steps):
        name, every = first[0], [c.steps[i] for c in chains]
        if name == "fill":
            steps.append(("fill", np.array([s[1] for s in every],
                                            np.int64 if kind == "int" else np.float64)))
        elif name == "clip":
            lo, hi = ((INT64_MIN, INT64_MAX) if kind == "int" else (-math.inf, math.inf))
            dtype = np.int64 if kind == "int" else np.float64
            steps.append(("clip", np.array([lo if s[1] is None else s[1] for s in every], dtype),
                          np.array([hi if s[2] is None else s[2] for s in every], dtype)))
        elif name == "log1p":
            steps.append(("log1p",))
            kind = "float"
        elif name == "affine":
            steps.append(("affine", np.array([s[1] for s in every], np.float64),
                          np.array([s[2] for s in every], np.float64), first[3]))
            kind = "float"
        elif name == "hash_bucket":
            n = np.array([s[1] for s in every], np.int64)
            steps.append(("hash_bucket", n, np.array([(1 << 64) % int(v) for v in n], np.int64)))
            kind = "int"
        else:  # categorify: the vocabularies side by side, padded
            buckets = None if not first[2] else np.array([s[2] for s in every], np.int64)
            residues = None if buckets is None else np.array(
                [(1 << 64) % int(v) for v in buckets], np.int64)
            longest = max(len(s[1][0]) for s in every)
            keys = np.full((len(every), max(longest, 1)), INT64_MAX, np.int64)
            ids = np.zeros((len(every), max(longest, 1)), np.int64)
            for j, s in enumerate(every):
                keys[j, :len(s[1][0])], ids[j, :len(s[1][1])] = s[1]
            lengths = np.array([len(s[1][0]) for s in every], np.int64)
            steps.append(("categorify", buckets, residues, keys, ids, lengths))
            kind = "int"
    nulls = [c.null_bit for c in chains] if chains[0].null_bit is not None else None
    absent = [c.absent_bit for c in chains] if chains[0].absent_bit is not None else None
    return Group(rows, source, nulls, absent, steps)


def _bits(words: Any, t: dict[str, Any], name: str) -> Any:
    return ((words.index_select(0, t[f"{name}_word"]) >> t[f"{name}_shift"]) & 1).bool()


def run(group: Group, x: Any, words: Any, t: dict[str, Any]) -> Any:
    """The group's steps on ``x`` (categorical: ``[g, rows]`` int64; dense: ``[rows, g]``
    float64), ``words`` the ``[words, rows]`` null bits, ``t`` :meth:`Group.tensors`."""
    import torch

    kind, missing = group.source, None
    if kind == "float":
        x = x.contiguous().view(torch.float64)
    elif kind in ("int", "hash") and group.null_bits is not None:
        missing = _bits(words, t, "null")
    if kind == "ids":
        kind = "int"
    for i, step in enumerate(group.steps):
        name = step[0]
        if name == "fill":
            (value,) = t[i]
            if kind in ("float", "dense"):
                x = torch.where(torch.isnan(x), value, x)
            elif missing is not None:
                x = torch.where(missing, value, x)
            missing = None
        elif name == "clip":
            x = torch.clamp(x, *t[i])
        elif name in ("log1p", "affine"):
            if kind in ("int", "hash"):
                x = x.to(torch.float64)
                if missing is not None:
                    x = torch.where(missing, torch.full_like(x, math.nan), x)
                kind, missing = "float", None
            if name == "log1p":
                y, dtype = torch.log1p(x), "float32"
            else:
                shift, scale = t[i]
                y, dtype = (x - shift) / scale, step[3]
            x = y.to(torch.float32).to(torch.float64) if dtype == "float32" else y
        else:  # hash_bucket, categorify: ids
            if kind in ("float", "dense"):
                null, h = torch.isnan(x), kernels.hash_float(x)
            else:
                null, h = missing, x if kind == "hash" else kernels.hash_int(x)
            modulo = t[i] if name == "hash_bucket" else t[i][0]
            if modulo is None:
                ids = torch.full_like(h, FIRST_FREE_INDEX)
            else:
                ids = _umod(h, *modulo) + FIRST_FREE_INDEX
            if name == "categorify":
                _, keys, table_ids, lengths = t[i]
                found = _lookup(keys, table_ids, lengths, h.contiguous(), ids)
                if group.absent_bits is not None:  # strings of another length: not in it
                    found = torch.where(_bits(words, t, "absent"), ids, found)
                ids = found
            if null is not None:
                ids = torch.where(null, torch.full_like(ids, NULL_INDEX), ids)
            x, kind, missing = ids, "int", None
    return x


def _umod(z: Any, n: Any, residue: Any) -> Any:
    """:func:`.kernels.umod` with one modulus per row of ``z`` (``n``, ``2**64 % n``)."""
    import torch

    r = torch.remainder(z, n)
    shifted = torch.where(r >= n - residue, r - (n - residue), r + residue)
    return torch.where(z < 0, shifted, r)


def _lookup(keys: Any, ids: Any, lengths: Any, hashes: Any, otherwise: Any) -> Any:
    """:func:`.kernels.lookup` of each row of ``hashes`` in that row of the padded ``keys``."""
    import torch

    at = torch.searchsorted(keys, hashes).clamp_(max=keys.shape[1] - 1)
    hit = (torch.gather(keys, 1, at) == hashes) & (at < lengths)
    return torch.where(hit, torch.gather(ids, 1, at), otherwise)
