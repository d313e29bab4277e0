"""Hive partition folders (issue 40, item 12): ``day=2026-11-01/part.parquet`` keeps its
``day`` column in ``irs.Dataset`` and ``nvt.Dataset``, for parquet and csv, in the schema, in
fit and in transform, with partitions sized in bytes; checked against
``pandas.read_parquet`` and ``pyarrow.dataset(..., partitioning="hive")`` of the same folder.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
import interactive_recsys.compat.nvtabular as nvt
from interactive_recsys import ops

DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


def _write(folder, rows_per_file: int = 60, fmt: str = "parquet", seed: int = 0):
    """``folder/day=D/shop=S/part.<fmt>``: two keys, a string one and an integer one."""
    rng = np.random.default_rng(seed)
    for d, day in enumerate(DAYS):
        for shop in (7, 12):
            sub = folder / f"day={day}" / f"shop={shop}"
            sub.mkdir(parents=True)
            df = pd.DataFrame({"item": rng.choice(["a", "b", "c", "d"], rows_per_file),
                               "x": rng.normal(d, 1.0, rows_per_file)})
            if fmt == "parquet":
                pq.write_table(pa.Table.from_pandas(df, preserve_index=False),
                               sub / "part.parquet", row_group_size=10)
            else:
                df.to_csv(sub / "part.csv", index=False)
    return folder


def _values(df: pd.DataFrame) -> pd.DataFrame:
    """pandas' categories as their values, every column as Python objects (nulls None)."""
    out = pd.DataFrame({c: (df[c].astype(df[c].cat.categories.dtype)
                            if isinstance(df[c].dtype, pd.CategoricalDtype) else df[c])
                        for c in df.columns})
    return out.astype(object).where(out.notna(), None).reset_index(drop=True)


def test_parquet_folder_keeps_its_partition_columns_as_pandas_reads_them(tmp_path):
    folder = _write(tmp_path / "events")
    expected = pd.read_parquet(folder)
    ds = irs.Dataset(str(folder))
    assert ds.schema.names == ["item", "x", "day", "shop"] == list(expected.columns)
    # pandas: categories of string / int32 values; pyarrow.dataset: string / int32
    arrow = pds.dataset(folder, format="parquet", partitioning="hive").schema
    assert (str(arrow.field("day").type), str(arrow.field("shop").type)) == ("string", "int32")
    assert expected["shop"].cat.categories.dtype == np.int32
    assert ds.schema["day"].dtype == "string" and ds.schema["shop"].dtype == "int32"
    pd.testing.assert_frame_equal(_values(ds.compute()), _values(expected))
    assert ds.num_rows == len(expected) == 360


def test_byte_sized_partitions_each_keep_their_files_values(tmp_path):
    folder = _write(tmp_path / "events")
    ds = irs.Dataset(str(folder), part_size="1KB")  # row groups of 10 rows: several per file
    assert ds.npartitions > len(ds.files) == 6
    expected = _values(pd.read_parquet(folder))
    pd.testing.assert_frame_equal(_values(ds.compute()), expected)
    parts = list(ds.to_iter(dtype_backend="numpy_nullable"))
    assert all(p["day"].nunique() == 1 and p["shop"].nunique() == 1 for p in parts)
    # column pushdown of a partition column alone, and with a file column
    assert ds.to_ddf(columns=["shop"]).compute()["shop"].tolist() == expected["shop"].tolist()
    both = ds.to_ddf(columns=["day", "x"]).compute().reset_index(drop=True)
    assert both["day"].tolist() == expected["day"].tolist()
    assert both["x"].tolist() == expected["x"].tolist()


def test_fit_and_transform_use_the_partition_columns(tmp_path):
    folder = _write(tmp_path / "events")
    expected = pd.read_parquet(folder)
    ds = irs.Dataset(str(folder), part_size="1KB")
    wf = irs.Workflow((["day"] >> ops.Categorify()) + (["shop"] >> ops.Normalize())
                      + ["item", "x"])
    out = wf.fit_transform(ds).compute()
    # Categorify: 0 padding, 1 null, 2 OOV, then by descending frequency, ties by value
    counts = expected["day"].astype(str).value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    ids = {v: 3 + i for i, v in enumerate(order)}
    assert out["day"].tolist() == [ids[v] for v in expected["day"].astype(str)]
    shop = expected["shop"].astype(np.float64)
    want = (shop - shop.mean()) / shop.std(ddof=0)
    np.testing.assert_allclose(out["shop"].to_numpy(np.float64), want.to_numpy(), rtol=1e-6)
    assert out["x"].tolist() == expected["x"].tolist()


def test_csv_folder_keeps_its_partition_columns_as_pyarrow_reads_them(tmp_path):
    folder = _write(tmp_path / "events", fmt="csv")
    expected = pds.dataset(folder, format="csv", partitioning="hive").to_table().to_pandas()
    for part_size in (None, "500B"):  # one block per file, then several blocks per file
        ds = irs.Dataset(str(folder), part_size=part_size)
        assert ds.schema.dtypes == {"item": "string", "x": "float64", "day": "string",
                                    "shop": "int32"}
        if part_size:
            assert ds.npartitions > len(ds.files)
        got = ds.compute()
        pd.testing.assert_frame_equal(_values(got), _values(expected))
    out = irs.Workflow(["day"] >> ops.Categorify()).fit_transform(ds).compute()
    assert out["day"].nunique() == 3 and out["day"].min() >= 3


