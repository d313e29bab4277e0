"""Lookups a transformed dataset sent out of vocabulary, counted in its ids, against pandas."""

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.stats._lookup_loss import lookup_loss


def _frames(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    fit = pd.DataFrame({"a": rng.choice(list("abcdefgh"), 3000, p=[.3, .2, .2, .1, .1, .05,
                                                                    .04, .01]),
                        "b": rng.choice(["x", "y", None], 3000)})
    day = pd.DataFrame({"a": rng.choice([*"abcdefgh", "new1", "new2", None], 2000),
                        "b": rng.choice(["x", "y", "z", None], 2000)})
    return fit, day


@pytest.mark.parametrize("buckets", [None, 3])
def test_out_of_vocabulary_share_of_non_null_lookups(tmp_path, buckets):
    fit, day = _frames(1)
    wf = irs.Workflow(["a", "b"] >> ops.Categorify(freq_threshold=100, num_buckets=buckets))
    wf.fit(fit)
    wf.transform(irs.Dataset(day)).to_parquet(str(tmp_path / "out"))  # the engine writes
    loss = lookup_loss(wf, str(tmp_path / "out"))

    # independent: a value is in the vocabulary when the fit saw it at least 100 times
    for column in ["a", "b"]:
        counts = fit[column].value_counts()
        kept = set(counts[counts >= 100].index)
        nonnull = day[column].dropna()
        assert loss[column].lookups == len(nonnull)
        assert loss[column].lost == int((~nonnull.isin(kept)).sum())
    assert loss["a"].lost > 0 and loss["b"].lost > 0


def test_list_columns_count_every_element(tmp_path):
    fit = pd.DataFrame({"tags": [["a", "b"], ["a"], ["b", "a"]]})
    day = pd.DataFrame({"tags": [["a", "q"], [], ["q", "r", "b"], None]})
    wf = irs.Workflow(["tags"] >> ops.Categorify()).fit(fit)
    loss = lookup_loss(wf, wf.transform(day))["tags"]
    assert (loss.lost, loss.lookups) == (3, 5)  # q, q, r of a, q, q, r, b


def test_columns_without_categorify_are_not_counted():
    frame = pd.DataFrame({"a": ["x", "y"], "n": [1.0, 2.0]})
    wf = irs.Workflow((["a"] >> ops.Categorify()) + (["n"] >> ops.Normalize())).fit(frame)
    assert set(lookup_loss(wf, wf.transform(frame))) == {"a"}
    assert lookup_loss(wf, wf.transform(frame))["a"].lost == 0


def test_on_the_cluster_as_in_process(tmp_path, client):
    fit, day = _frames(2)
    wf = irs.Workflow(["a", "b"] >> ops.Categorify(freq_threshold=100)).fit(fit)
    (tmp_path / "day").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(day)), 4)):
        day.iloc[part].to_parquet(tmp_path / "day" / f"part-{i}.parquet")
    wf.transform(irs.Dataset(str(tmp_path / "day"))).to_parquet(str(tmp_path / "out"))
    on_cluster = lookup_loss(wf, str(tmp_path / "out"))
    assert client.run_on_scheduler(  # counted by the workers
        lambda dask_scheduler: "lookup-loss" in dask_scheduler.task_prefixes)
    for column in ["a", "b"]:
        nonnull = day[column].dropna()
        counts = fit[column].value_counts()
        lost = int((~nonnull.isin(set(counts[counts >= 100].index))).sum())
        assert (on_cluster[column].lost, on_cluster[column].lookups) == (lost, len(nonnull))
