"""Which backend runs: ``"cpu"``, ``"gpu"`` or ``"auto"`` (a GPU only when one is there), the
backend that owns a frame, and :func:`convert`, the one place frames cross between pandas
and cuDF.

>>> get_backend("cpu").name, backend_of(__import__("pandas").DataFrame()).name
('cpu', 'cpu')
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

from interactive_recsys.backend._cpu import CpuBackend, cpu_backend
from interactive_recsys.backend._gpu import (
    GpuBackend,  # imports cuDF only when a GpuBackend is created
)
from interactive_recsys.backend._interface import Backend
from interactive_recsys.errors import ParameterError
from interactive_recsys.params import param_error

BACKENDS = ("auto", "cpu", "gpu")
_GPU_MODULES = ("cudf", "dask_cudf")


def gpu_device_count() -> int:
    """Number of GPUs NVML sees on this machine (0 when NVML or the driver is missing).

    Asks the driver through NVML and never through cuDF: a cuDF operation in this
    process would create a CUDA context here, and fix cuDF's spill manager before a
    cluster could configure it.

    >>> gpu_device_count() >= 0
    True
    """
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0


@functools.cache
def gpu_available() -> bool:
    """True when cuDF and dask-cuDF are installed and NVML sees at least one GPU.

    Nothing is imported or run on a device (cuDF imports on a machine without a GPU and
    fails only at its first operation, so the driver is asked instead). Set
    ``IRS_DISABLE_GPU=1`` to never use a GPU.
    """
    if os.environ.get("IRS_DISABLE_GPU"):
        return False
    if any(importlib.util.find_spec(m) is None for m in _GPU_MODULES):
        return False
    return gpu_device_count() > 0


@functools.cache
def _gpu() -> Backend:
    return GpuBackend()


def _cpu() -> CpuBackend:
    return cpu_backend()


def get_backend(name: str = "auto") -> Backend:
    """The backend named ``"cpu"``, ``"gpu"`` or ``"auto"`` (GPU only when one is there)."""
    if name not in BACKENDS:
        raise param_error("backend", None, f"must be one of {BACKENDS}. Got {name!r}.")
    if name == "auto":
        name = "gpu" if gpu_available() else "cpu"
    if name == "gpu":
        if not gpu_available():
            raise ParameterError("backend='gpu' was requested but no working GPU with cuDF was "
                                 "found. Install the 'gpu' extra on a CUDA machine, or use "
                                 "backend='cpu'.")
        return _gpu()
    return _cpu()


def _is_gpu_object(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] in _GPU_MODULES


def backend_of(df: Any) -> Backend:
    """The backend that owns a DataFrame (cuDF -> GPU, anything else -> CPU).

    >>> import pandas as pd
    >>> backend_of(pd.DataFrame()).name
    'cpu'
    """
    return _gpu() if _is_gpu_object(df) else _cpu()


def convert(frame: Any, like: Any = None, *, backend: str | Backend | None = None,
            schema: Any = None) -> Any:
    """``frame`` as a frame of the backend of ``like`` (a frame) or of ``backend`` (a name
    or a backend), optionally cast to an Arrow ``schema``.

    The one place frames cross between pandas and cuDF: pandas frames of the CPU backend
    hold Arrow-backed columns, so any pandas frame going there is converted too. Without
    ``schema`` a frame already of the target backend comes back as it is.

    >>> import pandas as pd
    >>> out = convert(pd.DataFrame({"a": [1, 2]}), backend="cpu")
    >>> str(out["a"].dtype)
    'int64[pyarrow]'
    """
    if backend is None:
        target = backend_of(like)
    else:
        target = get_backend(backend) if isinstance(backend, str) else backend
    source = backend_of(frame)
    if schema is None and source.name == target.name:
        return target.from_pandas(frame) if target.name == "cpu" else frame
    table = source.to_arrow(frame.reset_index(drop=True))
    return target.from_arrow(table if schema is None else table.cast(schema))
