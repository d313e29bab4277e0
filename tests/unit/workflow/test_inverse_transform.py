"""Workflow.inverse_transform (issue 53, item 1): Categorify's ids back to values.

The expectation is the input frame itself (pandas): ``inverse_transform(transform(df))``
gives back every value the vocabulary holds, nulls as nulls, and the documented marker where
a value was cut (freq_threshold, max_size, max_frequency, num_buckets); columns of the data
the workflow did not encode pass unchanged; hashed or re-transformed ids are refused by name.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError, ParameterError, SchemaError
from interactive_recsys.models import Popularity, predict_topk


def _frame(rows: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    items = [f"i{k}" for k in rng.zipf(1.5, rows) % 25]
    users = (rng.zipf(1.3, rows) % 30).astype("int64")
    items[3] = None
    return pd.DataFrame({"item": pd.Series(items, dtype="str"), "user": users,
                         "x": rng.normal(size=rows)})


def _expected(df: pd.DataFrame, column: str, kept: set, marker: object) -> list:
    """The column as read back: kept values as they are, null as null, others the marker."""
    return [None if pd.isna(v) else v if v in kept else marker for v in df[column]]


def _as_list(series: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in series]


def test_round_trip_gives_back_the_frame():
    df = _frame()
    wf = irs.Workflow((["item", "user"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    out = wf.fit_transform(df)
    back = wf.inverse_transform(out)
    pd.testing.assert_frame_equal(back[["item", "user"]], df[["item", "user"]])
    np.testing.assert_array_equal(back["x"], out["x"])  # not encoded: unchanged


def test_values_come_back_in_their_original_dtypes():
    df = pd.DataFrame({"i32": pd.array([5, 7, 5], dtype="int32"), "f": [0.5, 1.5, 0.5],
                       "s": ["a", "b", "a"]})
    wf = irs.Workflow(["i32", "f", "s"] >> ops.Categorify(dtype="int32"))
    back = wf.inverse_transform(wf.fit_transform(df))
    assert back.dtypes.to_dict() == df.dtypes.to_dict()
    pd.testing.assert_frame_equal(back, df)


@pytest.mark.parametrize("params", [{"freq_threshold": 3}, {"max_size": 4},
                                    {"num_buckets": 5, "freq_threshold": 2},
                                    {"max_frequency": 6}])
def test_out_of_vocabulary_ids_give_the_marker_never_another_value(params):
    df = _frame(200, seed=1)
    wf = irs.Workflow(["item", "user"] >> ops.Categorify(**params)).fit(df)
    back = wf.inverse_transform(wf.transform(df))
    for column, marker in (("item", "<OOV>"), ("user", -1)):
        kept = set(wf.vocabulary(column))
        assert 0 < len(kept) < df[column].nunique()  # some values were cut
        assert _as_list(back[column]) == _expected(df, column, kept, marker)


def test_each_oov_bucket_id_and_the_null_and_padding_ids():
    wf = irs.Workflow(["c"] >> ops.Categorify(num_buckets=3)).fit(
        pd.DataFrame({"c": ["a", "b", "a"]}))
    ids = pd.DataFrame({"c": pd.array([0, 1, 2, 3, 4, 5, 6, None], dtype="Int64")})
    assert _as_list(wf.inverse_transform(ids)["c"]) == \
        [None, None, "<OOV>", "<OOV>", "<OOV>", "a", "b", None]


def test_an_id_outside_the_table_is_an_error_naming_column_and_id():
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "b"]}))
    for bad in (5, -1):
        with pytest.raises(DatasetError, match=rf"Column 'c' holds the id {bad}, outside \[0, 5\)"):
            wf.inverse_transform(pd.DataFrame({"c": [3, bad]}))


def test_a_marker_the_vocabulary_holds_is_refused_and_another_can_be_given():
    df = pd.DataFrame({"c": ["<OOV>", "a", "a"], "n": [-1, 4, 4]})
    wf = irs.Workflow(["c", "n"] >> ops.Categorify()).fit(df)
    ids = wf.transform(pd.DataFrame({"c": ["<OOV>", "zz"], "n": [-1, 9]}))
    with pytest.raises(ParameterError, match="vocabulary of 'c' holds '<OOV>'"):
        wf.inverse_transform(ids)
    with pytest.raises(ParameterError, match="vocabulary of 'n' holds -1"):
        wf.inverse_transform(ids, oov={"c": "?"})
    back = wf.inverse_transform(ids, oov={"c": "?", "n": -999})
    assert back["c"].tolist() == ["<OOV>", "?"] and back["n"].tolist() == [-1, -999]
    with pytest.raises(ParameterError, match="not a int64 value"):
        wf.inverse_transform(ids, oov={"c": "?", "n": "none"})
    nulls = wf.inverse_transform(ids, oov={"c": None, "n": None})  # asked for: null
    assert _as_list(nulls["c"]) == ["<OOV>", None] and _as_list(nulls["n"]) == [-1, None]


def test_a_dtype_without_a_default_marker_needs_one_only_for_oov_ids():
    df = pd.DataFrame({"flag": [True, True, False]})
    wf = irs.Workflow(["flag"] >> ops.Categorify(freq_threshold=2)).fit(df)
    ids = wf.transform(df)
    assert _as_list(wf.inverse_transform(ids.iloc[:2])["flag"]) == [True, True]
    with pytest.raises(DatasetError, match="no default marker.*oov=\\{'flag'"):
        wf.inverse_transform(ids)
    assert _as_list(wf.inverse_transform(ids, oov={"flag": None})["flag"]) == [True, True, None]


def test_joint_groups_share_one_vocabulary():
    df = pd.DataFrame({"src": ["a", "b", None, "c"], "dst": ["b", "c", "a", "d"]})
    wf = irs.Workflow([["src", "dst"]] >> ops.Categorify(encode_type="joint"))
    out = wf.fit_transform(df)
    assert wf.vocabulary("src").equals(wf.vocabulary("dst"))
    pd.testing.assert_frame_equal(wf.inverse_transform(out), df)


def test_a_combo_group_comes_back_as_one_column_per_member():
    df = pd.DataFrame({"country": ["us", "fr", "us", None], "cat": [1, 2, 1, 3],
                       "y": [0, 1, 0, 1]})
    wf = irs.Workflow(([["country", "cat"]] >> ops.Categorify(encode_type="combo")) + ["y"])
    out = wf.fit_transform(df)
    back = wf.inverse_transform(out)
    assert list(back.columns) == ["country_cat.country", "country_cat.cat", "y"]
    assert _as_list(back["country_cat.country"]) == ["us", "fr", "us", None]
    assert back["country_cat.cat"].tolist() == [1, 2, 1, 3]
    unseen = wf.inverse_transform(pd.DataFrame({"country_cat": [2]}))
    assert unseen.iloc[0].tolist() == ["<OOV>", -1]


def test_list_columns_come_back_as_lists():
    df = pd.DataFrame({"tags": pd.Series([["a", "b"], [], None, ["b"]], dtype=object)})
    wf = irs.Workflow(["tags"] >> ops.Categorify())
    back = wf.inverse_transform(wf.fit_transform(df))
    assert [None if v is None else list(v) for v in back["tags"]] == [["a", "b"], [], None, ["b"]]


def test_renamed_and_tagged_outputs_are_traced_back_and_other_columns_pass():
    df = _frame()
    wf = irs.Workflow((["item"] >> ops.Categorify() >> ops.Rename(postfix="_id")
                       >> ops.AddTags(["item"])) + ["x"])
    out = wf.fit_transform(df)
    back = wf.inverse_transform(out.assign(extra=1))
    assert _as_list(back["item_id"]) == _as_list(df["item"])
    assert back["extra"].tolist() == [1] * len(df) and back["x"].equals(out["x"])
    only = wf.inverse_transform(out, columns=["x"])  # nothing read back
    assert only["item_id"].equals(out["item_id"])


@pytest.mark.parametrize(("node", "column", "match"), [
    (["c"] >> ops.HashBucket(10), "c", "hashed ids of HashBucket.*no inverse"),
    ([["c", "d"]] >> ops.HashedCross(10), "c_X_d", "hashed ids of HashedCross"),
    (["c"] >> ops.Categorify() >> ops.LambdaOp("x + 1"), "c",
     r"ids of categorify-1 changed again by LambdaOp"),
    (["c"] >> ops.Categorify() >> ops.Rename(postfix="_h") >> ops.HashBucket(5), "c_h",
     "HashBucket"),
])
def test_ids_without_an_inverse_are_refused_by_name(node, column, match):
    df = pd.DataFrame({"c": ["a", "b"], "d": ["x", "y"]})
    wf = irs.Workflow(node).fit(df)
    with pytest.raises(SchemaError, match=match):
        wf.inverse_transform(wf.transform(df))
    assert column in wf.output_columns


def test_lists_of_ids_a_groupby_made_are_refused_by_name():
    df = pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "a"]})
    wf = irs.Workflow((["user"] + (["item"] >> ops.Categorify())) >> ops.Groupby(["user"]))
    out = wf.fit_transform(df)
    with pytest.raises(SchemaError, match="'item_list' is made by Groupby"):
        wf.inverse_transform(out)


def test_row_filters_joins_and_groupby_keys_keep_the_ids():
    df = pd.DataFrame({"user": ["u1", "u1", "u2", "u3"], "item": ["a", "b", "a", "c"],
                       "r": [5, 1, 4, 5]})
    grouped = irs.Workflow(((["user", "item"] >> ops.Categorify()) + ["r"])
                           >> ops.Filter("r >= 4") >> ops.Groupby(["user"],
                                                                  aggs={"item": ["list"]}))
    ids = grouped.fit_transform(df)
    with pytest.raises(SchemaError, match="'item_list' is made by Groupby"):
        grouped.inverse_transform(ids)  # lists of ids: no vocabulary reads them
    assert _as_list(grouped.inverse_transform(ids, columns=["user"])["user"]) == \
        ["u1", "u2", "u3"]  # the group keys, read back
    side = pd.DataFrame({"user": [3, 4, 5], "age": [30, 40, 50]})  # joined by id
    joined = irs.Workflow(["user"] >> ops.Categorify() >> ops.JoinExternal(side, on="user"))
    back = joined.inverse_transform(joined.fit_transform(df))
    assert _as_list(back["user"]) == df["user"].tolist() and back["age"].tolist() == \
        [30, 30, 40, 50]


def test_ids_must_be_integers():
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a"]}))
    with pytest.raises(SchemaError, match="'c' holds float64 values.*astype"):
        wf.inverse_transform(pd.DataFrame({"c": [3.0, np.nan]}))


def test_retired_ids_give_the_marker():
    wf = irs.Workflow(["c"] >> ops.Categorify(max_frequency=2)).fit(
        pd.DataFrame({"c": ["a", "a", "b"]}))
    day2 = wf.update(pd.DataFrame({"c": ["a"]}))  # a: 3 > 2, its id 3 retired
    assert _as_list(day2.inverse_transform(pd.DataFrame({"c": [3, 4]}))["c"]) == ["<OOV>", "b"]
    assert day2.vocabulary("c").to_dict() == {4: "b"}


def test_a_dataset_reads_back_lazily_on_the_cluster(client, tmp_path):
    df = _frame(300, seed=4)
    wf = irs.Workflow((["item", "user"] >> ops.Categorify(freq_threshold=2))
                      + (["x"] >> ops.Normalize()), artifacts_dir=str(tmp_path / "art"))
    ids = wf.fit_transform(irs.Dataset(dd.from_pandas(df, npartitions=4, sort=False)))
    back = wf.inverse_transform(ids)
    assert isinstance(back, irs.Dataset) and back.npartitions == 4
    assert back.schema["item"].dtype == "string" and back.schema["user"].dtype == "int64"
    got = back.compute()
    for column, marker in (("item", "<OOV>"), ("user", -1)):
        kept = set(wf.vocabulary(column))
        assert _as_list(got[column]) == _expected(df, column, kept, marker)


def test_predict_topk_returns_item_keys_with_the_workflow():
    logs = pd.DataFrame({"user": ["u1", "u1", "u2", "u3", "u3", "u2"],
                         "item": ["tea", "jam", "tea", "oat", "tea", "rye"]})
    wf = irs.Workflow(["user", "item"] >> ops.Categorify()).fit(logs)
    ids = wf.transform(logs)
    model = Popularity(user_col="user", item_col="item").fit(ids)
    top_ids = predict_topk(model, ids, k=2).compute()
    keys = predict_topk(model, ids, k=2, workflow=wf).compute()
    # the same ranking, read back with the vocabulary (an independent dict of pandas)
    item_of = dict(zip(wf.transform(logs)["item"], logs["item"], strict=True))
    user_of = dict(zip(wf.transform(logs)["user"], logs["user"], strict=True))
    assert keys["item"].tolist() == [item_of[i] for i in top_ids["item"]]
    assert keys["user"].tolist() == [user_of[u] for u in top_ids["user"]]
    assert keys["rank"].tolist() == top_ids["rank"].tolist()
