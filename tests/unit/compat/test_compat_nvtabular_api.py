"""``import interactive_recsys.compat.nvtabular as nvt``: NVTabular 23.08's entry points and
keyword forms, each checked against pandas or a hand computation."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

import interactive_recsys.compat.nvtabular as nvt
from interactive_recsys.compat.nvtabular import ops
from interactive_recsys.compat.nvtabular.column_similarity import ColumnSimilarity
from interactive_recsys.compat.nvtabular.tags import Tags, TagSet
from interactive_recsys.errors import ParameterError, SchemaError


def _frame(rows: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"user": rng.integers(0, 5, rows), "item": rng.integers(0, 9, rows),
                         "ts": np.arange(rows) * 10, "x": rng.random(rows),
                         "y": rng.integers(0, 2, rows), "c": rng.choice(list("abcd"), rows)})


def test_entry_points_and_dataset_keywords(tmp_path):
    df = _frame()
    assert nvt.io.Dataset is nvt.Dataset and nvt.ops.Categorify is ops.Categorify
    assert nvt.ColumnGroup(["a"]).names == ["a"]
    assert nvt.dispatch.make_df({"a": [1]}).equals(pd.DataFrame({"a": [1]}))
    ds = nvt.Dataset(df, npartitions=4, cpu=True, part_mem_fraction=0.1)
    assert ds.npartitions == 4 and ds.num_rows == len(df)
    assert ds.schema.column_names == list(df.columns)
    df.to_csv(tmp_path / "a.csv", sep="|", index=False, header=False)
    csv = nvt.Dataset(str(tmp_path / "a.csv"), engine="csv", sep="|", names=list(df.columns),
                      header=None, dtypes={"x": np.float32}, client=None)
    assert csv.schema["x"].dtype == "float32" and csv.num_rows == len(df)
    with pytest.raises(TypeError, match="'row_group_size'"):
        nvt.Dataset(df, row_group_size=1)
    if not nvt.dispatch.HAS_GPU:
        with pytest.raises(ParameterError, match=r"cpu=False.*Pass cpu=True"):
            nvt.Dataset(df, cpu=False)
        with pytest.raises(ParameterError, match=r"rmm_pool_size=.*start_cluster\(gpu=True"):
            nvt.Dataset(df, rmm_pool_size=2**30)


def test_to_parquet_keywords(tmp_path):
    df = _frame()
    wf = nvt.Workflow((["user", "item"] >> ops.Categorify()) + ["x", "y"])
    out = tmp_path / "out"
    out.mkdir()  # a notebook's `mkdir -p`: an empty folder is written into
    wf.fit_transform(nvt.Dataset(df)).to_parquet(
        output_path=str(out), shuffle=nvt.io.Shuffle.PER_PARTITION, cats=["user", "item"],
        conts=["x"], labels=["y"], dtypes={"x": np.float32, "y": np.int8}, output_files=2)
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 2
    got = pd.concat(map(pd.read_parquet, files))
    assert got["x"].dtype == "float32" and got["y"].dtype == "int8"
    assert sorted(got["x"]) == sorted(df["x"].astype("float32"))
    written = json.loads((out / "_schema.json").read_text())["schema"]["columns"]
    tags = {c["name"]: set(c["tags"]) for c in written}
    assert "target" in tags["y"] and "continuous" in tags["x"] and "categorical" in tags["item"]
    assert nvt.Dataset(str(out)).schema["y"].tags >= {"target"}  # read back with its tags
    # written again (a re-run notebook): its own earlier output is replaced
    wf.transform(nvt.Dataset(df)).to_parquet(str(out), shuffle=False)
    assert len(list(out.glob("*.parquet"))) == 1
    with pytest.raises(ParameterError, match=r"\['nope'\] in labels"):
        wf.transform(nvt.Dataset(df)).to_parquet(str(tmp_path / "o2"), labels=["nope"])
    with pytest.raises(ParameterError, match="shuffle"):
        wf.transform(nvt.Dataset(df)).to_parquet(str(tmp_path / "o3"), shuffle="sometimes")


#: ``merlin.schema.Tags`` as NVIDIA-Merlin/core defines it (merlin/schema/tags.py, release
#: 23.08 and its main branch alike): every name and its value.
MERLIN_TAGS = {
    "CATEGORICAL": "categorical", "CONTINUOUS": "continuous", "LIST": "list",
    "SEQUENCE": "sequence", "TEXT": "text", "TOKENIZED": "tokenized", "TIME": "time",
    "EMBEDDING": "embedding", "ID": "id", "USER": "user", "ITEM": "item",
    "SESSION": "session", "CONTEXT": "context", "TARGET": "target",
    "REGRESSION": "regression", "CLASSIFICATION": "classification", "BINARY": "binary",
    "MULTI_CLASS": "multi_class", "USER_ID": "user_id", "ITEM_ID": "item_id",
    "SESSION_ID": "session_id", "TEXT_TOKENIZED": "text_tokenized",
    "BINARY_CLASSIFICATION": "binary_classification",
    "MULTI_CLASS_CLASSIFICATION": "multi_class_classification",
}  # fmt: skip


def _merlin_tags(out) -> dict[str, set[str]]:
    """The tags per column of an output's Merlin schema (``.merlin/schema.json``)."""
    features = json.loads((out / ".merlin" / "schema.json").read_text())["feature"]
    return {f["name"]: set(f.get("annotation", {}).get("tag", [])) for f in features}


