"""``merlin.core.dispatch``'s helpers used by NVTabular's operator tests."""

from typing import Any

import numpy as np
import pandas as pd

from interactive_recsys.compat.nvtabular.dispatch import concat, get_lib, make_df

from .compat import HAS_GPU


def flatten_list_column_values(s: Any) -> Any:
    """The values of a list column, flattened."""
    if hasattr(s, "list"):  # cuDF and Arrow-backed pandas
        return s.list.leaves if hasattr(s.list, "leaves") else s.list.flatten()
    return pd.Series(np.concatenate([np.asarray(v) for v in s])) if len(s) else s


def flatten_list_column(s: Any) -> Any:
    """A frame of one column: the flattened values of ``s`` (named as ``s``)."""
    values = flatten_list_column_values(s)
    return make_df({s.name: pd.Series(values).reset_index(drop=True)})


def array(s: Any) -> np.ndarray:
    return s.to_numpy()


def pull_apart_list(s: Any) -> tuple[Any, Any]:
    """``(values, offsets)`` of a list column."""
    lengths = s.map(len).to_numpy()
    offsets = pd.Series(np.concatenate([[0], np.cumsum(lengths)]))
    return pd.Series(flatten_list_column_values(s)).reset_index(drop=True), offsets


__all__ = ["HAS_GPU", "array", "concat", "flatten_list_column", "flatten_list_column_values",
           "get_lib", "make_df", "pull_apart_list"]
