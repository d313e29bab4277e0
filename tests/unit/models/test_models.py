"""irs.models: closed forms against NumPy, save/load, quality, background fits and resources."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ParameterError
from interactive_recsys.models import EASE, AutoEncoder, ModelFormatError, Popularity
from tests.interactions_data import make_interactions

ML100K = Path("/work/shared/data/movielens_100k")
AE_PARAMS = {"hidden": 64, "epochs": 20, "batch_size": 32, "lr": 3e-3}


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return make_interactions()


def _dense(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    users, items = np.unique(df["user_id"]), np.unique(df["item_id"])
    x = np.zeros((len(users), len(items)))
    x[np.searchsorted(users, df["user_id"]), np.searchsorted(items, df["item_id"])] = 1
    return users, items, x


def test_ease_equals_the_numpy_closed_form(data: pd.DataFrame) -> None:
    model = EASE(l2=30.0).fit(data)
    users, items, x = _dense(data)
    g = x.T @ x + 30.0 * np.eye(len(items))
    b = np.eye(len(items)) - np.linalg.inv(g) / np.diag(np.linalg.inv(g))  # Steck, eq. 8
    np.fill_diagonal(b, 0.0)
    np.testing.assert_allclose(model.arrays_["B"], b, atol=1e-9)
    got_users, scores = model.score_frame(data)
    assert got_users.tolist() == users.tolist() and model.items_.tolist() == items.tolist()
    np.testing.assert_allclose(scores, x @ b, atol=1e-6, rtol=0)


def test_popularity_counts_distinct_users(data: pd.DataFrame) -> None:
    doubled = pd.concat([data, data.head(50)], ignore_index=True)  # repeats count once
    model = Popularity().fit(doubled)
    want = data.groupby("item_id")["user_id"].nunique()
    assert model.arrays_["counts"].tolist() == want.loc[model.items_].astype(float).tolist()


@pytest.mark.parametrize("model", [Popularity(), EASE(l2=10.0), AutoEncoder(hidden=8, epochs=2,
                                                                           layers=2)])
def test_save_load_round_trip(data: pd.DataFrame, model: irs.models.Model,
                              tmp_path: Path) -> None:
    model.fit(data)
    path = model.save(tmp_path / "m")
    assert sorted(p.name for p in Path(path).iterdir()) == ["_SUCCESS", "arrays.npz", "model.json"]
    meta = json.loads((Path(path) / "model.json").read_text())
    assert meta["model"] == type(model).__name__ and meta["params"] == model.get_params()
    loaded = irs.models.load(path)
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    assert loaded.items_.tolist() == model.items_.tolist()
    for name, array in model.arrays_.items():
        np.testing.assert_array_equal(loaded.arrays_[name], array)
    np.testing.assert_array_equal(loaded.score_frame(data)[1], model.score_frame(data)[1])
    with pytest.raises(Exception, match="already exists"):
        model.save(tmp_path / "m")


def test_load_rejects_a_bad_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelFormatError, match="model.json"):
        irs.models.load(tmp_path)
    (tmp_path / "model.json").write_text(json.dumps({"format": "irs-model", "version": 1,
                                                     "model": "Pickled"}))
    with pytest.raises(ModelFormatError, match="'Pickled'; known models"):
        irs.models.load(tmp_path)


def test_parameters_are_checked() -> None:
    with pytest.raises(ParameterError, match="'l2' parameter of EASE must be a positive number"):
        EASE(l2=-1)
    with pytest.raises(ParameterError, match="no parameter"):
        AutoEncoder(hiden=3)
    with pytest.raises(irs.NotFittedError, match="fit"):
        EASE().save("never")


def _quality(train: pd.DataFrame, test: pd.DataFrame, models: dict) -> dict[str, dict]:
    out = {}
    for name, model in models.items():
        model.fit(train)
        preds = irs.predict_topk(model, train, k=20)
        out[name] = irs.eval.ranking_metrics(preds, test, ks=(10, 20))
    return out


def test_ease_and_autoencoder_beat_popularity_on_generated_data(data: pd.DataFrame) -> None:
    train, test = (d.compute() for d in irs.eval.split(data, seed=0))
    m = _quality(train, test, {"pop": Popularity(), "ease": EASE(l2=50.0),
                               "ae": AutoEncoder(**AE_PARAMS)})
    for metric in ("precision@10", "recall@20"):
        assert m["ease"][metric] > 1.2 * m["pop"][metric], metric
        assert m["ae"][metric] > 1.2 * m["pop"][metric], metric


@pytest.mark.skipif(not ML100K.is_dir(), reason="MovieLens 100k not in /work/shared/data")
def test_quality_on_movielens_100k() -> None:
    """The table in docs/guide/models-and-metrics.md: per-user 80/20 random split, seed 0."""
    ratings = irs.datasets.read_movielens(ML100K)[["user_id", "item_id"]]
    train, test = (d.compute() for d in irs.eval.split(ratings, test_fraction=0.2, seed=0))
    m = _quality(train, test, {"pop": Popularity(), "ease": EASE(l2=500.0),
                               "ae": AutoEncoder(epochs=10)})
    for metric in ("precision@10", "recall@20"):
        assert m["ease"][metric] > m["pop"][metric] and m["ae"][metric] > m["pop"][metric]
    assert m["ease"]["precision@10"] > 0.3 and m["pop"]["precision@10"] < 0.25


def _train_task_worker(client: object, since: float) -> tuple[str, dict]:
    stream = client.get_task_stream(start=since)  # type: ignore[attr-defined]
    records = {r["key"] if isinstance(r["key"], str) else r["key"][0]: r for r in stream}
    key = next(k for k in records if k.startswith("train-"))
    return records[key]["worker"], records[key]


@pytest.mark.slow
def test_background_fit_asks_for_the_gpu_resource(data: pd.DataFrame) -> None:
    """On a CPU cluster with one worker labelled GPU, training waits for that worker (busy
    with another GPU task) although the other worker is idle, then runs there."""
    client = irs.start_cluster(resources=[{}, {"GPU": 1}], memory_limit="1GB", gpu=False,
                               dashboard=False)
    try:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        gpu = next(a for a, w in workers.items() if w["resources"])
        client.get_task_stream(count=1)
        since = time.time() - 1
        busy = client.submit(time.sleep, 3, resources={"GPU": 1}, key="busy-gpu")
        while busy.status == "pending" and not client.processing(workers=[gpu])[gpu]:
            time.sleep(0.05)
        job = EASE(l2=10.0).fit(data, background=True)
        model = job.result(timeout=120)
        assert job.status == "finished" and model.fitted
        assert [p.name for p in job.phases] == ["fit EASE: read", "fit EASE: train"]
        worker, record = _train_task_worker(client, since)
        assert worker == gpu
        busy_stop = max(s["stop"] for r in client.get_task_stream(start=since)
                        if r["key"] == "busy-gpu" for s in r["startstops"])
        # Fetching the training data may overlap the busy task; computing may not. The
        # worker shifts its times by a clock offset it re-estimates on each heartbeat, so
        # allow 0.5 s: training without waiting would start about 3 s earlier.
        computes = [s["start"] for s in record["startstops"] if s["action"] == "compute"]
        assert computes and min(computes) >= busy_stop - 0.5
    finally:
        client.close()
        client.cluster.close()


def test_ease_weights_with_torch_equal_numpy(data: pd.DataFrame) -> None:
    """The GPU path (torch) on the CPU here: same weights as NumPy."""
    pytest.importorskip("torch")
    from interactive_recsys.models._simple import ease_weights

    _, _, x = _dense(data)
    gram = x.T @ x
    np.testing.assert_allclose(ease_weights(gram, 30.0, "cpu"), ease_weights(gram, 30.0),
                               atol=1e-10)
