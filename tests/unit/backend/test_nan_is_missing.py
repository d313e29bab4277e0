"""NaN is missing on both backends: in float key columns, NaN gets what null gets.

cuDF treats NaN as null (``isna``, ``value_counts``); the CPU backend follows the same rule,
so Categorify, HashBucket, JoinExternal and Bucketize give identical ids on both devices.
Each test compares the NaN rows with the null rows of the same column, and the present
values with an independent expectation.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.backend import get_backend
from interactive_recsys.hashing import hash_array

NAN = float("nan")
KEYS = [1.5, NAN, None, 1.5, 2.5, NAN, 2.5, 1.5]
MISSING = [False, True, True, False, False, True, False, False]


def _frame() -> pa.Table:
    return pa.table({"k": pa.array(KEYS, pa.float64())})  # NaN kept as a value, None null


def _py(values) -> list:
    return [None if pd.isna(v) else v for v in values]


def _out(node, data) -> list:
    out = irs.Workflow(node).fit_transform(data)
    return out[out.columns[-1]].tolist() if len(out.columns) > 1 else out.iloc[:, 0].tolist()


def test_the_input_really_holds_nan_and_null() -> None:
    col = _frame()["k"]
    assert col.null_count == 1 and sum(1 for v in col.to_pylist() if v is not None
                                       and math.isnan(v)) == 2


def test_categorify_gives_nan_the_null_index() -> None:
    ids = _out(["k"] >> ops.Categorify(), _frame())
    null_id = ids[2]
    assert [ids[i] for i, m in enumerate(MISSING) if m] == [null_id] * 3
    # vocabulary by descending frequency after the reserved ids: 1.5 (3 rows), 2.5 (2)
    present = {KEYS[i]: ids[i] for i, m in enumerate(MISSING) if not m}
    assert present[1.5] < present[2.5] and null_id not in present.values()
    assert len(set(ids)) == 3  # NaN is no category of its own


def test_hash_bucket_gives_nan_the_null_index() -> None:
    ids = _out(["k"] >> ops.HashBucket(97), _frame())
    # 0 padding, 1 missing, then 2 + hash % buckets (the documented layout)
    assert [ids[i] for i, m in enumerate(MISSING) if m] == [1, 1, 1]
    expected = 2 + hash_array(pa.array([1.5, 2.5])) % np.uint64(97)
    assert [ids[0], ids[3], ids[7], ids[4], ids[6]] == [int(expected[0])] * 3 + [
        int(expected[1])] * 2


def test_join_external_does_not_match_nan_keys() -> None:
    side = pd.DataFrame({"k": [1.5, 2.5, NAN], "name": ["a", "b", "nan-row"]})
    out = irs.Workflow(["k"] >> ops.JoinExternal(side, on="k")).fit_transform(_frame())
    names = _py(out["name"])
    assert names == ["a", None, None, "a", "b", None, "b", "a"]


def test_bucketize_keeps_nan_missing() -> None:
    out = irs.Workflow(["k"] >> ops.Bucketize([2.0])).fit_transform(_frame())
    assert _py(out["k"]) == [0, None, None, 0, 1, None, 1, 0]
    assert np.searchsorted([2.0], 2.5, side="right") == 1  # the reference rule


@pytest.mark.parametrize("name", ["is_missing", "null_mask", "missing_mask"])
def test_backend_masks_agree(name: str) -> None:
    b = get_backend("cpu")
    col = b.column(b.from_arrow(_frame()), "k")
    mask = getattr(b, name)(col)
    mask = np.asarray(mask.to_numpy(zero_copy_only=False) if hasattr(mask, "chunks") else mask)
    assert mask.tolist() == MISSING


def test_value_counts_and_groups_leave_nan_out() -> None:
    b = get_backend("cpu")
    df = b.from_arrow(_frame())
    counts = b.value_counts(b.column(df, "k")).to_pydict()
    assert dict(zip(counts["value"], counts["count"], strict=True)) == {1.5: 3, 2.5: 2}
    table = b.keyed_aggregate({"k": b.column(df, "k")}, {}, [("n", "", "size")]).to_pydict()
    assert dict(zip(table["k"], table["n"], strict=True)) == {1.5: 3, 2.5: 2}
    ordered = b.sort_rows_by(df, ["k"])
    assert b.group_ids(ordered, ["k"]).tolist() == [1, 1, 1, 2, 2, 3, 3, 3]
