"""The MovieLens example graph against a plain-pandas computation of the same histories."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys.datasets import (
    MOVIELENS_OUTPUT,
    movielens_workflow,
    read_movielens,
    synthetic_movielens,
)
from tests.conftest import assert_frames_equal, partitioned

HISTORY = 6


@pytest.fixture(scope="module")
def ratings() -> pd.DataFrame:
    df = synthetic_movielens(n_users=60, n_items=150, n_ratings=3000, seed=4)
    assert df.groupby("user_id")["timestamp"].max().is_unique  # users told apart by last time
    return df


@pytest.fixture(scope="module")
def users(ratings: pd.DataFrame) -> pd.DataFrame:
    wf = movielens_workflow(history=HISTORY)
    return wf.fit_transform(partitioned(ratings, 5)).compute()


def test_synthetic_movielens_is_deterministic_and_shaped_like_the_reader(
        ratings: pd.DataFrame) -> None:
    again = synthetic_movielens(n_users=60, n_items=150, n_ratings=3000, seed=4)
    assert_frames_equal(again, ratings)
    assert not synthetic_movielens(60, 150, 3000, seed=5)["item_id"].equals(ratings["item_id"])
    assert ratings["user_id"].between(1, 60).all() and ratings["item_id"].between(1, 150).all()
    assert set(np.unique(ratings["rating"] * 2)) <= set(range(1, 11))
    counts = ratings["item_id"].value_counts()
    assert counts.iloc[0] > 5 * counts.median()  # popular items are much more popular
    genres = pa.array(ratings["genres"]).to_pylist()
    assert all(1 <= len(g) <= 3 for g in genres)


def test_histories_equal_pandas(ratings: pd.DataFrame, users: pd.DataFrame) -> None:
    assert list(users.columns) == MOVIELENS_OUTPUT
    assert len(users) == ratings["user_id"].nunique()
    popularity = ratings["item_id"].value_counts()
    ordered = ratings.sort_values(["user_id", "timestamp"], kind="stable")
    by_last = {int(r["timestamp_last"]): r for r in pa.Table.from_pandas(
        users, preserve_index=False).to_pylist()}
    for _, rows in ordered.groupby("user_id"):
        got = by_last[int(rows["timestamp"].max())]
        tail = rows.tail(HISTORY)
        assert got["timestamp_list"] == tail["timestamp"].tolist()
        assert got["rating_list"] == tail["rating"].tolist()
        assert got["item_popularity_list"] == popularity[tail["item_id"]].tolist()
        assert [len(g) for g in got["genres_list"]] == [len(g) for g in tail["genres"]]
        assert got["rating_count"] == len(rows)
        assert got["rating_mean"] == pytest.approx(rows["rating"].astype(float).mean())
        te = np.array(got["TE_item_id_liked_list"])
        assert ((te > 0) & (te < 1)).all()
        # the same item gets the same id wherever it occurs
        ids = dict(zip(tail["item_id"], got["item_id_list"], strict=True))
        assert len(set(ids.values())) == len(ids)


def test_one_partition_equals_many(ratings: pd.DataFrame, users: pd.DataFrame,
                                   client: object) -> None:
    wf = movielens_workflow(history=HISTORY)
    wf.fit(partitioned(ratings, 1))
    one = wf.transform(ratings, training=True)
    key = ["timestamp_last"]
    backend = irs.get_backend("cpu")
    assert_frames_equal(backend.sort_rows_by(one, key), backend.sort_rows_by(users, key))


def test_schema_records_vocabularies_and_lengths(ratings: pd.DataFrame) -> None:
    wf = movielens_workflow(history=HISTORY).fit(ratings)
    schema = wf.output_schema
    assert schema["item_id_list"].dtype == "list<int64>"
    assert schema["genres_list"].dtype == "list<list<int64>>"
    # 0 padding, 1 null, 2 out-of-vocabulary, then one id per item
    assert schema["item_id_list"].cardinality == 3 + ratings["item_id"].nunique()
    assert schema["user_id"].cardinality == 3 + ratings["user_id"].nunique()
    assert "categorical" in schema["user_id"].tags


def test_real_movielens_when_present() -> None:
    path = "/work/shared/data/movielens_100k"
    try:
        df = read_movielens(path)
    except FileNotFoundError:
        pytest.skip(f"no MovieLens data at {path}")
    users = movielens_workflow(history=20).fit_transform(df)
    assert len(users) == df["user_id"].nunique() == 943
    assert users["rating_count"].sum() == len(df)
    assert max(len(items) for items in users["item_id_list"]) == 20  # NumPy arrays per row
