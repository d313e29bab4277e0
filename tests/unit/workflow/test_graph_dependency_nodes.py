"""The dependency forms of the graph API (NVTabular's): ``node["col"]``, ``node - ["col"]``,
steps given where an operator takes column names (``JoinGroupby(cont_cols=node)``,
``TargetEncoding(target=node)``), and a column reached twice (issue 27). Checked against
pandas and hand-computed frames."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder._codegen import workflow_code


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"c": ["x", "y", "x", "x", "y", "z", "z", "x"],
                         "n": [1.0, 2.0, 4.0, 8.0, 3.0, 5.0, np.nan, 0.5],
                         "label": [1, 0, 1, 0, 0, 1, 1, 1],
                         "u": [1, 1, 2, 2, 1, 2, 3, 3]})


def _ds(df: pd.DataFrame) -> irs.Dataset:
    return irs.Dataset(dd.from_pandas(df, npartitions=3, sort=False))


def _run(node, df, tmp_path, name="a"):
    wf = irs.Workflow(node, artifacts_dir=str(tmp_path / name))
    return wf, wf.fit_transform(_ds(df)).compute()


def test_join_groupby_takes_a_step_as_cont_cols(tmp_path):
    df = _frame()
    logn = ["n"] >> ops.LogOp()
    wf, out = _run(["c"] >> ops.JoinGroupby(cont_cols=logn, stats=["count", "mean", "max"]),
                   df, tmp_path)
    assert list(out.columns) == ["c_count", "c_n_mean", "c_n_max"]  # the step is read only
    logged = np.log1p(df["n"])
    np.testing.assert_array_equal(out["c_count"], df.groupby("c")["c"].transform("size"))
    np.testing.assert_allclose(out["c_n_mean"], logged.groupby(df["c"]).transform("mean"))
    np.testing.assert_allclose(out["c_n_max"], logged.groupby(df["c"]).transform("max"))
    # saved, loaded and exported as code, the same results
    wf.save(str(tmp_path / "wf"))
    again = irs.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(again.transform(_ds(df)).compute(), out)
    for workflow in (wf, again):
        space: dict = {}
        exec(workflow_code(workflow), space)
        rebuilt = space["workflow"]
        rebuilt.artifacts_dir = str(tmp_path / f"code-{id(workflow)}")
        pd.testing.assert_frame_equal(rebuilt.fit_transform(_ds(df)).compute(), out)


def test_target_encoding_takes_a_column_of_a_step_as_target(tmp_path):
    df = _frame()
    labels = ["label", "u"] >> ops.FillMissing(0)
    te = ["c"] >> ops.TargetEncoding(target=labels["label"], kfold=1, p_smooth=0)
    _, out = _run(te, df, tmp_path)
    assert list(out.columns) == ["TE_c_label"]
    # hand-computed: x -> labels 1, 1, 0, 1; y -> 0, 0; z -> 1, 1
    expected = df["c"].map({"x": 3 / 4, "y": 0.0, "z": 1.0})
    np.testing.assert_allclose(out["TE_c_label"], expected, rtol=1e-6)
    # a selection works too, and a step with two columns is refused naming the parameter
    sel = ["c"] >> ops.TargetEncoding(target=irs.ColumnSelector(["label"]), kfold=1,
                                      p_smooth=0)
    _, again = _run(sel, df, tmp_path, "b")
    pd.testing.assert_frame_equal(again, out)
    with pytest.raises(irs.SchemaError, match=r"'target' parameter of TargetEncoding must "
                       r"name one column.*\['label', 'u'\]"):
        irs.Workflow(["c"] >> ops.TargetEncoding(target=labels)).compute_schema(_ds(df))


def test_groupby_keys_from_a_step(tmp_path):
    df = _frame()
    user = ["u"] >> ops.LambdaOp("x * 10 - 5")
    node = ["n"] >> ops.Groupby(groupby_cols=user, aggs=["sum", "count"])
    _, out = _run(node, df, tmp_path)
    expected = df.assign(u=df["u"] * 10 - 5).groupby("u")["n"].agg(["sum", "count"])
    got = out.sort_values("u").reset_index(drop=True)
    assert got["u"].tolist() == expected.index.tolist()
    np.testing.assert_allclose(got["n_sum"], expected["sum"])
    assert got["n_count"].tolist() == expected["count"].tolist()


def test_select_and_drop_columns_of_a_step(tmp_path):
    df = _frame()
    filled = ["n", "label", "u"] >> ops.FillMissing(-1)
    _, picked = _run(filled["n"], df, tmp_path)
    assert picked["n"].tolist() == df["n"].fillna(-1).tolist()
    assert list(picked.columns) == ["n"]
    _, two = _run(filled[["u", "n"]], df, tmp_path, "b")
    assert list(two.columns) == ["u", "n"]
    _, dropped = _run(filled - ["n"], df, tmp_path, "c")
    assert list(dropped.columns) == ["label", "u"]
    assert dropped["u"].tolist() == df["u"].tolist()
    with pytest.raises(irs.SchemaError, match=r"DropColumns drops \['nope'\]"):
        irs.Workflow(filled - "nope").compute_schema(_ds(df))
    with pytest.raises(TypeError, match="not iterable"):
        list(filled)


def test_the_same_column_reached_twice_is_one_column(tmp_path):
    df = _frame()
    selector = irs.ColumnSelector(["c", "n"])
    for twice in (["c", "n", "c"], selector + ["c"]):  # noqa: RUF005 (a graph `+`, no list)
        _, out = _run(twice, df, tmp_path, f"x{id(twice)}")
        assert list(out.columns) == ["c", "n"]  # the same input column twice
        assert out["c"].tolist() == df["c"].tolist()
        np.testing.assert_array_equal(out["n"].to_numpy(dtype=float, na_value=np.nan), df["n"])
    cats = ["c"] >> ops.Categorify()
    filled = ["n", "u"] >> ops.FillMissing(0)
    wf, out = _run(cats + filled + cats + filled["n"], df, tmp_path, "b")
    assert list(out.columns) == ["c", "n", "u"]
    assert wf.output_schema.names == ["c", "n", "u"]
    assert out["n"].tolist() == df["n"].fillna(0).tolist()
    # x: 4 rows; y and z: 2 rows each, ties by value
    assert out["c"].tolist() == df["c"].map({"x": 3, "y": 4, "z": 5}).tolist()


def test_two_different_columns_with_one_name_are_refused():
    df = _frame()
    for node, first, second in [
        (["n"] + (["n"] >> ops.LogOp()), "input column 'n'", r"step \['n'\] >> LogOp\(\)"),
        ((["c"] >> ops.Categorify()) + (["c"] >> ops.HashBucket(10)),
         r"step \['c'\] >> Categorify\(\)", r"step \['c'\] >> HashBucket\(num_buckets=10\)"),
    ]:
        with pytest.raises(irs.SchemaError, match=f"Column '(n|c)' is output twice, by two "
                           f"different computations: {first} and {second}"):
            irs.Workflow(node).fit(df)
