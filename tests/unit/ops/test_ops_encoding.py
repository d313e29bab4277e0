"""TargetEncoding (and the other encoders of this module) against independent pandas code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ops._target_encoding import fold_ids
from interactive_recsys.tables._context import OpContext
from tests.conftest import assert_frames_equal, new_workflow, partitioned

P_SMOOTH = 3.0


def te_frame(rows: int = 600, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    items = rng.choice(["a", "b", "c", "d", "e", None], rows, p=[.3, .25, .2, .1, .1, .05])
    shops = rng.choice(["x", "y"], rows)
    target = rng.random(rows).round(3)
    target[rng.random(rows) < 0.05] = np.nan  # missing targets do not count
    return pd.DataFrame({"item": pd.array(items, dtype="string[pyarrow]"),
                         "shop": pd.array(shops, dtype="string[pyarrow]"),
                         "rid": np.arange(rows, dtype=np.int64), "y": target})


def encode(stats: pd.DataFrame, keys: pd.Series, prior: float) -> np.ndarray:
    """The smoothed mean of each key from a ``sum``/``count`` table (prior when unknown)."""
    s = keys.map(stats["sum"]).fillna(0.0).to_numpy(dtype=np.float64)
    n = keys.map(stats["count"]).fillna(0.0).to_numpy(dtype=np.float64)
    return (s + prior * P_SMOOTH) / (n + P_SMOOTH)


def folds_of(df: pd.DataFrame, columns: list[str], kfold: int = 5, seed: int = 42) -> np.ndarray:
    b = irs.get_backend("cpu")
    return fold_ids(b.from_pandas(df), columns, kfold, seed, OpContext(b, []))


def test_new_data_uses_full_statistics_like_pandas(tmp_path):
    df = te_frame()
    wf = new_workflow(["item", "y"] >> ops.TargetEncoding("y", p_smooth=P_SMOOTH,
                                                          out_dtype="float64"), tmp_path)
    wf.fit(partitioned(df, 3))
    new = pd.DataFrame({"item": pd.array(["a", "zz", None, "c"], dtype="string[pyarrow]"),
                        "y": [0.0, 0.0, 0.0, 0.0]})
    out = wf.transform(new)
    known = df.dropna(subset=["y"])
    stats = known.groupby("item")["y"].agg(["sum", "count"])
    expected = encode(stats, new["item"].astype(object), known["y"].mean())
    np.testing.assert_allclose(out["TE_item_y"].to_numpy(dtype=np.float64), expected, rtol=1e-12)
    assert out["TE_item_y"][1] == pytest.approx(known["y"].mean())  # unseen: global mean


def test_training_data_is_encoded_out_of_fold_like_pandas(tmp_path):
    df = te_frame()
    wf = new_workflow(["item", "y", "rid"] >> ops.TargetEncoding(
        "y", p_smooth=P_SMOOTH, fold_cols=["rid"], out_dtype="float64"), tmp_path)
    out = wf.fit_transform(partitioned(df, 4)).compute()
    folds = folds_of(df, ["rid"])
    assert sorted(np.unique(folds)) == [0, 1, 2, 3, 4]
    expected = np.empty(len(df))
    for f in range(5):
        rest = df[(folds != f) & df["y"].notna()]
        stats = rest.groupby("item")["y"].agg(["sum", "count"])
        rows = folds == f
        expected[rows] = encode(stats, df["item"][rows].astype(object), rest["y"].mean())
    np.testing.assert_allclose(out["TE_item_y"].to_numpy(dtype=np.float64), expected, rtol=1e-12)
    # and the same rows as new data get the full statistics, which differ
    assert not np.allclose(wf.transform(df)["TE_item_y"].to_numpy(dtype=np.float64), expected)


@pytest.mark.parametrize("fold_cols", [["rid"], None])
def test_a_rows_own_target_never_contributes_to_its_encoding(tmp_path, fold_cols):
    df = te_frame(rows=300)
    df["y"] = df["y"].fillna(0.5)
    row = int(np.flatnonzero(df["item"].eq("a").fillna(False).to_numpy(dtype=bool))[0])
    hashed = fold_cols or ["item", "y", "rid"]  # the default folds hash the target too

    def with_target(value: float) -> pd.DataFrame:
        changed = df.copy()
        changed.loc[row, "y"] = value
        return changed

    # the row's own target: 0 or a wildly different value that keeps the row in its fold
    fold = folds_of(with_target(0.0), hashed)[row]
    big = next(v for v in range(1000, 1100) if folds_of(with_target(v), hashed)[row] == fold)
    outputs, full = [], []
    for value in (0.0, big):
        wf = new_workflow(["item", "y", "rid"] >> ops.TargetEncoding(
            "y", p_smooth=P_SMOOTH, fold_cols=fold_cols, out_dtype="float64"), tmp_path)
        outputs.append(wf.fit_transform(partitioned(with_target(value), 3)).compute()["TE_item_y"])
        full.append(wf.transform(with_target(value))["TE_item_y"][row])
    assert outputs[0][row] == outputs[1][row]  # training: out-of-fold
    assert (outputs[0] != outputs[1]).sum() > 0  # the target counts for rows of other folds
    assert full[0] != full[1]  # new data: the full statistics include it


def test_training_encoding_is_the_same_for_any_partitioning(tmp_path, client):
    df = te_frame()
    node = ["item", "shop", "y"] >> ops.TargetEncoding("y", kfold=3, fold_seed=7)
    one = new_workflow(node, tmp_path).fit_transform(partitioned(df, 1)).compute()
    many = new_workflow(node, tmp_path).fit_transform(partitioned(df, 5)).compute()
    assert list(one.columns) == ["TE_item_y", "TE_shop_y"]
    assert_frames_equal(one, many)
    shuffled = df.sample(frac=1.0, random_state=3)  # a row's fold follows the row
    again = new_workflow(node, tmp_path).fit_transform(partitioned(shuffled, 4)).compute()
    np.testing.assert_array_equal(again["TE_item_y"].to_numpy(),
                                  one["TE_item_y"].to_numpy()[shuffled.index.to_numpy()])


def test_joint_group_encodes_the_combination(tmp_path):
    df = te_frame()
    wf = new_workflow([["item", "shop"], "y"] >> ops.TargetEncoding(
        "y", p_smooth=P_SMOOTH, out_dtype="float64"), tmp_path)
    wf.fit(df)
    out = wf.transform(df)
    assert list(out.columns) == ["TE_item_shop_y"]
    known = df.dropna(subset=["y"])
    stats = known.groupby(["item", "shop"])["y"].agg(["sum", "count"])
    keys = pd.Series(list(zip(df["item"].astype(object), df["shop"], strict=True)))
    s = keys.map(lambda k: stats["sum"].get(k, 0.0)).to_numpy(dtype=np.float64)
    n = keys.map(lambda k: stats["count"].get(k, 0.0)).to_numpy(dtype=np.float64)
    prior = known["y"].mean()
    expected = (s + prior * P_SMOOTH) / (n + P_SMOOTH)
    has_item = df["item"].notna().to_numpy()  # a null item is a key of its own in a group
    np.testing.assert_allclose(out["TE_item_shop_y"].to_numpy(dtype=np.float64)[has_item],
                               expected[has_item], rtol=1e-12)


def test_folds_are_balanced_deterministic_and_seeded():
    df = pd.DataFrame({"rid": np.arange(20_000)})
    folds = folds_of(df, ["rid"], kfold=4)
    counts = np.bincount(folds, minlength=4)
    assert counts.min() > 0.9 * 5000 and counts.max() < 1.1 * 5000
    np.testing.assert_array_equal(folds_of(df.iloc[::-1], ["rid"], kfold=4), folds[::-1])
    assert (folds_of(df, ["rid"], kfold=4, seed=43) != folds).mean() > 0.5


def test_save_load_keeps_both_encodings(tmp_path):
    df = te_frame()
    wf = new_workflow(["item", "y", "rid"] >> ops.TargetEncoding("y", fold_cols=["rid"],
                                                                 split_out=3), tmp_path)
    trained = wf.fit_transform(df)
    wf.save(tmp_path / "saved")
    loaded = irs.Workflow.load(tmp_path / "saved")
    assert_frames_equal(loaded.transform(df, training=True), trained)
    assert_frames_equal(loaded.transform(df), wf.transform(df))
    assert loaded.output_schema["TE_item_y"].dtype == "float32"


def test_target_errors_name_the_operator_and_the_column():
    df = te_frame(rows=20)
    with pytest.raises(irs.SchemaError, match=r"TargetEncoding.*'label'"):
        irs.Workflow(["item", "y"] >> ops.TargetEncoding("label")).fit(df)
    with pytest.raises(irs.SchemaError, match=r"TargetEncoding.*numeric target.*'shop'"):
        irs.Workflow(["item", "shop"] >> ops.TargetEncoding("shop")).fit(df)
    with pytest.raises(irs.SchemaError, match=r"TargetEncoding.*'ts'.*fold_cols"):
        irs.Workflow(["item", "y"] >> ops.TargetEncoding("y", fold_cols=["ts"])).fit(df)
    with pytest.raises(irs.SchemaError, match=r"no non-missing value of its target 'y'"):
        irs.Workflow(["item", "y"] >> ops.TargetEncoding("y")).fit(df.assign(y=np.nan))
    with pytest.raises(irs.SchemaError, match=r"TargetEncoding.*holds the target 'y'"):
        irs.Workflow([["item", "y"], "y"] >> ops.TargetEncoding("y")).fit(df)
    with pytest.raises(irs.ParameterError, match="kfold"):
        ops.TargetEncoding("y", kfold=0)


# ---- HashedCross -------------------------------------------------------------------------------
def cross_frame(rows: int = 3000, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    user = pd.array(rng.integers(0, 40, rows), dtype="Int64")
    user[rng.random(rows) < 0.03] = pd.NA
    return pd.DataFrame({"user": user, "item": rng.choice(["a", "b", "c", "dd"], rows),
                         "hour": rng.integers(0, 24, rows)})


def test_hashed_cross_ids_equal_exactly_when_the_combinations_do(tmp_path):
    df = cross_frame()
    wf = new_workflow(["user", "item"] >> ops.HashedCross(2**40), tmp_path)
    out = wf.fit_transform(partitioned(df, 3)).compute()
    assert list(out.columns) == ["user_X_item"]
    ids = out["user_X_item"].to_numpy()
    has_null = df["user"].isna().to_numpy()
    assert (ids[has_null] == 1).all()  # any null crossed value -> the null index
    pairs = pd.Series(list(zip(df["user"].astype(object), df["item"], strict=True)))[~has_null]
    codes = pairs.astype(str).factorize()[0]
    assert len(np.unique(ids[~has_null])) == len(np.unique(codes))  # no collision at 2**40
    mapping = pd.DataFrame({"id": ids[~has_null], "code": codes})
    assert (mapping.groupby("code")["id"].nunique() == 1).all()
    assert wf.output_schema["user_X_item"].cardinality == 2 + 2**40


def test_hashed_cross_buckets_are_in_range_uniform_and_groups_are_separate(tmp_path):
    df = cross_frame()
    wf = new_workflow([["user", "item"], ["item", "hour"]] >> ops.HashedCross(7, dtype="int32"),
                      tmp_path)
    out = wf.fit_transform(df)
    assert list(out.columns) == ["user_X_item", "item_X_hour"]
    ids = out["item_X_hour"].to_numpy()
    assert ids.min() >= 2 and ids.max() < 9
    counts = np.bincount(ids - 2, minlength=7)
    assert counts.min() > 0.6 * len(df) / 7  # 96 combinations spread over 7 buckets
    swapped = new_workflow(["item", "user"] >> ops.HashedCross(2**40), tmp_path).fit_transform(df)
    crossed = new_workflow(["user", "item"] >> ops.HashedCross(2**40), tmp_path).fit_transform(df)
    assert (swapped["item_X_user"].to_numpy() != crossed["user_X_item"].to_numpy()).mean() > 0.9


def test_hashed_cross_is_the_same_for_any_partitioning_on_the_cluster(tmp_path, client):
    df = cross_frame()
    node = [["user", "hour"]] >> ops.HashedCross(1000)
    one = new_workflow(node, tmp_path).fit_transform(partitioned(df, 1)).compute()
    many = new_workflow(node, tmp_path).fit_transform(partitioned(df, 6)).compute()
    assert_frames_equal(one, many)


def test_hashed_cross_errors_name_the_columns():
    df = cross_frame(rows=10)
    with pytest.raises(irs.SchemaError, match=r"HashedCross needs at least two columns"):
        irs.Workflow(["user"] >> ops.HashedCross(10)).fit(df)
    with pytest.raises(irs.SchemaError, match=r"HashedCross got the plain column 'hour'"):
        irs.Workflow([["user", "item"], "hour"] >> ops.HashedCross(10)).fit(df)
    with pytest.raises(irs.SchemaError, match=r"HashedCross cannot cross the list column 'l'"):
        irs.Workflow(["user", "l"] >> ops.HashedCross(10)).fit(df.assign(l=[[1]] * 10))
