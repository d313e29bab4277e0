"""The one place that knows pandas from cuDF.

Operators call the kernels of a :class:`Backend` (``fill_missing``, ``lookup``,
``hash64``...) on *native columns* and never test the library themselves. The
CPU backend works on pandas DataFrames whose columns are Arrow-backed
(``pd.ArrowDtype``), so kernels run in ``pyarrow.compute`` without copies; the
GPU backend works on cuDF DataFrames. Small statistics tables (value counts,
vocabularies) are ``pyarrow.Table`` on both backends, so the fitted state is
the same bytes whichever device computed it.

Examples
--------
>>> import pandas as pd
>>> b = get_backend("cpu")
>>> df = b.from_pandas(pd.DataFrame({"x": [1.0, None, 3.0]}))
>>> b.to_pandas_list(b.fill_missing(b.column(df, "x"), 0))
[1.0, 0.0, 3.0]
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import ParameterError, SchemaError
from .hashing import hash_array
from .schema import Schema, arrow_type, dtype_name

BACKENDS = ("auto", "cpu", "gpu")


@functools.cache
def gpu_available() -> bool:
    """True only when cuDF imports *and* runs a tiny operation on a GPU.

    cuDF imports fine on a machine without a GPU and fails at its first real
    operation, so the import alone proves nothing.
    """
    if os.environ.get("IRS_DISABLE_GPU"):
        return False
    try:
        import cudf

        return int(cudf.Series([1, 2]).sum()) == 3
    except Exception:
        return False


class CpuBackend:
    """pandas with Arrow-backed columns; kernels in ``pyarrow.compute``."""

    name = "cpu"

    # ---- frames ---------------------------------------------------------------------------
    def from_arrow(self, table: pa.Table) -> pd.DataFrame:
        return table.to_pandas(types_mapper=pd.ArrowDtype, ignore_metadata=True)

    def to_arrow(self, df: Any) -> pa.Table:
        table = pa.Table.from_pandas(df, preserve_index=False)
        return table.replace_schema_metadata(None)

    def from_pandas(self, df: pd.DataFrame) -> pd.DataFrame:
        """Any pandas DataFrame as Arrow-backed columns (NaN in floats becomes null)."""
        if all(isinstance(t, pd.ArrowDtype) for t in df.dtypes):
            return df.reset_index(drop=True)
        return self.from_arrow(self.to_arrow(df.reset_index(drop=True)))

    def to_pandas(self, df: Any) -> pd.DataFrame:
        return df

    def read_parquet(self, path: str, columns: Sequence[str] | None,
                     row_groups: Sequence[int] | None, schema: pa.Schema) -> Any:
        return self.from_arrow(read_parquet_table(path, columns, row_groups, schema))

    def write_parquet(self, df: Any, path: str, schema: pa.Schema | None = None,
                      row_group_size: int | None = None) -> None:
        table = self.to_arrow(df)
        if schema is not None:
            table = table.cast(schema)
        with open(path, "wb") as f:  # never creates a directory that a failed job removed
            pq.write_table(table, f, row_group_size=row_group_size)

    def empty(self, schema: Schema) -> pd.DataFrame:
        return self.from_arrow(schema.to_arrow().empty_table())

    def concat(self, frames: Sequence[Any]) -> Any:
        return pd.concat(list(frames), ignore_index=True)

    def num_rows(self, df: Any) -> int:
        return len(df)

    def hconcat(self, frames: Sequence[Any]) -> Any:
        """Frames of the same rows side by side."""
        return frames[0] if len(frames) == 1 else pd.concat(list(frames), axis=1)

    def schema_of(self, df: Any) -> Schema:
        return Schema.from_arrow(self.to_arrow(df.iloc[:0]).schema)

    def select(self, df: Any, names: Sequence[str]) -> Any:
        missing = [n for n in names if n not in df.columns]
        if missing:
            raise SchemaError(f"Columns {missing} are not in the data; available columns: "
                              f"{list(df.columns)}.")
        return df[list(names)]

    def with_columns(self, df: Any, columns: Mapping[str, Any]) -> Any:
        """``df`` with columns replaced or appended (native columns of this backend)."""
        out = df.copy(deep=False)
        for name, col in columns.items():
            out[name] = self.series(col, out.index)
        return out

    def rename(self, df: Any, mapping: Mapping[str, str]) -> Any:
        return df.rename(columns=dict(mapping))

    def filter_rows(self, df: Any, mask: Any) -> Any:
        keep = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
        return df[keep].reset_index(drop=True)

    def permute_rows(self, df: Any, seed: int) -> Any:
        order = np.random.default_rng(seed).permutation(len(df))
        return df.iloc[order].reset_index(drop=True)

    def take_rows(self, df: Any, positions: np.ndarray) -> Any:
        return df.iloc[positions].reset_index(drop=True)

    def sort_rows(self, df: Any, column: str) -> Any:
        return df.sort_values(column, kind="stable").reset_index(drop=True)

    # ---- columns --------------------------------------------------------------------------
    def column(self, df: Any, name: str) -> pa.ChunkedArray:
        if name not in df.columns:
            raise SchemaError(f"Column {name!r} is not in the data; available columns: "
                              f"{list(df.columns)}.")
        return self.from_series(df[name])

    def series(self, col: Any, index: Any = None) -> pd.Series:
        if isinstance(col, np.ndarray):
            col = pa.array(col)
        return pd.Series(pd.arrays.ArrowExtensionArray(col), index=index)

    def from_series(self, series: Any) -> Any:
        """A native column from a Series of this backend (any dtype)."""
        if isinstance(series.dtype, pd.ArrowDtype):
            return pa.chunked_array(series.array.__arrow_array__())
        return pa.chunked_array([pa.array(series, from_pandas=True)])

    def to_arrow_array(self, col: Any) -> pa.ChunkedArray:
        return col if isinstance(col, pa.ChunkedArray) else pa.chunked_array([col])

    def from_arrow_array(self, arr: pa.Array | pa.ChunkedArray) -> Any:
        return self.to_arrow_array(arr)

    def to_pandas_list(self, col: Any) -> list:
        return self.to_arrow_array(col).to_pylist()

    def from_numpy(self, values: np.ndarray, null_mask: np.ndarray | None = None) -> Any:
        return pa.chunked_array([pa.array(values, mask=null_mask)])

    def dtype(self, col: Any) -> str:
        return dtype_name(col.type)

    def length(self, col: Any) -> int:
        return len(col)

    # ---- kernels --------------------------------------------------------------------------
    def is_missing(self, col: Any) -> Any:
        """Null, or NaN in a float column."""
        missing = pc.is_null(col, nan_is_null=True)
        return missing

    def invert(self, mask: Any) -> Any:
        return pc.invert(mask)

    def logical_and(self, a: Any, b: Any) -> Any:
        return pc.and_kleene(a, b)

    def fill_missing(self, col: Any, value: Any) -> Any:
        if pa.types.is_floating(col.type):
            col = pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)
        check_fill_value(dtype_name(col.type), value)
        return pc.fill_null(col, pa.scalar(value).cast(col.type))

    def clip(self, col: Any, lower: float | None, upper: float | None) -> Any:
        """Clip to ``[lower, upper]``; nulls stay null. On integers a fractional bound is
        rounded inwards (``x >= 1.5`` is ``x >= 2``), which clips exactly."""
        lower, upper = integer_bounds(col.type, lower, upper)
        if lower is not None:
            col = pc.max_element_wise(col, pa.scalar(lower).cast(col.type), skip_nulls=False)
        if upper is not None:
            col = pc.min_element_wise(col, pa.scalar(upper).cast(col.type), skip_nulls=False)
        return col

    def cast(self, col: Any, dtype: str) -> Any:
        try:
            return pc.cast(col, arrow_type(dtype))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"Cannot cast a {self.dtype(col)} column to {dtype}: {exc}") from exc

    def log1p(self, col: Any) -> Any:
        """``log(1 + x)`` as float32; values below -1 give NaN, nulls stay null."""
        x = pc.cast(col, pa.float64())
        return pc.cast(pc.log1p(x), pa.float32())

    def affine(self, col: Any, shift: float, scale: float, dtype: str = "float32") -> Any:
        """``(x - shift) / scale`` computed in float64, returned as ``dtype``."""
        x = pc.cast(col, pa.float64())
        return pc.cast(pc.divide(pc.subtract(x, shift), scale), arrow_type(dtype))

    def digitize(self, col: Any, boundaries: Sequence[float]) -> Any:
        """Bucket id = number of boundaries ``<= x`` (nulls stay null)."""
        values = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
        ids = np.searchsorted(np.asarray(boundaries, dtype=np.float64), values, side="right")
        return self.from_numpy(ids.astype(np.int64), pc.is_null(col).to_numpy(
            zero_copy_only=False))

    def moments(self, col: Any) -> dict[str, float]:
        """count / mean / m2 (sum of squared deviations from the mean) / min / max of the
        finite values, and the count of the others (merged with Chan's formula)."""
        x = pc.cast(col, pa.float64())
        finite = pc.filter(x, pc.is_finite(x)).to_numpy(zero_copy_only=False)
        n = len(finite)
        shift = finite[0] if n else 0.0  # shifted mean: exact for constant columns
        mean = float(shift + (finite - shift).mean()) if n else 0.0
        return {"count": float(n), "mean": mean,
                "m2": float(np.square(finite - mean).sum()) if n else 0.0,
                "min": float(finite.min()) if n else float("nan"),
                "max": float(finite.max()) if n else float("nan"),
                "missing": float(len(col) - n)}

    def finite_values(self, col: Any) -> np.ndarray:
        x = pc.cast(col, pa.float64())
        return pc.filter(x, pc.is_finite(x)).to_numpy(zero_copy_only=False)

    def hash64(self, col: Any) -> np.ndarray:
        return hash_array(self.to_arrow_array(col))

    def null_mask(self, col: Any) -> np.ndarray:
        return pc.is_null(col).to_numpy(zero_copy_only=False)

    def from_indices(self, indices: np.ndarray) -> Any:
        return pa.chunked_array([pa.array(indices)])

    def lookup(self, col: Any, table: Any, hashes: np.ndarray) -> np.ndarray:
        """Row of each value in a vocabulary table (-1 when absent or null); ``hashes`` are
        the values' :func:`~.hashing.hash_array`."""
        return table.positions(self.to_arrow_array(col), hashes)

    def value_counts(self, col: Any) -> pa.Table:
        """A ``value``/``count`` table of the non-null values (nulls counted under value null)."""
        arr = self.to_arrow_array(col)
        vc = pc.value_counts(arr)
        return pa.table({"value": vc.field("values"), "count": vc.field("counts")})

    def take(self, col: Any, positions: np.ndarray) -> Any:
        return col.take(pa.array(positions))

    def concat_columns(self, cols: Sequence[Any]) -> Any:
        chunks = [c for col in cols for c in self.to_arrow_array(col).chunks]
        return pa.chunked_array(chunks, type=cols[0].type)

    def join_as_strings(self, cols: Sequence[Any], sep: str = "\x1f") -> Any:
        """One string per row joining the columns' values (null shown as ``\x00``)."""
        parts = [pc.fill_null(pc.cast(self.to_arrow_array(c), pa.large_string()), "\x00")
                 for c in cols]
        return pc.binary_join_element_wise(*parts, pa.scalar(sep, pa.large_string()))

    # ---- list (multi-hot) columns ---------------------------------------------------------
    def list_values(self, col: Any) -> Any:
        return pa.chunked_array([c.flatten() for c in self.to_arrow_array(col).chunks],
                                type=col.type.value_type)

    def list_with_values(self, col: Any, values: Any) -> Any:
        """A list column with the row structure of ``col`` and new flat ``values``."""
        arr = self.to_arrow_array(col).combine_chunks()
        flat = self.to_arrow_array(values).combine_chunks()
        offsets = pc.subtract(arr.offsets, arr.offsets[0])
        mask = arr.is_null() if arr.null_count else None
        return pa.chunked_array([pa.ListArray.from_arrays(offsets, flat, mask=mask)])


class GpuBackend(CpuBackend):
    """cuDF DataFrames on the device; hot kernels native, hashing through Arrow.

    Hashing and statistics tables go through Arrow so that both backends share one
    definition and give identical results.
    """

    name = "gpu"

    def __init__(self) -> None:
        import cudf

        self.cudf = cudf

    def from_arrow(self, table: pa.Table) -> Any:
        return self.cudf.DataFrame.from_arrow(table)

    def to_arrow(self, df: Any) -> pa.Table:
        return df.to_arrow(preserve_index=False).replace_schema_metadata(None)

    def from_pandas(self, df: pd.DataFrame) -> Any:
        return self.from_arrow(CpuBackend.to_arrow(self, df.reset_index(drop=True)))

    def to_pandas(self, df: Any) -> pd.DataFrame:
        return CpuBackend.from_arrow(self, self.to_arrow(df))

    def read_parquet(self, path: str, columns: Sequence[str] | None,
                     row_groups: Sequence[int] | None, schema: pa.Schema) -> Any:
        return self.from_arrow(read_parquet_table(path, columns, row_groups, schema))

    def write_parquet(self, df: Any, path: str, schema: pa.Schema | None = None,
                      row_group_size: int | None = None) -> None:
        CpuBackend.write_parquet(self, df, path, schema, row_group_size)

    def concat(self, frames: Sequence[Any]) -> Any:
        return self.cudf.concat(list(frames), ignore_index=True)

    def schema_of(self, df: Any) -> Schema:
        return Schema.from_arrow(self.to_arrow(df.head(0)).schema)

    def hconcat(self, frames: Sequence[Any]) -> Any:
        return frames[0] if len(frames) == 1 else self.cudf.concat(list(frames), axis=1)

    def with_columns(self, df: Any, columns: Mapping[str, Any]) -> Any:
        out = df.copy(deep=False)
        for name, col in columns.items():
            out[name] = self.series(col, out.index)
        return out

    def filter_rows(self, df: Any, mask: Any) -> Any:
        return df[mask.fillna(False)].reset_index(drop=True)

    def permute_rows(self, df: Any, seed: int) -> Any:
        order = np.random.default_rng(seed).permutation(len(df))
        return df.take(order).reset_index(drop=True)

    def take_rows(self, df: Any, positions: np.ndarray) -> Any:
        return df.take(positions).reset_index(drop=True)

    def sort_rows(self, df: Any, column: str) -> Any:
        return df.sort_values(column).reset_index(drop=True)

    def column(self, df: Any, name: str) -> Any:
        if name not in df.columns:
            raise SchemaError(f"Column {name!r} is not in the data; available columns: "
                              f"{list(df.columns)}.")
        return df[name].reset_index(drop=True)

    def series(self, col: Any, index: Any = None) -> Any:
        s = col if isinstance(col, self.cudf.Series) else self.cudf.Series(col)
        if index is not None:
            s.index = index
        return s

    def from_series(self, series: Any) -> Any:
        return series.reset_index(drop=True)

    def invert(self, mask: Any) -> Any:
        return ~mask

    def logical_and(self, a: Any, b: Any) -> Any:
        return a & b

    def to_arrow_array(self, col: Any) -> pa.ChunkedArray:
        arr = col.to_arrow()
        return arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])

    def from_arrow_array(self, arr: pa.Array | pa.ChunkedArray) -> Any:
        return self.cudf.Series.from_arrow(arr)

    def from_numpy(self, values: np.ndarray, null_mask: np.ndarray | None = None) -> Any:
        s = self.cudf.Series(values)
        if null_mask is not None and null_mask.any():
            s = s.mask(self.cudf.Series(null_mask))
        return s

    def dtype(self, col: Any) -> str:
        return dtype_name(self.to_arrow_array(col[:0]).type)

    def is_missing(self, col: Any) -> Any:
        missing = col.isna()
        if col.dtype.kind == "f":
            missing = missing | col.isnan().fillna(False)
        return missing

    def fill_missing(self, col: Any, value: Any) -> Any:
        if col.dtype.kind == "f":
            col = col.nans_to_nulls()
        check_fill_value(self.dtype(col), value)
        return col.fillna(value)

    def clip(self, col: Any, lower: float | None, upper: float | None) -> Any:
        lower, upper = integer_bounds(self.to_arrow_array(col[:0]).type, lower, upper)
        return col.clip(lower=lower, upper=upper)

    def cast(self, col: Any, dtype: str) -> Any:
        return self.from_arrow_array(CpuBackend.cast(self, self.to_arrow_array(col), dtype)) \
            if dtype.startswith("list") or dtype == "string" else col.astype(dtype)

    def log1p(self, col: Any) -> Any:
        return np.log1p(col.astype("float64")).astype("float32")

    def affine(self, col: Any, shift: float, scale: float, dtype: str = "float32") -> Any:
        return ((col.astype("float64") - shift) / scale).astype(dtype)

    def digitize(self, col: Any, boundaries: Sequence[float]) -> Any:
        return self.from_arrow_array(CpuBackend.digitize(self, self.to_arrow_array(col),
                                                         boundaries))

    def moments(self, col: Any) -> dict[str, float]:
        return CpuBackend.moments(self, self.to_arrow_array(col))

    def finite_values(self, col: Any) -> np.ndarray:
        return CpuBackend.finite_values(self, self.to_arrow_array(col))

    def null_mask(self, col: Any) -> np.ndarray:
        return col.isna().values_host

    def from_indices(self, indices: np.ndarray) -> Any:
        return self.cudf.Series(indices)

    def lookup(self, col: Any, table: Any, hashes: np.ndarray) -> np.ndarray:
        cudf = self.cudf
        left = cudf.DataFrame({"v": col, "row": np.arange(len(col))})
        right = cudf.DataFrame({"v": cudf.Series.from_arrow(table.values),
                                "pos": np.arange(len(table.values))})
        joined = left.merge(right, on="v", how="left").sort_values("row")
        return joined["pos"].fillna(-1).astype("int64").values_host

    def value_counts(self, col: Any) -> pa.Table:
        vc = col.value_counts(dropna=True)
        return pa.table({"value": vc.index.to_arrow(), "count": vc.astype("int64").to_arrow()})

    def take(self, col: Any, positions: np.ndarray) -> Any:
        return col.take(positions).reset_index(drop=True)

    def concat_columns(self, cols: Sequence[Any]) -> Any:
        return self.cudf.concat(list(cols), ignore_index=True)

    def join_as_strings(self, cols: Sequence[Any], sep: str = "\x1f") -> Any:
        joined = CpuBackend.join_as_strings(self, [self.to_arrow_array(c) for c in cols], sep)
        return self.from_arrow_array(joined)

    def list_values(self, col: Any) -> Any:
        return col.list.leaves

    def list_with_values(self, col: Any, values: Any) -> Any:
        rebuilt = CpuBackend.list_with_values(self, self.to_arrow_array(col),
                                              self.to_arrow_array(values))
        return self.from_arrow_array(rebuilt)


