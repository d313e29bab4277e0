"""Frequency distributions of embedding lookups, kept as a histogram of counts.

An embedding table of millions of rows is summarised without its values: what matters
for rank/frequency plots and cache coverage is only *how many ids have each count*.
Real data has few distinct counts (at most about ``sqrt(2 * lookups)``), so the
histogram is small however large the vocabulary is, and histograms of disjoint sets of
ids (hash splits, partitions of a vocabulary) combine by adding.

Examples
--------
>>> h = CountHistogram.from_counts([5, 3, 3, 1])
>>> h.n_ids, h.total
(4, 12)
>>> float(h.top_k_share(1)), float(h.top_k_share(3))   # 5/12, 11/12
(0.4166666666666667, 0.9166666666666666)
>>> h.ids_for_share(0.9)
3
>>> h.frequency_at_rank([1, 2, 3, 4]).tolist()
[5, 3, 3, 1]
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np


def log_points(n: int, max_points: int) -> np.ndarray:
    """At most ``max_points`` distinct integers from 1 to ``n``, log-spaced, both ends in.

    >>> log_points(1000, 4).tolist()
    [1, 10, 100, 1000]
    """
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    if n <= max_points:
        return np.arange(1, n + 1, dtype=np.int64)
    return np.unique(np.round(np.geomspace(1, n, max_points)).astype(np.int64))


@dataclass
class CountHistogram:
    """``ids[i]`` ids were looked up ``counts[i]`` times each; counts descending, positive."""

    counts: np.ndarray
    ids: np.ndarray

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.int64)
        ids = np.asarray(self.ids, dtype=np.int64)
        keep = (counts > 0) & (ids > 0)
        order = np.argsort(-counts[keep], kind="stable")
        counts, ids = counts[keep][order], ids[keep][order]
        if len(counts) and np.any(counts[1:] == counts[:-1]):  # merge equal counts
            uniq, inverse = np.unique(-counts, return_inverse=True)
            counts, ids = -uniq, np.bincount(inverse, weights=ids).astype(np.int64)
        self.counts, self.ids = counts, ids
        self._cum_ids = np.cumsum(ids)
        self._cum_lookups = np.cumsum(counts * ids)

    @classmethod
    def from_counts(cls, counts: Any) -> CountHistogram:
        """The histogram of one count per id (zeros are dropped)."""
        values, ids = np.unique(np.asarray(counts, dtype=np.int64), return_counts=True)
        return cls(values, ids)

    @classmethod
    def combine(cls, histograms: Iterable[CountHistogram]) -> CountHistogram:
        """The histogram of the union of disjoint sets of ids."""
        hs = list(histograms)
        if not hs:
            return cls(np.zeros(0), np.zeros(0))
        return cls(np.concatenate([h.counts for h in hs]), np.concatenate([h.ids for h in hs]))

    @property
    def n_ids(self) -> int:
        """Ids with at least one lookup."""
        return int(self._cum_ids[-1]) if len(self.ids) else 0

    @property
    def total(self) -> int:
        """Lookups in all."""
        return int(self._cum_lookups[-1]) if len(self.ids) else 0

    def truncate(self, min_count: int = 0, max_ids: int | None = None) -> CountHistogram:
        """The ids a vocabulary keeps: counts ``>= min_count``, then the ``max_ids`` hottest."""
        counts, ids = self.counts, self.ids
        keep = counts >= min_count
        counts, ids = counts[keep], ids[keep]
        if max_ids is not None:
            room = np.clip(max_ids - (np.cumsum(ids) - ids), 0, None)
            ids = np.minimum(ids, room)
        return CountHistogram(counts, ids)

    def served(self, k: Any) -> np.ndarray:
        """Lookups served by the ``k`` hottest ids (``k`` a number or an array)."""
        k = np.clip(np.asarray(k, dtype=np.int64), 0, self.n_ids)
        if not len(self.ids):
            return np.zeros_like(k)
        group = np.minimum(np.searchsorted(self._cum_ids, k, side="left"), len(self.ids) - 1)
        before_ids = np.where(group > 0, self._cum_ids[group - 1], 0)
        before = np.where(group > 0, self._cum_lookups[group - 1], 0)
        return before + (k - before_ids) * self.counts[group]

    def top_k_share(self, k: Any) -> np.ndarray:
        """Share of all lookups served by the ``k`` hottest ids (what a cache of ``k``
        rows would hit)."""
        return self.served(k) / self.total if self.total else np.zeros_like(np.asarray(k), float)

    def ids_for_share(self, share: float) -> int:
        """The fewest ids that serve at least ``share`` of the lookups."""
        if not self.total or share <= 0:
            return 0
        if share >= 1:
            return self.n_ids
        target = share * self.total
        g = int(np.searchsorted(self._cum_lookups, target, side="left"))
        g = min(g, len(self.ids) - 1)
        before_ids = int(self._cum_ids[g - 1]) if g else 0
        before = int(self._cum_lookups[g - 1]) if g else 0
        c = int(self.counts[g])
        j = max(1, math.ceil((target - before) / c))
        while j < self.ids[g] and (before + j * c) / self.total < share:
            j += 1
        while j > 1 and (before + (j - 1) * c) / self.total >= share:
            j -= 1
        return before_ids + j

    def frequency_at_rank(self, rank: Any) -> np.ndarray:
        """Lookup count of the id of each 1-based ``rank`` (hottest first)."""
        rank = np.asarray(rank, dtype=np.int64)
        group = np.searchsorted(self._cum_ids, rank, side="left")
        return self.counts[np.minimum(group, len(self.counts) - 1)]

    def rank_frequency(self, max_points: int = 200) -> dict[str, list[int]]:
        """Log-spaced ranks and their counts: the data of a log-log rank/frequency plot."""
        ranks = log_points(self.n_ids, max_points)
        return {"rank": ranks.tolist(), "frequency": self.frequency_at_rank(ranks).tolist()}

    def coverage_curve(self, max_points: int = 200) -> dict[str, list]:
        """Log-spaced ``k`` and the share of lookups the ``k`` hottest ids serve."""
        ks = log_points(self.n_ids, max_points)
        return {"ids": ks.tolist(), "share": [float(s) for s in self.top_k_share(ks)]}
