"""``merlin.core.compat``: which GPU libraries work (none without a GPU)."""

import numpy
import pandas

from interactive_recsys.backend import gpu_available

HAS_GPU = gpu_available()
if HAS_GPU:
    import cudf
    import dask_cudf
else:
    cudf = dask_cudf = None

__all__ = ["HAS_GPU", "cudf", "dask_cudf", "numpy", "pandas"]