def test_every_merlin_tag_in_nvt_tags_and_irs_tags_and_in_the_written_schema(tmp_path):
    import interactive_recsys as irs

    for tags in (nvt.Tags, nvt.tags.Tags, Tags):
        assert {t.name: t.value for t in tags} == MERLIN_TAGS
    # the core's Tags: Merlin's names with the same values, and its own HASHED
    assert {t.name: t.value for t in irs.Tags} == {**MERLIN_TAGS, "HASHED": "hashed"}
    df = pd.DataFrame({"userId": [3, 1, 3], "movieId": [7, 7, 8], "rating": [4.0, 2.5, 5.0]})
    # NVTabular's notebooks: Getting started (AddMetadata) and Advanced workflow (AddTags)
    nvt_wf = nvt.Workflow(
        (["userId"] >> ops.Categorify() >> ops.AddTags(tags=[Tags.USER_ID, Tags.CATEGORICAL]))
        + (["rating"] >> ops.AddMetadata(tags=[Tags.REGRESSION, Tags.TARGET]))
        + (["movieId"] >> ops.AddTags(tags=[Tags.ITEM_ID, Tags.BINARY_CLASSIFICATION])))
    # the same with the core's operators and irs.Tags
    irs_wf = irs.Workflow(
        (["userId"] >> irs.ops.Categorify() >> irs.ops.AddTags([irs.Tags.USER_ID]))
        + (["rating"] >> irs.ops.AddTags([irs.Tags.REGRESSION, irs.Tags.TARGET]))
        + (["movieId"] >> irs.ops.AddTags([irs.Tags.ITEM_ID, irs.Tags.BINARY_CLASSIFICATION])))
    for name, wf, data in (("nvt", nvt_wf, nvt.Dataset(df)), ("irs", irs_wf, irs.Dataset(df))):
        out = tmp_path / name
        wf.fit_transform(data).to_parquet(str(out))
        tags = _merlin_tags(out)
        assert {"user", "id", "categorical"} <= tags["userId"], name  # USER_ID: user + id
        assert {"regression", "target"} <= tags["rating"], name
        assert {"item", "id", "binary_classification"} <= tags["movieId"], name
        assert wf.output_schema["userId"].tags >= TagSet([Tags.USER_ID])
        assert wf.output_schema.select_by_tag(irs.Tags.USER_ID).names == ["userId"]


