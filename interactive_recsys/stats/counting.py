"""Lookup statistics of categorical columns of a Dataset, computed by a Dask tree reduction.

One task per partition counts values (backend ``value_counts``), nulls, lookups and, for
list columns, a histogram of list lengths; value counts are split by the value-defined hash
into ``splits`` tables (as Categorify does), each split is summed in a tree ``FAN_IN`` at a
time and then reduced to a :class:`~.frequency.CountHistogram`, which drops the values. No
task holds more than one split of one column's distinct values, and the result is small.

>>> import pandas as pd, interactive_recsys as irs
>>> ds = irs.Dataset(pd.DataFrame({"c": ["a", "b", "a", None]}))
>>> out = column_counts(ds, ["c"])["c"]
>>> out["histogram"].counts.tolist(), out["nulls"], out["lookups"]
([2, 1], 1, 4)
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..backend import get_backend
from ..dataset import Dataset
from ..ops import vocabulary as vocab
from .frequency import CountHistogram
from .list_lengths import add_histograms

FAN_IN = 8
#: Rows per hash split when ``splits`` is not given (as Categorify's vocabulary build).
ROWS_PER_SPLIT = 8_000_000


def default_splits(ds: Dataset) -> int:
    rows = ds.known_num_rows if ds.known_num_rows is not None else ds.npartitions * 500_000
    return max(1, min(64, math.ceil(rows / ROWS_PER_SPLIT)))


def count_partition(df: Any, columns: Sequence[str], splits: int,
                    backend_name: str) -> dict[str, dict[str, Any]]:
    """Counts of one partition: per column the split value counts (none when ``splits`` is
    0), nulls, lookups, and list lengths."""
    b = get_backend(backend_name)
    out = {}
    for name in columns:
        col = b.column(df, name)
        lengths = None
        if b.dtype(col).startswith("list<"):
            arrow = b.to_arrow_array(col)
            sizes = pc.fill_null(pc.list_value_length(arrow), 0)
            lengths = np.bincount(sizes.to_numpy(zero_copy_only=False).astype(np.int64))
            col = b.list_values(col)
        counts = vocab.value_dtype_table(b.value_counts(col)) if splits else None
        out[name] = {"splits": vocab.split_counts(counts, splits) if splits else [],
                     "nulls": int(b.null_mask(col).sum()), "lookups": b.length(col),
                     "lengths": lengths}
    return out


def _sum_split(items: list[Any], name: str, split: int) -> pa.Table:
    return vocab.sum_counts([i[name]["splits"][split] if isinstance(i, dict) else i
                             for i in items])


def _histogram(counts: pa.Table) -> CountHistogram:
    return CountHistogram.from_counts(counts["count"].to_numpy(zero_copy_only=False))


def _combine_histograms(items: list[CountHistogram]) -> CountHistogram:
    return CountHistogram.combine(items)


def _column_totals(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return _add_totals([i[name] for i in items])


def _add_totals(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nulls": sum(p["nulls"] for p in parts), "lookups": sum(p["lookups"] for p in parts),
            "lengths": add_histograms(p["lengths"] for p in parts)}


def _tree(items: list[Any], first: Any, then: Any, *args: Any) -> Any:
    """Combine ``items`` ``FAN_IN`` at a time: ``first(chunk, *args)`` on the first level,
    ``then(chunk)`` above it, until one delayed result is left."""
    token = uuid.uuid4().hex[:8]
    name = first.__name__.strip("_")
    level = [dask.delayed(first, pure=False)(
        items[i:i + FAN_IN], *args, dask_key_name=f"embedding-stats-{name}-0-{i}-{token}")
        for i in range(0, len(items), FAN_IN)]
    depth = 1
    while len(level) > 1:
        level = [dask.delayed(then, pure=False)(
            level[i:i + FAN_IN], dask_key_name=f"embedding-stats-{name}-{depth}-{i}-{token}")
            for i in range(0, len(level), FAN_IN)]
        depth += 1
    return level[0]


def column_counts(ds: Dataset, columns: Sequence[str], splits: int | None = None, *,
                  values: bool = True) -> dict[str, dict[str, Any]]:
    """Per column: ``histogram`` (:class:`CountHistogram` of the non-null values; ``None``
    with ``values=False``, which skips counting values), ``nulls``, ``lookups`` (values
    looked up: rows, or list elements) and ``lengths`` (list length histogram, or ``None``).
    Runs on the current Dask scheduler or client."""
    columns = list(columns)
    splits = (splits or default_splits(ds)) if values else 0
    token = uuid.uuid4().hex[:8]
    parts = ds.to_ddf(columns).to_delayed()
    partials = [dask.delayed(count_partition, pure=False)(
        part, columns, splits, ds.backend.name,
        dask_key_name=f"embedding-stats-count-{i}-{token}") for i, part in enumerate(parts)]
    graphs = {}
    for name in columns:
        hists = [dask.delayed(_histogram, pure=False)(
            _tree(partials, _sum_split, vocab.sum_counts, name, s),
            dask_key_name=f"embedding-stats-histogram-{name}-{s}-{token}")
            for s in range(splits)]
        graphs[name] = (_tree(hists, _combine_histograms, _combine_histograms) if hists
                        else None, _tree(partials, _column_totals, _add_totals, name))
    (computed,) = dask.compute(graphs)
    return {name: {"histogram": hist, **totals} for name, (hist, totals) in computed.items()}
