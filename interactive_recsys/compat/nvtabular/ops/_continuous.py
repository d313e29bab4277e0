"""NVTabular's continuous-column operators: ``LogOp``, ``Normalize``, ``NormalizeMinMax``,
``ReduceDtypeSize`` and ``Bucketize``."""

from __future__ import annotations

from typing import Any

import numpy as np

from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.compat.nvtabular.ops._steps import _per_column
from interactive_recsys.compat.nvtabular.ops._values import log_float32
from interactive_recsys.compat.nvtabular.types import dtype_name_of
from interactive_recsys.errors import ParameterError


def Bucketize(boundaries: Any) -> Any:
    """NVTabular's ``Bucketize``: a list of boundaries, or ``{column: boundaries}``."""
    return _per_column("Bucketize", boundaries, _ops.Bucketize, None)


def LogOp() -> _ops.LambdaOp:
    """NVTabular's ``LogOp``: computed in float32 (the core's ``LogOp`` computes in float64
    and rounds once, up to 1.6e-5 closer to the exact value)."""
    return _ops.LambdaOp(log_float32, add_tags=["continuous"])


def _out_dtype(out_dtype: Any) -> dict[str, str]:
    return {} if out_dtype is None else {"out_dtype": dtype_name_of(out_dtype)}


def Normalize(out_dtype: Any = None, **kwargs: Any) -> _ops.Normalize:
    """NVTabular's ``Normalize``: divides by the sample std (``ddof=1``, Dask's ``std()``);
    the core's default is the population one. ``out_dtype`` (``np.float32`` or
    ``np.float64``): the values computed in float64, cast to it, as NVTabular; without it
    float32 here (NVTabular: float64)."""
    return _ops.Normalize(**{"ddof": 1, **kwargs, **_out_dtype(out_dtype)})


def NormalizeMinMax(out_dtype: Any = None) -> _ops.NormalizeMinMax:
    """NVTabular's ``NormalizeMinMax``: ``out_dtype`` as :func:`Normalize`'s."""
    return _ops.NormalizeMinMax(**_out_dtype(out_dtype))


def ReduceDtypeSize(float_dtype: Any = np.float32) -> _ops.ReduceDtypeSize:
    """NVTabular's ``ReduceDtypeSize``: integers to the smallest type holding their range,
    floats to float32 (``float_dtype``'s default, the only one here; a float column beyond
    float32's range stays float64 where NVTabular makes it inf)."""
    if dtype_name_of(float_dtype) != "float32":
        raise ParameterError(
            f"NVTabular's ReduceDtypeSize(float_dtype={float_dtype!r}) is not supported: "
            "floats become float32 here. To keep float columns as they are, select only the "
            "integer columns for it, e.g. ['a', 'b'] >> ReduceDtypeSize() + ['x']; for "
            "float16, add >> LambdaOp('x', dtype='float16') after it.")
    return _ops.ReduceDtypeSize()
