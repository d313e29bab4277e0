"""JoinGroupby and JoinExternal against independent pandas computations."""

from __future__ import annotations

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
    with pytest.raises(irs.SchemaError, match=r"JoinGroupby.*'price'"):
        irs.Workflow(["cat"] >> ops.JoinGroupby(["price"])).fit(df)
    with pytest.raises(irs.SchemaError, match=r"JoinGroupby.*numeric.*'shop'"):
        irs.Workflow(["cat", "shop"] >> ops.JoinGroupby(["shop"])).fit(df)
    with pytest.raises(irs.ParameterError, match="stats"):
        ops.JoinGroupby(["price"], stats=["median"])
    with pytest.raises(irs.ParameterError, match="cont_cols"):
        ops.JoinGroupby(stats=["mean"])
