"""Workflow.update: new data merged into a fitted workflow (issue 26).

Mergeable statistics: ``fit(day1).update(day2)`` transforms like ``fit(day1 + day2)``
(hypothesis, with nulls, new values and any partitioning). Categorify: day-1 ids never move,
new values are appended by their day-2 count (checked against pandas), thresholds apply to
cumulative counts, max_size refusals are reported. Refusals name the operator; the original
and a loaded folder are never written.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli
from interactive_recsys.errors import NotMergeableError
from interactive_recsys.tables._vocabulary import read_vocabulary
from interactive_recsys.workflow._incremental import UpdateWarning, new_rows

SETTINGS = settings(max_examples=10, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate],  # no shrinking: seconds, always
                    suppress_health_check=[HealthCheck.too_slow])

KEYS = st.one_of(st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.none())
NUMBERS = st.one_of(st.floats(-50, 50, allow_nan=False), st.none())


@st.composite
def days(draw: Any) -> tuple[pd.DataFrame, pd.DataFrame, int, int]:
    """Two days of (key, number, label, ts) with nulls, and a partition count for each."""
    frames = []
    for d in range(2):
        n = draw(st.integers(2, 25))
        frames.append(pd.DataFrame({
            "k": pd.array(draw(st.lists(KEYS, min_size=n, max_size=n)), dtype="string"),
            "x": pd.array(draw(st.lists(NUMBERS, min_size=n, max_size=n)), dtype="Float64"),
            "y": draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n)),
            "ts": np.arange(n) + 1000 * d}))
    return frames[0], frames[1], draw(st.integers(1, 4)), draw(st.integers(1, 4))


def dataset(df: pd.DataFrame, npartitions: int) -> irs.Dataset:
    return irs.Dataset(dd.from_pandas(df, npartitions=min(npartitions, len(df)), sort=False))


def mergeable_graph() -> Any:
    """Every mergeable operator on raw columns (no Categorify upstream: its ids differ from a
    fit on the union by design)."""
    return ((["x"] >> ops.Normalize())
            + (["x"] >> ops.NormalizeMinMax() >> ops.Rename(postfix="_mm"))
            + (["k", "x"] >> ops.JoinGroupby(cont_cols=["x"]))
            + (["k", "y", "ts"] >> ops.TargetEncoding("y", p_smooth=3, kfold=2,
                                                       fold_cols=["ts"]))
            + (["x", "k"] >> ops.DataStats() >> ops.Rename(postfix="_ds")))


def assert_same(left: pd.DataFrame, right: pd.DataFrame) -> None:
    assert list(left.columns) == list(right.columns)
    for name in left.columns:
        a, b = left[name], right[name]
        if pd.api.types.is_numeric_dtype(a.dtype):
            np.testing.assert_allclose(a.astype("float64").to_numpy(na_value=np.nan),
                                       b.astype("float64").to_numpy(na_value=np.nan),
                                       rtol=1e-6, atol=1e-9, err_msg=name)
        else:
            assert a.tolist() == b.tolist(), name


@SETTINGS
@given(days())
def test_update_equals_a_fit_on_the_union(data: tuple) -> None:
    day1, day2, parts1, parts2 = data
    union = pd.concat([day1, day2], ignore_index=True)
    updated = irs.Workflow(mergeable_graph()).fit(dataset(day1, parts1)).update(
        dataset(day2, parts2))
    whole = irs.Workflow(mergeable_graph()).fit(dataset(union, parts1 + parts2))
    for training in (False, True):  # TargetEncoding: all rows, and out-of-fold
        assert_same(updated.transform(union, training=training),
                    whole.transform(union, training=training))
    (report,), (expected,) = (ops.DataStats.report(w).values() for w in (updated, whole))
    for name in ("x", "k"):
        got, want = report[name], expected[name]
        assert {k: got[k] for k in ("rows", "missing", "cardinality")} == \
            {k: want[k] for k in ("rows", "missing", "cardinality")}
        for k in ("min", "max", "mean", "std"):
            assert (got[k] is None and want[k] is None) or got[k] == pytest.approx(
                want[k], rel=1e-9, abs=1e-12), (name, k)


@SETTINGS
@given(days(), st.integers(0, 3))
def test_categorify_update_keeps_ids_and_counts_the_union(data: tuple,
                                                          threshold: int) -> None:
    day1, day2, parts1, parts2 = data
    union = pd.concat([day1, day2], ignore_index=True)
    wf = irs.Workflow(["k"] >> ops.Categorify(freq_threshold=threshold))
    wf.fit(dataset(day1, parts1))
    before = _vocabulary(wf)
    updated = wf.update(dataset(day2, parts2))
    after = _vocabulary(updated)
    for value, (index, _) in before.items():  # day-1 ids never move
        assert after[value][0] == index
    counts = union["k"].value_counts(dropna=True)  # the union's vocabulary and counts
    kept = {v: int(c) for v, c in counts.items() if c >= max(threshold, 1)}
    assert {v: c for v, (_, c) in after.items()} == kept
    assert sorted(i for i, _ in after.values()) == list(range(3, 3 + len(after)))


def _vocabulary(wf: irs.Workflow) -> dict[str, tuple[int, int]]:
    """``{value: (id, stored count)}`` of the workflow's one vocabulary."""
    step = next(wf.fitted_steps(ops.Categorify))
    info = next(iter(step.state["vocabs"].values()))
    table = read_vocabulary(
        os.path.join(wf.artifacts_dir, info["path"]), info["splits"]).to_pylist()
    return {r["value"]: (r["index"], r["count"]) for r in table}


