"""The GPU backend: cuDF DataFrames on the device.

Hot kernels run natively in cuDF; hashing, statistics moments and the list rebuilds go
through the Arrow copy of a column and the helpers of :mod:`.arrow`, so that both backends
share one definition and give identical results. ``cudf`` is imported when a
:class:`GpuBackend` is created, never when this module is imported (the interface test
inspects this class on machines without cuDF).

Written against cuDF / dask-cuDF 26.10 and checked without a device by
``tests/unit/backend/test_gpu_api.py`` (``scripts/check-gpu-api.sh``): every cuDF name and
keyword used here exists there. Conventions:

* NaN is missing: float columns pass through ``Series.nans_to_nulls()`` before
  ``isna``, ``fillna``, ``value_counts``, group keys and sort keys.
* Device to host: ``Series.to_numpy()`` / ``to_arrow()`` (``values_host`` is gone since
  cuDF 26.08); Arrow from cuDF is made ``string`` / ``list`` (:func:`.arrow.small_offsets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from interactive_recsys.backend import _arrow as ax
from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.backend import _shared as shared
from interactive_recsys.backend._interface import Backend
from interactive_recsys.errors import SchemaError, names_text
from interactive_recsys.schema import Schema, arrow_type, dtype_name


class GpuBackend(Backend):
    """cuDF DataFrames; native columns are ``cudf.Series`` with a default index."""

    name = "gpu"
    reads_dictionaries = False  # cuDF reads plain columns; its hash joins are fast enough

    def __init__(self) -> None:
        import cudf

        self.cudf = cudf

    # ---- frames ---------------------------------------------------------------------------
    def owns(self, df: Any) -> bool:
        return type(df).__module__.split(".")[0] in ("cudf", "dask_cudf")

    def from_arrow(self, table: pa.Table) -> Any:
        return self.cudf.DataFrame.from_arrow(table)

    def to_arrow(self, df: Any) -> pa.Table:
        return ax.small_offsets(df.to_arrow(preserve_index=False).replace_schema_metadata(None))

    def from_pandas(self, df: pd.DataFrame) -> Any:
        table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
        return self.from_arrow(table.replace_schema_metadata(None))

    def to_pandas(self, df: Any) -> pd.DataFrame:
        return self.to_arrow(df).to_pandas(types_mapper=pd.ArrowDtype, ignore_metadata=True)

    read_parquet = shared.read_parquet
    write_parquet = shared.write_parquet
    empty = shared.empty

    def concat(self, frames: Sequence[Any]) -> Any:
        return self.cudf.concat(list(frames), ignore_index=True)

    num_rows = shared.num_rows

    def hconcat(self, frames: Sequence[Any]) -> Any:
        return frames[0] if len(frames) == 1 else self.cudf.concat(list(frames), axis=1)

    def schema_of(self, df: Any) -> Schema:
        return Schema.from_arrow(self.to_arrow(df.head(0)).schema)

    select = shared.select
    with_columns = shared.with_columns
    rename = shared.rename

    def filter_rows(self, df: Any, mask: Any) -> Any:
        keep = self.series(mask.fillna(False), df.index)  # aligned with the frame's rows
        return df[keep].reset_index(drop=True)

    def permute_rows(self, df: Any, seed: int) -> Any:
        order = np.random.default_rng(seed).permutation(len(df))
        return df.take(order).reset_index(drop=True)

    def take_rows(self, df: Any, positions: np.ndarray) -> Any:
        return df.take(positions).reset_index(drop=True)

    def sort_rows(self, df: Any, column: str) -> Any:
        if df[column].is_monotonic_increasing:
            return df.reset_index(drop=True)
        return self.sort_rows_by(df, [column])  # stable, as on the CPU: the same row order

    # ---- columns --------------------------------------------------------------------------
    def column(self, df: Any, name: str) -> Any:
        if name not in df.columns:
            raise SchemaError(f"Column {name!r} is not in the data; available columns: "
                              f"{names_text(df.columns)}.")
        return df[name].reset_index(drop=True)

    def series(self, col: Any, index: Any = None) -> Any:
        if isinstance(col, pa.Array | pa.ChunkedArray):
            col = self.from_arrow_array(col)
        s = col if isinstance(col, self.cudf.Series) else self.cudf.Series(col)
        if index is not None:
            s.index = index
        return s

    def from_series(self, series: Any) -> Any:
        return series.reset_index(drop=True)

    def to_arrow_array(self, col: Any) -> pa.ChunkedArray:
        return ax.small_offsets(ax.chunked(col.to_arrow()))

    def from_arrow_array(self, arr: pa.Array | pa.ChunkedArray) -> Any:
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        return self.cudf.Series.from_arrow(arr)

    to_pandas_list = shared.to_pandas_list

    def from_numpy(self, values: np.ndarray, null_mask: np.ndarray | None = None) -> Any:
        if null_mask is None or not null_mask.any():
            return self.cudf.Series(values)
        return self.from_arrow_array(pa.array(values, mask=null_mask))

    def dtype(self, col: Any) -> str:
        return dtype_name(self.to_arrow_array(col.head(0)).type)

    length = shared.length

    # ---- kernels --------------------------------------------------------------------------
    def _nan_to_null(self, col: Any) -> Any:
        return col.nans_to_nulls() if col.dtype.kind == "f" else col

    def is_missing(self, col: Any) -> Any:
        return self._nan_to_null(col).isna()

    def missing_mask(self, col: Any) -> np.ndarray:
        return self.is_missing(col).to_numpy()

    def null_mask(self, col: Any) -> np.ndarray:
        return self.missing_mask(col)  # NaN is missing

    def invert(self, mask: Any) -> Any:
        return ~mask

    def logical_and(self, a: Any, b: Any) -> Any:
        return a & b

    def fill_missing(self, col: Any, value: Any) -> Any:
        ax.check_fill_value(self.dtype(col), value)
        return self._nan_to_null(col).fillna(value)

    def clip(self, col: Any, lower: float | None, upper: float | None) -> Any:
        lower, upper = ax.integer_bounds(self.to_arrow_array(col.head(0)).type, lower, upper)
        return col.clip(lower=lower, upper=upper)

    def cast(self, col: Any, dtype: str) -> Any:
        """Widening numeric casts on the device; every other cast (narrowing, float to int,
        strings, lists) through Arrow, which refuses lossy ones with the CPU's message."""
        target = arrow_type(dtype)
        source = col.dtype
        if (pa.types.is_integer(target) or pa.types.is_floating(target)) \
                and source.kind in "iuf" \
                and np.can_cast(source, np.dtype(target.to_pandas_dtype()), "safe"):
            return col.astype(np.dtype(target.to_pandas_dtype()))
        return self.from_arrow_array(ax.cast(self.to_arrow_array(col), dtype))

    def log1p(self, col: Any) -> Any:
        # NumPy ufuncs on a cuDF Series run in CuPy (Frame.__array_ufunc__); nulls stay null
        return np.log1p(col.astype("float64")).astype("float32")

    def affine(self, col: Any, shift: float, scale: float, dtype: str = "float32") -> Any:
        return ((col.astype("float64") - shift) / scale).astype(dtype)

    def digitize(self, col: Any, boundaries: Sequence[float]) -> Any:
        return self.from_arrow_array(ax.digitize(self.to_arrow_array(col), boundaries))

    elementwise = shared.elementwise
    moments = shared.moments
    extremes = shared.extremes
    finite_values = shared.finite_values
    hash64 = shared.hash64

    def from_indices(self, indices: np.ndarray) -> Any:
        return self.cudf.Series(indices)

    def lookup(self, col: Any, table: Any, hashes: np.ndarray) -> np.ndarray:
        # the table's sorted hashes are host arrays; the values cross over only where a
        # match must be checked against them (VocabTable.positions)
        return table.positions(col.to_arrow(), hashes)

    def value_counts(self, col: Any) -> pa.Table:
        col = self._nan_to_null(col)
        if col.dtype.kind == "f":  # -0.0 + 0.0 is 0.0: one value, as in the hash
            col = col + col.dtype.type(0)
        vc = col.value_counts(dropna=True)
        return pa.table({"value": ax.small_offsets(ax.chunked(vc.index.to_arrow())),
                         "count": vc.astype("int64").to_arrow()})

    def keyed_value_counts(self, col: Any) -> kc.Counts:
        return kc.encode(self.value_counts(col))  # the distinct values, counted on the GPU

    def dictionary_codes(self, col: Any) -> None:
        return None  # reads_dictionaries is False: columns are never dictionary-encoded

    def take(self, col: Any, positions: np.ndarray) -> Any:
        return col.take(positions).reset_index(drop=True)

    def keyed_aggregate(self, keys: Mapping[str, Any], columns: Mapping[str, Any],
                        aggs: Sequence[tuple[str, str, str]]) -> pa.Table:
        frame = self.cudf.DataFrame({
            **{k: self._nan_to_null(v).reset_index(drop=True) for k, v in keys.items()},
            **{n: self._nan_to_null(c).reset_index(drop=True) for n, c in columns.items()}})
        grouped = frame.groupby(list(keys), sort=False, dropna=True)
        out = {}
        for name, col, func in aggs:
            if func == "size":
                out[name] = grouped.size().astype("int64")
            elif func == "var0":
                out[name] = grouped[col].var(ddof=0)
            elif func == "count":
                out[name] = grouped[col].count().astype("int64")
            else:
                out[name] = getattr(grouped[col], func)()
        return self.to_arrow(self.cudf.DataFrame(out).reset_index())

    def concat_columns(self, cols: Sequence[Any]) -> Any:
        return self.cudf.concat(list(cols), ignore_index=True)

    def join_as_strings(self, cols: Sequence[Any], sep: str = "\x1f") -> Any:
        arrays = [self.to_arrow_array(c) for c in cols]
        return self.from_arrow_array(ax.join_as_strings(arrays, sep))

    # ---- list (multi-hot) columns ---------------------------------------------------------
    def list_values(self, col: Any) -> Any:
        if isinstance(col.dtype.element_type, self.cudf.ListDtype):
            # ``.list.leaves`` flattens every level; the interface flattens one
            return self.from_arrow_array(ax.list_values(self.to_arrow_array(col)))
        return col.list.leaves.reset_index(drop=True)

    def list_with_values(self, col: Any, values: Any) -> Any:
        rebuilt = ax.list_with_values(self.to_arrow_array(col), self.to_arrow_array(values))
        return self.from_arrow_array(rebuilt)

    def list_length_range(self, col: Any) -> tuple[int, int] | None:
        lengths = col.list.len()
        if lengths.count() == 0:
            return None
        return int(lengths.min()), int(lengths.max())

    def list_slice(self, col: Any, start: int, end: int | None, pad_length: int | None = None,
                   pad_value: Any = 0) -> Any:
        """Slicing gathers on the device (``list.take`` with per-row positions computed from
        the lengths); padding rebuilds the column through Arrow."""
        if pad_length is not None:
            return self.from_arrow_array(ax.list_slice(self.to_arrow_array(col), start, end,
                                                       pad_length, pad_value))
        lengths = col.list.len().fillna(0).astype("int64").to_numpy()
        lo, length = ax.slice_bounds(lengths, start, end)
        offsets = np.concatenate([[0], np.cumsum(length)]).astype(np.int32)
        within = np.repeat(lo - offsets[:-1], length) + np.arange(offsets[-1])
        positions = pa.ListArray.from_arrays(pa.array(offsets), pa.array(within, pa.int32()))
        return col.list.take(self.from_arrow_array(positions)).reset_index(drop=True)

    # ---- groups of rows (sequence operators) ----------------------------------------------
    def sort_rows_by(self, df: Any, columns: Sequence[str]) -> Any:
        if not columns or len(df) < 2:
            return df.reset_index(drop=True)
        # the device sort need not be stable: ties (and missing keys, NaN or null alike)
        # are broken by position, as the CPU's stable sort does
        tie, sort_keys = "__irs_position", [f"__irs_key{i}" for i in range(len(columns))]
        keyed = df.assign(**{k: self._nan_to_null(df[c]) for k, c in zip(sort_keys, columns,
                                                                            strict=True)},
                          **{tie: np.arange(len(df))})
        out = keyed.sort_values([*sort_keys, tie], na_position="last")
        return out.drop(columns=[*sort_keys, tie]).reset_index(drop=True)

    def group_ids(self, df: Any, keys: Sequence[str]) -> np.ndarray:
        n = len(df)
        change = np.zeros(n, dtype=bool)
        change[:1] = True
        for key in keys:
            cur = self._nan_to_null(df[key].reset_index(drop=True))
            prev = cur.shift(1)
            same = (cur == prev).fillna(False) | (cur.isna() & prev.isna())
            change[1:] |= ~same.to_numpy()[1:]
        return np.cumsum(change)

    def difference_lag(self, df: Any, keys: Sequence[str], column: str, shift: int) -> Any:
        x = df[column].astype("float64" if df[column].dtype.kind == "f" else "int64")
        frame = self.cudf.DataFrame({
            **{k: self._nan_to_null(df[k]).reset_index(drop=True) for k in keys},
            "__irs_x": x.reset_index(drop=True)})
        previous = frame.groupby(list(keys), sort=False, dropna=False)["__irs_x"].shift(shift)
        return (frame["__irs_x"] - previous).reset_index(drop=True)

    def group_aggregate(self, df: Any, keys: Sequence[str],
                        aggs: Sequence[tuple[str, str, str]]) -> Any:
        names = {"list": "collect", "std": "std", "var": "var"}
        frame = self.cudf.DataFrame({
            **{k: self._nan_to_null(df[k]).reset_index(drop=True) for k in keys},
            **{name: df[col].reset_index(drop=True) for col, _, name in aggs}})
        out = frame.groupby(list(keys), sort=True, dropna=False).agg(
            {name: names.get(agg, agg) for _, agg, name in aggs}).reset_index()
        for _, agg, name in aggs:
            if agg == "count":
                out[name] = out[name].astype("int64")
            elif agg == "sum":  # a sum of no values is 0, as on the CPU
                out[name] = out[name].fillna(0)
        return self.sort_rows_by(out[[*keys, *(name for _, _, name in aggs)]], keys)
