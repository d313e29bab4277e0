"""NVTabular 23.08's operator options in the port (issue 40, item 19): each is accepted when
the result is the same, mapped to its equivalent, or refused with the reason and the fix,
never as if misspelled ("has no parameter", "unexpected keyword").

Expected values come from pandas (the formulas NVTabular 23.08's operators compute, read in
its ``nvtabular/ops/*.py``), not from the port.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys.compat.nvtabular as nvt
from interactive_recsys.errors import ParameterError

ops = nvt.ops

#: The keyword options of NVTabular 23.08's operators (``__init__`` of nvtabular/ops/*.py at
#: tag v23.08.00; ``LambdaOp`` is merlin's ``UDF``), each with a value other than its default
#: (or the default where only that is meaningful). Required arguments are in ``_REQUIRED``.
NVT_OPTIONS: dict[str, dict[str, object]] = {
    "Categorify": {"freq_threshold": 2, "out_path": "cats", "cat_cache": "device",
                   "dtype": np.int32, "on_host": False, "encode_type": "combo",
                   "name_sep": "_", "search_sorted": True, "num_buckets": 4, "max_size": 10,
                   "single_table": True, "cardinality_memory_limit": "1GB",
                   "tree_width": 4, "split_out": 2, "split_every": 4, "vocabs": None,
                   "start_index": 1, "na_sentinel": 0},
    "TargetEncoding": {"target_mean": 0.5, "kfold": 5, "fold_seed": 1, "p_smooth": 10,
                       "out_col": "te", "out_dtype": np.float64, "split_out": 2,
                       "split_every": 4, "cat_cache": "device", "out_path": "te",
                       "on_host": False, "name_sep": "_", "drop_folds": False,
                       "tree_width": 4},
    "JoinGroupby": {"cont_cols": ["x"], "stats": ["count"], "split_out": 2,
                    "split_every": 4, "cat_cache": "device", "out_path": "jg",
                    "on_host": False, "name_sep": "_", "tree_width": 4},
    "JoinExternal": {"how": "inner", "on_ext": "k", "columns_ext": ["k", "w"],
                     "drop_duplicates_ext": True, "kind_ext": "PANDAS", "cache": "device"},
    "Normalize": {"out_dtype": np.float64},
    "NormalizeMinMax": {"out_dtype": np.float64},
    "ReduceDtypeSize": {"float_dtype": np.float64},
    "FillMissing": {"fill_val": 1, "add_binary_cols": True},
    "FillMedian": {"add_binary_cols": True},
    "DropLowCardinality": {"min_cardinality": 4},
    "ListSlice": {"end": 3, "pad": True, "pad_value": 0.0},
    "Groupby": {"groupby_cols": ["k"], "sort_cols": ["x"], "aggs": ["count"],
                "name_sep": "_", "ascending": False},
    "DifferenceLag": {"shift": 2},
    "Clip": {"min_value": 0, "max_value": 1},
    "Rename": {"postfix": "_x"},
    "LambdaOp": {"dependency": None, "label": "double", "dtype": np.float32,
                 "tags": ["continuous"], "properties": {"a": 1}},
    "AddMetadata": {"tags": ["x"], "properties": {"a": 1}},
    "AddTags": {"tags": ["x"]},
    "AddProperties": {"properties": {"a": 1}},
    "TagAsUserID": {"tags": ["ignored"]},
    "TagAsItemID": {"tags": ["ignored"]},
    "TagAsUserFeatures": {"tags": ["ignored"]},
    "TagAsItemFeatures": {"tags": ["ignored"]},
}
_EXT = pd.DataFrame({"k": [1, 2, 2], "w": [10, 20, 20]})
_REQUIRED: dict[str, tuple] = {"TargetEncoding": ("y",), "JoinExternal": (_EXT, "k"),
                               "ListSlice": (1,), "DifferenceLag": ("k",),
                               "LambdaOp": (lambda col: col * 2,)}


@pytest.mark.parametrize("op,option", [(op, o) for op, opts in NVT_OPTIONS.items()
                                       for o in opts])
def test_every_nvtabular_option_is_known_by_name(op, option):
    """Accepted, or refused naming the option with a reason and a fix: never 'unknown'."""
    kwargs = {option: NVT_OPTIONS[op][option]}
    if op == "Categorify" and option == "encode_type":
        kwargs["num_buckets"] = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # tree_width, as NVTabular warns
            getattr(ops, op)(*_REQUIRED.get(op, ()), **kwargs)
    except (ParameterError, TypeError) as exc:
        text = str(exc)
        assert isinstance(exc, ParameterError), text
        assert option in text, text
        assert "has no parameter" not in text and "unexpected keyword" not in text, text
        assert any(w in text for w in ("Remove", "remove", "select", "leave")), text


# ---- options with an equivalent: the values NVTabular gives --------------------------------
@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"x": rng.normal(5, 3, 50), "k": rng.integers(0, 4, 50),
                         "y": rng.integers(0, 2, 50).astype(np.float64)})


@pytest.mark.parametrize("out_dtype", [np.float32, np.float64, "float64", None])
def test_normalize_out_dtype(frame, out_dtype):
    x = frame["x"]
    want = (x - x.mean()) / x.std()  # NVTabular: float64 moments, sample std, then astype
    got = nvt.Workflow(["x"] >> ops.Normalize(out_dtype=out_dtype)).fit_transform(
        nvt.Dataset(frame)).compute()["x"]
    dtype = np.dtype(out_dtype or np.float32)  # no out_dtype: float32 here (NVTabular: float64)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.to_numpy(), want.astype(dtype).to_numpy(),
                               rtol=1e-12 if dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("out_dtype", [np.float32, np.float64])
def test_normalize_min_max_out_dtype(frame, out_dtype):
    x = frame["x"]
    want = ((x - x.min()) / (x.max() - x.min())).astype(out_dtype)
    got = nvt.Workflow(["x"] >> ops.NormalizeMinMax(out_dtype=out_dtype)).fit_transform(
        nvt.Dataset(frame)).compute()["x"]
    assert got.dtype == np.dtype(out_dtype)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12)
    with pytest.raises(ParameterError, match="out_dtype"):
        ops.NormalizeMinMax(out_dtype=np.float16)


def test_reduce_dtype_size_float_dtype(frame):
    got = nvt.Workflow(["x", "k"] >> ops.ReduceDtypeSize(float_dtype=np.float32)).fit(
        nvt.Dataset(frame)).output_schema
    assert got["x"].dtype == "float32" and got["k"].dtype == "int8"  # NVTabular's choices
    with pytest.raises(ParameterError, match=r"float_dtype=.*float64.*select only the "
                                             r"integer columns"):
        ops.ReduceDtypeSize(float_dtype=np.float64)
    # the equivalent it names: floats kept, integers reduced
    kept = nvt.Workflow((["k"] >> ops.ReduceDtypeSize()) + ["x"]).fit(nvt.Dataset(frame))
    assert kept.output_schema["x"].dtype == "float64" and kept.output_schema["k"].dtype == "int8"


def test_join_external_on_ext_and_drop_duplicates_ext_as_pandas_merge(tmp_path):
    df = pd.DataFrame({"k": [2, 3, 1, 2], "v": [1.0, 2.0, 3.0, 4.0]})
    ext = pd.DataFrame({"k_ext": [1, 2, 2, 5], "cat": ["a", "b", "b", "e"], "w": [1, 2, 2, 5]})
    for how in ("left", "inner"):
        for columns_ext in (None, ["k_ext", "cat"]):
            side = ext if columns_ext is None else ext[columns_ext]
            want = df.merge(side.drop_duplicates(), left_on="k", right_on="k_ext", how=how)
            op = ops.JoinExternal(ext, "k", how=how, on_ext="k_ext", columns_ext=columns_ext,
                                  drop_duplicates_ext=True, kind_ext="PANDAS", cache="device")
            got = nvt.Workflow(["k", "v"] >> op).fit_transform(nvt.Dataset(df)).compute()
            assert list(got.columns) == list(want.columns)
            for c in want.columns:
                assert got[c].astype(object).where(got[c].notna(), None).tolist() == \
                    want[c].astype(object).where(want[c].notna(), None).tolist(), (how, c)
    # without drop_duplicates_ext a key twice is refused by name (a join would multiply rows)
    with pytest.raises(Exception, match="k"):
        nvt.Workflow(["k", "v"] >> ops.JoinExternal(ext, "k", on_ext="k_ext")).fit(
            nvt.Dataset(df))
    # kind_ext=CSV: a csv side table, read as NVTabular reads it
    ext.drop_duplicates().to_csv(tmp_path / "ext.csv", index=False)
    op = ops.JoinExternal(str(tmp_path / "ext.csv"), "k", on_ext="k_ext",
                          kind_ext=type("ExtData", (), {"name": "CSV"})())
    got = nvt.Workflow(["k", "v"] >> op).fit_transform(nvt.Dataset(df)).compute()
    assert got["cat"].tolist()[:1] == ["b"] and got["w"].tolist()[2] == 1
    with pytest.raises(ParameterError, match="kind_ext='JSON'"):
        ops.JoinExternal(ext, "k", kind_ext="JSON")
    with pytest.raises(ParameterError, match="on_ext=.*as many columns"):
        ops.JoinExternal(ext, ["k", "v"], on_ext="k_ext")


def _nvt_join(df: pd.DataFrame, side: pd.DataFrame, on: str, on_ext: str) -> pd.DataFrame:
    """NVTabular 23.08's JoinExternal with drop_duplicates_ext=True (join_external.py):
    ``side.drop_duplicates()`` over every column, then ``df.merge(..., how="left")`` in the
    data's row order."""
    return (df.assign(_row=np.arange(len(df)))
            .merge(side.drop_duplicates(), left_on=on, right_on=on_ext, how="left")
            .sort_values("_row", kind="stable").drop(columns="_row").reset_index(drop=True))


