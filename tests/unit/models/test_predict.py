"""irs.predict_topk on the cluster: equal to a full sort, seen items excluded, written output."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ParameterError
from interactive_recsys.models import EASE, AutoEncoder, Popularity
from interactive_recsys.models._predict import topk_rows
from tests.conftest import partitioned
from tests.interactions_data import make_interactions


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return make_interactions(n_users=80, n_items=50, per_user=12, seed=5)


def _plain(ds: irs.Dataset) -> pd.DataFrame:
    df = ds.compute()
    return pd.DataFrame({c: df[c].to_numpy() for c in df.columns})


def _full_sort(model: irs.models.Model, data: pd.DataFrame, k: int) -> dict:
    """Per user: every unseen item sorted by descending score, ties by item id."""
    users, scores = model.score_frame(data)
    seen = data.groupby("user_id")["item_id"].apply(set)
    want = {}
    for user, row in zip(users, scores, strict=True):
        ranked = sorted((-s, item) for s, item in zip(row, model.items_, strict=True)
                        if item not in seen[user])
        want[user] = [(item, -s) for s, item in ranked[:k]]
    return want


@pytest.mark.parametrize(("make", "on_cluster"), [(lambda: EASE(l2=20.0), True),
                                                  (Popularity, False),
                                                  (lambda: AutoEncoder(hidden=8, epochs=2), False)])
def test_topk_equals_a_full_sort_without_seen_items(request: pytest.FixtureRequest,
                                                    data: pd.DataFrame, make: object,
                                                    on_cluster: bool) -> None:
    if on_cluster:  # the threaded scheduler otherwise (torch is imported once, here)
        request.getfixturevalue("client")
    model = make().fit(data)
    k = 45  # more than some users have unseen items: their lists are shorter
    users = partitioned(data.sample(frac=1, random_state=1), 3)
    got = _plain(irs.predict_topk(model, users, k=k))
    want = _full_sort(model, data, k)
    assert set(got["user_id"]) == set(want)
    for user, rows in got.groupby("user_id"):
        assert rows["rank"].tolist() == list(range(1, len(rows) + 1))
        assert rows["item_id"].tolist() == [item for item, _ in want[user]]
        np.testing.assert_allclose(rows["score"], [s for _, s in want[user]], rtol=1e-6)
    seen = set(zip(data["user_id"], data["item_id"], strict=True))
    assert not seen & set(zip(got["user_id"], got["item_id"], strict=True))


def test_seen_items_kept_when_asked_and_users_without_history(data: pd.DataFrame) -> None:
    model = Popularity().fit(data)
    top = _plain(irs.predict_topk(model, data, k=3, exclude_seen=False))
    best = model.items_[np.argsort(-model.arrays_["counts"], kind="stable")[:3]].tolist()
    assert all(g["item_id"].tolist() == best for _, g in top.groupby("user_id"))
    newcomers = pd.DataFrame({"user_id": [5, 6]})  # user column only: no history
    assert _plain(irs.predict_topk(model, newcomers, k=3))["item_id"].tolist() == best * 2


def test_topk_rows_against_argsort() -> None:
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, (40, 30)).astype(float)  # many ties
    cols, vals = topk_rows(scores, 7)
    order = np.lexsort((np.broadcast_to(np.arange(30), scores.shape), -scores), axis=1)[:, :7]
    np.testing.assert_array_equal(cols, order)
    np.testing.assert_array_equal(vals, np.take_along_axis(scores, order, axis=1))


def test_output_written_atomically(client: object, data: pd.DataFrame, tmp_path: object) -> None:
    model = EASE(l2=20.0).fit(data)
    lazy = _plain(irs.predict_topk(model, data, k=5))
    summary = irs.predict_topk(model, data, k=5, output=tmp_path / "top")
    assert summary["num_rows"] == len(lazy) == 5 * data["user_id"].nunique()
    written = _plain(irs.Dataset(str(tmp_path / "top")))
    key = ["user_id", "rank"]
    pd.testing.assert_frame_equal(written.sort_values(key).reset_index(drop=True),
                                  lazy.sort_values(key).reset_index(drop=True))


def test_weights_are_broadcast_once_as_arrays(client: object, data: pd.DataFrame) -> None:
    """The graph holds references to scattered arrays, not the arrays or the model."""
    model = EASE(l2=20.0).fit(data)
    ddf = irs.predict_topk(model, partitioned(data, 3), k=5).to_ddf()
    import pickle  # only to look into the task graph, never to store anything

    graph = pickle.dumps(dict(ddf.__dask_graph__()))
    assert model.arrays_["B"][1].tobytes() not in graph
    assert model.arrays_["B"][1].tobytes() in pickle.dumps(model.arrays_["B"])
    scattered = client.has_what()  # type: ignore[attr-defined]
    arrays = [k for keys in scattered.values() for k in keys if "ndarray" in str(k)]
    assert len(arrays) >= 2 * 2  # items + B, on both workers


def test_predict_rejects_bad_input(data: pd.DataFrame) -> None:
    with pytest.raises(ParameterError, match="not fitted"):
        irs.predict_topk(EASE(), data)
    model = Popularity().fit(data)
    with pytest.raises(ParameterError, match="'k' parameter.*Got 0"):
        irs.predict_topk(model, data, k=0)
    with pytest.raises(ParameterError, match="no column 'user_id'"):
        irs.predict_topk(model, data.rename(columns={"user_id": "u"}))