def test_tags_schema_and_column_schema():
    assert TagSet([Tags.USER_ID, "categorical"]) == {"user", "id", "categorical"}
    assert TagSet(Tags.BINARY_CLASSIFICATION) == {"binary_classification"}
    col = nvt.ColumnSchema("a", tags=[Tags.ITEM_ID], dtype=np.int32, is_list=True)
    assert col.dtype == "list<int32>" and col.tags == {"item", "id", "list"}
    schema = nvt.Schema([col, nvt.ColumnSchema("b", dtype=float)])
    assert schema.column_names == ["a", "b"] and list(schema.column_schemas) == ["a", "b"]
    assert schema.without("a").column_names == ["b"]
    assert schema.select_by_tag(Tags.ITEM_ID).column_names == ["a"]


def test_keyword_forms_against_pandas():
    df = _frame()
    upper = ["user"] >> ops.Rename(f=str.upper)
    movie = ["item"] >> ops.Rename(name="movie")
    buckets = ["x"] >> ops.Bucketize({"x": [0.25, 0.5]})
    lags = ["ts"] >> ops.DifferenceLag("user", shift=[1, -1])
    times_y = ["x"] >> ops.LambdaOp(lambda col, frame: col * frame["y"], dependency=["y"],
                                    properties={"unit": "eur"}) >> ops.Rename(postfix="_y")
    rows = ["x"] >> ops.Filter(f=lambda frame: frame["x"] > 0.2) >> ops.Rename(postfix="_kept")
    wf = nvt.Workflow(upper + movie + buckets + times_y + rows)
    out = wf.fit_transform(nvt.Dataset(df)).compute()
    kept = df[df["x"] > 0.2].reset_index(drop=True)
    assert len(out) == len(kept)
    assert sorted(out["USER"]) == sorted(kept["user"]) and sorted(out["movie"]) == sorted(kept["item"])
    assert sorted(out["x_y"]) == pytest.approx(sorted(kept["x"] * kept["y"]))
    assert wf.output_schema["x_y"].properties["unit"] == "eur"
    assert sorted(out["x"].dropna()) == sorted(np.digitize(kept["x"], [0.25, 0.5]))
    # DifferenceLag regroups rows by key: a workflow of its own (here)
    lagged = nvt.Workflow(lags).fit_transform(df).sort_values(["user", "ts"])
    ordered = df.sort_values(["user", "ts"])
    back = ordered.groupby("user")["ts"].diff()
    ahead = ordered.groupby("user")["ts"].diff(-1)
    np.testing.assert_array_equal(lagged["ts_difference_lag_1"].astype(float), back)
    np.testing.assert_array_equal(lagged["ts_difference_lag_-1"].astype(float), ahead)


def test_categorify_forms():
    df = _frame(200)
    cats = ["user", "c"] >> ops.Categorify(freq_threshold={"user": 45, "c": 0})
    hashed = ["item"] >> ops.Categorify(max_size=5, num_buckets=3)
    wf = nvt.Workflow(cats + hashed)
    out = wf.fit_transform(df)
    counts = df["user"].value_counts()
    keep = sorted(counts[counts >= 45].index, key=lambda v: (-counts[v], v))
    want = df["user"].map({v: 3 + i for i, v in enumerate(keep)}).fillna(2)
    np.testing.assert_array_equal(out["user"], want)
    assert out["c"].min() >= 3  # threshold 0: every value in the vocabulary
    assert out["item"].between(2, 4).all()  # hashing only: the 3 OOV buckets 2..4
    assert wf.output_schema["item"].properties["domain"] == {"min": 0, "max": 4, "name": "item"}
    # a given vocabulary: ids 3.. in its order, 2 for other values, 1 for nulls; the
    # selection's other columns are fitted as usual
    given = pd.DataFrame({"c": ["d", "a", None, "z", "a"], "user": [1, 1, 2, 3, 1]})
    vocab = nvt.Workflow(["c", "user"] >> ops.Categorify(vocabs={"c": pd.Series(["a", "d"])},
                                                          dtype=np.int32))
    got = vocab.fit_transform(given)
    assert got["c"].tolist() == [4, 3, 1, 2, 3] and got["c"].dtype == "int32"
    assert got["user"].tolist() == [3, 3, 4, 5, 3]
    assert vocab.output_schema["c"].cardinality == 5
    with pytest.raises(ParameterError, match="distinct"):
        ops.Categorify(vocabs={"c": ["a", "a"]})
    with pytest.raises(ParameterError, match="single_table"):
        ops.Categorify(single_table=True)


