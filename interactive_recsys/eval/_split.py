"""Train/test splits of interactions, per user: a random holdout or the latest interactions.

Rows are first shuffled by user (so each user's rows meet in one partition, whatever the
input order), then each user's rows are ordered by a seeded hash of the item (random
holdout) or by time, latest first (``time_col``), and the first ``n_test`` go to the test
set. The hash is of the values (the same on CPU and GPU, for any partitioning), so a split
is deterministic: the same data and seed give the same split.

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"user_id": [1] * 10 + [2] * 3, "item_id": list(range(10)) + [1, 2, 3]})
>>> train, test = split(df, test_fraction=0.2)
>>> test.compute().groupby("user_id").size().to_dict()   # user 2 has fewer than 5 rows
{1: 2}
>>> train.num_rows + test.num_rows
13
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from interactive_recsys.backend import get_backend
from interactive_recsys.errors import ParameterError
from interactive_recsys.io._dataset import Dataset, as_dataset
from interactive_recsys.params import Param, param_error, validate_params
from interactive_recsys.schema import RESERVED_PREFIX

_TEST = RESERVED_PREFIX + "is_test__"
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@validate_params({
    "test_fraction": Param(kind="number", low=0, high=1, closed="neither"),
    "seed": Param(kind="int", low=0),
    "min_interactions": Param(kind="int", low=2),
    "k": Param(kind="int", low=1, nullable=True),
}, owner="split")
def split(dataset: Any, user_col: str = "user_id", item_col: str = "item_id", *,
          test_fraction: float = 0.2, seed: int = 0, time_col: str | None = None,
          k: int | None = None, min_interactions: int = 5, output: str | os.PathLike | None = None,
          overwrite: bool = False) -> tuple[Dataset, Dataset]:
    """Split interactions into ``(train, test)`` Datasets, per user.

    Parameters
    ----------
    dataset : Dataset or DataFrame with one row per interaction.
    user_col, item_col : the user and item id columns.
    test_fraction : share of each user's interactions held out: ``round(test_fraction * n)``,
        at least 1, and at least one interaction stays in train.
    seed : seed of the random holdout (ignored with ``time_col``).
    time_col : hold out each user's latest interactions by this column (leave-last-k)
        instead of random ones.
    k : hold out exactly ``k`` interactions per user (instead of a fraction); with
        ``time_col``, the last ``k``.
    min_interactions : users with fewer interactions stay wholly in train.
    output : a folder: write ``train/`` and ``test/`` there as parquet (atomically, through
        ``Dataset.to_parquet``) and return Datasets reading them; else both are lazy.
    overwrite : replace existing ``train/`` and ``test/`` folders in ``output``.

    Returns
    -------
    (train, test) : two Datasets with the input's columns.
    """
    ds = as_dataset(dataset)
    for role, col in (("user_col", user_col), ("item_col", item_col), ("time_col", time_col)):
        if col is not None and col not in ds.schema.names:
            raise param_error(role, "split", f"names column {col!r}, which "
                              f"is not in the data; its columns are {ds.schema.names}.")
    ddf = ds.arrow_ddf()
    if ddf.npartitions > 1:
        ddf = ddf.shuffle(on=user_col)
    meta = ds.backend.with_columns(ddf._meta, {_TEST: ds.backend.from_numpy(np.zeros(0, bool))})
    marked = ddf.map_partitions(_mark, ds.backend.name, user_col, item_col, time_col,
                                test_fraction, k, seed, min_interactions, meta=meta,
                                enforce_metadata=False)
    parts = []
    for is_test in (False, True):
        kept = marked.map_partitions(_keep, ds.backend.name, is_test, meta=ddf._meta,
                                     enforce_metadata=False)
        parts.append(Dataset.from_ddf(kept, ds.schema, ds.backend))
    if output is None:
        return parts[0], parts[1]
    out = []
    for name, part in zip(("train", "test"), parts, strict=True):
        path = os.path.join(os.fspath(output), name)
        part.to_parquet(path, overwrite=overwrite)
        out.append(Dataset(path))
    return out[0], out[1]


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer (uint64, wrapping)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (x ^ (x >> np.uint64(31))) & _MASK64


def holdout_mask(users: np.ndarray, order_key: np.ndarray, fraction: float, k: int | None,
              min_interactions: int) -> np.ndarray:
    """Rows held out: per user (``users``: any integer labels), the first ``n_test`` rows in
    ascending ``order_key`` (ties by position).

    >>> holdout_mask(np.array([1, 1, 1, 1, 1, 2]), np.array([5, 4, 3, 2, 1, 0]), 0.4, None, 2)
    array([False, False, False,  True,  True, False])
    """
    _, inverse, counts = np.unique(users, return_inverse=True, return_counts=True)
    order = np.lexsort((order_key, inverse))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(users), np.int64)
    rank[order] = np.arange(len(users)) - starts[inverse[order]]
    n = counts[inverse]
    n_test = np.full(len(users), k) if k is not None else np.maximum(
        1, np.rint(fraction * n).astype(np.int64))
    n_test = np.minimum(n_test, n - 1)
    return (rank < n_test) & (n >= min_interactions)


def _mark(df: Any, backend_name: str, user_col: str, item_col: str, time_col: str | None,
          fraction: float, k: int | None, seed: int, min_interactions: int) -> Any:
    backend = get_backend(backend_name)
    users = backend.hash64(backend.column(df, user_col))
    if time_col is None:
        items = backend.hash64(backend.column(df, item_col)).astype(np.uint64)
        salt = _mix(users.astype(np.uint64) ^ _mix(np.full(len(items), seed + 1, np.uint64)))
        key = _mix(items ^ salt)  # an order of the items of its own for every user
    else:
        times = backend.to_arrow_array(backend.column(df, time_col))
        if times.null_count:
            raise ParameterError(f"Column {time_col!r} (time_col of split) has "
                                 f"{times.null_count} missing values; fill or drop them first.")
        values = np.asarray(times.to_numpy(zero_copy_only=False))
        if values.dtype.kind == "M":
            values = values.astype("datetime64[ns]").view(np.int64)
        key = -values.astype(np.float64)  # latest first
    mask = holdout_mask(users, key, fraction, k, min_interactions)
    return backend.with_columns(df, {_TEST: backend.from_numpy(mask)})


def _keep(df: Any, backend_name: str, is_test: bool) -> Any:
    backend = get_backend(backend_name)
    mask = backend.column(df, _TEST)
    rows = backend.filter_rows(df, mask if is_test else backend.invert(mask))
    return rows.drop(columns=[_TEST])
