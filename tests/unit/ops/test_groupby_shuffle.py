"""Groupby and DifferenceLag across partitions: the workflow shuffles rows by key itself.

Every expectation is computed independently with pandas on the whole frame; the data puts
every key's rows in every partition, so a per-partition computation would be wrong.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from tests.conftest import assert_frames_equal, new_workflow, partitioned

NPARTS = 7
AGGS = {"item": ["list", "count", "first", "last"], "rating": ["sum", "mean", "std", "min"],
        "ts": ["list", "max"]}


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    """Rows of 23 users (one null user) in random order: each user spans many partitions."""
    rng = np.random.default_rng(11)
    n = 700
    users = rng.integers(0, 23, n).astype(object)
    users[rng.random(n) < 0.04] = None
    rating = rng.integers(1, 6, n).astype(float).tolist()
    for i in rng.choice(n, 30, replace=False):
        rating[i] = None
    return pd.DataFrame({
        "user": pd.Series(users, dtype=pd.ArrowDtype(pa.int64())),
        "item": pd.Series(rng.integers(0, 50, n), dtype=pd.ArrowDtype(pa.int64())),
        "ts": pd.Series(rng.integers(0, 200, n), dtype=pd.ArrowDtype(pa.int64())),  # ties
        "rating": pd.Series(rating, dtype=pd.ArrowDtype(pa.float64())),
    })


def by_key(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows in key order (nulls last); stable, so equal keys keep their order."""
    backend = irs.get_backend("cpu")
    return backend.sort_rows_by(backend.from_pandas(frame), keys)


def pandas_groupby(df: pd.DataFrame) -> pd.DataFrame:
    """The expected Groupby(["user"], sort_cols=["ts"], aggs=AGGS), with plain pandas."""
    plain = df.astype(object).where(df.notna(), None)
    plain["rating"] = plain["rating"].astype(float)
    ordered = plain.sort_values(["user", "ts"], kind="stable", na_position="last")
    grouped = ordered.groupby("user", dropna=False, sort=True)
    out = pd.DataFrame({
        "item_list": grouped["item"].agg(list),
        "item_count": grouped["item"].count(),
        "item_first": grouped["item"].first(),
        "item_last": grouped["item"].last(),
        "rating_sum": grouped["rating"].sum(),
        "rating_mean": grouped["rating"].mean(),
        "rating_std": grouped["rating"].std(),
        "rating_min": grouped["rating"].min(),
        "ts_list": grouped["ts"].agg(list),
        "ts_max": grouped["ts"].max(),
    }).reset_index()
    return out


def assert_matches_pandas(out: pd.DataFrame, expected: pd.DataFrame) -> None:
    out = by_key(out, ["user"])
    assert pa.array(out["user"]).to_pylist() == [None if pd.isna(u) else int(u)
                                                 for u in expected["user"]]
    for name in expected.columns[1:]:
        got = pa.array(out[name]).to_pylist()
        want = expected[name].tolist()
        if name.endswith(("mean", "std", "sum", "min")):
            np.testing.assert_allclose(np.array(got, dtype=float), np.array(want, dtype=float),
                                       rtol=1e-9, equal_nan=True, err_msg=name)
        else:
            assert got == [list(w) if isinstance(w, list) else w for w in want], name


def test_keys_really_span_the_partitions(events: pd.DataFrame) -> None:
    ds = partitioned(events, NPARTS)
    per_part = [set(p["user"].dropna()) for p in ds.to_iter()]
    assert all(len(users) >= 20 for users in per_part)


def test_groupby_across_partitions_equals_pandas(events: pd.DataFrame, client: object,
                                                 tmp_path: object) -> None:
    op = ops.Groupby(["user"], sort_cols=["ts"], aggs=AGGS)
    wf = new_workflow(["user", "item", "ts", "rating"] >> op, tmp_path)
    lazy = wf.fit(partitioned(events, NPARTS)).transform(partitioned(events, NPARTS))
    assert lazy.npartitions == NPARTS
    out = lazy.compute()
    expected = pandas_groupby(events)
    assert len(out) == len(expected) == events["user"].nunique(dropna=False)
    assert_matches_pandas(out, expected)
    # the same rows from one partition, and the schema the workflow predicted
    whole = wf.transform(events)
    assert_frames_equal(by_key(out, ["user"]), by_key(whole, ["user"]))
    engine = lazy.compute(dtype_backend="pyarrow")  # the engine's Arrow columns
    assert irs.get_backend("cpu").schema_of(engine).dtypes == wf.output_schema.dtypes


def test_each_output_partition_holds_whole_sorted_keys(events: pd.DataFrame,
                                                       client: object) -> None:
    wf = irs.Workflow(["user", "item"] >> ops.Groupby(["user"], aggs="count"))
    parts = list(wf.fit_transform(partitioned(events, NPARTS)).to_iter())
    users = [u for p in parts for u in p["user"].tolist()]
    assert len(users) == len(set(map(str, users)))  # no key in two partitions
    for p in parts:
        keys = p["user"].dropna().tolist()
        assert keys == sorted(keys)


def test_row_filter_before_groupby_drops_rows_first(events: pd.DataFrame) -> None:
    graph = ["user", "item", "rating"] >> ops.Filter("rating >= 4") >> ops.Groupby(
        ["user"], aggs={"item": ["count"]})
    out = by_key(irs.Workflow(graph).fit_transform(partitioned(events, 4)).compute(), ["user"])
    kept = events[events["rating"] >= 4]
    expected = kept.groupby("user", dropna=False, sort=True)["item"].count()
    assert out["item_count"].tolist() == expected.tolist()
    assert out["user"].dropna().tolist() == expected.index.dropna().tolist()


