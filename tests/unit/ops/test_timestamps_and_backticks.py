"""Timezone-aware timestamps through steps and save; Filter reads backticked names like
pandas' query.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError


# ---- timezone-aware timestamps --------------------------------------------------------------------
@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Paris"])
def test_timezone_aware_timestamps_pass_through_steps_and_save(tz, tmp_path):
    t = pd.date_range("2024-03-31 00:00", periods=4, freq="h", tz=tz)
    df = pd.DataFrame({"t": t, "x": [1.0, 2.0, 3.0, 4.0]})
    wf = irs.Workflow(["t"] + (["t"] >> ops.Categorify() >> ops.Rename(postfix="_id"))
                      + (["x"] >> ops.Normalize()))
    out = wf.fit_transform(df)
    assert list(out["t"]) == list(t)  # values and zone kept
    assert out["t_id"].tolist() == [3, 4, 5, 6]  # four distinct instants, by value
    again = irs.Workflow.load(wf.save(tmp_path / "wf")).transform(df)
    pd.testing.assert_frame_equal(again, out)
    irs.Dataset(df).to_parquet(tmp_path / "out")
    written = pq.read_schema(tmp_path / "out" / "part.00000.parquet").field("t").type
    assert written == pa.timestamp("us", tz=tz)


# ---- backticks in Filter ---------------------------------------------------------------------------
def test_filter_reads_backticked_column_names_like_pandas_query():
    df = pd.DataFrame({"a.b": [1, 2, 3, 4], "c d": [1, 1, 0, 1], "e": ["x`y", "z", "z", "z"]})
    expr = "`a.b` > 1 and `c d` == 1 or e == 'x`y'"
    got = irs.Workflow(["a.b", "c d", "e"] >> ops.Filter(expr)).fit_transform(df)
    pd.testing.assert_frame_equal(got.astype(object), df.query(expr).reset_index(drop=True)
                                  .astype(object), check_dtype=False)
    with pytest.raises(ParameterError, match=r"backticks, e\.g\. `a\.b` > 1"):
        ops.Filter("a.b > 1")
    with pytest.raises(ParameterError, match="without its closing"):
        ops.Filter("`a.b > 1")
