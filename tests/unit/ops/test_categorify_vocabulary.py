"""``Categorify(vocabulary=...)`` (issue 53, item 2): a given vocabulary, in id order.

The expectation is computed with pandas from the values given: value ``i`` gets id
``first + i`` (``first`` = 3, or ``2 + num_buckets``), nulls 1, every other value out of
vocabulary. The fit never reads the column for it; it saves and loads as JSON + parquet
(never the values in the JSON); an update leaves it as it is; bad vocabularies are refused
by name.
"""

from __future__ import annotations

import json

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.compat.nvtabular import ops as nvt_ops
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.ui.builder.views._param_form import ParamForm


def _expected(values: pd.Series, vocabulary: list, first: int = 3) -> list[int]:
    ids = {v: first + i for i, v in enumerate(vocabulary)}
    return [1 if pd.isna(v) else ids.get(v, 2) for v in values]


def _frame(rows: int = 80, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item = pd.Series([f"i{k}" for k in rng.integers(0, 12, rows)], dtype="str")
    item[[2, 9]] = None
    return pd.DataFrame({"item": item, "user": rng.integers(0, 9, rows).astype("int64"),
                         "n": rng.normal(size=rows)})


def test_values_get_ids_in_the_given_order_and_others_are_out_of_vocabulary():
    df = _frame()
    items, users = ["i3", "i0", "i7", "unseen"], [8, 2, 5]
    wf = irs.Workflow(["item", "user"] >> ops.Categorify(
        vocabulary={"item": items, "user": np.array(users)}))
    out = wf.fit_transform(df)
    assert out["item"].tolist() == _expected(df["item"], items)
    assert out["user"].tolist() == _expected(df["user"], users)
    assert wf.output_schema["item"].cardinality == 3 + len(items)
    assert wf.vocabulary("item").tolist() == items
    back = wf.inverse_transform(out)  # and back: the given values, the marker elsewhere
    assert [None if pd.isna(v) else v for v in back["item"]] == \
        [None if pd.isna(v) else v if v in items else "<OOV>" for v in df["item"]]


def test_with_num_buckets_the_ids_start_after_the_buckets_and_others_are_hashed():
    df = _frame()
    items = ["i3", "i0"]
    out = irs.Workflow(["item"] >> ops.Categorify(vocabulary={"item": items}, num_buckets=4)
                       ).fit_transform(df)["item"]
    hashed = irs.Workflow(["item"] >> ops.HashBucket(4)).fit_transform(df)["item"]
    want = [6 + items.index(v) if v in items else 1 if pd.isna(v) else h
            for v, h in zip(df["item"], hashed, strict=True)]
    assert out.tolist() == want


def test_the_fit_reads_no_data_for_it():
    df = _frame()
    wf = irs.Workflow((["item"] >> ops.Categorify(vocabulary={"item": ["i1", "i2"]}))
                      + (["n"] >> ops.Normalize()) + ["user"])
    job = Job(lambda: wf.fit(df), name="given-reads", track_local=True).start()
    job.result(60)
    assert [(p.name, sorted(p.reads)) for p in job.phases] == [("given", []),
                                                               ("fit 1/1", ["n"])]
    alone = irs.Workflow(["item"] >> ops.Categorify(vocabulary={"item": ["i1", "i2"]}))
    job = Job(lambda: alone.fit(df), name="given-only", track_local=True).start()
    job.result(60)
    assert [p.name for p in job.phases] == ["given"] and alone.fit_stats["phases"] == []


def test_a_joint_group_takes_the_vocabulary_by_its_key_or_a_column():
    df = pd.DataFrame({"src": ["a", "b", "c"], "dst": ["c", "a", "z"]})
    for key in ("src_dst", "dst"):
        wf = irs.Workflow([["src", "dst"]] >> ops.Categorify(vocabulary={key: ["c", "a"]}))
        out = wf.fit_transform(df)
        assert out["src"].tolist() == [4, 2, 3] and out["dst"].tolist() == [3, 4, 2]


def test_parquet_files_and_another_workflows_vocabulary(tmp_path):
    df = _frame()
    fitted = irs.Workflow(["item", "user"] >> ops.Categorify(freq_threshold=3)).fit(df)
    # another workflow's vocabulary: the same ids
    again = irs.Workflow(["item", "user"] >> ops.Categorify(vocabulary={
        "item": fitted.vocabulary("item"), "user": fitted.vocabulary("user")}))
    pd.testing.assert_frame_equal(again.fit_transform(df), fitted.transform(df))
    # a file with one column per vocabulary, one with a column, the fit's own files
    pq.write_table(pa.table({"item": ["i5", "i1"], "user": [3, 4]}), tmp_path / "both.parquet")
    fitted.vocabulary("item").to_frame().to_parquet(tmp_path / "item.parquet")
    step = next(fitted.fitted_steps())
    folder = fitted.artifacts_dir + "/" + step.state["vocabs"]["user"]["path"]
    from_file = ops.Categorify(vocabulary=str(tmp_path / "both.parquet"))
    assert from_file == ops.Categorify(vocabulary={"item": ["i5", "i1"], "user": [3, 4]})
    per_column = ops.Categorify(vocabulary={"item": tmp_path / "item.parquet",
                                            "user": folder + "/part.00000.parquet"})
    assert per_column == again.output_node.op


def test_it_saves_as_json_and_parquet_without_the_values(tmp_path):
    values = [f"v{i:06d}" for i in range(50_000)]
    df = pd.DataFrame({"c": ["v000003", "v049999", "zzz", None]})
    wf = irs.Workflow(["c"] >> ops.Categorify(vocabulary={"c": values}))
    out = wf.fit_transform(df)
    wf.save(tmp_path / "wf")
    text = (tmp_path / "wf" / "workflow.json").read_text()
    assert "v000003" not in text and len(text) < 10_000
    params = json.loads(text)["nodes"][1]["op"]["params"]["vocabulary"]
    assert params["c"]["size"] == 50_000 and params["c"]["dtype"] == "string"
    loaded = irs.Workflow.load(tmp_path / "wf")
    pd.testing.assert_frame_equal(loaded.transform(df), out)
    assert loaded.output_node.op == wf.output_node.op
    refit = loaded.fit(df)  # the values read back from the saved artifacts
    pd.testing.assert_frame_equal(refit.transform(df), out)
    assert out["c"].tolist() == [6, 50_002, 2, 1]


def test_an_update_leaves_the_vocabulary_as_it_is(client, tmp_path):
    given = {"c": ["b", "a"]}
    wf = irs.Workflow(["c"] >> ops.Categorify(vocabulary=given),
                      artifacts_dir=str(tmp_path / "art"))
    wf.fit(irs.Dataset(dd.from_pandas(pd.DataFrame({"c": ["a", "x"]}), npartitions=2)))
    day2 = wf.update(irs.Dataset(dd.from_pandas(
        pd.DataFrame({"c": ["new", "new", "b"]}), npartitions=2)))
    probe = pd.DataFrame({"c": ["a", "b", "new", "x"]})
    assert day2.transform(probe)["c"].tolist() == wf.transform(probe)["c"].tolist() == \
        [4, 3, 2, 2]
    assert day2.output_schema["c"].cardinality == 5
    assert day2.fit_stats["phases"] == []  # the new data was not read for it


@pytest.mark.parametrize(("vocabulary", "match"), [
    ({"c": ["a", "b", "a"]}, r"'c' values more than once \('a': 2 times\)"),
    ({"c": ["a", None]}, "'c' 1 null value"),
    ({"c": [1.0, float("nan")]}, "'c' 1 null value"),
    ({"c": []}, "'c' no values"),
    ({"c": ["a", 1]}, "mixed types"),
    ({1: ["a"]}, "keyed by column names"),
    ("missing.parquet", "not a readable parquet file"),
    (["a", "b"], "takes {column: values"),
    ({"c": {"sha256": "x"}}, "malformed entry"),
])
def test_bad_vocabularies_are_refused_by_name(vocabulary, match):
    with pytest.raises(ParameterError, match=match) as info:
        ops.Categorify(vocabulary=vocabulary)
    assert "'vocabulary' parameter of Categorify" in str(info.value)


@pytest.mark.parametrize(("vocabulary", "columns", "match"), [
    ({"c": ["a"]}, ["c", "d"], "no vocabulary for 'd'.*add 'd' to the mapping"),
    ({"c": ["a"], "zz": ["b"]}, ["c"], r"a vocabulary for \['zz'\], which the step does not"),
    ({"n": ["a", "b"]}, ["n"], "gives 'n' values of type string, but column 'n' is int64"),
    ({"c": [1, 2]}, ["c"], "values of type int64, but column 'c' is string"),
])
def test_vocabularies_that_do_not_fit_the_columns_are_refused_by_name(vocabulary, columns,
                                                                       match):
    df = pd.DataFrame({"c": ["a"], "d": ["b"], "n": [1]})
    with pytest.raises(SchemaError, match=match):
        irs.Workflow(columns >> ops.Categorify(vocabulary=vocabulary)).fit(df)


def test_combo_groups_and_counting_parameters_are_refused():
    df = pd.DataFrame({"c": ["a"], "d": ["b"]})
    with pytest.raises(SchemaError, match="combo group"):
        irs.Workflow([["c", "d"]] >> ops.Categorify(
            vocabulary={"c_d": ["a"]}, encode_type="combo")).fit(df)
    for name in ("freq_threshold", "max_size", "max_frequency"):
        with pytest.raises(ParameterError, match=f"'vocabulary' and '{name}' parameters"):
            ops.Categorify(vocabulary={"c": ["a"]}, **{name: 2})


def test_an_int32_column_takes_integer_values():
    df = pd.DataFrame({"c": pd.array([7, 9, 11], dtype="int32")})
    out = irs.Workflow(["c"] >> ops.Categorify(vocabulary={"c": [11, 7]})).fit_transform(df)
    assert out["c"].tolist() == [4, 2, 3]


def test_repr_shows_small_vocabularies_and_hashes_large_ones():
    small = ops.Categorify(vocabulary={"c": pd.Series(["b", "a"])})
    assert repr(small) == "Categorify(vocabulary={'c': ['b', 'a']})"
    large = ops.Categorify(vocabulary={"c": list(range(100))})
    assert "'size': 100" in repr(large) and "'sha256'" in repr(large)
    assert eval(repr(large), {}, {"Categorify": ops.Categorify}) == large


def test_the_form_edits_a_small_vocabulary_and_shows_a_large_one_read_only():
    form = ParamForm()
    form.show("Categorify", {"vocabulary": ops.Categorify(vocabulary={"c": ["b", "a"]})
                             .vocabulary})
    field = form.fields["vocabulary"]
    assert not field.disabled and field.value == "{'c': ['b', 'a']}"
    field.value = "{'c': ['x', 'b', 'a']}"
    assert ops.Categorify(**form.values()) == ops.Categorify(vocabulary={"c": ["x", "b", "a"]})
    large = ops.Categorify(vocabulary={"c": list(range(100))}).vocabulary
    form.show("Categorify", {"vocabulary": large, "num_buckets": 2})
    assert form.fields["vocabulary"].disabled
    form.fields["num_buckets"].value = "3"
    values = form.values()
    assert values["vocabulary"] is large and values["num_buckets"] == 3  # values kept


def test_nvtabulars_vocabs_maps_onto_it_with_num_buckets():
    df = pd.DataFrame({"c": ["d", "a", None, "z", "a"], "user": [1, 1, 2, 3, 1]})
    wf = irs.Workflow(["c", "user"] >> nvt_ops.Categorify(vocabs={"c": ["a", "d"]},
                                                          num_buckets=3))
    out = wf.fit_transform(df)
    hashed = irs.Workflow(["c"] >> ops.HashBucket(3)).fit_transform(df)["c"]
    assert out["c"].tolist() == [6, 5, 1, hashed[3], 5]  # 2 + 3 buckets, then a, d
    assert wf.output_schema["c"].cardinality == 7


def test_exported_code_writes_a_small_vocabulary_and_refuses_a_large_one():
    from interactive_recsys.ui.builder._codegen import workflow_code

    code = workflow_code(["c"] >> ops.Categorify(vocabulary={"c": ["b", "a"]}))
    assert "ops.Categorify(vocabulary={'c': ['b', 'a']})" in code
    with pytest.raises(ParameterError, match="'vocabulary' parameter holds a vocabulary"):
        workflow_code(["c"] >> ops.Categorify(vocabulary={"c": list(range(100))}))


def test_vocabulary_diff_of_a_given_vocabulary_after_an_update():
    df = pd.DataFrame({"c": ["a", "b", "z"]})
    wf = irs.Workflow(["c"] >> ops.Categorify(vocabulary={"c": ["b", "a"]})).fit(df)
    row = irs.vocabulary_diff(wf, wf.update(df)).iloc[0]
    assert (row["new_values"], row["dropped_values"], row["changed_ids"]) == (0, 0, 0)
    assert pd.isna(row["new_share"])  # nothing counted
