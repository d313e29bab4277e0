"""irs.eval: per-user splits (properties) and ranking metrics (against a naive reference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ParameterError
from tests.conftest import partitioned
from tests.interactions_data import make_interactions, naive_metrics


def _frame(ds: irs.Dataset) -> pd.DataFrame:
    df = ds.compute()
    return pd.DataFrame({c: df[c].to_numpy() for c in df.columns})


def _pairs(df: pd.DataFrame) -> set:
    return set(zip(df["user_id"], df["item_id"], df["timestamp"], strict=True))


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    df = make_interactions(n_users=120, n_items=60, per_user=12, seed=3)
    few = pd.DataFrame({"user_id": [1, 1, 1, 2], "item_id": [3, 10, 17, 3],
                        "timestamp": [5, 6, 7, 8]})  # users with 3 and 1 interactions
    return pd.concat([df, few], ignore_index=True)


def test_split_properties(data: pd.DataFrame) -> None:
    train, test = irs.eval.split(data, test_fraction=0.25, seed=7, min_interactions=5)
    tr, te = _frame(train), _frame(test)
    assert len(tr) + len(te) == len(data)
    assert _pairs(tr) | _pairs(te) == _pairs(data) and not _pairs(tr) & _pairs(te)
    n = data.groupby("user_id").size()
    n_test = te.groupby("user_id").size().reindex(n.index, fill_value=0)
    expected = np.where(n >= 5, np.minimum(np.maximum(1, np.rint(0.25 * n)), n - 1), 0)
    assert n_test.tolist() == expected.astype(int).tolist()
    assert {1, 2} <= set(tr["user_id"]) and not {1, 2} & set(te["user_id"])  # too few: train


def test_split_is_deterministic_and_independent_of_partitioning(data: pd.DataFrame) -> None:
    _, one = irs.eval.split(data, seed=1)
    _, again = irs.eval.split(partitioned(data.sample(frac=1, random_state=0), 4), seed=1)
    _, other = irs.eval.split(data, seed=2)
    assert _pairs(_frame(one)) == _pairs(_frame(again))
    assert _pairs(_frame(one)) != _pairs(_frame(other))


def test_split_holds_out_a_random_sample_per_user(data: pd.DataFrame) -> None:
    """Every item is held out for some users and kept for others (not one fixed item set)."""
    _, test = irs.eval.split(data, test_fraction=0.3, seed=0)
    te = _frame(test)
    held = te.groupby("item_id").size()
    seen = data.groupby("item_id").size()
    common = seen[seen >= 20].index
    assert (held.reindex(common, fill_value=0) > 0).all()
    assert (held.reindex(common, fill_value=0) < seen[common]).all()


def test_leave_last_k_by_time(data: pd.DataFrame, client: object) -> None:
    train, test = irs.eval.split(partitioned(data, 3), time_col="timestamp", k=2)
    tr, te = _frame(train), _frame(test)
    for user, rows in data.groupby("user_id"):
        latest = set(rows.sort_values("timestamp").tail(2)["timestamp"]) if len(rows) >= 5 \
            else set()
        assert set(te.loc[te["user_id"] == user, "timestamp"]) == latest
    assert len(tr) + len(te) == len(data)


def test_split_writes_parquet(data: pd.DataFrame, tmp_path: object) -> None:
    lazy_train, lazy_test = irs.eval.split(data, seed=4)
    train, test = irs.eval.split(data, seed=4, output=tmp_path / "split")
    assert train.files and (tmp_path / "split" / "test" / "_SUCCESS").exists()
    assert _pairs(_frame(test)) == _pairs(_frame(lazy_test))
    assert _pairs(_frame(train)) == _pairs(_frame(lazy_train))


def test_split_rejects_bad_parameters(data: pd.DataFrame) -> None:
    with pytest.raises(ParameterError, match="'test_fraction'.*Got 1.5"):
        irs.eval.split(data, test_fraction=1.5)
    with pytest.raises(ParameterError, match="'user_col'.*'uid'"):
        irs.eval.split(data, user_col="uid")


def _random_predictions(rng: np.random.Generator, users: np.ndarray, items: np.ndarray,
                        k: int) -> pd.DataFrame:
    rows = []
    for user in users:
        n = int(rng.integers(0, k + 1))  # some users have fewer predictions, some none
        picks = rng.choice(items, size=n, replace=False)
        rows.append(pd.DataFrame({"user_id": user, "rank": np.arange(1, n + 1),
                                  "item_id": picks}))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("seed", [0, 1])
def test_ranking_metrics_equal_a_naive_reference(client: object, seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = np.arange(100, 140)
    users = np.arange(60)
    preds = _random_predictions(rng, users[:50], items, 12)  # users 50..59: no predictions
    test = pd.DataFrame({"user_id": rng.choice(users, 300), "item_id": rng.choice(items, 300)})
    ks = (1, 3, 5, 10, 12)
    got = irs.eval.ranking_metrics(partitioned(preds, 3), partitioned(test, 2), ks=ks,
                                   catalog=len(items))
    want = naive_metrics(preds, test.drop_duplicates(), ks, len(items))
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def test_ranking_metrics_perfect_and_empty_predictions() -> None:
    test = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [5, 6, 7]})
    perfect = pd.DataFrame({"user_id": [1, 1, 2], "rank": [1, 2, 1], "item_id": [5, 6, 7]})
    m = irs.eval.ranking_metrics(perfect, test, ks=(2,))
    assert m["recall@2"] == m["ndcg@2"] == m["map@2"] == m["hit_rate@2"] == 1.0
    assert m["precision@2"] == pytest.approx((2 / 2 + 1 / 2) / 2)
    none = perfect.iloc[:0]
    m = irs.eval.ranking_metrics(none, test, ks=(2,))
    assert m["precision@2"] == m["recall@2"] == 0.0 and m["users"] == 2


def test_ranking_metrics_reject_bad_ks() -> None:
    df = pd.DataFrame({"user_id": [1], "rank": [1], "item_id": [2]})
    with pytest.raises(ParameterError, match="'ks'.*Got"):
        irs.eval.ranking_metrics(df, df, ks=(0,))
