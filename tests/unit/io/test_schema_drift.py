"""Files whose columns change type: since the dataset opened, since the fit, and an
all-null file beside typed files.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError, SchemaError


# ---- a column whose type changed between fit and transform -----------------------------------
def test_a_file_changed_since_the_dataset_opened_names_the_column(tmp_path):
    path = tmp_path / "d.parquet"
    pd.DataFrame({"c": ["a", "b", "c"]}).to_parquet(path)
    ds = irs.Dataset(str(path))
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(ds)
    pd.DataFrame({"c": [1, 2, 3]}).to_parquet(path)  # rewritten with another type
    with pytest.raises(DatasetError, match=r"d\.parquet.*Column 'c' is int64 in the file now.*"
                                           r"Open the Dataset again"):
        wf.transform(ds).compute()


def test_a_column_whose_type_changed_since_the_fit_is_refused(tmp_path):
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["1", "2", "2"]}))
    with pytest.raises(SchemaError, match=r"Column 'c' is int64 here, but it was string when "
                                          r"this workflow was fit.*astype\('string'\)"):
        wf.transform(pd.DataFrame({"c": [1, 2, 2]}))  # before: every id out-of-vocabulary (2)
    widened = irs.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1, 3]}))
    assert widened.transform(pd.DataFrame({"x": [1.0, 3.0]}))["x"].tolist() == [-1.0, 1.0]


# ---- an all-null (Arrow null) file beside typed files ---------------------------------------------
def test_an_all_null_file_takes_the_type_of_the_other_files(tmp_path):
    pd.DataFrame({"a": [1, 2], "s": ["x", "y"]}).to_parquet(tmp_path / "p0.parquet")
    pd.DataFrame({"a": [None, None], "s": [None, None]}).to_parquet(tmp_path / "p1.parquet")
    assert pq.read_schema(tmp_path / "p1.parquet").field("a").type == pa.null()
    ds = irs.Dataset(str(tmp_path))
    assert ds.schema["a"].dtype == "int64" and ds.schema["s"].dtype == "string"
    out = irs.Workflow((["s"] >> ops.Categorify()) + (["a"] >> ops.Normalize())).fit_transform(
        ds).compute()
    assert out["s"].tolist() == [3, 4, 1, 1] and out["a"].tolist()[:2] == [-1.0, 1.0]
    assert out["a"].isna().tolist() == [False, False, True, True]
