"""The one place that knows pandas from cuDF (see :mod:`.cpu`; the package is being split)."""

from .cpu import *  # noqa: F403
from .cpu import (  # noqa: F401
    ARROW_AGGREGATIONS,
    BACKENDS,
    CpuBackend,
    GpuBackend,
    _cpu,
    _gpu,
    backend_of,
    check_fill_value,
    dictionary_schema,
    get_backend,
    gpu_available,
    integer_bounds,
    read_parquet_table,
    slice_bounds,
    sum_counts,
)
