"""A branch's consecutive per-value operators (``Operator.elementwise``: FillMissing, Clip,
LogOp, Normalize, NormalizeMinMax) run as one chain per column in the plan
(``Plan.evaluate``, ``Backend.elementwise``), with the workflow's results unchanged: the
reference is pandas/NumPy by hand, and the same workflow with its steps run one by one.
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
from interactive_recsys.errors import SchemaError
from interactive_recsys.workflow._plan import Plan
from tests.conftest import partitioned

CPU = get_backend("cpu")


def test_elementwise_runs_the_steps_in_a_row() -> None:
    col = pa.chunked_array([[4, None, -9, 100_000]])
    got = CPU.elementwise(col, [("clip", 0, None), ("log1p",), ("affine", 1.0, 2.0, "float64")])
    assert got.type == pa.float64()
    expected = [(float(np.float32(math.log1p(v))) - 1.0) / 2.0 if v is not None else None
                for v in (4, None, 0, 100_000)]
    assert got.to_pylist() == expected
    assert CPU.elementwise(col, [("fill", 7)]).to_pylist() == [4, 7, -9, 100_000]


def test_elementwise_refuses_an_unknown_step_and_a_fill_its_column_cannot_hold() -> None:
    col = pa.chunked_array([[1, None]])
    with pytest.raises(ValueError, match="Unknown elementwise step 'sqrt'"):
        CPU.elementwise(col, [("sqrt",)])
    with pytest.raises(SchemaError, match="not an integer"):
        CPU.elementwise(col, [("fill", 0.5), ("log1p",)])


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
    """The fitted states and outputs with chains are those of the plan that runs every
    operator's ``transform`` on its own frame: byte-identical."""
    df = criteo_like(n=5000, seed=3)

    def run() -> tuple[dict, pd.DataFrame]:
        wf = irs.Workflow(["I1", "I2", "I3", "F"] >> ops.FillMissing(0) >> ops.Clip(min_value=0)
                          >> ops.LogOp() >> ops.NormalizeMinMax())
        ds = partitioned(df, 4)
        wf.fit(ds)
        return {s.node_id: s.state for s in wf.fitted_steps()}, wf.transform(ds).compute()

    states, out = run()
    monkeypatch.setattr(Plan, "_chained", lambda self, step, results: None)  # no chains
    states_one_by_one, out_one_by_one = run()
    assert states == states_one_by_one
    pd.testing.assert_frame_equal(out, out_one_by_one)
