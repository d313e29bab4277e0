"""NVTabular's dependency form: ``["C6"] >> JoinGroupby(cont_cols=["I5"])`` and
``["C1"] >> TargetEncoding("label")`` read ``I5``/``label`` from the workflow input without
making them outputs; checked against pandas and against the selection form."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops


def _frame(rows: int = 400, seed: int = 9) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    i5 = rng.gamma(2.0, 2.0, rows)
    i5[rng.random(rows) < 0.1] = np.nan
    return pd.DataFrame({"C6": rng.choice([f"c{k}" for k in range(15)], rows),
                         "I5": i5, "label": rng.integers(0, 2, rows),
                         "other": rng.random(rows)})


def _ds(df: pd.DataFrame) -> irs.Dataset:
    return irs.Dataset(dd.from_pandas(df, npartitions=3, sort=False))


def test_join_groupby_reads_cont_cols_from_the_input(tmp_path):
    df = _frame()
    node = ["C6"] >> ops.JoinGroupby(cont_cols=["I5"], stats=["count", "mean", "std", "max"])
    wf = irs.Workflow(node + ["label"], artifacts_dir=str(tmp_path / "a"))  # noqa: RUF005
    out = wf.fit_transform(_ds(df)).compute()
    assert list(out.columns) == ["C6_count", "C6_I5_mean", "C6_I5_std", "C6_I5_max", "label"]
    groups = df.groupby("C6")["I5"]
    np.testing.assert_array_equal(out["C6_count"], df.groupby("C6")["C6"].transform("size"))
    np.testing.assert_allclose(out["C6_I5_mean"], groups.transform("mean"), rtol=1e-12)
    np.testing.assert_allclose(out["C6_I5_std"], groups.transform("std"), rtol=1e-9)
    np.testing.assert_allclose(out["C6_I5_max"], groups.transform("max"), rtol=0)
    # the same as today's form, where I5 is selected
    today = irs.Workflow((["C6", "I5"] >> ops.JoinGroupby(
        cont_cols=["I5"], stats=["count", "mean", "std", "max"])) + ["label"],
        artifacts_dir=str(tmp_path / "b"))
    pd.testing.assert_frame_equal(today.fit_transform(_ds(df)).compute(), out)


def test_after_another_step_the_column_must_pass_through_it(tmp_path):
    df = _frame()
    with pytest.raises(irs.SchemaError, match="JoinGroupby needs the continuous column 'I5'"):
        irs.Workflow(["C6"] >> ops.Categorify() >> ops.JoinGroupby(cont_cols=["I5"])).fit(df)
    node = ((["C6"] >> ops.Categorify()) + ["I5"]) >> ops.JoinGroupby(cont_cols=["I5"],
                                                                       stats=["sum"])
    out = irs.Workflow(node, artifacts_dir=str(tmp_path / "a")).fit_transform(_ds(df)).compute()
    assert list(out.columns) == ["C6_I5_sum"]
    np.testing.assert_allclose(out["C6_I5_sum"], df.groupby("C6")["I5"].transform("sum"))


def test_target_encoding_reads_the_target_from_the_input(tmp_path):
    df = _frame()
    te = ["C6"] >> ops.TargetEncoding("label", p_smooth=10)
    wf = irs.Workflow(te + ["other"], artifacts_dir=str(tmp_path / "a")).fit(_ds(df))  # noqa: RUF005
    assert wf.output_columns == ["TE_C6_label", "other"]
    new = pd.DataFrame({"C6": ["c0", "c3", "zzz", None], "label": [0, 0, 0, 0],
                        "I5": [1.0] * 4, "other": [0.5] * 4})
    got = wf.transform(new)["TE_C6_label"].to_numpy()
    mean = df["label"].mean()
    stats = df.groupby("C6")["label"].agg(["sum", "count"])
    want = [(stats.loc[c, "sum"] + mean * 10) / (stats.loc[c, "count"] + 10) for c in ("c0", "c3")]
    np.testing.assert_allclose(got, [*want, mean, mean], rtol=1e-6)  # float32 output
    # out-of-fold training encodings equal today's form (same folds: categories + target)
    today = irs.Workflow((["C6", "label"] >> ops.TargetEncoding("label", p_smooth=10))
                         + ["other"], artifacts_dir=str(tmp_path / "b"))
    pd.testing.assert_frame_equal(today.fit_transform(_ds(df)).compute(),
                                  wf.fit_transform(_ds(df)).compute())


def test_tag_selections_and_saved_workflows_keep_the_dependency(tmp_path):
    df = _frame()
    ds = irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False), tags={"C6": ["categorical"]})
    node = irs.ColumnSelector(tags=["categorical"]) >> ops.JoinGroupby(cont_cols=["I5"],
                                                                     stats=["mean"])
    wf = irs.Workflow(node, artifacts_dir=str(tmp_path / "a"))
    out = wf.fit_transform(ds).compute()
    np.testing.assert_allclose(out["C6_I5_mean"], df.groupby("C6")["I5"].transform("mean"))
    wf.save(tmp_path / "saved")
    loaded = irs.Workflow.load(tmp_path / "saved")
    pd.testing.assert_frame_equal(loaded.transform(ds).compute(), out)


def test_a_missing_dependency_column_is_reported_by_the_operator():
    with pytest.raises(irs.SchemaError, match="JoinGroupby needs the continuous column 'nope'"):
        irs.Workflow(["C6"] >> ops.JoinGroupby(cont_cols=["nope"])).fit(_frame())
    with pytest.raises(irs.SchemaError, match="TargetEncoding needs its target column 'y'"):
        irs.Workflow(["C6"] >> ops.TargetEncoding("y")).fit(_frame())