def test_hash_ranges_groupby_string_and_targets():
    df = _frame(100)
    hashed = ["c"] >> ops.HashBucket(7)
    crossed = [["c", "user"]] >> ops.HashedCross(5)
    encoded = ["item"] >> ops.TargetEncoding(["y", "x"], fold_seed=None)
    wf = nvt.Workflow(hashed + crossed + encoded)
    out = wf.fit_transform(df)
    assert out["c"].between(0, 6).all() and out["c_X_user"].between(0, 4).all()
    assert wf.output_schema["c"].cardinality == 7
    assert {"TE_item_y", "TE_item_x"} <= set(out.columns)
    grouped = nvt.Workflow(["x"] >> ops.Groupby("user", aggs="sum")).fit_transform(df)
    assert list(grouped.columns) == ["x_sum"]
    assert sorted(grouped["x_sum"]) == pytest.approx(sorted(df.groupby("user")["x"].sum()))


def test_metadata_logop_and_embedding_sizes():
    df = pd.DataFrame({"r": [0.0, 1.0, 1e6], "l": [[1, 2], [3], []], "c": ["a", "b", "a"]})
    meta = ["r"] >> ops.AddMetadata(tags=[Tags.REGRESSION, Tags.TARGET], properties={"p": 1})
    logs = ["r"] >> ops.LogOp() >> ops.Rename(postfix="_log")
    wf = nvt.Workflow(meta + logs + (["l", "c"] >> ops.Categorify()))
    out = wf.fit_transform(df)
    assert wf.output_schema["r"].tags >= {"regression", "target"}
    assert wf.output_schema["r"].properties == {"p": 1}
    want = np.log(df["r"].to_numpy(np.float32) + np.float32(1))  # float32 as NVTabular
    np.testing.assert_array_equal(out["r_log"].to_numpy(np.float32), want)
    single, multi = ops.get_embedding_sizes(wf)
    assert set(single) == {"c"} and set(multi) == {"l"}
    assert single["c"][0] == wf.output_schema["c"].cardinality


def test_column_similarity_by_hand():
    feats = scipy.sparse.coo_matrix((np.array([1.0, 2.0, 1.0, 3.0, 1.0]),
                                     ([0, 0, 1, 1, 2], [0, 1, 1, 2, 0])), shape=(3, 3))
    df = pd.DataFrame({"a": [0, 0, 1, None], "b": [1, 2, 2, 0]}, dtype="Int64")
    dense = feats.toarray()
    inner = [dense[0] @ dense[1], dense[0] @ dense[2], dense[1] @ dense[2]]
    unit = dense / np.linalg.norm(dense, axis=1, keepdims=True)
    cosine = [unit[0] @ unit[1], unit[0] @ unit[2], unit[1] @ unit[2]]
    idf = np.log(3 / (dense > 0).sum(axis=0))
    weighted = dense * idf
    weighted /= np.linalg.norm(weighted, axis=1, keepdims=True)
    tfidf = [weighted[0] @ weighted[1], weighted[0] @ weighted[2], weighted[1] @ weighted[2]]
    for metric, want in (("inner", inner), ("cosine", cosine), ("tfidf", tfidf)):
        out = nvt.Workflow([["a", "b"]] >> ColumnSimilarity(feats, metric=metric)).transform(
            nvt.Dataset(df)).compute()
        np.testing.assert_allclose(out["a_b_sim"][:3].astype(float), want)
        assert pd.isna(out["a_b_sim"][3])  # a null id: a null similarity
    bad = pd.DataFrame({"a": [0], "b": [7]})
    with pytest.raises(SchemaError, match="'b' holds the id 7"):
        nvt.Workflow([["a", "b"]] >> ColumnSimilarity(feats)).transform(bad)
    with pytest.raises(ParameterError, match="cannot be saved"):
        nvt.Workflow([["a", "b"]] >> ColumnSimilarity(feats)).to_config()


