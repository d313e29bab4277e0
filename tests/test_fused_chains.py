"""Chains of per-value steps (``backend/fused.py``, ``Backend.elementwise``) give the one-step
kernels' results bit for bit, and the plan runs a branch's consecutive per-value operators as
one chain, with the workflow's results unchanged.

The reference for the kernels is the steps one after the other (``shared.elementwise``,
the CPU's one-step kernels: ``tests/test_buffer_kernels.py`` checks those against Arrow and
NumPy on whole arrays); the reference for workflows is pandas/NumPy by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.backend import buffers, fused, get_backend, shared
from interactive_recsys.errors import SchemaError
from tests.conftest import partitioned
from tests.test_buffer_kernels import TYPES, column, same

CPU = get_backend("cpu")

STEP = st.one_of(
    st.tuples(st.just("fill"), st.sampled_from([0, -1, 3, 2.0])),
    st.tuples(st.just("clip"), st.sampled_from([None, -3, 0, 1.5]),
              st.sampled_from([None, 7, 40.5, 90])).filter(
        lambda s: s[1:] != (None, None) and (None in s[1:] or s[1] <= s[2])),
    st.just(("log1p",)),
    st.tuples(st.just("affine"), st.sampled_from([0.0, 2.5, -1.0]),
              st.sampled_from([1.0, 3.0, 0.5]), st.sampled_from(["float32", "float64"])),
)


def chunked(t: pa.DataType, sizes: list[int], seed: int, offset: int, span: int) -> pa.ChunkedArray:
    return pa.chunked_array([column(t, n, seed + i, offset=offset, span=span)
                             for i, n in enumerate(sizes)], t)


def one_by_one(col: pa.ChunkedArray, steps: list[tuple]) -> pa.ChunkedArray:
    return shared.elementwise(CPU, col, steps)


@settings(max_examples=300, deadline=None)
@given(t=st.sampled_from(TYPES), steps=st.lists(STEP, min_size=2, max_size=5),
       sizes=st.lists(st.integers(0, 40), min_size=0, max_size=3), seed=st.integers(0, 99),
       offset=st.sampled_from([0, 3, 8]), block=st.sampled_from([1, 5, 8, 64]),
       span=st.sampled_from([100, 70_000]))
def test_a_chain_equals_its_steps_one_by_one(t, steps, sizes, seed, offset, block,
                                             span) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fused, "BLOCK", block)  # several blocks in small arrays
        check_chain(chunked(t, sizes, seed, offset, span), steps)


def check_chain(col: pa.ChunkedArray, steps: list[tuple]) -> None:
    try:
        expected = one_by_one(col, steps)
    except (SchemaError, pa.ArrowInvalid) as exc:  # e.g. 2.0 fits an int column, -1 a uint not
        with pytest.raises(type(exc)):
            CPU.elementwise(col, steps)
        return
    same(CPU.elementwise(col, steps), expected)


@pytest.mark.parametrize("t", TYPES)
def test_a_chain_across_real_blocks_equals_its_steps(t) -> None:
    n = 2 * buffers.BLOCK + 8 * 1001 + 3
    steps = [("fill", 0), ("clip", 0, None), ("log1p",), ("affine", 1.25, 0.75, "float32")]
    for span in (100, 70_000):  # the log table within its range, and past it
        col = chunked(t, [n, 7], seed=5, offset=3, span=span)
        got = CPU.elementwise(col, steps)
        same(got, one_by_one(col, steps))
        assert got.null_count == 0


def test_a_chain_keeps_nulls_when_nothing_fills_them() -> None:
    col = pa.chunked_array([[4, None, -9, 100_000]])
    got = CPU.elementwise(col, [("clip", 0, None), ("log1p",)])
    assert got.type == pa.float32()
    assert got.to_pylist() == [float(np.float32(math.log1p(4))), None, 0.0,
                               float(np.float32(math.log1p(100_000)))]


def test_a_chain_refuses_a_fill_value_its_column_cannot_hold_as_one_step_does() -> None:
    col = pa.chunked_array([[1, None]])
    with pytest.raises(SchemaError, match="not an integer"):
        CPU.elementwise(col, [("fill", 0.5), ("log1p",)])


def test_a_chain_on_strings_runs_step_by_step() -> None:
    assert fused.compile_chain(pa.string(), [("fill", "x"), ("log1p",)]) is None
    assert CPU.elementwise(pa.chunked_array([["a", None]]), [("fill", "b")]).to_pylist() == \
        ["a", "b"]


# ---- the plan -------------------------------------------------------------------------------
def criteo_like(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(1, 4):
        v = rng.zipf(1.6, n).astype("float64") - 3
        v[rng.random(n) < 0.3] = np.nan
        out[f"I{i}"] = pd.array(np.where(np.isnan(v), None, v), dtype="Int64")
    out["F"] = rng.normal(size=n)
    return pd.DataFrame(out)


def reference(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """FillMissing(0) -> Clip(0) -> LogOp -> Normalize in NumPy (float32 logs, float64 math)."""
    out = {}
    for c in cols:
        x = df[c].astype("float64").fillna(0).to_numpy()
        logs = np.log1p(np.maximum(x, 0)).astype(np.float32).astype(np.float64)
        std = logs.std()
        out[c] = ((logs - logs.mean()) / (std if std > 0 else 1.0)).astype(np.float32)
    return pd.DataFrame(out)


@pytest.fixture
def calls(monkeypatch) -> list[int]:
    """The number of steps of every ``CpuBackend.elementwise`` call."""
    seen: list[int] = []
    original = type(CPU).elementwise

    def spy(self, col, steps):
        seen.append(len(steps))
        return original(self, col, steps)
    monkeypatch.setattr(type(CPU), "elementwise", spy)
    return seen


def test_a_branch_of_per_value_operators_runs_as_one_chain_per_column(calls) -> None:
    df = criteo_like()
    cols = ["I1", "I2", "I3"]
    wf = irs.Workflow(cols >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp()
                      >> ops.Normalize())
    wf.fit(partitioned(df, 3))
    assert calls == [3] * 9  # the fit: Normalize's input, 3 columns x 3 partitions
    calls.clear()
    out = wf.transform(partitioned(df, 3)).compute()
    assert calls and set(calls) == {4}
    expected = reference(df, cols)
    for c in cols:
        np.testing.assert_allclose(out[c].to_numpy(np.float64), expected[c], rtol=1e-5,
                                   atol=1e-6)


def test_a_step_that_two_branches_read_is_computed_once_and_the_results_stay(calls) -> None:
    df = criteo_like(seed=1)
    clipped = ["I1", "I2"] >> ops.FillMissing(0) >> ops.Clip(min_value=0)
    logs = clipped >> ops.LogOp()
    squares = clipped >> ops.LambdaOp(f="x * 2", dtype="float64") >> ops.Rename(postfix="_2")
    wf = irs.Workflow(logs + squares)
    out = wf.fit_transform(df)
    assert 2 in calls and 1 in calls  # fill -> clip as one chain, then LogOp on its result
    for c in ["I1", "I2"]:
        x = np.maximum(df[c].astype("float64").fillna(0).to_numpy(), 0)
        np.testing.assert_array_equal(out[c].to_numpy(np.float32), np.log1p(x).astype(np.float32))
        np.testing.assert_array_equal(out[f"{c}_2"].to_numpy(np.float64), 2 * x)


def test_a_chain_after_a_row_filter_keeps_only_the_rows_it_keeps() -> None:
    df = criteo_like(seed=2)
    wf = irs.Workflow(["I1", "F"] >> ops.Filter(expr="F > 0") >> ops.FillMissing(0)
                      >> ops.Clip(min_value=0) >> ops.LogOp())
    out = wf.fit_transform(df)
    kept = df[df["F"] > 0]
    x = np.maximum(kept["I1"].astype("float64").fillna(0).to_numpy(), 0)
    np.testing.assert_array_equal(out["I1"].to_numpy(np.float32), np.log1p(x).astype(np.float32))
    assert len(out) == len(kept)


def test_fit_and_transform_equal_the_operators_run_one_by_one(monkeypatch) -> None:
    """The fitted states and outputs of the fused plan are those of a plan whose chains run
    step by step (``shared.elementwise``): byte-identical."""
    df = criteo_like(n=5000, seed=3)

    def run() -> tuple[dict, pd.DataFrame]:
        wf = irs.Workflow(["I1", "I2", "I3", "F"] >> ops.FillMissing(0) >> ops.Clip(min_value=0)
                          >> ops.LogOp() >> ops.NormalizeMinMax())
        ds = partitioned(df, 4)
        wf.fit(ds)
        return {s.node_id: s.state for s in wf.fitted_steps()}, wf.transform(ds).compute()

    states, out = run()
    monkeypatch.setattr(type(CPU), "elementwise", shared.elementwise)
    states_one_by_one, out_one_by_one = run()
    assert states == states_one_by_one
    pd.testing.assert_frame_equal(out, out_one_by_one)