def test_new_values_are_appended_by_their_count_in_the_new_data() -> None:
    rng = np.random.default_rng(3)
    day1 = pd.DataFrame({"c": rng.choice(list("abcdef"), 300)})
    day2 = pd.DataFrame({"c": rng.choice(list("defghijklmn"), 400)})
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(day1)
    updated = wf.update(day2)
    ids1 = dict(zip(day1["c"], wf.transform(day1)["c"], strict=True))
    assert dict(zip(day1["c"], updated.transform(day1)["c"], strict=True)) == ids1
    # the appended values, by day-2 count (descending), ties by value: as pandas orders them
    fresh = day2[~day2["c"].isin(day1["c"])]["c"].value_counts().rename("n").reset_index()
    expected = fresh.sort_values(["n", "c"], ascending=[False, True])["c"].tolist()
    got = updated.transform(pd.DataFrame({"c": expected}))["c"].tolist()
    assert got == list(range(3 + 6, 3 + 6 + len(expected)))
    schema = updated.output_schema["c"]
    assert schema.cardinality == 3 + 6 + len(expected)
    assert schema.properties["vocabulary_version"] == 2
    assert schema.properties["new_rows"] == [9, 9 + len(expected)]
    assert new_rows(updated) == {"c": (9, 9 + len(expected))}
    assert "vocabulary_version" not in wf.output_schema["c"].properties  # original unchanged


def test_ids_are_stable_across_three_updates_and_a_threshold_crossed_on_day_3() -> None:
    days_ = [pd.DataFrame({"c": ["a", "a", "b", "q"]}),   # q: 1 (below 2)
             pd.DataFrame({"c": ["c", "c", "b", "r"]}),   # r: 1
             pd.DataFrame({"c": ["q", "d", "d", "d"]}),   # q: 1 + 1 = 2 -> an id on day 3
             pd.DataFrame({"c": ["e", "e", "a", "r"]})]   # r: 1 + 1 = 2 -> an id on day 4
    wf = irs.Workflow(["c"] >> ops.Categorify(freq_threshold=2)).fit(days_[0])
    seen: dict[str, int] = {}
    versions = []
    for k, day in enumerate(days_):
        if k:
            wf = wf.update(day)
        ids = dict(zip(["a", "b", "c", "d", "e", "q", "r"], wf.transform(
            pd.DataFrame({"c": ["a", "b", "c", "d", "e", "q", "r"]}))["c"].tolist(),
            strict=True))
        for value, index in seen.items():
            assert ids[value] == index, (k, value)
        seen.update({v: i for v, i in ids.items() if i >= 3})
        versions.append(wf.output_schema["c"].properties.get("vocabulary_version", 1))
    assert versions == [1, 2, 3, 4]
    # day 1: a (2) -> 3; b stayed at 1. Day 2: b (2 cumulative) and c (2) by day-2 count:
    # c (2 on day 2) before b (1 on day 2). Day 3: d (3), then q (1 on day 3). Day 4: e, r.
    assert seen == {"a": 3, "c": 4, "b": 5, "d": 6, "q": 7, "e": 8, "r": 9}
    step = next(wf.fitted_steps(ops.Categorify))
    assert step.state["vocabs"]["c"]["promoted"] == 1   # r was pending since day 2