def test_statistics_after_groupby_see_whole_groups(events: pd.DataFrame,
                                                   client: object) -> None:
    sessions = ["user", "item"] >> ops.Groupby(["user"])
    wf = irs.Workflow(sessions >> ops.SelectColumns(["item_list"]) >> ops.ValueCount())
    wf.fit(partitioned(events, NPARTS))
    sizes = events.groupby("user", dropna=False).size()
    assert wf.output_schema["item_list"].properties["value_count"] == {
        "min": int(sizes.min()), "max": int(sizes.max())}


def test_difference_lag_then_groupby_by_another_key(events: pd.DataFrame) -> None:
    """Two shuffles in a row: by user (lag), then by item (mean gap)."""
    lag = ["user", "item", "ts"] >> ops.DifferenceLag(["user"], sort_cols=["ts"], columns=["ts"])
    graph = lag >> ops.Groupby(["item"], aggs={"ts_difference_lag_1": ["mean", "count"]})
    out = by_key(irs.Workflow(graph).fit_transform(partitioned(events, 5)).compute(), ["item"])
    ordered = events.sort_values(["user", "ts"], kind="stable", na_position="last")
    gaps = ordered.assign(gap=ordered.groupby("user", dropna=False)["ts"].diff())
    expected = gaps.groupby("item", sort=True)["gap"].agg(["mean", "count"])
    assert out["item"].tolist() == expected.index.tolist()
    assert out["ts_difference_lag_1_count"].tolist() == expected["count"].tolist()
    np.testing.assert_allclose(out["ts_difference_lag_1_mean"].astype(float), expected["mean"],
                               equal_nan=True)


def test_columns_that_skip_the_shuffle_are_refused(events: pd.DataFrame) -> None:
    grouped = ["user", "item"] >> ops.Groupby(["user"])
    with pytest.raises(irs.SchemaError, match=r"Groupby.*\['rating'\].*do not pass through"):
        irs.Workflow(grouped + "rating").fit(partitioned(events, 2))  # refused before any work
    other = ["item", "ts"] >> ops.Groupby(["item"])
    with pytest.raises(irs.SchemaError, match="regroups rows"):
        irs.Workflow(grouped + other).fit_transform(events)
    # branches of one Groupby line up: allowed
    both = (grouped >> ops.SelectColumns(["user"])) + (grouped >> ops.SelectColumns(
        ["item_list"]) >> ops.ListSlice(0, 1))
    out = by_key(irs.Workflow(both).fit_transform(partitioned(events, 3)).compute(), ["user"])
    firsts = events.groupby("user", dropna=False, sort=True)["item"].first()
    assert [x[0] for x in out["item_list"]] == firsts.tolist()


def test_save_load_round_trip(events: pd.DataFrame, tmp_path: object) -> None:
    sessions = ["user", "item", "ts"] >> ops.Groupby(["user"], sort_cols=["ts"],
                                                     aggs={"item": ["list"]}, name_sep="__")
    graph = (sessions >> ops.SelectColumns(["user"])) + (
        sessions >> ops.SelectColumns(["item__list"]) >> ops.ListSlice(-3, pad=True,
                                                                      pad_value=-1))
    wf = irs.Workflow(graph).fit(partitioned(events, 3))
    wf.save(tmp_path / "wf")
    loaded = irs.Workflow.load(tmp_path / "wf")
    assert loaded.output_schema == wf.output_schema
    assert loaded.output_schema["item__list"].properties["value_count"] == {"min": 3, "max": 3}
    assert_frames_equal(by_key(loaded.transform(partitioned(events, 4)).compute(), ["user"]),
                        by_key(wf.transform(events), ["user"]))


@pytest.mark.gpu
def test_groupby_and_lag_on_gpu_equal_cpu(events: pd.DataFrame) -> None:
    lag = ["user", "item", "ts", "rating"] >> ops.DifferenceLag(["user"], sort_cols=["ts"])
    grouped = ["user", "item", "ts", "rating"] >> ops.Groupby(["user"], sort_cols=["ts"],
                                                              aggs=AGGS)
    for graph, keys in ((grouped, ["user"]), (lag, ["user", "ts"])):
        outs = []
        for backend in ("cpu", "gpu"):
            ds = irs.Dataset(events, backend=backend)
            out = irs.Workflow(graph).fit_transform(ds).compute()
            outs.append(by_key(irs.get_backend(backend).to_pandas(out), keys))
        assert_frames_equal(outs[1], outs[0])


def test_list_of_a_list_column_keeps_each_rows_list(events: pd.DataFrame) -> None:
    tags = [None if i % 11 == 0 else [int(i % 5)] * int(i % 3) for i in range(len(events))]
    df = events.assign(tags=pd.Series(tags, dtype=pd.ArrowDtype(pa.list_(pa.int64()))))
    op = ops.Groupby(["user"], sort_cols=["ts"], aggs={"tags": ["list"]})
    wf = irs.Workflow(["user", "ts", "tags"] >> op)
    out = by_key(wf.fit_transform(partitioned(df, 4)).compute(), ["user"])
    assert wf.output_schema["tags_list"].dtype == "list<list<int64>>"
    rows = pa.Table.from_pandas(df[["user", "ts", "tags"]], preserve_index=False).to_pylist()
    rows.sort(key=lambda r: (r["user"] is None, r["user"] or 0, r["ts"]))
    expected: dict = {}
    for r in rows:
        expected.setdefault(r["user"], []).append(r["tags"])
    assert pa.array(out["tags_list"]).to_pylist() == list(expected.values())
    with pytest.raises(irs.SchemaError, match=r"Groupby.*'first'.*'tags'"):
        irs.Workflow(["user", "tags"] >> ops.Groupby(["user"], aggs="first")).fit(df)
