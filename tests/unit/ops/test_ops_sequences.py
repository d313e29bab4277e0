"""DifferenceLag, ListSlice, ValueCount and SelectColumns against plain pandas / Python."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.backend import slice_bounds
from tests.conftest import assert_frames_equal, partitioned

INT_LIST = pd.ArrowDtype(pa.list_(pa.int64()))


@pytest.fixture(scope="module")
def clicks() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 300
    value = rng.normal(0, 10, n).tolist()
    for i in rng.choice(n, 20, replace=False):
        value[i] = None
    return pd.DataFrame({
        "session": pd.Series(rng.integers(0, 17, n), dtype=pd.ArrowDtype(pa.int64())),
        "ts": pd.Series(rng.permutation(n), dtype=pd.ArrowDtype(pa.int64())),
        "value": pd.Series(value, dtype=pd.ArrowDtype(pa.float64())),
        "name": pd.Series([f"n{i % 7}" for i in range(n)], dtype=pd.ArrowDtype(pa.string())),
    })


@pytest.fixture(scope="module")
def lists() -> pd.DataFrame:
    rng = np.random.default_rng(6)
    rows = []
    for i in range(120):
        rows.append(None if i % 17 == 3 else rng.integers(0, 99, int(rng.integers(0, 9))).tolist())
    return pd.DataFrame({"h": pd.Series(rows, dtype=INT_LIST),
                         "w": pd.Series([[str(x) for x in r] if r else r for r in rows],
                                        dtype=pd.ArrowDtype(pa.list_(pa.string())))})


def values(series: pd.Series) -> list:
    return pa.array(series).to_pylist()


# ---- DifferenceLag ---------------------------------------------------------------------------
@pytest.mark.parametrize("shift", [1, 2, -1])
def test_difference_lag_equals_pandas_diff(clicks: pd.DataFrame, shift: int) -> None:
    op = ops.DifferenceLag(["session"], shift=shift, sort_cols=["ts"])
    wf = irs.Workflow(["session", "ts", "value"] >> op)
    out = wf.fit_transform(partitioned(clicks, 6)).compute()
    out = out.sort_values(["session", "ts"]).reset_index(drop=True)
    ordered = clicks.sort_values(["session", "ts"]).reset_index(drop=True)
    grouped = ordered.groupby("session")
    expect_ts = grouped["ts"].diff(shift)
    expect_value = grouped["value"].diff(shift)
    assert values(out[f"ts_difference_lag_{shift}"]) == [
        None if pd.isna(v) else int(v) for v in expect_ts]
    got = np.array(values(out[f"value_difference_lag_{shift}"]), dtype=float)
    np.testing.assert_allclose(got, expect_value.to_numpy(dtype=float, na_value=np.nan),
                               equal_nan=True)
    assert list(out.columns) == ["session", "ts", "value", f"ts_difference_lag_{shift}",
                                 f"value_difference_lag_{shift}"]
    assert wf.output_schema.dtypes[f"ts_difference_lag_{shift}"] == "int64"


def test_difference_lag_without_sort_cols_follows_dataset_order(clicks: pd.DataFrame) -> None:
    """No sort column: the dataset order is the order, across partition boundaries."""
    op = ops.DifferenceLag(["session"], columns=["ts"])
    out = irs.Workflow(["session", "ts", "name"] >> op).fit_transform(partitioned(clicks, 5))
    out = out.compute()
    expected = clicks.groupby("session")["ts"].diff()  # in the frame's own order
    by_row = dict(zip(clicks["ts"], expected, strict=True))  # ts is unique
    assert values(out["ts_difference_lag_1"]) == [
        None if pd.isna(by_row[t]) else int(by_row[t]) for t in out["ts"]]
    assert list(out.columns) == ["session", "ts", "name", "ts_difference_lag_1"]  # no string diff


def test_difference_lag_one_partition_equals_many(clicks: pd.DataFrame, client: object) -> None:
    wf = irs.Workflow(["session", "ts", "value"] >> ops.DifferenceLag(["session"], shift=-2))
    many = wf.fit_transform(partitioned(clicks, 7)).compute()
    one = wf.transform(clicks)
    key = ["session", "ts"]
    assert_frames_equal(many.sort_values(key).reset_index(drop=True),
                        one.sort_values(key).reset_index(drop=True))


def test_difference_lag_bad_input(clicks: pd.DataFrame) -> None:
    with pytest.raises(irs.ParameterError, match="shift"):
        ops.DifferenceLag(["session"], shift=0)
    with pytest.raises(irs.SchemaError, match=r"DifferenceLag.*'name'"):
        irs.Workflow(["session", "name"] >> ops.DifferenceLag(["session"], columns=["name"])
                     ).fit_transform(clicks)
    with pytest.raises(irs.SchemaError, match=r"DifferenceLag.*'session'.*select it"):
        irs.Workflow(["ts"] >> ops.DifferenceLag(["session"])).fit_transform(clicks)


# ---- ListSlice -------------------------------------------------------------------------------
SLICES = [(0, 3, False), (2, None, False), (-3, None, False), (-4, -1, False), (1, 1, False),
          (-20, None, True), (0, 4, True), (-5, -2, True), (5, 2, False)]


@pytest.mark.parametrize(("start", "end", "pad"), SLICES)
def test_list_slice_equals_python_slicing(lists: pd.DataFrame, start: int, end: int | None,
                                          pad: bool) -> None:
    op = ops.ListSlice(start, end, pad=pad, pad_value=-1)
    out = irs.Workflow(["h"] >> op).fit_transform(partitioned(lists, 4)).compute()
    expected = []
    for row in values(lists["h"]):
        if row is None:
            expected.append(None)
            continue
        part = list(row)[start:end]
        expected.append(part + [-1] * (op.pad_length - len(part)) if pad else part)
    assert values(out["h"]) == expected


def test_list_slice_pads_strings_and_records_the_length(lists: pd.DataFrame) -> None:
    wf = irs.Workflow(["w"] >> ops.ListSlice(0, 2, pad=True, pad_value="<pad>"))
    out = wf.fit_transform(lists)
    first = next(r for r in values(lists["w"]) if r is not None and len(r) == 1)
    assert [*first, "<pad>"] in values(out["w"])
    assert wf.output_schema["w"].properties["value_count"] == {"min": 2, "max": 2}


def test_slice_bounds_follow_python_rules() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 12, 200)
    for start, end in [(0, None), (3, 7), (-4, None), (-6, -2), (8, 3), (-30, 30), (2, -1)]:
        lo, n = slice_bounds(lengths, start, end)
        for k, length in enumerate(lengths):
            expected = list(range(length))[start:end]
            assert list(range(lo[k], lo[k] + n[k])) == expected


def test_list_slice_bad_input(lists: pd.DataFrame, clicks: pd.DataFrame) -> None:
    with pytest.raises(irs.ParameterError, match="pad"):
        ops.ListSlice(2, pad=True)  # the length varies: nothing to pad to
    with pytest.raises(irs.ParameterError, match="pad"):
        ops.ListSlice(-3, 2, pad=True)
    with pytest.raises(irs.SchemaError, match=r"ListSlice.*'ts'.*int64"):
        irs.Workflow(["ts"] >> ops.ListSlice(0, 2)).fit_transform(clicks)
    with pytest.raises(irs.SchemaError, match=r"ListSlice.*'w'"):
        irs.Workflow(["w"] >> ops.ListSlice(0, 2, pad=True)).fit_transform(lists)  # pad 0


# ---- ValueCount ------------------------------------------------------------------------------
def test_value_count_records_min_and_max_length(lists: pd.DataFrame, client: object,
                                                tmp_path: object) -> None:
    wf = irs.Workflow(["h", "w"] >> ops.ValueCount()).fit(partitioned(lists, 5))
    lengths = [len(r) for r in values(lists["h"]) if r is not None]
    expected = {"min": min(lengths), "max": max(lengths)}
    assert wf.output_schema["h"].properties["value_count"] == expected
    assert wf.output_schema["w"].properties["value_count"] == expected
    assert_frames_equal(wf.transform(lists), lists[["h", "w"]])
    wf.save(tmp_path / "wf")
    assert irs.Workflow.load(tmp_path / "wf").output_schema == wf.output_schema


def test_value_count_on_non_list_column_names_it(clicks: pd.DataFrame) -> None:
    with pytest.raises(irs.SchemaError, match=r"ValueCount.*'value'.*float64"):
        irs.Workflow(["value"] >> ops.ValueCount()).fit(clicks)


# ---- SelectColumns ---------------------------------------------------------------------------
def test_select_columns_keeps_named_columns_in_order(clicks: pd.DataFrame) -> None:
    node = ["session", "ts", "value"] >> ops.FillMissing(0) >> ops.SelectColumns(["value", "ts"])
    out = irs.Workflow(node).fit_transform(clicks)
    assert list(out.columns) == ["value", "ts"]
    assert values(out["ts"]) == values(clicks["ts"])
    with pytest.raises(irs.SchemaError, match=r"SelectColumns.*'nope'"):
        irs.Workflow(["ts"] >> ops.SelectColumns(["nope"])).fit_transform(clicks)


# ---- GPU -------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_list_ops_on_gpu_equal_cpu(lists: pd.DataFrame) -> None:
    for op in (ops.ListSlice(-3), ops.ListSlice(1, 4, pad=True, pad_value=7), ops.ValueCount()):
        outs, schemas = [], []
        for backend in ("cpu", "gpu"):
            wf = irs.Workflow(["h"] >> op).fit(irs.Dataset(lists, backend=backend))
            outs.append(irs.get_backend(backend).to_pandas(
                wf.transform(irs.Dataset(lists, backend=backend)).compute()))
            schemas.append(wf.output_schema)
        assert_frames_equal(outs[1], outs[0])
        assert schemas[1] == schemas[0]
