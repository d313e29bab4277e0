"""``merlin.core.dispatch``'s frame helpers used by NVTabular code: pandas here, cuDF on a GPU.

>>> make_df({"a": [1, 2]})["a"].tolist()
[1, 2]
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from interactive_recsys.backend import gpu_available


def get_lib() -> Any:
    """The frame library NVTabular code would use: cuDF when a GPU works, else pandas."""
    if gpu_available():
        import cudf  # optional: only the GPU extra installs it

        return cudf
    return pd


def make_df(data: Any = None, device: str | None = None) -> Any:
    """A DataFrame of ``data``: pandas (``device="cpu"`` or no GPU), else cuDF."""
    if device == "cpu" or (device is None and not gpu_available()):
        return pd.DataFrame(data)
    return get_lib().DataFrame(data)


def concat(frames: list[Any], **kwargs: Any) -> Any:
    """``pandas.concat`` / ``cudf.concat`` by the frames' library."""
    lib = pd if not frames or isinstance(frames[0], pd.DataFrame | pd.Series) else get_lib()
    return lib.concat(frames, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "HAS_GPU":  # asked lazily: the answer asks NVML
        return gpu_available()
    raise AttributeError(f"{__name__} has no attribute {name!r}; NVTabular's internal "
                         "dispatch helpers are not part of the port (use pandas or cuDF).")


__all__ = ["concat", "get_lib", "make_df"]
