"""Ranking metrics of top-K predictions against held-out interactions, on the cluster.

For each user with at least one test item (``rel`` = the user's distinct test items, ``hits``
= predicted items in ``rel``, ranks from 1):

* ``precision@K`` = hits in the top K / K
* ``recall@K`` = hits in the top K / |rel|
* ``ndcg@K`` = Σ_hits≤K 1/log2(rank + 1) / Σ_{i=1..min(|rel|, K)} 1/log2(i + 1)
* ``map@K`` = Σ_hits≤K precision@rank / min(|rel|, K)
* ``hit_rate@K`` = 1 if any hit in the top K else 0

each averaged over the test users (a test user without predictions scores 0), and
``coverage@K`` = distinct items in all top-K lists / catalogue size. Predictions and test
rows are concatenated and shuffled by user once; each partition computes the sums of its
users, and the client adds them up.

Examples
--------
>>> import pandas as pd
>>> preds = pd.DataFrame({"user_id": [1, 1, 2, 2], "rank": [1, 2, 1, 2],
...                       "item_id": [10, 20, 10, 30]})
>>> test = pd.DataFrame({"user_id": [1, 2], "item_id": [20, 40]})
>>> m = ranking_metrics(preds, test, ks=(1, 2))
>>> m["precision@2"], m["recall@2"], m["hit_rate@2"], m["users"]
(0.25, 0.5, 0.5, 2)
>>> round(m["ndcg@2"], 4)   # user 1: 1/log2(3) / 1
0.3155
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from interactive_recsys.errors import ParameterError
from interactive_recsys.io._dataset import as_dataset
from interactive_recsys.params import param_error
from interactive_recsys.runtime.jobs import compute

METRICS = ("precision", "recall", "ndcg", "map", "hit_rate")


def ranking_metrics(predictions: Any, test: Any, ks: Sequence[int] = (1, 5, 10, 20, 100), *,
                    user_col: str = "user_id", item_col: str = "item_id",
                    rank_col: str = "rank", catalog: Any = None) -> dict[str, float]:
    """Precision, recall, NDCG, MAP and hit rate at each K, and catalogue coverage.

    Parameters
    ----------
    predictions : Dataset or DataFrame with the user, item and rank columns (the output of
        :func:`~interactive_recsys.predict_topk`); rank 1 is the best.
    test : Dataset or DataFrame with the user and item columns (held-out interactions).
    ks : the cut-offs.
    user_col, item_col, rank_col : column names.
    catalog : catalogue size for coverage: an int, a fitted model (its items), or None (the
        distinct items of the predictions and the test set).

    Returns
    -------
    dict
        ``"precision@10"``, ``"recall@20"``, ``"ndcg@K"``, ``"map@K"``, ``"hit_rate@K"``,
        ``"coverage@K"`` for each K, and ``"users"`` (test users evaluated).
    """
    ks = _check_ks(ks)
    pred_ds, test_ds = as_dataset(predictions), as_dataset(test)
    for name, ds, cols in (("predictions", pred_ds, (user_col, item_col, rank_col)),
                           ("test", test_ds, (user_col, item_col))):
        missing = [c for c in cols if c not in ds.schema.names]
        if missing:
            raise ParameterError(f"The {name} data has no column(s) {missing}; its columns are "
                                 f"{ds.schema.names}. Pass user_col=/item_col=/rank_col=.")
    pred = pred_ds.arrow_ddf([user_col, item_col, rank_col])
    pred = pred[pred[rank_col] <= max(ks)]
    tst = test_ds.arrow_ddf([user_col, item_col])
    pred = pred.map_partitions(_plain_frame, [user_col, item_col, rank_col])
    tst = tst.map_partitions(_plain_frame, [user_col, item_col]).assign(**{rank_col: 0})
    tst = tst.astype(pred.dtypes.to_dict())
    both = dd.concat([pred, tst], ignore_unknown_divisions=True)
    if both.npartitions > 1:
        both = both.shuffle(on=user_col, npartitions=max(pred.npartitions, tst.npartitions))
    tasks = [dask.delayed(partition_metrics)(part, ks, user_col, item_col, rank_col)
             for part in both.to_delayed()]
    parts = compute(*tasks, phase="ranking metrics")
    return combine(parts, ks, _catalog_size(catalog, parts))


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(ks) if not isinstance(ks, numbers.Integral) else (ks,)
    if not ks or any(not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1
                     for k in ks):
        raise param_error("ks", "ranking_metrics", f"must be integers >= 1. "
                          f"Got {ks!r} instead.")
    return tuple(sorted(set(int(k) for k in ks)))


def _plain_frame(df: Any, columns: list[str]) -> pd.DataFrame:
    """NumPy-backed pandas columns (the same hashing and dtypes on both sides)."""
    frame = df.to_pandas() if hasattr(df, "to_pandas") and not isinstance(df, pd.DataFrame) \
        else df
    out = pd.DataFrame({c: frame[c].to_numpy() for c in columns})
    return out.astype({c: str for c in columns if out[c].dtype == object})


def partition_metrics(df: pd.DataFrame, ks: tuple[int, ...], user_col: str, item_col: str,
                      rank_col: str) -> dict[str, Any]:
    """Metric sums over the users of one partition (all rows of a user are here)."""
    is_test = df[rank_col].to_numpy() == 0
    rel = df.loc[is_test, [user_col, item_col]].drop_duplicates()
    preds = df.loc[~is_test, [user_col, item_col, rank_col]]
    n_rel = rel.groupby(user_col).size()
    hits = preds.merge(rel, on=[user_col, item_col]).sort_values([user_col, rank_col])
    hit_n_rel = n_rel.reindex(hits[user_col]).to_numpy().astype(np.float64)
    ranks = hits[rank_col].to_numpy().astype(np.float64)
    users = hits[user_col].to_numpy()
    out: dict[str, Any] = {"users": len(n_rel), "items": np.unique(df[item_col].to_numpy())}
    for k in ks:
        top = ranks <= k
        r, u, nr = ranks[top], users[top], hit_n_rel[top]
        first = np.r_[True, u[1:] != u[:-1]] if len(u) else np.zeros(0, bool)
        group = np.cumsum(first) - 1
        nth = np.arange(len(u)) - np.flatnonzero(first)[group] + 1 if len(u) else r
        idcg_table = np.cumsum(1.0 / np.log2(np.arange(2, k + 2)))
        idcg_hit = idcg_table[np.minimum(nr, k).astype(np.int64) - 1]
        out[f"precision@{k}"] = len(r) / k
        out[f"recall@{k}"] = float(np.sum(1.0 / nr))
        out[f"ndcg@{k}"] = float(np.sum(1.0 / np.log2(r + 1) / idcg_hit))
        out[f"map@{k}"] = float(np.sum(nth / r / np.minimum(nr, k)))
        out[f"hit_rate@{k}"] = int(first.sum())
        pred_top = preds[rank_col].to_numpy() <= k
        out[f"top_items@{k}"] = np.unique(preds[item_col].to_numpy()[pred_top])
    return out


def _catalog_size(catalog: Any, parts: Sequence[dict[str, Any]]) -> int:
    if catalog is None:
        return len(np.unique(np.concatenate([p["items"] for p in parts]))) if parts else 0
    if hasattr(catalog, "items_"):
        if catalog.items_ is None:
            raise ParameterError("The 'catalog' model of ranking_metrics is not fitted.")
        return len(catalog.items_)
    if isinstance(catalog, numbers.Integral) and catalog > 0:
        return int(catalog)
    raise param_error("catalog", "ranking_metrics", f"must be a positive int, "
                      f"a fitted model or None. Got {catalog!r} instead.")


def combine(parts: Sequence[dict[str, Any]], ks: tuple[int, ...],
            catalog: int) -> dict[str, float]:
    """Per-partition sums to averages over the test users."""
    users = sum(p["users"] for p in parts)
    out: dict[str, Any] = {}
    for k in ks:
        for name in METRICS:
            total = sum(p[f"{name}@{k}"] for p in parts)
            out[f"{name}@{k}"] = float(total / users) if users else 0.0
        top = [p[f"top_items@{k}"] for p in parts]
        covered = len(np.unique(np.concatenate(top))) if top else 0
        out[f"coverage@{k}"] = covered / catalog if catalog else 0.0
    out["users"] = users
    return out
