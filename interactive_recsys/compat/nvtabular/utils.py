"""``nvtabular.utils`` / ``merlin.core.compat`` memory helpers: host memory without a GPU.

>>> device_mem_size(kind="total") > 0
True
"""

from __future__ import annotations

import psutil

from interactive_recsys.backend import gpu_available
from interactive_recsys.errors import ParameterError


def device_mem_size(kind: str = "total", cpu: bool = False) -> int:
    """Total or free memory of GPU 0, or of the host when ``cpu`` or without a GPU (as
    Merlin does)."""
    if kind not in ("total", "free"):
        raise ParameterError(f"device_mem_size(kind={kind!r}): kind must be 'total' or 'free'.")
    if cpu or not gpu_available():
        mem = psutil.virtual_memory()
        return int(mem.total if kind == "total" else mem.available)
    return pynvml_mem_size(kind)


def pynvml_mem_size(kind: str = "total", index: int = 0) -> int:
    """Total or free memory of GPU ``index`` from NVML; without a GPU a clear error."""
    if kind not in ("total", "free"):
        raise ParameterError(f"pynvml_mem_size(kind={kind!r}): kind must be 'total' or 'free'.")
    try:
        import pynvml  # optional: only the GPU extra installs NVML's bindings
        pynvml.nvmlInit()
        info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index))
    except Exception as exc:  # no NVML library, no driver, no such device
        raise ParameterError(f"pynvml_mem_size(index={index}) needs a GPU, and NVML found "
                             f"none here ({type(exc).__name__}). Use "
                             "device_mem_size(kind=..., cpu=True) for host memory.") from None
    return int(info.total if kind == "total" else info.free)


__all__ = ["device_mem_size", "pynvml_mem_size"]
