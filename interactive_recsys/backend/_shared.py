"""Kernels written once for both backends, over Arrow or the DataFrame API pandas and cuDF
share. Each backend binds the ones it uses by name (``read_parquet = shared.read_parquet``),
so its class still lists every kernel itself and neither inherits the other's; the first
parameter is the backend, as for any method.

>>> import pandas as pd
>>> from interactive_recsys.backend import CpuBackend
>>> b = CpuBackend()
>>> col = b.column(b.from_pandas(pd.DataFrame({"x": [1.0, None, 3.0]})), "x")
>>> CpuBackend.moments is moments, moments(b, col)["count"], length(b, col)
(True, 2.0, 3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from interactive_recsys.backend import _arrow as ax
from interactive_recsys.backend import _frames as frames
from interactive_recsys.backend._parquet import read_parquet_table
from interactive_recsys.hashing import hash_array
from interactive_recsys.schema import Schema

# The parameter is named ``self``: these functions are the methods of both backend classes.


# ---- frames ---------------------------------------------------------------------------------
def read_parquet(self: Any, path: str, columns: Sequence[str] | None,
                 row_groups: Sequence[int] | None, schema: pa.Schema) -> Any:
    return self.from_arrow(read_parquet_table(path, columns, row_groups, schema))


def write_parquet(self: Any, df: Any, path: str, schema: pa.Schema | None = None,
                  row_group_size: int | None = None,
                  use_dictionary: bool | list[str] = True) -> None:
    table = self.to_arrow(df)
    if schema is not None:
        table = table.cast(schema)
    with open(path, "wb") as f:  # never creates a directory that a failed job removed
        pq.write_table(table, f, row_group_size=row_group_size, use_dictionary=use_dictionary)


def empty(self: Any, schema: Schema) -> Any:
    return self.from_arrow(schema.to_arrow().empty_table())


def num_rows(self: Any, df: Any) -> int:
    return len(df)


def select(self: Any, df: Any, names: Sequence[str]) -> Any:
    return frames.select(df, names)


def with_columns(self: Any, df: Any, columns: Mapping[str, Any]) -> Any:
    """``df`` with columns replaced or appended (native columns of this backend)."""
    return frames.with_columns(df, columns, self.series)


def rename(self: Any, df: Any, mapping: Mapping[str, str]) -> Any:
    return frames.rename(df, mapping)


# ---- columns --------------------------------------------------------------------------------
def elementwise(self: Any, col: Any, steps: Sequence[tuple]) -> Any:
    """The steps of :meth:`~interactive_recsys.backend.Backend.elementwise` one after the other,
    each with the backend's own kernel."""
    for kind, *args in steps:
        col = step_kernel(self, kind)(col, *args)
    return col


def step_kernel(self: Any, kind: str) -> Any:
    """The backend's kernel of one ``Backend.elementwise`` step."""
    kernels = {"fill": self.fill_missing, "clip": self.clip, "log1p": self.log1p,
               "affine": self.affine}
    if kind not in kernels:
        raise ValueError(f"Unknown elementwise step {kind!r}; expected one of {sorted(kernels)}.")
    return kernels[kind]


def to_pandas_list(self: Any, col: Any) -> list:
    return self.to_arrow_array(col).to_pylist()


def length(self: Any, col: Any) -> int:
    return len(col)


def moments(self: Any, col: Any) -> dict[str, float]:
    return ax.moments(self.to_arrow_array(col))


def extremes(self: Any, col: Any) -> dict[str, float]:
    return ax.extremes(self.to_arrow_array(col))


def finite_values(self: Any, col: Any) -> np.ndarray:
    return ax.finite_values(self.to_arrow_array(col))


def hash64(self: Any, col: Any) -> np.ndarray:
    return hash_array(self.to_arrow_array(col))
