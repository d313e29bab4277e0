"""JoinGroupby and JoinExternal against independent pandas computations."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from tests.conftest import assert_frames_equal, new_workflow, output_dtypes, partitioned

STATS = ["count", "sum", "mean", "std", "var", "min", "max"]


def jg_frame(rows: int = 500, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cat = rng.choice(["a", "b", "c", "d", "e", "f", None], rows, p=[.3, .2, .2, .1, .1, .05, .05])
    price = rng.normal(100.0, 15.0, rows)
    price[rng.random(rows) < 0.1] = np.nan
    qty = pd.array(rng.integers(-5, 50, rows), dtype="Int64")
    qty[rng.random(rows) < 0.1] = pd.NA
    return pd.DataFrame({"cat": pd.array(cat, dtype="string[pyarrow]"),
                         "shop": rng.choice(["x", "y", "z"], rows),
                         "price": price, "qty": qty})


def expected_stats(df: pd.DataFrame, keys: list[str], prefix: str) -> pd.DataFrame:
    """pandas: groupby + agg, merged back onto the rows (left join, row order kept)."""
    g = df.groupby(keys, dropna=True)
    table = pd.DataFrame({f"{prefix}_count": g.size()})
    for cont in ("price", "qty"):
        agg = g[cont].agg(["sum", "mean", "std", "var", "min", "max"])
        table = table.join(agg.add_prefix(f"{prefix}_{cont}_"))
    return df[keys].merge(table, left_on=keys, right_index=True, how="left")[table.columns]


def assert_matches(out: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(out.columns) == list(expected.columns)
    for name in expected.columns:
        got = out[name].astype("float64").to_numpy(na_value=np.nan)
        want = expected[name].astype("float64").to_numpy(na_value=np.nan)
        np.testing.assert_allclose(got, want, rtol=1e-10, err_msg=name)


def test_join_groupby_matches_pandas_groupby_agg(tmp_path):
    df = jg_frame()
    wf = new_workflow(["cat", "price", "qty"] >> ops.JoinGroupby(["price", "qty"]), tmp_path)
    out = wf.fit_transform(partitioned(df, 4)).compute()
    expected = expected_stats(df, ["cat"], "cat")
    has_key = df["cat"].notna().to_numpy()
    assert_matches(out[has_key], expected[has_key])
    assert out[~has_key].isna().all().all()  # a null key gets nulls
    dtypes = output_dtypes(out)
    assert dtypes["cat_count"] == "int64" and dtypes["cat_qty_min"] == "int64"
    assert dtypes["cat_price_max"] == dtypes["cat_qty_mean"] == "float64"


def test_joint_group_is_one_key_and_unseen_categories_count_zero(tmp_path):
    df = jg_frame()
    wf = new_workflow([["cat", "shop"], "price"] >> ops.JoinGroupby(
        cont_cols=["price"], stats=["count", "mean"]), tmp_path)
    wf.fit(df)
    known = df[df["cat"].notna()]
    out = wf.transform(known)
    assert list(out.columns) == ["cat_shop_count", "cat_shop_price_mean"]
    expected = expected_stats(known, ["cat", "shop"], "cat_shop")
    assert_matches(out, expected[["cat_shop_count", "cat_shop_price_mean"]])
    new = wf.transform(pd.DataFrame({"cat": ["zz", "a"], "shop": ["x", "nowhere"],
                                     "price": [1.0, 2.0]}))
    assert new["cat_shop_count"].tolist() == [0, 0]
    assert new["cat_shop_price_mean"].isna().all()


def test_one_partition_equals_many_on_the_cluster(tmp_path, client):
    df = jg_frame(rows=2000, seed=5)
    node = ["cat", "shop", "price", "qty"] >> ops.JoinGroupby(["price", "qty"], split_out=3)
    many = new_workflow(node, tmp_path).fit_transform(partitioned(df, 6)).compute()
    one = new_workflow(node, tmp_path).fit_transform(partitioned(df, 1)).compute()
    assert_frames_equal(many, one)
    assert_matches(many[[c for c in many.columns if c.startswith("shop_")]],
                   expected_stats(df, ["shop"], "shop"))


def test_more_partitions_than_a_tree_node_takes_with_splits_match_pandas(tmp_path):
    """21 partitions (above FAN_IN, not a multiple of it) and 3 splits: the first tree level
    merges whole partials (every key and split), the rest per split; pandas agrees."""
    df = jg_frame(rows=3000, seed=9)
    node = ["cat", "shop", "price", "qty"] >> ops.JoinGroupby(["price", "qty"], split_out=3)
    out = new_workflow(node, tmp_path).fit_transform(partitioned(df, 21)).compute()
    for key in ("cat", "shop"):
        has_key = df[key].notna().to_numpy()
        got = out[[c for c in out.columns if c.startswith(f"{key}_")]]
        assert_matches(got[has_key], expected_stats(df, [key], key)[has_key])


def test_large_offsets_keep_the_variance_exact(tmp_path):
    """Chan's merge of partial moments: no cancellation for values far from zero."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"k": rng.integers(0, 3, 3000), "t": 1.7e9 + rng.random(3000)})
    node = ["k", "t"] >> ops.JoinGroupby(["t"], stats=["var"])
    out = new_workflow(node, tmp_path).fit_transform(partitioned(df, 7)).compute()
    want = df.groupby("k")["t"].var().reindex(df["k"]).to_numpy()
    # float64 spacing at 1.7e9 is 2e-7: sums of squares would be off by about 1e2 here
    np.testing.assert_allclose(out["k_t_var"].to_numpy(dtype=np.float64), want, rtol=1e-5)


