"""The public fitted state (``Workflow.fitted_steps``) and row count (``Dataset.num_rows``),
each checked against pandas computing the same thing on its own."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops


def frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cat = rng.choice(["a", "b", "c", "d", None], size=n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    return pd.DataFrame({"cat": pd.array(cat, dtype="string"),
                         "x": rng.normal(2.0, 3.0, size=n),
                         "label": rng.integers(0, 2, size=n)})


def workflow() -> irs.Workflow:
    return irs.Workflow((["cat"] >> ops.Categorify())
                        + (["x"] >> ops.FillMissing(0) >> ops.Normalize()) + ["label"])


def test_categorify_state_holds_pandas_value_counts():
    df = frame()
    wf = workflow().fit(df)
    steps = list(wf.fitted_steps(ops.Categorify))
    assert len(steps) == 1
    step = steps[0]
    assert (step.columns, step.outputs) == (("cat",), ("cat",))
    info = step.state["vocabs"]["cat"]
    vocab = pd.read_parquet(os.path.join(wf.artifacts_dir, info["path"]))
    expected = df["cat"].value_counts(dropna=True)
    got = vocab.set_index("value")["count"]
    assert dict(got) == dict(expected)
    assert info["null_count"] == int(df["cat"].isna().sum())
    assert info["size"] == df["cat"].nunique()


def test_normalize_state_and_filter_by_type():
    df = frame()
    wf = workflow().fit(df)
    all_steps = list(wf.fitted_steps())
    assert [type(s.op) for s in all_steps] == [ops.Categorify, ops.Normalize]  # graph order
    (norm,) = wf.fitted_steps(ops.Normalize)
    assert norm.state["means"]["x"] == pytest.approx(df["x"].mean())
    assert norm.state["stds"]["x"] == pytest.approx(df["x"].std(ddof=0))
    assert norm.node_id == wf.node_id(next(n for n in wf.nodes if n.op is norm.op))
    assert list(wf.fitted_steps((ops.Clip, ops.HashBucket))) == []


def test_fitted_step_is_frozen_and_unfitted_workflow_has_none():
    wf = workflow()
    assert list(wf.fitted_steps()) == []
    wf.fit(frame())
    step = next(wf.fitted_steps())
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.state = {}  # type: ignore[misc]


def test_states_are_keyed_by_step_id_and_survive_save_load(tmp_path):
    df = frame()
    wf = workflow().fit(df)
    assert set(wf._states) == {s.node_id for s in wf.fitted_steps()}
    wf.save(tmp_path / "wf")
    loaded = irs.Workflow.load(tmp_path / "wf")
    assert [(s.node_id, s.columns, s.outputs, s.state) for s in loaded.fitted_steps()] == \
        [(s.node_id, s.columns, s.outputs, s.state) for s in wf.fitted_steps()]
    pd.testing.assert_frame_equal(loaded.transform(df), wf.transform(df))


def test_num_rows_equals_len_of_the_frame(tmp_path):
    df = frame(n=123)
    ds = irs.Dataset(df)
    assert ds.known_num_rows == ds.num_rows == len(df)
    df.to_parquet(tmp_path / "d.parquet")
    assert irs.Dataset(str(tmp_path / "d.parquet")).known_num_rows == len(df)


def test_known_num_rows_is_none_until_counted_after_a_row_filter():
    df = frame(n=200)
    wf = irs.Workflow(["x"] >> ops.Filter("x > 2.0"))
    out = wf.fit(df).transform(irs.Dataset(df))
    assert out.known_num_rows is None  # a row filter: unknown without computing
    assert out.num_rows == int((df["x"] > 2.0).sum())
    assert out.known_num_rows == out.num_rows  # counted once, then known
