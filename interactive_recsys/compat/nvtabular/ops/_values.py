"""Element-wise functions the wrappers run as core ``LambdaOp`` steps (NVTabular's float32
log, ids from 0). Saved under the public module's name, as before the split into modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa


def _elementwise(col: Any, fn: Callable[[np.ndarray], np.ndarray]) -> Any:
    """``fn`` on the values of a pandas column, list columns element by element (nulls
    as NaN go in, Arrow nulls stay null)."""
    arr = pa.chunked_array(pa.array(col, from_pandas=True))
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        chunks = [type(c).from_arrays(c.offsets, pa.array(fn(c.flatten().to_numpy(
            zero_copy_only=False)), from_pandas=True), mask=c.is_null()) for c in arr.chunks]
        return pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks)),
                         index=col.index)
    return pd.Series(fn(col.to_numpy(dtype=np.float64 if arr.null_count else None,
                                      na_value=np.nan)), index=col.index)


def log_float32(col: Any) -> Any:
    """``log(float32(x) + 1)`` in float32, as NVTabular's ``LogOp`` (nulls give NaN); a list
    column element by element."""
    if isinstance(col, pd.Series):
        return _elementwise(col, lambda v: np.log(v.astype(np.float32) + np.float32(1)))
    return np.log(col.astype("float32") + 1)  # cuDF: the same ufunc on the device


def hash_ids(col: Any) -> Any:
    """The core's hash ids ``2 + hash % n`` as NVTabular's ``hash % n`` (nulls stay null)."""
    if isinstance(col, pd.Series):
        return _elementwise(col, lambda v: v - 2)
    return col - 2  # cuDF



# saved workflows name these functions (LambdaOp) by the public module they are imported from
log_float32.__module__ = hash_ids.__module__ = "interactive_recsys.compat.nvtabular.ops"
