"""Normalize's statistics: huge values, many partitions, states JSON cannot hold, no rows.
"""

from __future__ import annotations

import json
import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops


# ---- clear errors: statistics -------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e154, 1e200, 1e300])
def test_normalize_of_huge_values_is_exact_and_saves(tmp_path, scale):
    base = np.array([1.0, 2.0, 3.0, 6.0])
    df = pd.DataFrame({"x": base * scale})
    wf = irs.Workflow(["x"] >> ops.Normalize())
    out = wf.fit_transform(df)["x"].to_numpy()
    expected = (base - base.mean()) / base.std()  # scale-free: z-scores do not depend on it
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    saved = wf.save(tmp_path / "saved")
    with open(os.path.join(saved, "workflow.json")) as f:
        state = json.load(f)["states"]["1"]
    assert np.isclose(state["stds"]["x"], base.std() * scale, rtol=1e-9)
    np.testing.assert_allclose(irs.Workflow.load(saved).transform(df)["x"], expected, rtol=1e-6)


def test_normalize_over_partitions_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(5e160, 3e159, 400)
    ds = irs.Dataset(dd.from_pandas(pd.DataFrame({"x": x}), npartitions=7))
    assert ds.npartitions == 7
    out = irs.Workflow(["x"] >> ops.Normalize()).fit_transform(ds).to_ddf().compute()
    scaled = x / 1e160
    np.testing.assert_allclose(out["x"], (scaled - scaled.mean()) / scaled.std(), rtol=1e-5,
                               atol=1e-5)


def test_states_json_cannot_hold_are_saved_as_null(tmp_path):
    df = pd.DataFrame({"k": ["a", "a"], "v": [1e308, 1e308]})  # the sum overflows
    wf = irs.Workflow(["k", "v"] >> ops.JoinGroupby(cont_cols=["v"], stats=["sum"]))
    wf.fit(df)
    saved = wf.save(tmp_path / "saved")
    with open(os.path.join(saved, "workflow.json")) as f:
        json.loads(f.read())  # strict JSON: no Infinity
    assert irs.Workflow.load(saved).transform(df)["k_v_sum"].tolist() == [np.inf, np.inf]


@pytest.mark.parametrize("op", [ops.Normalize, ops.NormalizeMinMax])
def test_filter_that_drops_every_row_before_normalize_names_both(op):
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    wf = irs.Workflow(["x"] >> ops.Filter("x > 100") >> op())
    with pytest.raises(irs.DatasetError) as info:
        wf.fit(df)
    message = str(info.value)
    assert f"{op.__name__} (" in message and "Filter(expr='x > 100')" in message
    assert "no rows" in message and not wf.fitted