def test_save_load_round_trip(tmp_path):
    df = jg_frame()
    wf = new_workflow(["cat", "price"] >> ops.JoinGroupby(["price"], stats=["max", "std"]),
                      tmp_path)
    wf.fit(df)
    wf.save(tmp_path / "saved")
    loaded = irs.Workflow.load(tmp_path / "saved")
    assert_frames_equal(loaded.transform(df), wf.transform(df))


def test_join_groupby_errors_name_operator_and_column():
    df = jg_frame(rows=30)
    with pytest.raises(irs.SchemaError, match=r"JoinGroupby.*'nope'"):  # not in the data
        irs.Workflow(["cat"] >> ops.JoinGroupby(["nope"])).fit(df)
    with pytest.raises(irs.SchemaError, match=r"JoinGroupby.*numeric.*'shop'"):
        irs.Workflow(["cat", "shop"] >> ops.JoinGroupby(["shop"])).fit(df)
    with pytest.raises(irs.ParameterError, match="stats"):
        ops.JoinGroupby(["price"], stats=["median"])
    with pytest.raises(irs.ParameterError, match="cont_cols"):
        ops.JoinGroupby(stats=["mean"])


# ---- JoinExternal ------------------------------------------------------------------------------
def side_frame() -> pd.DataFrame:
    return pd.DataFrame({"item": pd.array([5, 1, 2, 9], dtype="int32"),
                         "genre": ["rock", "jazz", None, "pop"], "year": [1999, 2001, 2010, 1985]})


