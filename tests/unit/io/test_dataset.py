"""Dataset: reading parquet/csv/frames, byte-sized partitions, schema reconciliation, bad input."""

import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys.datasets import criteo_csv_options, read_criteo


def vals(series):
    """Values of a Series with a missing value (pandas' NA, or NaN in a string column as
    ``Dataset.compute`` gives it) shown as None."""
    return [None if v is pd.NA or (isinstance(v, float) and v != v and series.dtype == "str")
            else v for v in series.tolist()]


def _write(path, table, row_group_size=None):
    pq.write_table(table, path, row_group_size=row_group_size)
    return str(path)


def test_parquet_partitions_follow_part_size(tmp_path):
    n = 200_000
    table = pa.table({"a": np.arange(n, dtype=np.int64), "b": np.random.default_rng(0).random(n)})
    _write(tmp_path / "x.parquet", table, row_group_size=10_000)  # 20 row groups of ~160 kB
    rg_bytes = pq.ParquetFile(tmp_path / "x.parquet").metadata.row_group(0).total_byte_size
    small = irs.Dataset(str(tmp_path), part_size=rg_bytes * 4 + 1)
    big = irs.Dataset(str(tmp_path), part_size="1GB")
    assert small.npartitions == 5
    assert big.npartitions == 1
    assert small.num_rows == big.num_rows == n
    pd.testing.assert_frame_equal(small.compute(), big.compute())
    assert small.compute()["a"].tolist() == list(range(n))


def test_schema_head_iter_and_tags(tmp_path):
    _write(tmp_path / "x.parquet", pa.table({"label": [0, 1, 1], "c": ["a", None, "b"],
                                             "tags": [["x"], [], None]}))
    ds = irs.Dataset(str(tmp_path / "x.parquet"), tags={"label": [irs.Tags.TARGET]})
    assert ds.schema.dtypes == {"label": "int64", "c": "string", "tags": "list<string>"}
    assert "target" in ds.schema["label"].tags and "list" in ds.schema["tags"].tags
    assert vals(ds.head(2)["c"]) == ["a", None]
    assert sum(len(p) for p in ds.to_iter()) == 3
    assert isinstance(ds.to_ddf(), dd.DataFrame)
    with pytest.raises(irs.DatasetError, match="'nope'"):
        irs.Dataset(str(tmp_path / "x.parquet"), tags={"nope": ["target"]})


def test_files_with_a_missing_column_and_int_vs_float_are_reconciled(tmp_path):
    _write(tmp_path / "a.parquet", pa.table({"x": pa.array([1, 2], pa.int64()), "y": ["p", "q"]}))
    _write(tmp_path / "b.parquet", pa.table({"x": pa.array([0.5], pa.float64())}))
    ds = irs.Dataset(str(tmp_path))
    assert ds.schema.dtypes == {"x": "float64", "y": "string"}
    out = ds.compute()
    assert out["x"].tolist() == [1.0, 2.0, 0.5]
    assert vals(out["y"]) == ["p", "q", None]


def test_files_with_incompatible_types_are_rejected_with_the_column_name(tmp_path):
    _write(tmp_path / "a.parquet", pa.table({"x": [1, 2]}))
    _write(tmp_path / "b.parquet", pa.table({"x": ["1"]}))
    with pytest.raises(irs.DatasetError, match=r"Column 'x' has incompatible types.*a\.parquet"):
        irs.Dataset(str(tmp_path))


def test_glob_matching_nothing_and_missing_file(tmp_path):
    with pytest.raises(irs.DatasetError, match="No data files match"):
        irs.Dataset(str(tmp_path / "*.parquet"))
    with pytest.raises(irs.DatasetError, match="does not exist"):
        irs.Dataset(str(tmp_path / "missing.parquet"))


