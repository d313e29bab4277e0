"""The one place that knows pandas from cuDF.

Operators call the kernels of a :class:`Backend` (``fill_missing``, ``lookup``,
``hash64``...) on *native columns* and never test the library themselves.

* ``_interface`` -- :class:`Backend`, the abstract list of every kernel;
* ``_cpu`` -- :class:`CpuBackend`: pandas DataFrames with Arrow-backed columns;
* ``_gpu`` -- :class:`GpuBackend`: cuDF DataFrames (imports cuDF only when created);
* ``_select`` -- :func:`~interactive_recsys.get_backend`, :func:`backend_of`, :func:`convert`;
* ``_parquet`` -- row groups read as Arrow tables conformed to a schema;
* ``_arrow`` -- the Arrow-level helpers both share (one definition of a kernel, one
  result on both devices; the NaN-is-missing rule).

Small statistics tables (value counts, vocabularies) are ``pyarrow.Table`` on both
backends, so the fitted state is the same bytes whichever device computed it.

Examples
--------
>>> import pandas as pd
>>> b = get_backend("cpu")
>>> df = b.from_pandas(pd.DataFrame({"x": [1.0, None, 3.0]}))
>>> b.to_pandas_list(b.fill_missing(b.column(df, "x"), 0))
[1.0, 0.0, 3.0]
>>> convert(df, like=pd.DataFrame()).equals(df)
True
"""

from __future__ import annotations

from interactive_recsys.backend._arrow import (
    ARROW_AGGREGATIONS,
    check_fill_value,
    integer_bounds,
    merge_moments,
    merge_sums,
    slice_bounds,
    sum_counts,
)
from interactive_recsys.backend._cpu import CpuBackend
from interactive_recsys.backend._gpu import (
    GpuBackend,  # imports cuDF only when a GpuBackend is created
)
from interactive_recsys.backend._interface import Backend, kernel_names
from interactive_recsys.backend._parquet import dictionary_schema, read_parquet_table
from interactive_recsys.backend._select import (
    BACKENDS,
    backend_of,
    convert,
    get_backend,
    gpu_available,
    gpu_device_count,
)

__all__ = ["ARROW_AGGREGATIONS", "BACKENDS", "Backend", "CpuBackend", "GpuBackend",
           "backend_of", "check_fill_value", "convert", "dictionary_schema", "get_backend",
           "gpu_available", "gpu_device_count", "integer_bounds", "kernel_names",
           "merge_moments", "merge_sums", "read_parquet_table", "slice_bounds", "sum_counts"]
