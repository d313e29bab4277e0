"""The global rank of every vocabulary value, split by split, in time linear in its size.

A vocabulary is ordered by descending count, then ascending value. Its hash splits
(:mod:`.reduce`) hold disjoint values in no common order, so a value's rank depends on every
split: comparing each split with every other costs ``O(V * S)`` and grows faster than the
data, since ``S`` grows with the rows. Instead the splits are re-cut into at most
:data:`MAX_RANGES` *ranges of value* (bounds from evenly spaced samples of every split,
:func:`bounds`; :func:`cut`), and

    rank(v) = values with a larger count                         (count histograms)
            + values with v's count in the ranges before v's     (count histograms)
            + values with v's count before v in its own range    (one sort of the range)

so each range is sorted on its own (:func:`sort_range`), only the small count histograms
meet in one task (:func:`bases`), and the ranks go back to their hash split
(:func:`finish_range`, :func:`gather_ranks`). No task holds more than about one split.
Values with 64-bit keys (:mod:`..backend.keyed_counts`) are compared by key; others by value
with Arrow's order (strings byte-wise), which is the same order.

>>> import pyarrow as pa
>>> from interactive_recsys.backend import _keyed_counts as kc
>>> splits = [kc.encode(pa.table({"value": v, "count": c}))
...           for v, c in ((["b", "x"], [2, 1]), (["a", "c"], [2, 5]))]
>>> plan = bounds([sample(s) for s in splits], 2)
>>> pieces = [cut(s, plan) for s in splits]
>>> ranges = [sort_range([p[r] for p in pieces]) for r in range(2)]
>>> base = bases([r["histogram"] for r in ranges])
>>> done = [finish_range(ranges[r], base[r], 2) for r in range(2)]
>>> [gather_ranks([d[s] for d in done]).tolist() for s in range(2)]   # c(5) a(2) b(2) x(1)
[[2, 3], [1, 0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.tables import _vocabulary as vocab

#: Sample points taken from each split to choose the range bounds.
SAMPLES = 256
#: Most ranges of value: the re-cut costs ``splits x ranges`` small tasks, so a capped count
#: keeps the graph linear in ``split_out``; a range then holds ``1 / MAX_RANGES`` of the
#: vocabulary (about 16 bytes a value), small for any real vocabulary.
MAX_RANGES = 64


def _positions(rows: np.ndarray) -> np.ndarray:
    """Row positions as int32 where they fit: the ranking's pieces of every split are alive
    together at the top of the fit, and their positions are a third of them."""
    return rows.astype(np.int32) if len(rows) < 2**31 else rows


def _counts(counts: kc.Counts) -> np.ndarray:
    if isinstance(counts, kc.KeyedCounts):
        return counts.counts
    return counts["count"].to_numpy().astype(np.int64)


def local_order(counts: kc.Counts) -> np.ndarray:
    """Row order by descending count, ties by ascending value."""
    if isinstance(counts, kc.KeyedCounts):
        return np.lexsort((counts.keys, -counts.counts))
    return vocab.sort_order(counts)


def local_rank(counts: kc.Counts) -> np.ndarray:
    """Rank of each row inside its own table (0 = most frequent): the ranks of a vocabulary
    held in one split."""
    rank = np.empty(counts.num_rows, dtype=np.int64)
    rank[local_order(counts)] = np.arange(counts.num_rows)
    return rank


def sample(counts: kc.Counts, points: int = SAMPLES) -> dict[str, Any]:
    """Evenly spaced rows of one split: its keys (when keyed) and its values."""
    n = counts.num_rows
    rows = np.unique(np.linspace(0, n - 1, min(n, points)).astype(np.int64)) if n else \
        np.zeros(0, np.int64)
    keyed = isinstance(counts, kc.KeyedCounts)
    if keyed:
        counts = kc.KeyedCounts(counts.keys[rows], counts.counts[rows], counts.kind, counts.type)
        values = kc.decode(counts)["value"]
    else:
        values = counts["value"].take(pa.array(rows))
    return {"kind": (counts.kind, counts.type) if keyed else None, "rows": n,
            "keys": counts.keys if keyed else None,
            "values": values.to_numpy(zero_copy_only=False)}


def bounds(samples: list[dict[str, Any]], ranges: int) -> dict[str, Any]:
    """``ranges - 1`` bounds between the ranges (by key when every non-empty split is keyed
    alike, else by value), at evenly spaced quantiles of the samples."""
    kinds = {s["kind"] for s in samples if s["rows"]}
    keyed = len(kinds) == 1 and None not in kinds
    if keyed:
        points = np.sort(np.concatenate([s["keys"] for s in samples if s["rows"]]))
    else:
        points = np.array(sorted(v for s in samples for v in s["values"]), dtype=object)
    at = (np.arange(1, ranges) * len(points)) // ranges
    return {"keyed": keyed, "ranges": ranges, "bounds": points[at] if len(points) else points}


def cut(counts: kc.Counts, plan: dict[str, Any]) -> list[dict[str, Any]]:
    """One split's rows cut into the ranges of ``plan``: per range, the rows' positions in
    the split, their counts, and their keys or values."""
    if not plan["keyed"] and isinstance(counts, kc.KeyedCounts):
        counts = kc.decode(counts)  # same row order
    if plan["keyed"]:
        sortable = counts.keys
    else:
        values = counts["value"].combine_chunks()
        sortable = values.to_numpy(zero_copy_only=False)
    ranges = plan["ranges"]
    which = np.searchsorted(plan["bounds"], sortable, side="right") if counts.num_rows else \
        np.zeros(0, np.int64)
    order, edges = kc.group_rows(which, ranges)
    order = _positions(order)
    number = _counts(counts)
    out = []
    for r in range(ranges):
        rows = order[edges[r]:edges[r + 1]]
        piece = {"pos": rows, "count": number[rows]}
        if plan["keyed"]:
            piece["key"] = counts.keys[rows]
        else:
            piece["value"] = values.take(pa.array(rows))
        out.append(piece)
    return out


def sort_range(pieces: list[dict[str, Any]]) -> dict[str, Any]:
    """One range (its piece of every split) in vocabulary order, with where each row came
    from and the histogram of its counts (distinct counts, descending, and how many)."""
    origin = np.repeat(np.arange(len(pieces), dtype=np.int16 if len(pieces) < 2**15
                                 else np.int32), [len(p["pos"]) for p in pieces])
    pos = np.concatenate([p["pos"] for p in pieces])
    number = np.concatenate([p["count"] for p in pieces])
    if all("key" in p for p in pieces):
        order = np.lexsort((np.concatenate([p["key"] for p in pieces]), -number))
    else:
        values = [p["value"] for p in pieces]
        values = pa.concat_arrays([v.cast(values[0].type) for v in values])
        order = pc.sort_indices(pa.table({"count": number, "value": values}),
                                sort_keys=vocab.SORT_KEYS).to_numpy()
    number = number[order]
    starts = np.flatnonzero(np.concatenate([[True], number[1:] != number[:-1]])) \
        if len(number) else np.zeros(0, np.int64)
    sizes = np.diff(np.append(starts, len(number)))
    return {"origin": origin[order], "pos": pos[order], "starts": starts,
            "histogram": (number[starts], sizes)}


def bases(histograms: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """For each range, the rank of the first value of each of its counts: the values with a
    larger count anywhere, plus those with the same count in the ranges before."""
    every = np.concatenate([h[0] for h in histograms]) if histograms else np.zeros(0, np.int64)
    distinct = np.unique(every)  # ascending
    totals = np.zeros(len(distinct), dtype=np.int64)
    for counts, sizes in histograms:
        totals[np.searchsorted(distinct, counts)] += sizes
    larger = np.cumsum(totals[::-1])[::-1] - totals  # values with a larger count
    before = np.zeros(len(distinct), dtype=np.int64)  # same count, earlier ranges
    out = []
    for counts, sizes in histograms:
        at = np.searchsorted(distinct, counts)
        out.append(larger[at] + before[at])
        before[at] += sizes
    return out


def finish_range(ordered: dict[str, Any], base: np.ndarray, splits: int) -> list[dict[str, Any]]:
    """The global ranks of one range's rows, handed back per split of origin."""
    n = len(ordered["pos"])
    sizes = np.diff(np.append(ordered["starts"], n))
    within = np.arange(n) - np.repeat(ordered["starts"], sizes)
    rank = np.repeat(base, sizes) + within
    order, edges = kc.group_rows(ordered["origin"], splits)
    return [{"pos": ordered["pos"][order[edges[s]:edges[s + 1]]],
             "rank": rank[order[edges[s]:edges[s + 1]]]} for s in range(splits)]


def gather_ranks(pieces: list[dict[str, Any]]) -> np.ndarray:
    """One split's ranks, from its rows' pieces in every range."""
    rank = np.empty(sum(len(p["pos"]) for p in pieces), dtype=np.int64)
    for p in pieces:
        rank[p["pos"]] = p["rank"]
    return rank
