"""Workflow: graph algebra, schema before fit, phases, save/load, errors."""

import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.tables._vocabulary import read_vocabulary


def frame(n=50, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "c": rng.choice(["a", "b", "c", None], n, p=[0.5, 0.3, 0.1, 0.1]),
        "x": np.where(rng.random(n) < 0.2, np.nan, rng.normal(10, 3, n)),
        "label": rng.integers(0, 2, n),
    })


def test_schema_is_known_before_fit_with_tags():
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing(0) >> ops.LogOp())
                      + ["label"])
    schema = wf.compute_schema(irs.Dataset(frame()).schema)
    assert schema.names == ["c", "x", "label"]
    assert schema.dtypes == {"c": "int64", "x": "float32", "label": "int64"}
    assert "categorical" in schema["c"].tags and "continuous" in schema["x"].tags
    assert schema["c"].cardinality is None  # known only after fit
    wf.fit(frame())
    assert wf.output_schema["c"].cardinality == 2 + 1 + 3


def test_missing_column_is_reported_before_any_work():
    wf = irs.Workflow(["nope"] >> ops.Normalize())
    with pytest.raises(irs.SchemaError, match="'nope' is selected.*not in the input data.*'label'"):
        wf.fit(frame())


def test_strings_into_normalize_is_a_schema_error():
    wf = irs.Workflow(["c"] >> ops.Normalize())
    with pytest.raises(irs.SchemaError, match="Normalize needs numeric columns.*'c'.*string"):
        wf.fit(frame())


def test_transform_before_fit_raises():
    wf = irs.Workflow(["x"] >> ops.Normalize())
    with pytest.raises(irs.NotFittedError, match="not fitted"):
        wf.transform(frame())


def test_stateless_workflow_needs_no_fit():
    wf = irs.Workflow(["x"] >> ops.FillMissing(-1))
    assert (wf.transform(frame())["x"] >= -1).all()


def test_phases_follow_statistics_dependencies():
    median = ["x"] >> ops.FillMedian()
    norm = median >> ops.Normalize()
    cats = ["c"] >> ops.Categorify()
    wf = irs.Workflow(norm + cats + ["label"])
    phases = wf.phases()
    assert [[type(n.op).__name__ for n in p] for p in phases] == [["FillMedian", "Categorify"],
                                                                   ["Normalize"]]
    df = frame(200)
    out = wf.fit_transform(df)
    filled = df["x"].fillna(df["x"].median())
    expected = (filled - filled.mean()) / filled.std(ddof=0)
    np.testing.assert_allclose(out["x"].to_numpy(dtype=float), expected, rtol=1e-5)
    assert len(wf.fit_stats["phases"]) == 2


def test_row_filter_drops_rows_from_every_branch_and_from_downstream_statistics():
    df = frame(100)
    kept = df[df["label"] == 1]
    wf = irs.Workflow((["label"] >> ops.Filter("label == 1")) + (["x"] >> ops.Normalize()))
    out = wf.fit_transform(df)
    assert len(out) == len(kept) and set(out["label"]) == {1}
    # the Filter only restricts rows of the output; Normalize's statistics saw every row
    mean, std = df["x"].mean(), df["x"].std(ddof=0)
    np.testing.assert_allclose(out["x"].to_numpy(dtype=float, na_value=np.nan),
                               ((kept["x"] - mean) / std).to_numpy(), rtol=1e-5)
    wf2 = irs.Workflow(["label", "x"] >> ops.Filter("label == 1") >> ops.Normalize())
    out2 = wf2.fit_transform(df)
    np.testing.assert_allclose(out2["x"].to_numpy(dtype=float, na_value=np.nan),
                               ((kept["x"] - kept["x"].mean()) / kept["x"].std(ddof=0)),
                               rtol=1e-5)


def test_save_load_round_trip_with_human_readable_vocabularies(tmp_path):
    df = frame(300)
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing(0)
                                                    >> ops.Normalize()) + ["label"])
    expected = wf.fit_transform(df)
    wf.save(tmp_path / "wf")
    config = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    assert config["format"] == "interactive-recsys-workflow"
    loaded = irs.Workflow.load(tmp_path / "wf")
    pd.testing.assert_frame_equal(loaded.transform(df), expected)
    assert loaded.output_schema == wf.output_schema
    state = config["states"]
    info = next(iter(s for s in state.values() if "vocabs" in s))["vocabs"]["c"]
    vocab = read_vocabulary(os.path.join(tmp_path / "wf" / "artifacts", info["path"]),
                            info["splits"])
    counts = df["c"].value_counts()
    assert vocab["value"].to_pylist() == counts.index.tolist()
    assert vocab["count"].to_pylist() == counts.tolist()
    assert vocab["index"].to_pylist() == [3, 4, 5]
    assert not list(tmp_path.glob(".wf.tmp-*"))