def test_max_size_caps_growth_and_reports_what_it_refused() -> None:
    wf = irs.Workflow(["c"] >> ops.Categorify(max_size=4)).fit(
        pd.DataFrame({"c": ["a", "a", "b"]}))
    with pytest.warns(UpdateWarning, match=r"^categorify-1: the vocabulary of 'c' reached "
                      r"max_size, so 3 new values were refused .*Raise max_size"):
        updated = wf.update(pd.DataFrame({"c": ["x", "x", "x", "y", "y", "z", "w", "v"]}))
    assert updated.transform(pd.DataFrame({"c": ["a", "b", "x", "y", "z", "w"]}))[
        "c"].tolist() == [3, 4, 5, 6, 2, 2]          # x, y appended; z, w, v out of vocabulary
    report = updated.fit_stats["update"]["steps"]["categorify-1"]["c"]
    assert report == {"version": 2, "new_rows": [5, 7], "appended": 2, "refused": 3,
                      "promoted": 0}


def test_an_operator_that_cannot_merge_refuses_by_name() -> None:
    df = pd.DataFrame({"x": [1.0, None, 3.0], "c": ["a", "b", "a"]})
    wf = irs.Workflow((["x"] >> ops.FillMedian()) + (["c"] >> ops.Categorify())).fit(df)
    with pytest.raises(NotMergeableError, match=r"FillMedian \(fillmedian-1\) on columns "
                                                r"\['x'\].*medians.*wf\.fit\(all_days\)"):
        wf.update(df)
    chained = irs.Workflow(["x"] >> ops.Normalize() >> ops.NormalizeMinMax()).fit(df)
    with pytest.raises(NotMergeableError, match=r"NormalizeMinMax \(normalizeminmax-2\).*"
                                                r"normalize-1"):
        chained.update(pd.DataFrame({"x": [10.0]}))


