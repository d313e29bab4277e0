"""Frames as pandas code expects them: the ``dtype_backend`` of what a user receives.

Inside the engine, CPU frames hold Arrow-backed columns (``int64[pyarrow]``, lists as Arrow
lists), which the kernels need. Where a frame reaches the user (``Dataset.to_ddf()``,
``Dataset.compute()``, ``Workflow.transform(pandas_frame)``; ``Dataset.head()`` when asked), it is
converted once, by column, after the choice pandas' own readers offer (``dtype_backend=``):

* ``"numpy_nullable"`` (the default): NumPy dtypes where the column has no nulls
  (``int64``, ``uint8``, ``bool``...), pandas' nullable ones where an integer or boolean
  column has some (``Int64``, ``UInt8``, ``boolean``: NumPy cannot hold those nulls);
  floats stay NumPy floats with missing values as ``NaN``, strings pandas' default ``str``
  dtype (missing as ``NaN``) and timestamps ``datetime64`` (``NaT``), as pandas itself and
  NVTabular on the CPU hold them; list columns are ``object`` columns holding a NumPy array
  per row (``None`` for a null list), as NVTabular gives them; dictionaries are decoded;
  anything else is as pyarrow's ``to_pandas`` gives it (decimals as ``Decimal`` objects).
  A frame computed partition by partition (Dask) gets the nullable dtype for an integer
  column where any partition has a null, as ``pd.concat`` makes it;
* ``"pyarrow"``: the engine's Arrow-backed columns as they are.

cuDF frames (the GPU backend) are returned as they are, whatever the choice: cuDF's columns
are already nullable and NumPy-typed.

>>> import pandas as pd, pyarrow as pa
>>> df = pd.DataFrame({"a": pd.array([1, 2], dtype="int64[pyarrow]"),
...                    "b": pd.array([1, None], dtype="int64[pyarrow]"),
...                    "f": pd.array([0.5, None], dtype="float64[pyarrow]"),
...                    "l": pd.Series([[1, 2], None], dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
>>> out = numpy_nullable(df)
>>> [str(t) for t in out.dtypes]
['int64', 'Int64', 'float64', 'object']
>>> out["l"][0]
array([1, 2])
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from interactive_recsys.params import param_error

#: The ``dtype_backend`` choices.
DTYPE_BACKENDS = ("numpy_nullable", "pyarrow")

#: The pandas dtype of an integer or boolean column with nulls (others hold them natively).
_NULLABLE = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
             pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(),
             pa.uint16(): pd.UInt16Dtype(), pa.uint32(): pd.UInt32Dtype(),
             pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype()}


def check_dtype_backend(value: Any, owner: str) -> str:
    """``value`` if it is one of :data:`DTYPE_BACKENDS`, else the parameter error."""
    if value not in DTYPE_BACKENDS:
        raise param_error("dtype_backend", owner, f"must be one of "
                          f"{', '.join(map(repr, DTYPE_BACKENDS))}. Got {value!r} instead.")
    return value


def numpy_column(arr: pa.ChunkedArray) -> pd.Series:
    """One Arrow column as NumPy values (nullable pandas ones for integers and booleans with
    nulls)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if arr.null_count and arr.type in _NULLABLE:
        return arr.to_pandas(types_mapper=_NULLABLE.get)
    return arr.to_pandas()


def numpy_nullable(df: pd.DataFrame) -> pd.DataFrame:
    """A CPU frame with every Arrow-backed column converted (see the module docstring)."""
    columns = {}
    for i in range(len(df.columns)):  # by position: names may repeat in a user frame
        col = df.iloc[:, i]
        if isinstance(col.dtype, pd.ArrowDtype):
            col = numpy_column(pa.chunked_array(col.array.__arrow_array__()))
            col.index = df.index
        columns[i] = col
    out = pd.concat(columns, axis=1) if columns else df.copy()
    out.columns = df.columns
    return out


def user_frame(df: Any, dtype_backend: str) -> Any:
    """``df`` as the user asked for it: pandas frames converted with ``"numpy_nullable"``;
    other frames (cuDF) as they are."""
    if dtype_backend == "pyarrow" or not isinstance(df, pd.DataFrame):
        return df
    return numpy_nullable(df)
