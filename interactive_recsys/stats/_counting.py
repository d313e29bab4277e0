"""Lookup statistics of categorical columns of a Dataset, computed by a Dask tree reduction.

One task per partition counts values (backend ``value_counts``), nulls, lookups and, for
list columns, a histogram of list lengths; value counts are split by the value-defined hash
into ``splits`` tables (as Categorify does), each split is summed in a tree
(:func:`~..tables.reduce.tree`) and then reduced to a :class:`~.frequency.CountHistogram`,
which drops the values. No task holds more than one split of one column's distinct values,
and the result is small.

>>> import pandas as pd, interactive_recsys as irs
>>> ds = irs.Dataset(pd.DataFrame({"c": ["a", "b", "a", None]}))
>>> out = column_counts(ds, ["c"])["c"]
>>> out["histogram"].counts.tolist(), out["nulls"], out["lookups"]
([2, 1], 1, 4)
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import get_backend
from interactive_recsys.io._dataset import Dataset
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.stats._frequency import CountHistogram
from interactive_recsys.stats._list_lengths import add_histograms
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._reduce import delayed_task, delayed_tasks, num_splits, tree

#: Task key prefix of the counting graph (the task stream shows it).
PREFIX = "embedding-stats"


def default_splits(ds: Dataset) -> int:
    """Hash splits of the value counts, as Categorify's vocabulary build would choose."""
    return num_splits(ds.known_num_rows, ds.npartitions, None)


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


def _sum_split(items: list[dict[str, Any]], name: str, split: int) -> pa.Table:
    return vocab.sum_counts([i[name]["splits"][split] for i in items])


def _histogram(counts: pa.Table) -> CountHistogram:
    return CountHistogram.from_counts(counts["count"].to_numpy(zero_copy_only=False))


def _combine_histograms(items: list[CountHistogram]) -> CountHistogram:
    return CountHistogram.combine(items)


def _column_totals(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return _add_totals([i[name] for i in items])


def _add_totals(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nulls": sum(p["nulls"] for p in parts), "lookups": sum(p["lookups"] for p in parts),
            "lengths": add_histograms(p["lengths"] for p in parts)}


def column_counts(ds: Dataset, columns: Sequence[str], splits: int | None = None, *,
                  values: bool = True) -> dict[str, dict[str, Any]]:
    """Per column: ``histogram`` (:class:`CountHistogram` of the non-null values; ``None``
    with ``values=False``, which skips counting values), ``nulls``, ``lookups`` (values
    looked up: rows, or list elements) and ``lengths`` (list length histogram, or ``None``).
    Runs on the current Dask scheduler or client, as one phase of :func:`~..jobs.compute`."""
    columns = list(columns)
    splits = (splits or default_splits(ds)) if values else 0
    token = uuid.uuid4().hex[:8]
    parts = ds.arrow_ddf(columns).to_delayed()
    partials = [dask.delayed(count_partition, pure=False)(
        part, columns, splits, ds.backend.name,
        dask_key_name=f"{PREFIX}-count-{i}-{token}") for i, part in enumerate(parts)]
    graphs = {}
    for name in columns:
        hists = [delayed_task(PREFIX, "histogram", _histogram, tree(
            partials, vocab.sum_counts, delayed_tasks(PREFIX, "sum_split"),
            first=functools.partial(_sum_split, name=name, split=s))) for s in range(splits)]
        combined = tree(hists, _combine_histograms, delayed_tasks(PREFIX, "histograms"),
                        first=_combine_histograms) if hists else None
        graphs[name] = (combined, tree(partials, _add_totals, delayed_tasks(PREFIX, "totals"),
                                       first=functools.partial(_column_totals, name=name)))
    (computed,) = compute(dask.delayed(graphs), phase="count values")
    return {name: {"histogram": hist, **totals} for name, (hist, totals) in computed.items()}
