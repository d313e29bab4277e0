"""Operators at the integer limits: Normalize of uint64, LambdaOp overflow, Clip bounds
past the type's range.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError, SchemaError


# ---- integer overflow ---------------------------------------------------------------------------
def test_normalize_of_uint64_past_2_53_matches_numpy():
    values = np.array([2**53 + 1, 2**63 + 5, 7], dtype="uint64")
    out = irs.Workflow(["u"] >> ops.Normalize()).fit_transform(pd.DataFrame({"u": values}))
    x = values.astype("float64")
    np.testing.assert_allclose(out["u"].to_numpy(float), (x - x.mean()) / x.std(), rtol=1e-6)


def test_lambda_overflow_names_the_step_column_and_fix():
    df = pd.DataFrame({"x": np.array([2**63 - 1, 1], dtype="int64")})
    with pytest.raises(ParameterError, match=r"LambdaOp\('x \+ 1'\) fails on column 'x' "
                                             r"\(int64\).*LambdaOp\('x', dtype='float64'\)"):
        irs.Workflow(["x"] >> ops.LambdaOp("x + 1")).fit_transform(df)
    fixed = irs.Workflow(["x"] >> ops.LambdaOp("x", dtype="float64") >> ops.LambdaOp("x + 1"))
    assert fixed.fit_transform(df)["x"].tolist() == [2.0**63 + 1, 2.0]


@pytest.mark.parametrize(("bounds", "expected"), [
    ({"min_value": -1e30}, [2**63 - 1, -5, 1]),
    ({"max_value": 1e30, "min_value": 0}, [2**63 - 1, 0, 1]),
    ({"min_value": -1e30, "max_value": 0.5}, [0, -5, 0])])
def test_clip_bounds_past_the_integer_range_clip_nothing_there(bounds, expected):
    df = pd.DataFrame({"x": np.array([2**63 - 1, -5, 1], dtype="int64")})
    assert irs.Workflow(["x"] >> ops.Clip(**bounds)).fit_transform(df)["x"].tolist() == expected


def test_clip_to_a_bound_the_integer_type_cannot_hold_is_refused():
    df = pd.DataFrame({"x": np.array([1, 2], dtype="int8")})
    with pytest.raises(SchemaError, match=r"Cannot clip a int8 column .*range is -128 to 127"):
        irs.Workflow(["x"] >> ops.Clip(min_value=1000)).fit_transform(df)