def integer_bounds(arrow_type: pa.DataType, lower: float | None,
                   upper: float | None) -> tuple[float | None, float | None]:
    """Bounds rounded inwards for an integer column (exact clipping), unchanged otherwise."""
    if pa.types.is_integer(arrow_type):
        lower = None if lower is None else int(np.ceil(lower))
        upper = None if upper is None else int(np.floor(upper))
    return lower, upper


def check_fill_value(dtype: str, value: Any) -> None:
    """A fractional fill value cannot go into an integer column without changing it."""
    if dtype.startswith(("int", "uint")) and float(value) != int(value):
        raise SchemaError(f"Cannot fill an {dtype} column with {value!r}: it is not an integer. "
                          "Use an integer fill value, or cast the column to float first (e.g. "
                          "ops.LambdaOp('x', dtype='float64')).")


def read_parquet_table(path: str, columns: Sequence[str] | None,
                       row_groups: Sequence[int] | None, schema: pa.Schema) -> pa.Table:
    """Read some row groups of one file and conform them to ``schema``.

    Columns missing from the file become nulls; numeric types are cast to the
    unified type chosen when the dataset was opened.
    """
    pf = pq.ParquetFile(path)
    present = set(pf.schema_arrow.names)
    wanted = list(columns) if columns is not None else schema.names
    read_cols = [c for c in wanted if c in present]
    if row_groups is None:
        table = pf.read(columns=read_cols)
    else:
        table = pf.read_row_groups(list(row_groups), columns=read_cols)
    arrays = []
    for name in wanted:
        field = schema.field(name)
        if name in present:
            arr = table.column(name)
            if arr.type != field.type:
                arr = arr.cast(field.type)
        else:
            arr = pa.nulls(table.num_rows, field.type)
        arrays.append(arr)
    return pa.table(arrays, schema=pa.schema([schema.field(n) for n in wanted]))


@functools.cache
def _cpu() -> CpuBackend:
    return CpuBackend()


@functools.cache
def _gpu() -> GpuBackend:
    return GpuBackend()


def get_backend(name: str = "auto") -> CpuBackend:
    """The backend named ``"cpu"``, ``"gpu"`` or ``"auto"`` (GPU only when one really works)."""
    if name not in BACKENDS:
        raise ParameterError(f"The 'backend' parameter must be one of {BACKENDS}. Got {name!r}.")
    if name == "auto":
        name = "gpu" if gpu_available() else "cpu"
    if name == "gpu":
        if not gpu_available():
            raise ParameterError("backend='gpu' was requested but no working GPU with cuDF was "
                                 "found. Install the 'gpu' extra on a CUDA machine, or use "
                                 "backend='cpu'.")
        return _gpu()
    return _cpu()


def backend_of(df: Any) -> CpuBackend:
    """The backend that owns a DataFrame (pandas -> CPU, cuDF -> GPU)."""
    return _gpu() if type(df).__module__.split(".")[0] in ("cudf", "dask_cudf") else _cpu()