def test_lambda_on_pandas_strings_keeps_their_type():
    """pandas' own string columns (``astype(str)``) come back as Arrow chunks: an empty one
    (the dtype probe) is a string column, not a null one."""
    df = pd.DataFrame({"n": ["Alice", "Bob", "Al"]})
    wf = nvt.Workflow(["n"] >> ops.LambdaOp(lambda col: col.astype(str).str.slice(0, 1))
                      >> ops.Categorify())
    out = wf.fit_transform(df)
    assert wf.output_schema["n"].cardinality == 3 + 2  # pad, null, OOV + "A", "B"
    assert out["n"].tolist() == [3, 4, 3]


def test_operator_api_maps_onto_the_core(tmp_path):
    """op.compute_output_schema, fitted statistics, op.transform and node.output_schema:
    each against pandas or the workflow's own result."""
    import interactive_recsys as irs

    df = _frame(60, seed=3)
    df.loc[[2, 7], "x"] = np.nan
    df["h"] = [list(range(n % 4 + 1)) for n in range(len(df))]
    norm, median, counts = ops.Normalize(), ops.FillMedian(), ops.ValueCount()
    with pytest.raises(AttributeError, match="fit a Workflow"):
        norm.means  # noqa: B018
    cats = ["c"] >> ops.Categorify()
    wf = nvt.Workflow((["x"] >> median >> norm) + cats + (["h"] >> counts))
    ds = nvt.Dataset(df)
    out = wf.fit_transform(ds).compute()
    filled = df["x"].fillna(df["x"].median())
    assert median.medians["x"] == pytest.approx(df["x"].median())
    assert norm.means["x"] == pytest.approx(filled.mean())
    assert norm.stds["x"] == pytest.approx(filled.std())  # sample std, as NVTabular
    assert counts.stats == {"h": {"value_count": {"min": 1, "max": 4}}}
    np.testing.assert_allclose(out["x"], ((filled - filled.mean()) / filled.std()), rtol=1e-5)
    # op.transform(selector, frame) is the step's transform, with its fitted statistics
    again = norm.transform(nvt.ColumnSelector(["x"]), pd.DataFrame({"x": filled}))
    np.testing.assert_allclose(again["x"], out["x"], rtol=1e-6)
    arrays = norm.transform(nvt.ColumnSelector(["x"]), {"x": filled.to_numpy()})
    np.testing.assert_allclose(arrays["x"], out["x"], rtol=1e-6)
    frame = pd.DataFrame({"k": [1, 1, 2, 1], "t": [1, 5, 2, 9]})  # keys read, as in a step
    lag = ops.DifferenceLag("k").transform(nvt.ColumnSelector(["t"]), frame)
    assert lag.sort_values(["k", "t"])["t_difference_lag_1"].tolist()[:3] == [pd.NA, 4, 4]
    with pytest.raises(irs.NotFittedError, match="fit a Workflow"):
        ops.FillMedian().transform(nvt.ColumnSelector(["t"]), frame)
    # the schemas: the node's after fit (still callable as the core's method), the op's
    assert wf.output_node.output_schema == wf.output_schema
    assert wf.output_node.output_schema(wf.input_schema) == irs.Workflow(
        wf.output_node).compute_schema(wf.input_schema)
    assert cats.output_schema["c"].properties["domain"] == {
        "min": 0, "max": out["c"].max(), "name": "c"}
    one = ops.LogOp().compute_output_schema(ds.schema, nvt.ColumnSelector(["user"]))
    assert one.column_names == ["user"] and one["user"].dtype == "float32"
    # the statistics are a copy; the saved workflow names the core's operators
    norm.means["x"] = 99.0
    assert norm.means["x"] == pytest.approx(filled.mean())
    wf.save(tmp_path / "wf")
    loaded = irs.Workflow.load(tmp_path / "wf")
    assert [type(n.op).__module__.split(".")[1] for n in loaded.nodes if n.op] == ["ops"] * 4
    pd.testing.assert_frame_equal(loaded.transform(df), wf.transform(df))