def _plain(values: pd.Series) -> list:
    return [None if not isinstance(v, list | np.ndarray) and pd.isna(v)
            else list(v) if isinstance(v, list | np.ndarray) else v for v in values]


def test_join_external_drop_duplicates_ext_drops_identical_rows_as_nvtabular():
    """NVTabular drops the side table's *identical* rows (every column used) before its
    merge. Keys left with several different rows would repeat data rows there: refused here,
    naming the key, whatever the side table's form."""
    df = pd.DataFrame({"k": [2, 3, 1, 2, 5], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    side = pd.DataFrame({"k_ext": [1, 2, 2, 1, 5, 5], "cat": list("abbaee"),
                         "tags": [[1], [2, 3], [2, 3], [1], [], []],
                         "w": [1, 2, 2, 1, 7, 8]})
    # identical rows (a list column too) dropped; w differs for key 5: left out by columns_ext
    cols = ["k_ext", "cat", "tags"]
    flat = side.assign(tags=side["tags"].map(tuple))  # pandas cannot hash the lists
    want = _nvt_join(df, flat[cols], "k", "k_ext")
    assert len(want) == len(df)  # one side row per key after NVTabular's drop
    for ext in (side, pa.Table.from_pandas(side), nvt.Dataset(side)):
        op = ops.JoinExternal(ext, "k", on_ext="k_ext", columns_ext=cols,
                              drop_duplicates_ext=True)
        got = nvt.Workflow(["k", "v"] >> op).fit_transform(nvt.Dataset(df)).compute()
        assert list(got.columns) == list(want.columns)
        for c in want.columns:
            assert _plain(got[c]) == [list(v) if isinstance(v, tuple) else v
                                      for v in _plain(want[c])], (type(ext).__name__, c)
    # with w, key 5 keeps two different rows: NVTabular's merge gives 6 rows for 5 here
    assert len(_nvt_join(df, flat, "k", "k_ext")) == len(df) + 1
    with pytest.raises(ParameterError, match=r"drop_duplicates_ext=True\) dropped the side "
                       r"table's identical rows, but 1 key\(s\) of on_ext=\['k_ext'\] still "
                       r"have different rows, e\.g\. 5 \(2 rows\).*drop_duplicates\(subset="
                       r"\['k_ext'\]\)"):
        ops.JoinExternal(side, "k", on_ext="k_ext", drop_duplicates_ext=True)
    # a null key matches nothing here (docs/guide/nvtabular.md): its rows may differ
    nulls = pd.DataFrame({"k": pd.array([1, None, None], dtype="Int64"), "c": ["x", "y", "z"]})
    got = nvt.Workflow(["k"] >> ops.JoinExternal(nulls, "k", drop_duplicates_ext=True)) \
        .fit_transform(nvt.Dataset(pd.DataFrame({"k": pd.array([1, None], dtype="Int64")})))
    assert _plain(got.compute()["c"]) == ["x", None]


def _te(frame: pd.DataFrame, **kwargs) -> pd.DataFrame:
    node = ["k"] >> ops.TargetEncoding("y", kfold=1, **kwargs)
    return nvt.Workflow(node).fit_transform(nvt.Dataset(frame)).compute()


def test_target_encoding_and_join_groupby_tuning_options_change_nothing(frame):
    base = _te(frame)
    tuned = _te(frame, split_every=4, cat_cache="device", out_path="x", on_host=False,
                name_sep="_", drop_folds=True, tree_width=4)
    pd.testing.assert_frame_equal(tuned, base)
    # kfold=1: each key's smoothed mean, (sum + p * mean) / (count + p), as NVTabular
    g = frame.groupby("k")["y"]
    mean = frame["y"].mean()
    want = ((g.transform("sum") + 20 * mean) / (g.transform("count") + 20)).to_numpy()
    np.testing.assert_allclose(base["TE_k_y"].to_numpy(np.float64), want, rtol=1e-6)
    jg = nvt.Workflow(["k"] >> ops.JoinGroupby(cont_cols=["x"], stats=["sum"], split_every=4,
                                               cat_cache="device", on_host=False,
                                               tree_width=4)).fit_transform(
        nvt.Dataset(frame)).compute()
    np.testing.assert_allclose(jg["k_x_sum"].to_numpy(np.float64),
                               frame.groupby("k")["x"].transform("sum").to_numpy())


def test_target_encoding_refusals_name_the_equivalent(frame):
    with pytest.raises(ParameterError, match=r"out_col='te'.*Rename\(name="):
        ops.TargetEncoding("y", out_col="te")
    # the equivalent it names
    renamed = nvt.Workflow(["k"] >> ops.TargetEncoding("y", kfold=1) >> ops.Rename(name="te"))
    out = renamed.fit_transform(nvt.Dataset(frame)).compute()
    np.testing.assert_allclose(out["te"].to_numpy(), _te(frame)["TE_k_y"].to_numpy())
    with pytest.raises(ParameterError, match="target_mean=0.5.*the target's mean"):
        ops.TargetEncoding("y", target_mean=0.5)
    with pytest.raises(ParameterError, match="drop_folds=False.*'__fold__'"):
        ops.TargetEncoding("y", drop_folds=False)
    # kfold=1: NVTabular adds no fold column either, so drop_folds=False changes nothing
    pd.testing.assert_frame_equal(_te(frame, drop_folds=False), _te(frame))
    with pytest.raises(ParameterError, match=r"name_sep.*Rename\(f="):
        ops.JoinGroupby(cont_cols=["x"], name_sep="-")


def test_categorify_options(frame):
    df = pd.DataFrame({"c": list("aabbbcd") * 3})
    base = nvt.Workflow(["c"] >> ops.Categorify()).fit_transform(nvt.Dataset(df)).compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tuned = ops.Categorify(cat_cache="device", on_host=False, search_sorted=True,
                               cardinality_memory_limit="1GB", split_every=4, tree_width=2,
                               split_out=2)
    got = nvt.Workflow(["c"] >> tuned).fit_transform(nvt.Dataset(df)).compute()
    pd.testing.assert_frame_equal(got, base)
    # NVTabular 23.08: 0 pad, 1 null, 2 OOV, then by descending frequency
    assert base["c"].tolist()[:7] == [4, 4, 3, 3, 3, 5, 6]
    for option, value, words in (("start_index", 0, "refuses it too"),
                                 ("na_sentinel", 0, "refuses it too"),
                                 ("single_table", True, "encode_type='joint'")):
        with pytest.raises(ParameterError, match=f"{option}=.*{words}"):
            ops.Categorify(**{option: value})


def test_tag_as_options_are_ignored_as_in_nvtabular():
    df = pd.DataFrame({"a": [1, 2]})

    def tags(op) -> set:
        return set(nvt.Workflow(["a"] >> op).fit(nvt.Dataset(df)).output_schema["a"].tags)

    for name, want in (("TagAsUserID", "user_id"), ("TagAsItemID", "item_id"),
                       ("TagAsUserFeatures", "user"), ("TagAsItemFeatures", "item")):
        given = tags(getattr(ops, name)(tags=["something_else"]))
        assert given == tags(getattr(ops, name)()) == tags(ops.AddTags([want]))
        assert "something_else" not in given


def test_arrow_side_table_with_on_ext():
    ext = pa.table({"kk": [1, 2], "w": [5, 6]})
    op = ops.JoinExternal(ext, "k", on_ext="kk")
    got = nvt.Workflow(["k"] >> op).fit_transform(
        nvt.Dataset(pd.DataFrame({"k": [2, 1]}))).compute()
    assert got["w"].tolist() == [6, 5] and got["kk"].tolist() == [2, 1]
