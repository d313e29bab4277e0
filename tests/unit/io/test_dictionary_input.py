"""String columns that only Categorify reads come from parquet dictionary-encoded: the ids
must equal those of the plain (decoded) path, and no other operator may see a dictionary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.backend import read_parquet_table
from tests.conftest import assert_frames_equal, new_workflow


def write_files(df: pd.DataFrame, directory, files: int = 3, row_group_size: int = 97,
                **options) -> str:
    """``df`` as several parquet files of several row groups (one dictionary per group)."""
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    bounds = np.linspace(0, len(df), files + 1).astype(int)
    for i in range(files):
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]),
                       directory / f"part-{i}.parquet", row_group_size=row_group_size, **options)
    return str(directory)


def strings(rng: np.random.Generator, rows: int, distinct: int, null_rate: float) -> pd.Series:
    values = rng.zipf(1.3, rows) % distinct
    out = pd.Series([f"v{v:05d}" if v % 7 else f"long-value-{v}" for v in values],
                    dtype="string[pyarrow]")
    out[rng.random(rows) < null_rate] = pd.NA
    return out


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = 1500
    return pd.DataFrame({"a": strings(rng, rows, 300, 0.1), "b": strings(rng, rows, 40, 0.0),
                         "c": strings(rng, rows, 2000, 0.3),
                         "x": rng.integers(0, 50, rows).astype("int64")})


def plain(directory: str) -> pd.DataFrame:
    """The same rows as an in-memory pandas frame (decoded strings: the plain path)."""
    return pq.read_table(directory).to_pandas(types_mapper=pd.ArrowDtype)


@pytest.mark.parametrize("op", [
    ops.Categorify(),
    ops.Categorify(freq_threshold=3),
    ops.Categorify(max_size=25, num_buckets=5, dtype="int32"),
    ops.Categorify(split_out=3),
], ids=["default", "freq_threshold", "max_size-buckets", "split_out"])
def test_dictionary_read_gives_the_ids_of_the_plain_path(tmp_path, frame, op):
    src = write_files(frame, tmp_path / "data")
    read = irs.Workflow(["a", "b", "c"] >> op, artifacts_dir=str(tmp_path))
    got = read.fit_transform(irs.Dataset(src)).compute()
    reference = irs.Workflow(["a", "b", "c"] >> op, artifacts_dir=str(tmp_path))
    expected = reference.fit_transform(plain(src))
    assert_frames_equal(got, expected)


def test_ids_follow_frequency_across_row_groups_like_pandas(tmp_path, frame):
    """An independent expectation: ids by descending count then value, from pandas."""
    src = write_files(frame, tmp_path / "data", row_group_size=50)
    wf = new_workflow(["c"] >> ops.Categorify(), tmp_path)
    got = wf.fit_transform(irs.Dataset(src)).compute()["c"].to_numpy()
    counts = frame["c"].value_counts(dropna=True).reset_index()
    counts.columns = ["value", "count"]
    order = counts.sort_values(["count", "value"], ascending=[False, True])
    ids = dict(zip(order["value"], range(3, 3 + len(order)), strict=True))
    expected = frame["c"].map(ids).fillna(1).astype("int64").to_numpy()
    np.testing.assert_array_equal(got, expected)


def test_joint_and_combo_groups_give_the_plain_ids(tmp_path, frame):
    src = write_files(frame, tmp_path / "data")
    for encode_type in ("joint", "combo"):
        node = [["a", "c"]] >> ops.Categorify(encode_type=encode_type)
        got = new_workflow(node, tmp_path).fit_transform(
            irs.Dataset(src)).compute()
        expected = new_workflow(node, tmp_path).fit_transform(plain(src))
        assert_frames_equal(got, expected)


def test_columns_read_by_other_operators_stay_plain_strings(tmp_path, frame):
    src = write_files(frame, tmp_path / "data")
    node = ((["a", "b"] >> ops.Categorify()) + (["a"] >> ops.HashBucket(10) >> ops.Rename(
        postfix="_h")) + ["c"] + (["x"] >> ops.Normalize()))
    wf = new_workflow(node, tmp_path)
    plan = wf._plan(irs.Dataset(src).schema, "cpu")
    assert plan.dictionary_columns([wf.nodes.index(wf.output_node)]) == ["b"]
    got = wf.fit_transform(irs.Dataset(src)).compute(dtype_backend="pyarrow")  # the engine's
    assert not pa.types.is_dictionary(got["c"].dtype.pyarrow_dtype)
    assert got["c"].tolist() == plain(src)["c"].tolist()  # passed through, decoded
    expected = new_workflow(node, tmp_path).fit_transform(plain(src))
    assert_frames_equal(got, expected)


def test_a_joint_group_of_dictionary_and_plain_columns(tmp_path, frame):
    """``a`` is also passed through (plain), ``b`` is not (dictionary): one vocabulary."""
    src = write_files(frame, tmp_path / "data")
    node = ([["a", "b"]] >> ops.Categorify()) + (["a"] >> ops.Rename(postfix="_raw"))
    got = new_workflow(node, tmp_path).fit_transform(irs.Dataset(src)).compute()
    expected = new_workflow(node, tmp_path).fit_transform(plain(src))
    assert_frames_equal(got, expected)


def test_high_cardinality_pages_fall_back_to_plain_encoding(tmp_path):
    """Past the dictionary page limit parquet writes plain pages; Arrow re-encodes them."""
    rng = np.random.default_rng(3)
    values = pd.Series([f"id-{v:09d}" for v in rng.integers(0, 10**9, 20_000)],
                       dtype="string[pyarrow]")
    df = pd.DataFrame({"c": values})
    src = write_files(df, tmp_path / "data", files=1, row_group_size=20_000,
                      dictionary_pagesize_limit=4096)
    md = pq.ParquetFile(f"{src}/part-0.parquet").metadata.row_group(0).column(0)
    assert "PLAIN" in md.encodings
    got = new_workflow(["c"] >> ops.Categorify(), tmp_path).fit_transform(
        irs.Dataset(src)).compute()
    expected = new_workflow(["c"] >> ops.Categorify(), tmp_path).fit_transform(df)
    assert_frames_equal(got, expected)


def test_reader_keeps_dictionaries_only_for_string_columns(tmp_path):
    table = pa.table({"s": pa.array(["a", None, "a"], pa.large_string()), "n": [1, 2, 3]})
    pq.write_table(table, tmp_path / "t.parquet")
    schema = pa.schema([("s", pa.string()), ("n", pa.int64()), ("gone", pa.string())])
    out = read_parquet_table(str(tmp_path / "t.parquet"), None, None, schema,
                             dictionary=["s", "n", "gone"])
    assert out.schema.field("s").type == pa.dictionary(pa.int32(), pa.string())
    assert out.schema.field("n").type == pa.int64()
    assert out.schema.field("gone").type == pa.dictionary(pa.int32(), pa.string())
    assert out["s"].to_pylist() == ["a", None, "a"]
    assert out["gone"].null_count == 3


def test_backend_counts_and_codes_of_dictionary_columns():
    b = irs.get_backend("cpu")
    chunks = [pa.array(["x", "y", None, "x"]).dictionary_encode(),
              pa.array(["z", "x", "z"]).dictionary_encode()]
    col = pa.chunked_array(chunks)
    counts = b.value_counts(col)
    assert sorted(zip(counts["value"].to_pylist(), counts["count"].to_pylist(),
                      strict=True)) == [("x", 3), ("y", 1), ("z", 2)]
    coded = b.dictionary_codes(col)  # per chunk, in row order
    assert len(coded) == 2
    decoded = [None if c < 0 else dictionary[c].as_py() for codes, dictionary in coded
               for c in codes]
    assert decoded == col.cast(pa.string()).to_pylist()
    # a null inside the dictionary is a null row too
    odd = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0]), pa.array([None, "q"]))
    [(codes, _)] = b.dictionary_codes(odd)
    assert codes.tolist() == [-1, 1, -1]
    assert b.dictionary_codes(pa.chunked_array([pa.array(["p"])])) is None
    assert pc.sum(counts["count"]).as_py() == 6
