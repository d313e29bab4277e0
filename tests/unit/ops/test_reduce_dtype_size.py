"""ReduceDtypeSize keeps integers past 2**53 exact, and its ranges survive JSON.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops


def test_reduce_dtype_size_keeps_integers_past_2_53_exact(tmp_path):
    big = 2**63 - 1
    df = pd.DataFrame({
        "near_max": np.array([big, big - 1, 2**53 + 1, 0], dtype="int64"),
        "near_min": np.array([-(2**63), -(2**53) - 1, -1, 3], dtype="int64"),
        "fits_int32": np.array([2**31 - 1, -(2**31), 0, 1], dtype="int64"),
        "past_int32": np.array([2**31, -5, 0, 1], dtype="int64"),
        "u_past_2_63": np.array([2**64 - 1, 2**63 + 1, 0, 7], dtype="uint64"),
        "u_small": np.array([255, 0, 1, 2], dtype="uint64"),
    })
    wf = irs.Workflow(list(df.columns) >> ops.ReduceDtypeSize(),
                      artifacts_dir=str(tmp_path / "a"))
    out = wf.fit_transform(irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False))).compute()
    assert wf.output_schema.dtypes == {"near_max": "int64", "near_min": "int64",
                                       "fits_int32": "int32", "past_int32": "int64",
                                       "u_past_2_63": "uint64", "u_small": "uint8"}
    for name in df.columns:  # every value exact (no trip through float64)
        assert [int(v) for v in out[name]] == [int(v) for v in df[name]], name
    ranges = next(wf.fitted_steps()).state["ranges"]
    assert ranges["near_max"] == [0, big]
    assert ranges["near_min"] == [-(2**63), 3]
    assert ranges["u_past_2_63"] == [0, 2**64 - 1]
    wf.save(str(tmp_path / "wf"))  # the exact ranges survive JSON
    again = irs.Workflow.load(str(tmp_path / "wf"))
    assert next(again.fitted_steps()).state["ranges"]["near_max"] == [0, big]
