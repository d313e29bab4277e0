"""NumPy, pandas and Python dtypes as this project's dtype names.

>>> dtype_name_of(np.float32), dtype_name_of(str), dtype_name_of("int64")
('float32', 'string', 'int64')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interactive_recsys.errors import ParameterError


def dtype_name_of(dtype: Any) -> str:
    """This project's dtype name of a NumPy/pandas/Python dtype or a name (``np.int64``,
    ``"float32"``, ``str``)."""
    if dtype in (str, "str", "object", np.str_, object):
        return "string"
    if isinstance(dtype, str) and (dtype.startswith("list<") or dtype == "string"):
        return dtype
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise ParameterError(f"Unknown dtype {dtype!r}; use a NumPy dtype (np.int64), a name "
                             "('float32') or str.") from None


__all__ = ["dtype_name_of"]