def test_corrupt_parquet_names_the_file(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(irs.DatasetError, match="bad.parquet.*not a readable parquet"):
        irs.Dataset(str(bad))


def test_bad_part_size_and_engine(tmp_path):
    _write(tmp_path / "a.parquet", pa.table({"x": [1]}))
    with pytest.raises(irs.ParameterError, match="part_size"):
        irs.Dataset(str(tmp_path), part_size="lots")
    with pytest.raises(irs.ParameterError, match="engine"):
        irs.Dataset(str(tmp_path), engine="json")


def test_csv_with_names_dtypes_and_nulls(tmp_path):
    (tmp_path / "a.tsv").write_text("1\t5\tab\n0\t\t\n1\t7\tcd\n")
    ds = irs.Dataset(str(tmp_path / "a.tsv"), sep="\t", header=None, names=["y", "n", "c"],
                     dtypes={"y": "int64", "n": "int64", "c": "string"})
    assert ds.schema.dtypes == {"y": "int64", "n": "int64", "c": "string"}
    out = ds.compute()
    assert vals(out["n"]) == [5, None, 7]
    assert vals(out["c"]) == ["ab", None, "cd"]


def test_read_criteo_raw_tsv(tmp_path):
    row = ["1"] + [str(i) for i in range(13)] + [f"{i:08x}" for i in range(26)]
    row2 = ["0"] + [""] * 13 + [""] * 26
    (tmp_path / "day_0.txt").write_text("\t".join(row) + "\n" + "\t".join(row2) + "\n")
    ds = read_criteo(str(tmp_path / "day_0.txt"))
    opts = criteo_csv_options()
    assert ds.schema.names == opts["names"]
    out = ds.compute()
    assert out["label"].tolist() == [1, 0]
    assert vals(out["I13"]) == [12, None]
    assert vals(out["C26"]) == [f"{25:08x}", None]
    assert str(out["I1"].dtype) == "Int64"  # an integer column with a null: nullable
    assert str(ds.compute(dtype_backend="pyarrow")["I1"].dtype) == "int64[pyarrow]"


def test_from_frames_tables_and_dask(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 3], "s": ["x", "y", None]})
    for source in (df, pa.Table.from_pandas(df), dd.from_pandas(df, npartitions=2)):
        ds = irs.Dataset(source)
        assert ds.schema.dtypes == {"a": "int64", "s": "string"}
        assert vals(ds.compute()["s"]) == ["x", "y", None]
    with pytest.raises(irs.DatasetError, match="Cannot make a Dataset from a int"):
        irs.Dataset(42)


def test_empty_dataset_cannot_be_fitted(tmp_path):
    empty = pd.DataFrame({"a": pd.Series([], dtype="float64")})
    wf = irs.Workflow(["a"] >> irs.ops.Normalize())
    with pytest.raises(irs.DatasetError, match="empty dataset.*zero rows"):
        wf.fit(empty)
    _write(tmp_path / "empty.parquet", pa.Table.from_pandas(empty))
    with pytest.raises(irs.DatasetError, match="empty dataset"):
        wf.fit(irs.Dataset(str(tmp_path / "empty.parquet")))
    # a transform of zero rows is fine and keeps the schema
    wf.fit(pd.DataFrame({"a": [1.0, 3.0]}))
    out = wf.transform(empty)
    assert len(out) == 0 and list(out.columns) == ["a"]


def test_gpu_backend_is_refused_clearly_without_a_gpu():
    if irs.gpu_available():
        pytest.skip("this machine has a GPU")
    assert irs.get_backend("auto").name == "cpu"
    with pytest.raises(irs.ParameterError, match="no working GPU.*backend='cpu'"):
        irs.Dataset(pd.DataFrame({"a": [1]}), backend="gpu")
    with pytest.raises(irs.ParameterError, match="'backend' parameter"):
        irs.get_backend("tpu")


def test_default_part_size_is_bounded():
    from interactive_recsys.io._part_size import MAX_PART_SIZE, MIN_PART_SIZE, default_part_size

    assert MIN_PART_SIZE <= default_part_size() <= MAX_PART_SIZE
    assert os.cpu_count() >= 1


def test_column_bytes_from_the_parquet_footers_of_every_file(tmp_path):
    """What a Run's time left weighs its write by: each column's uncompressed bytes over
    every file and row group (a 100-character string column outweighs an int64 one), the
    memory of a frame, and nothing for csv (not known without reading)."""
    n = 1000
    for i in range(2):
        _write(tmp_path / f"part-{i}.parquet",
               pa.table({"i": np.arange(n, dtype=np.int64),
                         "s": [f"{v:0100d}" for v in range(n * i, n * (i + 1))]}),
               row_group_size=250)
    sizes = irs.Dataset(str(tmp_path)).column_bytes()
    assert set(sizes) == {"i", "s"}
    assert sizes["i"] >= 2 * n * 8  # 8 bytes per int64, 2,000 rows
    assert sizes["s"] >= 2 * n * 100 > sizes["i"]
    frame = pd.DataFrame({"a": np.zeros(10, dtype=np.int64), "b": np.zeros(10)})
    assert irs.Dataset(frame).column_bytes() == {"a": 80, "b": 80}
    pd.DataFrame({"x": [1, 2]}).to_csv(tmp_path / "t.csv", index=False)
    assert irs.Dataset(str(tmp_path / "t.csv")).column_bytes() is None