def test_nvtabular_dataset_keeps_the_partition_columns(tmp_path):
    folder = _write(tmp_path / "events")
    expected = pd.read_parquet(folder)
    ds = nvt.Dataset(str(folder), engine="parquet", cpu=True, part_size="1KB")
    assert ds.schema.column_names == ["item", "x", "day", "shop"]
    pd.testing.assert_frame_equal(_values(ds.to_ddf().compute()), _values(expected))
    out = nvt.Workflow(["day", "shop"] >> nvt.ops.Categorify()).fit_transform(ds)
    got = out.to_ddf().compute()
    assert got["day"].nunique() == 3 and got["shop"].nunique() == 2


def test_nulls_url_encoding_and_missing_keys_as_pyarrow(tmp_path):
    folder = tmp_path / "d"
    for i, rel in enumerate(["k=1/t=a%2Fb", "k=__HIVE_DEFAULT_PARTITION__/t=x", "k=007/plain",
                             "k=2147483647/t=__HIVE_DEFAULT_PARTITION__"]):
        (folder / rel).mkdir(parents=True)
        pq.write_table(pa.table({"v": [i, i + 10]}), folder / rel / "p.parquet")
    pq.write_table(pa.table({"v": [99]}), folder / "top.parquet")  # no key at all
    expected = pds.dataset(folder, format="parquet", partitioning="hive").to_table()
    ds = irs.Dataset(str(folder))
    assert ds.schema.dtypes == {"v": "int64", "k": "int32", "t": "string"}
    assert [str(f.type) for f in expected.schema] == ["int64", "int32", "string"]
    got = ds.compute()
    want = expected.to_pandas()
    pd.testing.assert_frame_equal(_values(got), _values(want))
    rows = _values(got).set_index("v")
    assert rows.loc[0, "t"] == "a/b" and rows.loc[0, "k"] == 1  # URL-decoded
    assert rows.loc[1, "k"] is None and rows.loc[2, "k"] == 7  # null; '007' is 7
    assert rows.loc[99, "k"] is None and rows.loc[99, "t"] is None  # a file with no key


def test_a_partition_key_that_is_also_a_column_is_refused(tmp_path):
    folder = tmp_path / "d"
    (folder / "day=1").mkdir(parents=True)
    pq.write_table(pa.table({"day": [5], "v": [1]}), folder / "day=1" / "p.parquet")
    with pytest.raises(irs.DatasetError, match="'day' is both a column of the files"):
        irs.Dataset(str(folder))
    (tmp_path / "c" / "day=1").mkdir(parents=True)
    (tmp_path / "c" / "day=1" / "p.csv").write_text("day,v\n5,1\n")
    with pytest.raises(irs.DatasetError, match="'day' is both a column of the files"):
        irs.Dataset(str(tmp_path / "c"))
    # a glob reads the files' own columns only (pandas takes no glob either)
    assert irs.Dataset(str(folder / "*" / "*.parquet")).compute()["day"].tolist() == [5]


def test_the_loader_refuses_a_hive_folder_by_name(tmp_path):
    folder = _write(tmp_path / "events")
    with pytest.raises(irs.DatasetError, match=r"hive-partitioned folder \(day=...\).*"
                       r"\['day', 'shop'\] would be lost.*to_parquet"):
        irs.Loader(str(folder), batch_size=8, cont_cols=["x"])
    # the fix it gives works: the columns are kept in the written folder
    irs.Dataset(str(folder)).to_parquet(str(tmp_path / "flat"))
    loader = irs.Loader(str(tmp_path / "flat"), batch_size=400, shuffle=False,
                        cont_cols=["x"], extra_cols=["shop"])
    assert {"day", "shop"} <= set(loader.schema.names)


def test_a_partitioned_folder_behind_a_url(tmp_path):
    """fsspec URLs (``memory://`` here, as ``s3://``): the same columns, parquet and csv."""
    import fsspec

    fs, root = fsspec.filesystem("memory"), f"/irs-hive-{tmp_path.name}"
    try:
        for day, rows in (("2026-11-01", [1, 2]), ("2026-11-02", [3])):
            with fs.open(f"{root}/pq/day={day}/p.parquet", "wb") as f:
                pd.DataFrame({"a": rows}).to_parquet(f)
            with fs.open(f"{root}/csv/day={day}/p.csv", "w") as f:
                pd.DataFrame({"a": rows}).to_csv(f, index=False)
        for kind in ("pq", "csv"):
            ds = irs.Dataset(f"memory://{root}/{kind}/", part_size=8)
            assert ds.schema.dtypes == {"a": "int64", "day": "string"}
            assert ds.compute().to_dict("list") == {
                "a": [1, 2, 3], "day": ["2026-11-01", "2026-11-01", "2026-11-02"]}
    finally:
        fs.rm(root, recursive=True)