def test_dataset_schema_is_edited_in_place_as_merlins():
    ds = nvt.Dataset(_frame())
    col = ds.schema.column_schemas["x"]
    ds.schema.column_schemas["x"] = col.with_tags(add=["custom"])
    assert ds.schema["x"].tags == {"custom"} and ds.schema.column_names == list(_frame())
    wf = nvt.Workflow(["x", "user"] >> ops.LogOp())
    wf.fit(ds)
    assert "custom" in wf.output_schema["x"].tags and "custom" not in wf.output_schema["user"].tags
    with pytest.raises(SchemaError, match="with_name"):
        ds.schema.column_schemas["y"] = col


def test_categorify_out_path_writes_nvtabulars_category_files(tmp_path):
    df = _frame(80, seed=5)
    df["c"] = pd.Series(["a"] * 30 + ["b"] * 20 + ["c"] * 5 + ["d"] * 22 + [None] * 3
                        ).sample(frac=1, random_state=0).to_numpy()
    wf = nvt.Workflow(["c", "item"] >> ops.Categorify(freq_threshold=9, out_path=tmp_path))
    out = wf.fit_transform(nvt.Dataset(df)).compute()
    counts = df["c"].value_counts()
    kept = counts[counts >= 9]
    assert len(kept) == 3  # "c" (5 rows) goes out of the vocabulary
    unique = pd.read_parquet(tmp_path / "categories" / "unique.c.parquet")
    assert dict(zip(unique["c"], unique["c_size"], strict=True)) == kept.to_dict()
    # each value's id is its index in the file, as NVTabular's
    for cid, value in zip(unique.index, unique["c"], strict=True):
        assert set(out.loc[df["c"] == value, "c"]) == {cid}
    meta = pd.read_parquet(tmp_path / "categories" / "meta.c.parquet")
    assert meta["kind"].tolist() == ["pad", "null", "oov", "unique"]
    assert meta["num_observed"].tolist() == [0, 3, counts[counts < 9].sum(), kept.sum()]
    assert meta["num_indices"].tolist() == [1, 1, 1, len(kept)]
    assert (tmp_path / "categories" / "unique.item.parquet").exists()
    assert not list(tmp_path.glob("categories/.*"))  # no temporary left


def test_groupby_descending_lists_keep_first_and_last_as_nvtabular(tmp_path):
    import pyarrow as pa

    import interactive_recsys as irs
    from interactive_recsys.compat.nvtabular.groupby import reverse_lists

    df = _frame(50, seed=7).sample(frac=1, random_state=1)
    node = ["user", "ts", "x"] >> ops.Groupby("user", sort_cols=["ts"], ascending=False,
                                              aggs={"x": ["list", "first", "last"]})
    wf = nvt.Workflow(node)
    out = wf.fit_transform(nvt.Dataset(df)).compute().set_index("user").sort_index()
    by_ts = df.sort_values("ts").groupby("user")["x"]
    for user, xs in by_ts:
        assert out.loc[user, "x_list"].tolist() == xs.tolist()[::-1]  # descending ts
    # first/last keep the ascending meaning (NVTabular's _first_or_last)
    np.testing.assert_array_equal(out["x_first"], by_ts.first().sort_index())
    np.testing.assert_array_equal(out["x_last"], by_ts.last().sort_index())
    wf.save(tmp_path / "wf")
    loaded = irs.Workflow.load(tmp_path / "wf", functions=[reverse_lists])
    pd.testing.assert_frame_equal(loaded.transform(df).set_index("user").sort_index(), out)
    # null lists stay null, on a sliced Arrow column too
    lists = pd.Series(pd.arrays.ArrowExtensionArray(
        pa.array([[9], [1, 2, 3], None, [], [4, 5]]).slice(1)))
    assert pa.array(reverse_lists(lists)).to_pylist() == [[3, 2, 1], None, [], [5, 4]]
    plain = df["x"]
    assert reverse_lists(plain) is plain
