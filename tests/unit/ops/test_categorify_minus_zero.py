"""Categorify counts -0.0 as 0.0, like pandas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from tests.helpers import expected_ids


# ---- 5. -0.0 and 0.0 are one value ----------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_categorify_counts_minus_zero_as_zero_like_pandas(dtype):
    values = [0.0, -0.0, -0.0, 1.5, -0.0, 1.5, 2.0]
    df = pd.DataFrame({"f": np.array(values, dtype=dtype)})
    out = irs.Workflow(["f"] >> ops.Categorify()).fit_transform(df)["f"].tolist()
    assert df["f"].value_counts()[0.0] == 4  # pandas: one value, 4 times
    assert out == expected_ids([v + 0.0 for v in values])  # -0.0 + 0.0 == 0.0
    hashed = irs.Workflow(["f"] >> ops.HashBucket(1000)).fit_transform(df)["f"].tolist()
    assert len({o for o, v in zip(out, values, strict=True) if v == 0}) == 1
    assert len({h for h, v in zip(hashed, values, strict=True) if v == 0}) == 1
