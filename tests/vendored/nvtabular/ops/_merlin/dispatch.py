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


def read_dispatch(df: Any = None, cpu: Any = None, collection: bool = False,
                  fmt: str = "parquet") -> Any:
    """Merlin's reader for ``fmt`` files: pandas' (Dask's with ``collection=True``); cuDF's
    where a GPU is there and ``cpu`` is not set."""
    if HAS_GPU and not cpu and not isinstance(df, pd.DataFrame):
        import cudf
        import dask_cudf

        lib = dask_cudf if collection else cudf
    elif collection:
        import dask.dataframe as lib
    else:
        lib = pd
    return getattr(lib, f"read_{fmt}")


__all__ = ["HAS_GPU", "array", "concat", "flatten_list_column", "flatten_list_column_values",
           "get_lib", "make_df", "pull_apart_list", "read_dispatch"]