def test_a_loaded_folder_is_never_written_and_the_cli_saves_a_new_one(
        tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    day1 = pd.DataFrame({"c": ["a", "b", "a"], "x": [1.0, 2.0, 4.0]})
    day2 = pd.DataFrame({"c": ["z", "b", "z"], "x": [8.0, None, 0.0]})
    graph = (["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize())
    irs.Workflow(graph).fit(day1).save(tmp_path / "wf1")
    day2.to_parquet(tmp_path / "day2.parquet")
    before = _files(tmp_path / "wf1")
    updated = irs.Workflow.load(tmp_path / "wf1").update(tmp_path / "day2.parquet")
    assert _files(tmp_path / "wf1") == before
    updated.save(tmp_path / "wf2")
    code = cli.main(["update", "--workflow", str(tmp_path / "wf1"), "--local",
                     "--input", str(tmp_path / "day2.parquet"),
                     "--output", str(tmp_path / "wf3")])
    assert code == 0 and _files(tmp_path / "wf1") == before
    printed = capsys.readouterr().out
    assert "c: vocabulary version 2, 1 new rows (ids 5..5)" in printed
    saved = irs.Workflow.load(tmp_path / "wf3")
    union = pd.concat([day1, day2], ignore_index=True)
    assert_same(saved.transform(union), updated.transform(union))
    assert_same(saved.transform(union)[["x"]], irs.Workflow(graph).fit(union).transform(
        union)[["x"]])
    assert saved.output_schema["c"].properties["new_rows"] == [5, 6]


def test_cli_refuses_to_overwrite_the_workflow_folder(tmp_path: Any,
                                                      capsys: pytest.CaptureFixture) -> None:
    irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a"]})).save(
        tmp_path / "wf")
    pd.DataFrame({"c": ["b"]}).to_parquet(tmp_path / "new.parquet")
    before = _files(tmp_path / "wf")
    code = cli.main(["update", "--workflow", str(tmp_path / "wf"), "--local", "--overwrite",
                     "--input", str(tmp_path / "new.parquet"), "--output", str(tmp_path / "wf")])
    assert code == 2 and "it is the workflow folder" in capsys.readouterr().err
    assert _files(tmp_path / "wf") == before


def _files(root: Any) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and modification time."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = (f.read(), os.stat(path).st_mtime_ns)
    return out


def test_warnings_module_is_quiet_without_refusals() -> None:
    wf = irs.Workflow(["c"] >> ops.Categorify(max_size=10)).fit(pd.DataFrame({"c": ["a"]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wf.update(pd.DataFrame({"c": ["b"]}))


def test_exports_report_the_new_rows_of_each_table(tmp_path: Any) -> None:
    import json

    day1 = pd.DataFrame({"c": ["a", "b", "a"], "d": ["p", "p", "q"], "label": [0, 1, 0]})
    day2 = pd.DataFrame({"c": ["n", "n", "m"], "d": ["p", "q", "q"], "label": [1, 1, 0]})
    wf = irs.Workflow((["c", "d"] >> ops.Categorify()) + ["label"]).fit(day1).update(day2)
    ds = irs.Dataset(day2, tags={"label": ["target"]})
    written = wf.transform(ds).to_parquet(tmp_path / "out", hugectr=True)
    assert written["hugectr"]["new_rows"] == {"c": [5, 7], "d": [5, 5]}  # n (2), then m
    assert written["hugectr"]["vocabulary_version"] == {"c": 2, "d": 2}
    merlin = json.loads((tmp_path / "out" / ".merlin" / "schema.json").read_text())
    feature = next(f for f in merlin["feature"] if f["name"] == "c")
    props = feature["annotation"]["extraMetadata"][0]["value"]
    assert props["vocabulary_version"] == 2 and props["new_rows"] == {"start": 5, "stop": 7}
    assert irs.torchrec.new_rows(wf) == {"c": (5, 7), "d": (5, 5)}
    torch = pytest.importorskip("torch")
    trained = torch.randn(5, 4)
    grown = irs.torchrec.grow_weights(trained, 7)
    assert grown.shape == (7, 4) and torch.equal(grown[:5], trained)


def test_the_embedding_report_shows_each_tables_version_and_new_rows() -> None:
    wf = irs.Workflow(["c", "d"] >> ops.Categorify()).fit(
        pd.DataFrame({"c": ["a", "b"], "d": ["p", "q"]}))
    assert "new rows" not in repr(irs.stats.EmbeddingReport(wf))
    updated = wf.update(pd.DataFrame({"c": ["x", "y", "x"], "d": ["p", "p", "q"]}))
    report = irs.stats.EmbeddingReport(updated)
    assert report.to_dict()["tables"]["c"]["new_rows"] == [5, 7]
    assert report.to_dict()["tables"]["d"]["vocabulary_version"] == 2
    rows = {r["table"]: r["new rows (version)"] for r in report.rows()}
    assert rows == {"c": "+2 (v2)", "d": "+0 (v2)"}


@pytest.mark.parametrize("kind", ["split_out", "num_buckets", "joint", "combo", "list"])
def test_every_categorify_encoding_extends_with_ids_kept(kind: str) -> None:
    rng = np.random.default_rng(7)
    frames = [pd.DataFrame({"a": rng.choice(list("abcdefgh"[:4 + 3 * d]), 200),
                            "b": rng.choice(list("abcxyz"[:3 + 3 * d]), 200)})
              for d in range(2)]
    node = {"split_out": ["a"] >> ops.Categorify(split_out=3),
            "num_buckets": ["a"] >> ops.Categorify(num_buckets=4),
            "joint": [["a", "b"]] >> ops.Categorify(encode_type="joint"),
            "combo": [["a", "b"]] >> ops.Categorify(encode_type="combo"),
            "list": ["l"] >> ops.Categorify()}[kind]
    if kind == "list":
        frames = [pd.DataFrame({"l": pd.Series(
            [list(f["a"][i:i + 3]) for i in range(0, 200, 3)],
            dtype=pd.ArrowDtype(pa.list_(pa.string())))}) for f in frames]
    wf = irs.Workflow(node).fit(irs.Dataset(dd.from_pandas(frames[0], npartitions=3)))
    updated = wf.update(irs.Dataset(dd.from_pandas(frames[1], npartitions=2)))
    before, after = wf.transform(frames[0]), updated.transform(frames[0])
    for name in before.columns:
        assert [np.asarray(v).tolist() for v in before[name]] == [  # day-1 ids kept
            np.asarray(v).tolist() for v in after[name]], name  # (list cells: NumPy arrays)
    new = updated.transform(frames[1])
    old_card = wf.output_schema[before.columns[0]].cardinality
    card = updated.output_schema[before.columns[0]].cardinality
    first = 3 + (3 if kind == "num_buckets" else 0)  # after padding, null and OOV rows
    for name in new.columns:
        ids = np.concatenate([np.atleast_1d(v) for v in new[name]])
        assert ids.max() < card and ids.min() >= first  # every day-2 value has its row
        assert (ids >= old_card).any()  # day 2's new values have new rows
    union = pd.concat(frames, ignore_index=True)
    whole = irs.Workflow(node).fit(union)
    assert card == whole.output_schema[before.columns[0]].cardinality  # same vocabulary


def test_update_on_a_process_cluster_in_the_background(client: Any, tmp_path: Any) -> None:
    rng = np.random.default_rng(11)
    days_ = [pd.DataFrame({"c": rng.choice(list("abcdefghijkl"[:6 + 6 * d]), 500),
                           "x": rng.normal(size=500)}) for d in range(2)]
    for d, frame in enumerate(days_):
        frame.to_parquet(tmp_path / f"day{d}.parquet", row_group_size=100)
    graph = (["c"] >> ops.Categorify(freq_threshold=20)) + (["x"] >> ops.Normalize())
    wf = irs.Workflow(graph).fit(irs.Dataset(str(tmp_path / "day0.parquet"), part_size=2_000))
    job = wf.update(irs.Dataset(str(tmp_path / "day1.parquet"), part_size=2_000),
                    background=True)
    updated = job.result()
    union = pd.concat(days_, ignore_index=True)
    whole = irs.Workflow(graph).fit(union)
    assert_same(updated.transform(union)[["x"]], whole.transform(union)[["x"]])
    counts = union["c"].value_counts()
    assert updated.output_schema["c"].cardinality == 3 + int((counts >= 20).sum())
    assert updated.transform(days_[0])["c"].tolist() == wf.transform(days_[0])["c"].tolist()


@pytest.mark.parametrize("op", [ops.DropLowCardinality(), ops.ReduceDtypeSize()])
def test_operators_without_a_merge_refuse_by_name(op: Any) -> None:
    df = pd.DataFrame({"x": [1, 2, 3], "y": [1, 1, 2]})
    wf = irs.Workflow(["x", "y"] >> op).fit(df)
    with pytest.raises(NotMergeableError, match=rf"{type(op).__name__} \(.*\) on columns "
                                                r"\['x', 'y'\] cannot be updated.*Refit"):
        wf.update(df)


def test_normalize_minmax_keeps_its_extremes_and_merges_a_state_saved_with_full_moments(
        tmp_path: Path) -> None:
    """NormalizeMinMax keeps count, min, max and missing (one pass, no mean or spread); a
    workflow saved when it also kept the mean and spread still updates as a fit on both
    days."""
    day1 = pd.DataFrame({"x": [1.0, 5.0, None]})
    day2 = pd.DataFrame({"x": [-2.0, 3.0, 7.5]})
    wf = irs.Workflow(["x"] >> ops.NormalizeMinMax()).fit(day1)
    (step,) = wf.fitted_steps()
    assert step.state["moments"] == {"x": {"count": 2.0, "min": 1.0, "max": 5.0,
                                           "missing": 1.0}}
    wf.save(tmp_path / "wf")
    saved = tmp_path / "wf" / "workflow.json"
    text = saved.read_text()
    older = text.replace('"missing": 1.0', '"missing": 1.0, "mean": 3.0, "root": 2.8284271247461903')
    assert older != text
    saved.write_text(older)
    updated = irs.Workflow.load(tmp_path / "wf").update(day2)
    (merged,) = updated.fitted_steps()
    assert merged.state["mins"] == {"x": -2.0} and merged.state["maxs"] == {"x": 7.5}
    assert merged.state["moments"]["x"] == {"count": 5.0, "missing": 1.0, "min": -2.0,
                                            "max": 7.5}
    union = pd.concat([day1, day2], ignore_index=True)
    expected = (union["x"] - -2.0) / 9.5
    np.testing.assert_allclose(updated.transform(union)["x"].astype("float64"),
                               expected.astype("float32").astype("float64"))
