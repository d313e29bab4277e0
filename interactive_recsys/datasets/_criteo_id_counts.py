"""The frequency counts of the ids of :func:`._criteo_torchrec.criteo_to_torchrec`, out of
core: per column, in hash buckets, summed in memory up to a budget and spilled to staging
past it, then summed over all files a bucket at a time into a lookup of the kept ids."""

from __future__ import annotations

import os

import numpy as np

from interactive_recsys.datasets._criteo_resume import pause_point, sync_files
from interactive_recsys.io._npy import load_npy

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _bucket_of(keys: np.ndarray, bits: int) -> np.ndarray:
    """The bucket (``0 .. 2**bits - 1``) of each id: the top bits of a multiplicative hash."""
    if not bits:
        return np.zeros(len(keys), np.intp)
    with np.errstate(over="ignore"):
        return ((keys.view(np.uint64) * _GOLDEN) >> np.uint64(64 - bits)).astype(np.intp)


def _sum_counts(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The counts of equal ids summed (a hash aggregation; the order is not defined).

    >>> [a.tolist() for a in _sum_counts(np.array([7, 3, 7]), np.array([1, 2, 5]))]
    [[7, 3], [6, 2]]
    """
    import pandas as pd

    codes, uniques = pd.factorize(keys)
    if len(uniques) == len(keys):
        return np.asarray(uniques, np.int64), counts
    # float64 sums: exact below 2**53 per id, far above the rows of any Criteo input
    summed = np.bincount(codes, weights=counts, minlength=len(uniques))
    return np.asarray(uniques, np.int64), summed.astype(np.int64)


class _IdCounter:
    """Counts of the ids of each of ``columns`` columns, block by block (hash counting), kept
    in memory up to ``budget`` (id, column) pairs. Past it, the blocks' counts are summed;
    if that leaves more than half the budget, they are written to staging as one counts
    file: row 0 the ids, row 1 their counts, grouped by column then bucket (the ``offsets``
    file gives where each group starts). Memory stays bounded however long the input is."""

    def __init__(self, prefix: str, columns: int, bits: int, budget: int) -> None:
        self.prefix, self.columns, self.bits, self.budget = prefix, columns, bits, budget
        self.pending: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in range(columns)]
        self.size, self.files = 0, []

    def add(self, sparse: np.ndarray) -> None:
        import pandas as pd

        for j in range(self.columns):
            counts = pd.Series(sparse[:, j], copy=False).value_counts(sort=False)
            self.pending[j].append((counts.index.to_numpy(np.int64), counts.to_numpy(np.int64)))
            self.size += len(counts)
        if self.size > self.budget:
            self._sum()
            if self.size > self.budget // 2:
                self.flush()

    def _sum(self) -> None:
        for j, parts in enumerate(self.pending):
            if len(parts) > 1:
                self.pending[j] = [_sum_counts(np.concatenate([k for k, _ in parts]),
                                               np.concatenate([c for _, c in parts]))]
        self.size = sum(len(k) for parts in self.pending for k, _ in parts)

    def flush(self) -> None:
        """Write the counts held to a new counts file."""
        self._sum()
        if not self.size:
            return
        groups, sizes = [], []
        for j, parts in enumerate(self.pending):
            keys, counts = parts[0] if parts else (np.zeros(0, np.int64),) * 2
            order = np.argsort(_bucket_of(keys, self.bits), kind="stable")
            groups.append(np.stack([keys[order], counts[order]]))
            sizes.append(np.bincount(_bucket_of(keys[order], self.bits),
                                     minlength=1 << self.bits))
            self.pending[j] = []
        path = f"{self.prefix}_{len(self.files)}"
        np.save(path + "_counts.npy", np.concatenate(groups, axis=1))
        pause_point("count:" + os.path.basename(self.prefix).removesuffix("_ids"))
        np.save(path + "_offsets.npy", np.concatenate([[0], np.cumsum(np.concatenate(sizes))]))
        sync_files(path + "_counts.npy", path + "_offsets.npy")
        self.files.append(path)
        self.size = 0


def _lookup_file(count_files: list[str], column: int, bits: int, threshold: int, path: str
                 ) -> int:
    """One column's contiguous ids as a lookup file: row 0 the ids counted at least
    ``threshold`` times over all files, sorted, row 1 their contiguous ids (from 2, by
    descending count, ties by ascending id: the order of Categorify's vocabulary). The
    column's counts are summed one hash bucket at a time."""
    kept_keys, kept_counts = [], []
    for b in range(1 << bits):
        group = column * (1 << bits) + b
        parts = []
        for prefix in count_files:
            offsets = load_npy(prefix + "_offsets.npy")
            counts = load_npy(prefix + "_counts.npy")
            parts.append(np.asarray(counts[:, offsets[group]:offsets[group + 1]]))
        both = np.concatenate(parts, axis=1) if parts else np.zeros((2, 0), np.int64)
        keys, counts = _sum_counts(both[0], both[1]) if len(parts) > 1 else both
        keep = counts >= threshold
        kept_keys.append(keys[keep])
        kept_counts.append(counts[keep])
    keys, counts = np.concatenate(kept_keys), np.concatenate(kept_counts)
    ids = np.empty(len(keys), np.int64)
    ids[np.lexsort((keys, -counts))] = np.arange(2, len(keys) + 2)
    order = np.argsort(keys)
    pause_point(f"fit:C{column + 1}")
    np.save(path, np.stack([keys[order], ids[order]]))
    sync_files(path)
    return len(keys)
