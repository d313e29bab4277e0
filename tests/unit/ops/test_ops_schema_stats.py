"""AddTags, AddProperties, DataStats, ReduceDtypeSize, DropLowCardinality against pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from tests.conftest import assert_frames_equal, new_workflow, output_dtypes, partitioned

LIST_INT = pd.ArrowDtype(pa.list_(pa.int64()))


def stats_frame(rows: int = 800, seed: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    f = rng.normal(10.0, 3.0, rows)
    f[rng.random(rows) < 0.1] = np.nan
    i = pd.array(rng.integers(-100, 30_000, rows), dtype="Int64")
    i[rng.random(rows) < 0.2] = pd.NA
    s = pd.array(rng.choice(["x", "y", "z", "w"], rows), dtype="string[pyarrow]")
    s[rng.random(rows) < 0.05] = pd.NA
    return pd.DataFrame({"f": f, "i": i, "s": s, "u": rng.integers(0, 200, rows).astype("uint32"),
                         "const": np.full(rows, 7), "b": rng.random(rows) < 0.3})


def test_add_tags_and_properties_change_only_the_schema(tmp_path):
    df = stats_frame(rows=50)
    node = ["i", "s"] >> ops.AddTags(["item", "id"]) >> ops.AddProperties({"domain": "items",
                                                                           "embedding_dim": 16})
    node = node >> ops.AddTags(["user"], remove=["id"])
    wf = new_workflow(node, tmp_path)
    out = wf.fit_transform(df)
    assert_frames_equal(out, irs.get_backend("cpu").from_pandas(df[["i", "s"]]))
    col = wf.output_schema["s"]
    assert col.tags == {"item", "user"}
    assert col.properties == {"domain": "items", "embedding_dim": 16}
    wf.save(tmp_path / "saved")
    assert irs.Workflow.load(tmp_path / "saved").output_schema == wf.output_schema
    with pytest.raises(irs.ParameterError, match="properties"):
        ops.AddProperties({"bad": object()})
    with pytest.raises(irs.ParameterError, match="'tags'.*'remove'"):
        ops.AddTags(["a"], remove=["a"])


def test_data_stats_report_matches_pandas(tmp_path, client):
    df = stats_frame()
    df["l"] = pd.Series([[1, 2], None, [3]] * (len(df) // 3) + [[1]] * (len(df) % 3),
                        dtype=LIST_INT)
    wf = new_workflow(["f", "i", "s", "l"] >> ops.DataStats(), tmp_path)
    out = wf.fit_transform(partitioned(df, 5)).compute()
    assert_frames_equal(out, irs.get_backend("cpu").from_pandas(df[["f", "i", "s", "l"]]))
    report = ops.DataStats.report(wf)["datastats-1"]
    for name in ("f", "i"):
        col = df[name].astype("float64")
        got = report[name]
        assert got["rows"] == len(df) and got["missing"] == col.isna().sum()
        assert got["missing_pct"] == pytest.approx(100 * col.isna().mean())
        assert got["cardinality"] == col.nunique()
        assert got["min"] == col.min() and got["max"] == col.max()
        assert got["mean"] == pytest.approx(col.mean(), rel=1e-12)
        assert got["std"] == pytest.approx(col.std(), rel=1e-12)
    assert report["s"]["cardinality"] == df["s"].nunique() == 4
    assert report["s"]["mean"] is None and report["s"]["dtype"] == "string"
    flat = df["l"].explode().dropna().astype(float)
    assert report["l"]["missing"] == df["l"].isna().sum()
    assert report["l"]["cardinality"] == 3 and report["l"]["mean"] == pytest.approx(flat.mean())


@pytest.mark.parametrize(("values", "dtype"), [
    ([0, 127, -128], "int8"), ([0, 128], "int16"), ([-40_000, 5], "int32"),
    ([0, 2**31], "int64"), ([-32_768, 32_767], "int16")])
def test_reduce_dtype_size_picks_the_smallest_integer_type(tmp_path, values, dtype):
    df = pd.DataFrame({"x": np.array(values * 10, dtype=np.int64)})
    wf = new_workflow(["x"] >> ops.ReduceDtypeSize(), tmp_path)
    out = wf.fit_transform(partitioned(df, 3)).compute()
    assert wf.output_schema["x"].dtype == output_dtypes(out)["x"] == dtype
    assert out["x"].astype("int64").tolist() == df["x"].tolist()  # values unchanged


def test_reduce_dtype_size_on_mixed_columns(tmp_path):
    df = stats_frame()
    df["big"] = [1e300, -1.0] * (len(df) // 2)
    df["l"] = pd.Series([[1, 2]] * len(df), dtype=LIST_INT)
    wf = new_workflow(["f", "i", "s", "u", "b", "big", "l"] >> ops.ReduceDtypeSize(), tmp_path)
    out = wf.fit_transform(partitioned(df, 4)).compute()
    assert output_dtypes(out) == wf.output_schema.dtypes == {
        "f": "float32", "i": "int16", "s": "string", "u": "uint8", "b": "bool",
        "big": "float64", "l": "list<int8>"}
    np.testing.assert_array_equal(out["f"].to_numpy(dtype=np.float32, na_value=np.nan),
                                  df["f"].to_numpy().astype(np.float32))
    assert wf.fit(df).output_schema.dtypes == wf.output_schema.dtypes  # one partition too


def test_drop_low_cardinality_matches_pandas_nunique(tmp_path, client):
    df = stats_frame(rows=600)
    df["per_part"] = np.repeat([1, 2], 300)  # constant inside each partition below
    df["nulls_and_one"] = pd.array([None, 3] * 300, dtype="Int64")
    cols = ["f", "s", "const", "b", "per_part", "nulls_and_one"]
    kept = {}
    for min_card in (2, 3, 5):
        wf = new_workflow(cols >> ops.DropLowCardinality(min_card), tmp_path)
        out = wf.fit_transform(partitioned(df, 2)).compute()
        want = [c for c in cols if df[c].nunique() >= min_card]
        assert list(out.columns) == wf.output_schema.names == want
        kept[min_card] = want
    assert kept == {2: ["f", "s", "b", "per_part"], 3: ["f", "s"], 5: ["f"]}
