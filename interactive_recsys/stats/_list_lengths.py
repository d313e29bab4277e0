"""Length distribution of multi-hot (list) columns and the cost of padding them.

Lengths are kept as a histogram (``histogram[n]`` rows have ``n`` values; null rows count
as empty), which partitions add up exactly and which gives exact quantiles.

Padding every row to the longest list stores ``rows * max_len`` ids; jagged storage
(flat values plus offsets, as Arrow lists or TorchRec's ``KeyedJaggedTensor``) stores
``total`` ids and ``rows + 1`` int32 offsets. The *padding waste* is the share of padded
slots that hold no value: ``1 - total / (rows * max_len)``.

>>> s = LengthStats(np.bincount([1, 1, 2, 4]), index_bytes=8)
>>> s.mean, s.quantile(0.5), s.max, round(s.padding_waste, 3)
(2.0, 1, 4, 0.5)
>>> s.padded_bytes, s.jagged_bytes      # 4 rows * 4 * 8; 8 ids * 8 + 5 offsets * 4
(128, 84)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

OFFSET_BYTES = 4


def add_histograms(histograms: Iterable[np.ndarray | None]) -> np.ndarray | None:
    """Element-wise sum of length histograms of different lengths (``None`` ignored)."""
    hs = [np.asarray(h, dtype=np.int64) for h in histograms if h is not None]
    if not hs:
        return None
    out = np.zeros(max(len(h) for h in hs), dtype=np.int64)
    for h in hs:
        out[: len(h)] += h
    return out


class LengthStats:
    """Statistics of a length histogram; ``index_bytes`` is the size of one stored id."""

    def __init__(self, histogram: Any, index_bytes: int = 8) -> None:
        self.histogram = np.asarray(histogram, dtype=np.int64)
        self.index_bytes = index_bytes
        lengths = np.arange(len(self.histogram))
        self.rows = int(self.histogram.sum())
        self.total = int((lengths * self.histogram).sum())
        nonzero = np.flatnonzero(self.histogram)
        self.max = int(nonzero[-1]) if len(nonzero) else 0

    @property
    def mean(self) -> float:
        return self.total / self.rows if self.rows else 0.0

    def quantile(self, q: float) -> int:
        """The smallest length ``L`` with at least a share ``q`` of rows of length <= ``L``
        (numpy's ``inverted_cdf`` method)."""
        if not self.rows:
            return 0
        cum = np.cumsum(self.histogram)
        return int(np.searchsorted(cum, q * self.rows, side="left"))

    @property
    def padded_bytes(self) -> int:
        return self.rows * self.max * self.index_bytes

    @property
    def jagged_bytes(self) -> int:
        return self.total * self.index_bytes + (self.rows + 1) * OFFSET_BYTES

    @property
    def padding_waste(self) -> float:
        slots = self.rows * self.max
        return 1 - self.total / slots if slots else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "values": self.total, "mean": self.mean,
                "p50": self.quantile(0.5), "p99": self.quantile(0.99), "max": self.max,
                "padding_waste": self.padding_waste, "padded_bytes": self.padded_bytes,
                "jagged_bytes": self.jagged_bytes, "histogram": self.histogram.tolist()}

    def __repr__(self) -> str:
        return (f"mean {self.mean:.2f}, p50 {self.quantile(0.5)}, p99 {self.quantile(0.99)}, "
                f"max {self.max}; padding to {self.max} wastes {self.padding_waste:.1%}")
