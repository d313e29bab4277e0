"""Core defects found porting NVTabular's code (issue 27): each checked against pandas or
hand-computed values."""

from __future__ import annotations

import operator
import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops


def _ids(values: pd.Series) -> pd.Series:
    """Categorify's ids from pandas: 3 + rank by descending count, ties by value."""
    counts = values.value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    return values.map({v: 3 + i for i, v in enumerate(order)}).astype("int64")


def test_combo_group_next_to_its_own_columns(tmp_path):
    df = pd.DataFrame({"a": ["x", "y", "x", "z", "y", "x"], "b": [1, 2, 1, 1, 3, 2]})
    wf = irs.Workflow([["a", "b"], "a", "b"] >> ops.Categorify(encode_type="combo"),
                      artifacts_dir=str(tmp_path / "a"))
    out = wf.fit_transform(irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False))).compute()
    assert sorted(out.columns) == ["a", "a_b", "b"]
    assert list(out.columns) == wf.output_schema.names
    combo = df["a"] + "_" + df["b"].astype(str)
    assert list(out["a_b"]) == list(_ids(combo))
    assert list(out["a"]) == list(_ids(df["a"]))
    assert list(out["b"]) == list(_ids(df["b"]))
    assert wf.output_schema["a_b"].cardinality == 3 + combo.nunique()


def test_reduce_dtype_size_keeps_integers_past_2_53_exact(tmp_path):
    big = 2**63 - 1
    df = pd.DataFrame({
        "near_max": np.array([big, big - 1, 2**53 + 1, 0], dtype="int64"),
        "near_min": np.array([-(2**63), -(2**53) - 1, -1, 3], dtype="int64"),
        "fits_int32": np.array([2**31 - 1, -(2**31), 0, 1], dtype="int64"),
        "past_int32": np.array([2**31, -5, 0, 1], dtype="int64"),
        "u_past_2_63": np.array([2**64 - 1, 2**63 + 1, 0, 7], dtype="uint64"),
        "u_small": np.array([255, 0, 1, 2], dtype="uint64"),
    })
    wf = irs.Workflow(list(df.columns) >> ops.ReduceDtypeSize(),
                      artifacts_dir=str(tmp_path / "a"))
    out = wf.fit_transform(irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False))).compute()
    assert wf.output_schema.dtypes == {"near_max": "int64", "near_min": "int64",
                                       "fits_int32": "int32", "past_int32": "int64",
                                       "u_past_2_63": "uint64", "u_small": "uint8"}
    for name in df.columns:  # every value exact (no trip through float64)
        assert [int(v) for v in out[name]] == [int(v) for v in df[name]], name
    ranges = next(wf.fitted_steps()).state["ranges"]
    assert ranges["near_max"] == [0, big]
    assert ranges["near_min"] == [-(2**63), 3]
    assert ranges["u_past_2_63"] == [0, 2**64 - 1]
    wf.save(str(tmp_path / "wf"))  # the exact ranges survive JSON
    again = irs.Workflow.load(str(tmp_path / "wf"))
    assert next(again.fitted_steps()).state["ranges"]["near_max"] == [0, big]


def test_an_empty_output_folder_is_accepted_a_non_empty_one_refused(tmp_path):
    df = pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, 2.0, 4.0]})
    wf = irs.Workflow(["c"] >> ops.Categorify(), artifacts_dir=str(tmp_path / "a"))
    wf.fit(df)
    out = tmp_path / "out"
    out.mkdir()  # a notebook's `mkdir -p out`
    wf.transform(irs.Dataset(df)).to_parquet(str(out))
    back = pd.read_parquet(out)
    assert back["c"].tolist() == [3, 4, 3]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no temporaries left
    # a folder holding anything is still refused, and left as it was
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(irs.DatasetError, match="already exists"):
        wf.transform(irs.Dataset(df)).to_parquet(str(full))
    assert os.listdir(full) == ["keep.txt"]
    # a link to an empty folder is not taken for one
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(irs.DatasetError, match="already exists"):
        wf.transform(irs.Dataset(df)).to_parquet(str(tmp_path / "link"))
    assert os.listdir(tmp_path / "target") == []
    # a workflow saves into an empty folder too
    (tmp_path / "wf").mkdir()
    wf.save(str(tmp_path / "wf"))
    assert irs.Workflow.load(str(tmp_path / "wf")).transform(df)["c"].tolist() == [3, 4, 3]


def test_a_reloaded_lambda_op_names_its_function_and_takes_it_back(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 5]})
    for f, name, how in [
        (lambda s: s + 1, r"'[\w.]+:[\w.<>]+\.<lambda>'", "It is a lambda"),
        (operator.neg, "'_operator:neg'", r"from _operator import neg, then Workflow.load\("
                                          r"path, functions=\[neg\]\)"),
    ]:
        path = tmp_path / f"wf-{id(f)}"
        wf = irs.Workflow(["a"] >> ops.LambdaOp(f), artifacts_dir=str(tmp_path / "a"))
        expected = wf.fit_transform(df)
        wf.save(str(path))
        loaded = irs.Workflow.load(str(path))  # loads: nothing of the function is run
        with pytest.raises(irs.NotFittedError, match=f"uses the Python function ({name}).*"
                                                     f"never imports or runs code.*{how}"):
            loaded.transform(df)
        for functions in ([f], {next(iter(irs.ops.lambda_op.functions_by_name([f]))): f}):
            again = irs.Workflow.load(str(path), functions=functions)
            pd.testing.assert_frame_equal(again.transform(df), expected)
    assert expected["a"].tolist() == [-1, -2, -5]
    with pytest.raises(irs.ParameterError, match="'functions' parameter of Workflow.load"):
        irs.Workflow.load(str(path), functions=["neg"])


def test_embedding_sizes_split_single_and_multi_hot(tmp_path):
    df = pd.DataFrame({
        "item": ["a", "b", "a", "c", "d"],
        "tags": pd.Series([["x", "y"], ["y"], [], ["z", "x", "w"], None],
                          dtype=pd.ArrowDtype(pa.list_(pa.string()))),
    })
    wf = irs.Workflow(["item", "tags"] >> ops.Categorify(), artifacts_dir=str(tmp_path / "a"))
    wf.fit(df)
    # 3 reserved rows (pad, null, OOV) + the distinct values: items a-d, tags w, x, y, z
    single, multi = irs.embedding_sizes(wf, split=True)
    assert single == {"item": (3 + 4, irs.embedding_dim(7))}
    assert multi == {"tags": (3 + 4, irs.embedding_dim(7))}
    assert irs.embedding_sizes(wf) == {**single, **multi}  # the flat form stays
    assert irs.embedding_sizes(irs.Workflow(["item"] >> ops.Categorify()).fit(df),
                               split=True) == (single, {})