def test_save_refuses_to_overwrite_and_is_atomic(tmp_path, monkeypatch):
    wf = irs.Workflow(["x"] >> ops.Normalize()).fit(frame())
    wf.save(tmp_path / "wf")
    with pytest.raises(irs.DatasetError, match="already exists"):
        wf.save(tmp_path / "wf")
    monkeypatch.setattr(json, "dumps", lambda *a, **k: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(OSError):
        wf.save(tmp_path / "wf2")
    assert not (tmp_path / "wf2").exists()


def test_loading_an_incompatible_version_is_refused(tmp_path):
    wf = irs.Workflow(["x"] >> ops.Normalize()).fit(frame())
    wf.save(tmp_path / "wf")
    path = tmp_path / "wf" / "workflow.json"
    config = json.loads(path.read_text())
    config["format_version"] = 99
    path.write_text(json.dumps(config))
    with pytest.raises(irs.VersionError, match="format 99.*Re-fit"):
        irs.Workflow.load(tmp_path / "wf")
    with pytest.raises(irs.VersionError, match="no workflow.json"):
        irs.Workflow.load(tmp_path)


def test_saved_workflow_never_imports_functions(tmp_path):
    def double(s):
        return s * 2

    df = pd.DataFrame({"a": [1, 2]})
    wf = irs.Workflow((["a"] >> ops.LambdaOp(double)) + (["a"] >> ops.Rename(postfix="_e")
                                                        >> ops.LambdaOp("x + 1")))
    assert wf.fit_transform(df)["a"].tolist() == [2, 4]
    wf.save(tmp_path / "wf")
    text = (tmp_path / "wf" / "workflow.json").read_text()
    assert "double" in text and "x + 1" in text
    loaded = irs.Workflow.load(tmp_path / "wf")
    with pytest.raises(irs.NotFittedError, match="functions="):
        loaded.transform(df)
    name = json.loads(text)["nodes"][1]["op"]["params"]["f"]["function"]
    again = irs.Workflow.load(tmp_path / "wf", functions={name: double})
    assert again.transform(df)["a"].tolist() == [2, 4]
    assert again.transform(df)["a_e"].tolist() == [2, 3]


def test_unsafe_expressions_are_rejected():
    with pytest.raises(irs.ParameterError, match="unknown function"):
        ops.Filter("__import__('os').system('true')")
    with pytest.raises(irs.ParameterError, match="not allowed|unknown function"):
        ops.LambdaOp("x.__class__")


def test_transform_returns_the_input_kind(tmp_path):
    df = frame()
    wf = irs.Workflow(["x"] >> ops.Normalize()).fit(df)
    assert isinstance(wf.transform(df), pd.DataFrame)
    lazy = wf.transform(irs.Dataset(df))
    assert isinstance(lazy, irs.Dataset)
    assert lazy.num_rows == len(df)
    pd.testing.assert_frame_equal(lazy.compute(), wf.transform(df))


def test_graph_algebra_and_repr():
    a = ["x"] >> ops.FillMissing(0)
    node = a + ["label"] + (["c"] >> ops.HashBucket(7))
    wf = irs.Workflow(node)
    text = repr(wf)
    assert "FillMissing(fill_val=0)" not in text  # defaults are not repeated
    assert "FillMissing()" in text and "HashBucket(num_buckets=7)" in text
    schema = wf.compute_schema(irs.Dataset(frame()).schema)
    assert schema.names == ["x", "label", "c"]
    assert schema["c"].cardinality == 9
    wf.fit(frame())
    assert "<table>" in wf._repr_html_()
    by_tag = irs.ColumnSelector(tags=["target"]) >> ops.Rename(postfix="_y")
    ds = irs.Dataset(frame(), tags={"label": ["target"]})
    assert irs.Workflow(by_tag).compute_schema(ds.schema).names == ["label_y"]


def test_duplicate_output_columns_are_rejected():
    # two different computations named 'x': the error names the column and both sources
    wf = irs.Workflow(["x"] + (["x"] >> ops.FillMissing(0)))
    with pytest.raises(irs.SchemaError, match=r"Column 'x' is output twice.*input column 'x' "
                       r"and step \[.x.\] >> FillMissing\(\)"):
        wf.fit(frame())


def test_embedding_sizes_of_categorical_outputs():
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Bucketize([0, 5, 10])))
    wf.fit(frame())
    sizes = irs.embedding_sizes(wf)
    assert sizes == {"c": (6, 16), "x": (4, 16)}
    assert irs.embedding_dim(10**6) == min(512, round(1.6 * 10**6 ** 0.56))


def test_arrow_table_input():
    table = pa.table({"x": [1.0, 3.0]})
    out = irs.Workflow(["x"] >> ops.Normalize()).fit_transform(table)
    assert out["x"].tolist() == [-1.0, 1.0]


def test_only_the_columns_a_phase_needs_are_read(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from interactive_recsys import backend as backend_module

    pq.write_table(pa.Table.from_pandas(frame(100)), tmp_path / "d.parquet")
    read = []
    original = backend_module.read_parquet_table

    def spy(path, columns, row_groups, schema, dictionary=()):
        read.append(None if columns is None else sorted(columns))
        dictionaries.append(sorted(dictionary))
        return original(path, columns, row_groups, schema, dictionary)

    dictionaries = []
    monkeypatch.setattr("interactive_recsys.io._parquet_pieces.read_parquet_table", spy)
    wf = irs.Workflow((["c"] >> ops.Categorify()) + ["label"])
    ds = irs.Dataset(str(tmp_path / "d.parquet"))
    wf.fit(ds)
    assert read == [["c"]]  # the fit pass reads only what Categorify needs
    read.clear()
    wf.transform(ds).compute()
    assert read == [["c", "label"]]  # the transform skips the unused column x
    assert dictionaries == [["c"], ["c"]]  # only Categorify reads c: parquet's dictionaries kept


def test_a_failed_refit_leaves_the_workflow_unfitted(monkeypatch):
    wf = irs.Workflow(["x"] >> ops.Normalize()).fit(frame())
    monkeypatch.setattr(ops.Normalize, "fit_finalize",
                        lambda self, partial, ctx: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        wf.fit(frame())
    with pytest.raises(irs.NotFittedError):
        wf.transform(frame())
