"""A MovieLens-style example: synthetic ratings and the graph that turns them into histories.

* :func:`synthetic_movielens` generates ratings in the layout of
  :func:`~interactive_recsys.datasets.read_movielens` (skewed item popularity, genres, users
  whose ratings are spread over time), fast and deterministic.
* :func:`movielens_workflow` builds the example graph: user/item ids Categorify, genres
  multi-hot Categorify, item popularity (JoinGroupby), the target encoding of the item on
  ``rating >= 4`` (TargetEncoding), then each user's history (Groupby, sorted by time)
  with the last ``history`` items kept (ListSlice).

Examples
--------
>>> ratings = synthetic_movielens(n_users=30, n_items=40, n_ratings=600, seed=1)
>>> ratings.columns.tolist()
['user_id', 'item_id', 'rating', 'timestamp', 'title', 'genres']
>>> wf = movielens_workflow(history=5)
>>> users = wf.fit_transform(ratings)
>>> len(users) == ratings["user_id"].nunique()
True
>>> max(len(items) for items in users["item_id_list"])  # NumPy arrays per row
5
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from interactive_recsys.datasets._movielens import MOVIELENS_100K_GENRES

if TYPE_CHECKING:
    from interactive_recsys.workflow._workflow import Workflow

#: Columns of the example graph's output (one row per user).
MOVIELENS_OUTPUT = [
    "user_id", "item_id_list", "genres_list", "item_popularity_list", "TE_item_id_liked_list",
    "rating_list", "timestamp_list", "rating_count", "rating_mean", "timestamp_last",
]  # fmt: skip


def synthetic_movielens(n_users: int = 1000, n_items: int = 2000, n_ratings: int = 100_000,
                        seed: int = 0) -> pd.DataFrame:
    """Ratings shaped like :func:`~interactive_recsys.datasets.read_movielens` output.

    Parameters
    ----------
    n_users, n_items, n_ratings : sizes; user and item ids are ``1..n`` (a few may not occur).
    seed : the random seed: equal arguments give equal frames.

    Returns
    -------
    pandas.DataFrame
        ``user_id``, ``item_id`` (int64; Zipf-like item popularity, users of varied activity),
        ``rating`` (float32 in 0.5 steps, item- and user-biased), ``timestamp`` (int64 seconds,
        not sorted: rows are in random order, as ratings files are not ordered by user),
        ``title`` (string) and ``genres`` (list of 1-3 genre names).
    """
    rng = np.random.default_rng(seed)
    item_weight = 1.0 / np.arange(1, n_items + 1) ** 0.9
    items = rng.choice(n_items, n_ratings, p=item_weight / item_weight.sum()) + 1
    user_weight = rng.lognormal(0.0, 1.0, n_users)
    users = rng.choice(n_users, n_ratings, p=user_weight / user_weight.sum()) + 1
    quality = rng.normal(3.5, 0.6, n_items + 1)
    mood = rng.normal(0.0, 0.4, n_users + 1)
    raw = quality[items] + mood[users] + rng.normal(0.0, 0.8, n_ratings)
    rating = np.clip(np.round(raw * 2) / 2, 0.5, 5.0).astype(np.float32)
    start = rng.integers(946_684_800, 1_500_000_000, n_users + 1)  # each user's first day
    timestamp = start[users] + rng.integers(0, 3 * 365 * 86_400, n_ratings)
    genres_names = np.asarray(MOVIELENS_100K_GENRES[1:], dtype=object)
    counts = rng.integers(1, 4, n_items + 1)
    picks = rng.integers(0, len(genres_names), (n_items + 1, 3))
    offsets = np.concatenate([[0], np.cumsum(counts[items])]).astype(np.int32)
    flat = picks[np.repeat(items, counts[items]), _ranks(counts[items])]
    genres = pa.ListArray.from_arrays(pa.array(offsets),
                                      pa.array(genres_names[flat], type=pa.string()))
    titles = pa.array(np.char.add("Movie ", items.astype(str)).astype(object), type=pa.string())
    return pd.DataFrame({
        "user_id": users.astype(np.int64), "item_id": items.astype(np.int64), "rating": rating,
        "timestamp": timestamp.astype(np.int64), "title": pd.arrays.ArrowStringArray(titles),
        "genres": pd.arrays.ArrowExtensionArray(genres),
    })


def _ranks(counts: np.ndarray) -> np.ndarray:
    """``0..count-1`` for every count, concatenated."""
    ends = np.cumsum(counts)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - counts, counts)


def movielens_workflow(history: int = 20, like_threshold: float = 4.0,
                       p_smooth: float = 20.0) -> Workflow:
    """The example graph: rating-level features, then one row per user with histories.

    Parameters
    ----------
    history : how many of the latest items each user's history lists keep (``ListSlice``).
    like_threshold : a rating of at least this is a like: the target of the encoding.
    p_smooth : the target encoding's smoothing weight.

    Returns
    -------
    Workflow
        Reads ``user_id``, ``item_id``, ``rating``, ``timestamp``, ``genres``; outputs
        :data:`MOVIELENS_OUTPUT`: per user the encoded item ids, their genres (a list per
        item), popularity (ratings of the item), target encoding and ratings, and the times,
        in time order, last ``history`` only; the user's rating count, mean rating and last
        time.
    """
    from interactive_recsys import (  # lazy: Dask, not for Criteo
        ops,
    )
    from interactive_recsys.workflow._workflow import Workflow  # lazy: as above

    ids = ["user_id", "item_id"] >> ops.Categorify()
    genres = ["genres"] >> ops.Categorify()
    popularity = ["item_id", "rating"] >> ops.JoinGroupby(cont_cols=["rating"], stats=["count"]
                                                          ) >> ops.Rename(
        mapping={"item_id_count": "item_popularity"})
    liked = ["rating"] >> ops.LambdaOp(f"x >= {like_threshold}", dtype="int8") >> ops.Rename(
        mapping={"rating": "liked"})
    encoded = (liked + "item_id" + "timestamp") >> ops.TargetEncoding(
        "liked", p_smooth=p_smooth, fold_cols=["timestamp"])
    rows = ids + genres + popularity + encoded + ["rating", "timestamp"]
    users = rows >> ops.Groupby(["user_id"], sort_cols=["timestamp"], aggs={
        "item_id": ["list"], "genres": ["list"], "item_popularity": ["list"],
        "TE_item_id_liked": ["list"], "rating": ["list", "count", "mean"],
        "timestamp": ["list", "last"]})
    lists = [c for c in MOVIELENS_OUTPUT if c.endswith("_list")]
    latest = users >> ops.SelectColumns(lists) >> ops.ListSlice(-history)
    summary = users >> ops.SelectColumns(["rating_count", "rating_mean", "timestamp_last"])
    return Workflow((users >> ops.SelectColumns(["user_id"])) + latest + summary)
