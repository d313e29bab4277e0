"""Per-epoch order of the partitions and the rows of each data-parallel rank.

An epoch is one stream of rows: the partitions (parquet row groups) in an order drawn from
``(seed, epoch)`` -- the same on every rank -- then concatenated. Rank ``r`` of ``W``
takes rows ``[r * S, (r + 1) * S)`` of that stream with ``S = total // W``: shards are
disjoint and of equal size (every rank runs the same number of steps), and each rank reads
only the partitions that overlap its range. The ``total % W`` rows at the end of the stream
(fewer than ``W``) are left out of that epoch; which rows they are changes with the epoch
when shuffling.

Examples
--------
Three partitions of 4, 3 and 5 rows, two ranks (6 rows each), no shuffling:

>>> order = partition_order(3, seed=0, epoch=0, shuffle=False)
>>> shard_pieces([4, 3, 5], order, rank=0, world_size=2)
[Piece(unit=0, start=0, stop=4), Piece(unit=1, start=0, stop=2)]
>>> shard_pieces([4, 3, 5], order, rank=1, world_size=2)
[Piece(unit=1, start=2, stop=3), Piece(unit=2, start=0, stop=5)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class Piece(NamedTuple):
    """Rows ``start:stop`` of partition ``unit`` (``stop=None``: to its end)."""

    unit: int
    start: int
    stop: int | None


def partition_order(n_units: int, seed: int, epoch: int, shuffle: bool) -> np.ndarray:
    """The partitions in this epoch's order: a permutation drawn from ``(seed, epoch)``."""
    if not shuffle:
        return np.arange(n_units)
    return np.random.default_rng([seed, epoch]).permutation(n_units)


def row_rng(seed: int, epoch: int, rank: int) -> np.random.Generator:
    """The generator of this rank's within-window row permutations for one epoch."""
    return np.random.default_rng([seed, epoch, rank, 1])


def shard_rows(total: int, world_size: int) -> int:
    """Rows per rank and epoch: ``total // world_size``."""
    return total // world_size


def shard_pieces(unit_rows: Sequence[int] | None, order: np.ndarray, rank: int,
                 world_size: int) -> list[Piece]:
    """The pieces of rank ``rank``: its contiguous range of the epoch's row stream.

    ``unit_rows=None`` (sizes unknown) is allowed for a single rank: every partition whole.
    """
    if unit_rows is None:
        if world_size != 1:
            raise ValueError("partition sizes are needed to shard over several ranks")
        return [Piece(int(u), 0, None) for u in order]
    per_rank = shard_rows(int(sum(unit_rows)), world_size)
    lo, hi = rank * per_rank, (rank + 1) * per_rank
    pieces, pos = [], 0
    for u in order:
        rows = int(unit_rows[u])
        start, stop = max(lo - pos, 0), min(hi - pos, rows)
        if start < stop:
            pieces.append(Piece(int(u), start, stop))
        pos += rows
        if pos >= hi:
            break
    return pieces
