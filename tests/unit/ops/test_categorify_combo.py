"""Categorify's combo groups next to their own columns, against pandas.
"""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops


def _ids(values: pd.Series) -> pd.Series:
    """Categorify's ids from pandas: 3 + rank by descending count, ties by value."""
    counts = values.value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    return values.map({v: 3 + i for i, v in enumerate(order)}).astype("int64")


def test_combo_group_next_to_its_own_columns(tmp_path):
    df = pd.DataFrame({"a": ["x", "y", "x", "z", "y", "x"], "b": [1, 2, 1, 1, 3, 2]})
    wf = irs.Workflow([["a", "b"], "a", "b"] >> ops.Categorify(encode_type="combo"),
                      artifacts_dir=str(tmp_path / "a"))
    out = wf.fit_transform(irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False))).compute()
    assert sorted(out.columns) == ["a", "a_b", "b"]
    assert list(out.columns) == wf.output_schema.names
    combo = df["a"] + "_" + df["b"].astype(str)
    assert list(out["a_b"]) == list(_ids(combo))
    assert list(out["a"]) == list(_ids(df["a"]))
    assert list(out["b"]) == list(_ids(df["b"]))
    assert wf.output_schema["a_b"].cardinality == 3 + combo.nunique()
