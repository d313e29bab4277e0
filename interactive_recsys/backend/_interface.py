"""The backend interface: every kernel an operator, the dataset or the writer may call.

:class:`~.cpu.CpuBackend` (pandas with Arrow-backed columns) and :class:`~.gpu.GpuBackend`
(cuDF) each implement all of it, with no inheritance between them, so a kernel missing on
one side is an error at class creation (``TypeError: Can't instantiate abstract class``)
and in ``tests/unit/backend/test_backend_interface.py``, never a silent fall-back to the other
library's code. *Native* frames and columns are the backend's own (pandas / ``pa.ChunkedArray``
on CPU, cuDF DataFrame / Series on GPU); statistics tables are ``pyarrow.Table`` on both.

Missing values: null, and NaN in a float column, are both *missing* on both backends
(:meth:`Backend.is_missing`, :meth:`Backend.null_mask`, :meth:`Backend.value_counts`,
:meth:`Backend.digitize`...).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from interactive_recsys.schema import Schema


class Backend(abc.ABC):
    """The kernels of one DataFrame library."""

    #: ``"cpu"`` or ``"gpu"``.
    name: ClassVar[str]
    #: Whether string columns can be read as dictionaries (see :meth:`dictionary_codes`).
    reads_dictionaries: ClassVar[bool]

    # ---- frames -------------------------------------------------------------------------
    @abc.abstractmethod
    def owns(self, df: Any) -> bool:
        """Whether ``df`` (a frame or Series) is of this backend's library."""

    @abc.abstractmethod
    def from_arrow(self, table: pa.Table) -> Any:
        """A native frame from an Arrow table."""

    @abc.abstractmethod
    def to_arrow(self, df: Any) -> pa.Table:
        """An Arrow table of a native frame (no metadata; strings as ``string``)."""

    @abc.abstractmethod
    def from_pandas(self, df: pd.DataFrame) -> Any:
        """A native frame of any pandas DataFrame (NaN in floats stays NaN)."""

    @abc.abstractmethod
    def to_pandas(self, df: Any) -> pd.DataFrame:
        """A pandas DataFrame with Arrow-backed columns, as the CPU backend holds them."""

    @abc.abstractmethod
    def read_parquet(self, path: str, columns: Sequence[str] | None,
                     row_groups: Sequence[int] | None, schema: pa.Schema) -> Any:
        """Some row groups of one parquet file conformed to ``schema``."""

    @abc.abstractmethod
    def write_parquet(self, df: Any, path: str, schema: pa.Schema | None = None,
                      row_group_size: int | None = None,
                      use_dictionary: bool | list[str] = True) -> None:
        """Write a native frame to one parquet file (cast to ``schema`` when given);
        ``use_dictionary`` as in ``pyarrow.parquet.write_table`` (True, or the columns)."""

    @abc.abstractmethod
    def empty(self, schema: Schema) -> Any:
        """A frame of no rows with ``schema``."""

    @abc.abstractmethod
    def concat(self, frames: Sequence[Any]) -> Any:
        """Frames of the same columns one after the other."""

    @abc.abstractmethod
    def num_rows(self, df: Any) -> int:
        """Rows of a frame."""

    @abc.abstractmethod
    def hconcat(self, frames: Sequence[Any]) -> Any:
        """Frames of the same rows side by side."""

    @abc.abstractmethod
    def schema_of(self, df: Any) -> Schema:
        """The backend-neutral schema of a frame."""

    @abc.abstractmethod
    def select(self, df: Any, names: Sequence[str]) -> Any:
        """The columns ``names`` (a clear SchemaError for an unknown one)."""

    @abc.abstractmethod
    def with_columns(self, df: Any, columns: Mapping[str, Any]) -> Any:
        """``df`` with native columns replaced or appended."""

    @abc.abstractmethod
    def rename(self, df: Any, mapping: Mapping[str, str]) -> Any:
        """Columns renamed."""

    @abc.abstractmethod
    def filter_rows(self, df: Any, mask: Any) -> Any:
        """Rows where the native boolean column ``mask`` is true (null: dropped)."""

    @abc.abstractmethod
    def permute_rows(self, df: Any, seed: int) -> Any:
        """Rows in NumPy's ``default_rng(seed).permutation`` order."""

    @abc.abstractmethod
    def take_rows(self, df: Any, positions: np.ndarray) -> Any:
        """Rows at ``positions``."""

    @abc.abstractmethod
    def sort_rows(self, df: Any, column: str) -> Any:
        """Rows sorted by one column (ties in any order)."""

    # ---- columns --------------------------------------------------------------------------
    @abc.abstractmethod
    def column(self, df: Any, name: str) -> Any:
        """One native column (a clear SchemaError for an unknown name)."""

    @abc.abstractmethod
    def series(self, col: Any, index: Any = None) -> Any:
        """A Series of this library holding the native column ``col``."""

    @abc.abstractmethod
    def from_series(self, series: Any) -> Any:
        """A native column of a Series of this library (any dtype)."""

    @abc.abstractmethod
    def to_arrow_array(self, col: Any) -> pa.ChunkedArray:
        """A native column as Arrow (strings and lists with 32-bit offsets)."""

    @abc.abstractmethod
    def from_arrow_array(self, arr: pa.Array | pa.ChunkedArray) -> Any:
        """A native column of an Arrow array."""

    @abc.abstractmethod
    def to_pandas_list(self, col: Any) -> list:
        """A native column as a Python list (null as None)."""

    @abc.abstractmethod
    def from_numpy(self, values: np.ndarray, null_mask: np.ndarray | None = None) -> Any:
        """A native column of NumPy values, null where ``null_mask`` is true."""

    @abc.abstractmethod
    def dtype(self, col: Any) -> str:
        """The backend-neutral dtype name of a native column."""

    @abc.abstractmethod
    def length(self, col: Any) -> int:
        """Rows of a native column."""

    # ---- kernels --------------------------------------------------------------------------
    @abc.abstractmethod
    def is_missing(self, col: Any) -> Any:
        """Native boolean column: null, or NaN in a float column (never null itself)."""

    @abc.abstractmethod
    def missing_mask(self, col: Any) -> np.ndarray:
        """:meth:`is_missing` as a NumPy bool array."""

    @abc.abstractmethod
    def null_mask(self, col: Any) -> np.ndarray:
        """Rows an operator treats as missing (null, or NaN: NaN is missing) as NumPy bools;
        the same rows as :meth:`missing_mask`."""

    @abc.abstractmethod
    def invert(self, mask: Any) -> Any:
        """Logical not of a native boolean column."""

    @abc.abstractmethod
    def logical_and(self, a: Any, b: Any) -> Any:
        """Logical and of two native boolean columns."""

    @abc.abstractmethod
    def fill_missing(self, col: Any, value: Any) -> Any:
        """Nulls and NaN replaced by ``value`` (a SchemaError for a fractional value in an
        integer column)."""

    @abc.abstractmethod
    def clip(self, col: Any, lower: float | None, upper: float | None) -> Any:
        """Values clipped to ``[lower, upper]`` (integer bounds rounded inwards)."""

    @abc.abstractmethod
    def cast(self, col: Any, dtype: str) -> Any:
        """Cast to a backend-neutral dtype (SchemaError when it cannot)."""

    @abc.abstractmethod
    def log1p(self, col: Any) -> Any:
        """``log(1 + x)`` as float32."""

    @abc.abstractmethod
    def affine(self, col: Any, shift: float, scale: float, dtype: str = "float32") -> Any:
        """``(x - shift) / scale`` computed in float64, returned as ``dtype``."""

    @abc.abstractmethod
    def elementwise(self, col: Any, steps: Sequence[tuple]) -> Any:
        """Per-value ``steps`` one after the other, each a tuple: ``("fill", value)``
        (:meth:`fill_missing`), ``("clip", lower, upper)`` (:meth:`clip`), ``("log1p",)``
        (:meth:`log1p`), ``("affine", shift, scale, dtype)`` (:meth:`affine`): the plan runs a
        branch's consecutive per-value operators on each column this way, with no frame
        built between them (``Operator.elementwise``)."""

    @abc.abstractmethod
    def digitize(self, col: Any, boundaries: Sequence[float]) -> Any:
        """int64 bucket id = number of boundaries ``<= x``; missing (null, NaN) gives null."""

    @abc.abstractmethod
    def moments(self, col: Any) -> dict[str, float]:
        """count / mean / m2 / min / max of the finite values and the count of the others."""

    @abc.abstractmethod
    def extremes(self, col: Any) -> dict[str, float]:
        """count / min / max of the finite values and the count of the others (the fields of
        :meth:`moments` without the mean and spread)."""

    @abc.abstractmethod
    def finite_values(self, col: Any) -> np.ndarray:
        """The finite values as float64."""

    @abc.abstractmethod
    def hash64(self, col: Any) -> np.ndarray:
        """uint64 hash of every value (:func:`~interactive_recsys.hashing.hash_array`)."""

    @abc.abstractmethod
    def from_indices(self, indices: np.ndarray) -> Any:
        """A native column of NumPy integers."""

    @abc.abstractmethod
    def lookup(self, col: Any, table: Any, hashes: np.ndarray) -> np.ndarray:
        """Row of each value in a vocabulary table, -1 when absent (callers mask missing
        rows with :meth:`null_mask`)."""

    @abc.abstractmethod
    def value_counts(self, col: Any) -> pa.Table:
        """A ``value``/``count`` table of the present values (no null, no NaN)."""

    @abc.abstractmethod
    def keyed_value_counts(self, col: Any) -> Any:
        """:meth:`value_counts` as ``_keyed_counts.KeyedCounts`` (by 64-bit keys that
        sort like the values) where the values have keys, else as that table."""

    @abc.abstractmethod
    def dictionary_codes(self, col: Any) -> list[tuple[np.ndarray, pa.Array]] | None:
        """``(codes, dictionary)`` of each chunk (row group) of a dictionary-encoded column,
        in row order; None for a plain column."""

    @abc.abstractmethod
    def take(self, col: Any, positions: np.ndarray) -> Any:
        """Values at ``positions``."""

    @abc.abstractmethod
    def keyed_aggregate(self, keys: Mapping[str, Any], columns: Mapping[str, Any],
                        aggs: Sequence[tuple[str, str, str]]) -> pa.Table:
        """Per-group statistics (``size``, ``count``, ``sum``, ``min``, ``max``, ``var0``) as
        Arrow; missing values skipped, rows with a missing key left out."""

    @abc.abstractmethod
    def concat_columns(self, cols: Sequence[Any]) -> Any:
        """Columns one after the other."""

    @abc.abstractmethod
    def join_as_strings(self, cols: Sequence[Any], sep: str = "\x1f") -> Any:
        """One string per row joining the columns' values (null shown as ``\\x00``)."""

    # ---- list (multi-hot) columns ---------------------------------------------------------
    @abc.abstractmethod
    def list_values(self, col: Any) -> Any:
        """The values of a list column, flattened by one level."""

    @abc.abstractmethod
    def list_with_values(self, col: Any, values: Any) -> Any:
        """A list column with the row structure of ``col`` and new flat ``values``."""

    @abc.abstractmethod
    def list_length_range(self, col: Any) -> tuple[int, int] | None:
        """Shortest and longest list (None when there is none)."""

    @abc.abstractmethod
    def list_slice(self, col: Any, start: int, end: int | None, pad_length: int | None = None,
                   pad_value: Any = 0) -> Any:
        """``row[start:end]`` of every list, padded to ``pad_length`` when given."""

    # ---- groups of rows (sequence operators) ----------------------------------------------
    @abc.abstractmethod
    def sort_rows_by(self, df: Any, columns: Sequence[str]) -> Any:
        """Rows sorted by ``columns`` (stable; nulls last)."""

    @abc.abstractmethod
    def group_ids(self, df: Any, keys: Sequence[str]) -> np.ndarray:
        """Consecutive group number of each row of a frame sorted by ``keys``."""

    @abc.abstractmethod
    def difference_lag(self, df: Any, keys: Sequence[str], column: str, shift: int) -> Any:
        """``x - x[shift rows before]`` within equal ``keys``, else null."""

    @abc.abstractmethod
    def group_aggregate(self, df: Any, keys: Sequence[str],
                        aggs: Sequence[tuple[str, str, str]]) -> Any:
        """One row per distinct ``keys`` with one column per aggregation."""


def kernel_names() -> list[str]:
    """Names of every method of the interface.

    >>> "lookup" in kernel_names() and "owns" in kernel_names()
    True
    """
    return sorted(Backend.__abstractmethods__)
