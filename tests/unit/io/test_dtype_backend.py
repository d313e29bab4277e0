"""What a user receives: ``dtype_backend=`` of ``Dataset.to_ddf``/``compute``/``head``
(issue 27). By default NumPy dtypes (pandas' nullable ones for integer and boolean columns
with nulls), list cells as NumPy arrays; ``"pyarrow"`` keeps the engine's Arrow columns."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "i": np.array([1, 2, 3, 4, 5, 6], dtype="int64"),
        "i_null": pd.array([1, None, 3, 4, 5, 6], dtype="Int32"),
        "f": [0.5, 1.5, np.nan, 2.0, 3.0, 4.0],
        "b": [True, False, True, True, False, True],
        "s": ["x", "y", None, "x", "z", "y"],
        "l": pd.Series([[1, 2], [3], [], None, [4, 5, 6], [7]],
                       dtype=pd.ArrowDtype(pa.list_(pa.int64()))),  # (Dask makes object strings)
    })


def test_compute_and_to_ddf_give_numpy_dtypes(tmp_path):
    df = _frame()
    ds = irs.Dataset(dd.from_pandas(df, npartitions=3, sort=False))
    for out in (ds.compute(), ds.to_ddf().compute().reset_index(drop=True)):
        assert {n: str(t) for n, t in out.dtypes.items()} == {
            "i": "int64", "i_null": "Int32", "f": "float64", "b": "bool", "s": "str",
            "l": "object"}
        pd.testing.assert_frame_equal(out.drop(columns="l"), df.drop(columns="l").astype(
            {"s": "str"}), check_dtype=True)
        assert [None if v is None else v.tolist() for v in out["l"]] == [
            [1, 2], [3], [], None, [4, 5, 6], [7]]
        assert isinstance(out["l"][0], np.ndarray)
        a = np.arange(1, 7, dtype=float)  # the check NVTabular's notebooks make
        assert np.all((a - out["i"]).abs().values <= 1e-2)
    # the declared dtypes of the lazy frame are the NumPy ones
    assert str(ds.to_ddf().dtypes["i"]) == "int64"
    assert ds.head(2, dtype_backend="numpy_nullable")["i"].dtype == np.dtype("int64")
    assert str(ds.head(2)["i"].dtype) == "int64[pyarrow]"  # to look at: the engine's


def test_pyarrow_keeps_the_engine_columns():
    ds = irs.Dataset(_frame())
    out = ds.compute(dtype_backend="pyarrow")
    assert all(isinstance(t, pd.ArrowDtype) for t in out.dtypes)
    assert out["l"].dtype.pyarrow_dtype == pa.list_(pa.int64())
    assert str(ds.to_ddf(dtype_backend="pyarrow").dtypes["i"]) == "int64[pyarrow]"
    with pytest.raises(irs.ParameterError, match="'dtype_backend' parameter of Dataset.compute "
                       "must be one of 'numpy_nullable', 'pyarrow'. Got 'numpy' instead"):
        ds.compute(dtype_backend="numpy")


def test_a_transformed_dataset_comes_back_as_numpy(tmp_path):
    df = _frame()
    wf = irs.Workflow((["s"] >> ops.Categorify()) + (["f"] >> ops.FillMissing(0)) + ["i_null"],
                      artifacts_dir=str(tmp_path / "a"))
    out = wf.fit_transform(irs.Dataset(dd.from_pandas(df, npartitions=2, sort=False)))
    got = out.to_ddf().compute().reset_index(drop=True)
    expected = pd.DataFrame({"s": np.array([3, 4, 1, 3, 5, 4], dtype="int64"),
                             "f": df["f"].fillna(0), "i_null": df["i_null"]})
    pd.testing.assert_frame_equal(got, expected)  # ids: x 2 rows, y 2 rows, z 1; null 1
    pd.testing.assert_frame_equal(out.compute(), expected)