def rows_frame(rows: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item = pd.array(rng.integers(0, 11, rows), dtype="Int64")
    item[rng.random(rows) < 0.05] = pd.NA
    return pd.DataFrame({"item": item, "x": rng.random(rows)})


def expected_join(df: pd.DataFrame, side: pd.DataFrame, how: str) -> pd.DataFrame:
    right = side.astype({"item": "Int64"})
    return df.merge(right, on="item", how=how).reset_index(drop=True)


@pytest.mark.parametrize("how", ["left", "inner"])
def test_join_external_matches_pandas_merge_and_keeps_row_order(tmp_path, how):
    df, side = rows_frame(), side_frame()
    wf = new_workflow(["item", "x"] >> ops.JoinExternal(side, on="item", how=how), tmp_path)
    out = wf.fit_transform(partitioned(df, 3)).compute()
    want = expected_join(df, side, how)
    assert list(out.columns) == ["item", "x", "genre", "year"]
    assert len(out) == len(want) == (len(df) if how == "left" else
                                      int(df["item"].isin(side["item"]).sum()))
    assert out["x"].tolist() == want["x"].tolist()  # the data's row order
    assert out["genre"].fillna("?").tolist() == want["genre"].fillna("?").tolist()
    assert out["year"].astype("Float64").tolist() == want["year"].astype("Float64").tolist()
    assert output_dtypes(out)["year"] == "int64"


def test_parquet_side_table_with_a_joint_key_and_chosen_columns(tmp_path):
    side = side_frame().assign(shop=["a", "b", "a", "b"])
    side.to_parquet(tmp_path / "side.parquet")
    df = rows_frame().assign(shop=lambda d: np.where(d["x"] > 0.5, "a", "b"))
    op = ops.JoinExternal(str(tmp_path / "side.parquet"), on=["item", "shop"],
                          columns_ext=["year"])
    out = new_workflow(["item", "shop"] >> op, tmp_path).fit_transform(df)
    want = df.merge(side.astype({"item": "Int64"}), on=["item", "shop"], how="left")
    assert list(out.columns) == ["item", "shop", "year"]
    assert out["year"].astype("Float64").tolist() == want["year"].astype("Float64").tolist()
    assert out["year"].notna().sum() > 10


def test_one_partition_equals_many_on_the_cluster_for_join_external(tmp_path, client):
    df, side = rows_frame(rows=1500), side_frame()
    node = ["item", "x"] >> ops.JoinExternal(side, on="item", how="inner")
    many = new_workflow(node, tmp_path).fit_transform(partitioned(df, 5)).compute()
    one = new_workflow(node, tmp_path).fit_transform(partitioned(df, 1)).compute()
    assert_frames_equal(many, one)


def test_save_stores_the_side_table_as_parquet_never_pickle(tmp_path):
    df, side = rows_frame(), side_frame()
    side.to_parquet(tmp_path / "side.parquet")
    op = ops.JoinExternal(str(tmp_path / "side.parquet"), on="item")
    wf = new_workflow(["item"] >> op, tmp_path)
    wf.fit(df)
    wf.save(tmp_path / "saved")
    (tmp_path / "side.parquet").unlink()  # the saved workflow carries its own copy
    files = sorted(p.relative_to(tmp_path / "saved").as_posix()
                   for p in (tmp_path / "saved").rglob("*") if p.is_file())
    assert all(f.endswith((".json", ".parquet")) or f == "_SUCCESS" for f in files), files
    json.loads((tmp_path / "saved" / "_SUCCESS").read_text())  # the manifest: JSON too
    stored = [f for f in files if f.startswith("artifacts/side_tables/")]
    assert len(stored) == 1
    assert pd.read_parquet(tmp_path / "saved" / stored[0]).equals(side)
    loaded = irs.Workflow.load(tmp_path / "saved")
    assert_frames_equal(loaded.transform(df), wf.transform(df))
    # an in-memory side table is saved by content hash and found again in the artifacts
    mem = new_workflow(["item"] >> ops.JoinExternal(side, on="item"), tmp_path).fit(df)
    mem.save(tmp_path / "saved2")
    again = irs.Workflow.load(tmp_path / "saved2")
    assert again.nodes[-1].op == mem.nodes[-1].op
    assert_frames_equal(again.fit(df).transform(df), mem.transform(df))


def test_join_external_errors_name_operator_and_column(tmp_path):
    df, side = rows_frame(rows=20), side_frame()
    with pytest.raises(irs.SchemaError, match=r"JoinExternal.*'item'.*string in the data.*int32"):
        irs.Workflow(["item"] >> ops.JoinExternal(side, on="item")).fit(
            df.astype({"item": "string"}))
    with pytest.raises(irs.SchemaError, match=r"JoinExternal.*unique.*'item'"):
        irs.Workflow(["item"] >> ops.JoinExternal(pd.concat([side, side]), on="item")).fit(df)
    # the repeated keys are named, as people read them (a joint key as a tuple)
    twice = pd.concat([side, side.iloc[[2]]])
    with pytest.raises(irs.SchemaError, match=r"1 rows repeat a key \(e\.g\. 2 \(2 rows\)\)"):
        irs.Workflow(["item"] >> ops.JoinExternal(twice, on="item")).fit(df)
    joint = twice.assign(shop=["a", "b", None, "b", None])
    with pytest.raises(irs.SchemaError, match=r"e\.g\. \('2', None\) \(2 rows\)"):
        irs.Workflow(["item", "shop"] >> ops.JoinExternal(joint, on=["item", "shop"])).fit(
            df.assign(shop="a"))
    with pytest.raises(irs.SchemaError, match=r"JoinExternal joins on 'item'"):
        irs.Workflow(["x"] >> ops.JoinExternal(side, on="item")).fit(df)
    with pytest.raises(irs.SchemaError, match=r"JoinExternal would add the column 'x'"):
        irs.Workflow(["item", "x"] >> ops.JoinExternal(side.assign(x=1), on="item")).fit(df)
    with pytest.raises(irs.ParameterError, match=r"no column 'genres'.*columns_ext"):
        ops.JoinExternal(side, on="item", columns_ext=["genres"])
    with pytest.raises(irs.ParameterError, match=r"df_ext.*missing\.parquet"):
        ops.JoinExternal(str(tmp_path / "missing.parquet"), on="item")


def test_side_table_survives_copies_but_not_pickles(tmp_path):
    import copy
    import pickle

    op = ops.JoinExternal(side_frame(), on="item")
    assert copy.deepcopy(op).df_ext.table is op.df_ext.table  # e.g. the builder's undo history
    shipped = pickle.loads(pickle.dumps(op))  # what Dask sends to workers: no data
    assert shipped.df_ext.table is None and shipped == op
    with pytest.raises(irs.ParameterError, match="not in the artifacts"):
        irs.Workflow(["item"] >> shipped, artifacts_dir=tmp_path).fit(rows_frame(rows=10))
