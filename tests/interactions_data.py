"""Generated implicit-feedback data with structure, and a naive metrics reference.

Users belong to taste groups; each group prefers its own block of items, on top of a global
popularity (Zipf-like). A model that uses a user's items (EASE, the autoencoder) can find the
group and beat Popularity, which cannot.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def make_interactions(n_users: int = 300, n_items: int = 120, per_user: int = 30,
                      groups: int = 6, seed: int = 0) -> pd.DataFrame:
    """``user_id, item_id, timestamp`` rows (distinct pairs), ids not starting at 0."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, n_items + 1) ** 0.8
    block = n_items // groups
    rows = []
    for user in range(n_users):
        group = user % groups
        weight = popularity.copy()
        weight[group * block:(group + 1) * block] *= 12.0
        n = int(rng.integers(per_user // 2, per_user * 3 // 2))
        items = rng.choice(n_items, size=min(n, n_items), replace=False, p=weight / weight.sum())
        rows.append(pd.DataFrame({"user_id": 1000 + user, "item_id": 7 * items + 3,
                                  "timestamp": rng.integers(0, 10**6, len(items))}))
    return pd.concat(rows, ignore_index=True)


def naive_metrics(predictions: pd.DataFrame, test: pd.DataFrame, ks: tuple[int, ...],
                  catalog: int) -> dict[str, float]:
    """Per-user loops over Python lists and sets, straight from the textbook definitions."""
    ranked: dict[object, list[object]] = {}
    for user, group in predictions.sort_values(["user_id", "rank"]).groupby("user_id"):
        ranked[user] = list(group["item_id"])
    relevant = {u: set(g["item_id"]) for u, g in test.groupby("user_id")}
    out: dict[str, float] = {}
    for k in ks:
        sums = dict.fromkeys(("precision", "recall", "ndcg", "map", "hit_rate"), 0.0)
        covered: set = set()
        for items in ranked.values():
            covered.update(items[:k])
        for user, rel in relevant.items():
            top = ranked.get(user, [])[:k]
            hits = [i for i in top if i in rel]
            sums["precision"] += len(hits) / k
            sums["recall"] += len(hits) / len(rel)
            dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(top) if i in rel)
            idcg = sum(1 / math.log2(r + 2) for r in range(min(len(rel), k)))
            sums["ndcg"] += dcg / idcg
            ap, found = 0.0, 0
            for r, i in enumerate(top):
                if i in rel:
                    found += 1
                    ap += found / (r + 1)
            sums["map"] += ap / min(len(rel), k)
            sums["hit_rate"] += 1.0 if hits else 0.0
        for name, total in sums.items():
            out[f"{name}@{k}"] = total / len(relevant)
        out[f"coverage@{k}"] = len(covered) / catalog
    out["users"] = len(relevant)
    return out
