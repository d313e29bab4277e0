"""The CPU backend: pandas DataFrames with Arrow-backed columns, kernels in ``pyarrow``.

Columns are ``pd.ArrowDtype``, so the kernels run in ``pyarrow.compute`` (and NumPy on
the value buffers) without copies; the native column is a ``pa.ChunkedArray``.

Examples
--------
>>> import pandas as pd
>>> b = CpuBackend()
>>> df = b.from_pandas(pd.DataFrame({"x": [1.0, None, 3.0]}))
>>> b.to_pandas_list(b.fill_missing(b.column(df, "x"), 0))
[1.0, 0.0, 3.0]
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import _arrow as ax
from interactive_recsys.backend import _buffers as buffers
from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.backend import _shared as shared
from interactive_recsys.backend._arrow import ARROW_AGGREGATIONS
from interactive_recsys.backend._interface import Backend
from interactive_recsys.errors import SchemaError, names_text
from interactive_recsys.schema import Schema, arrow_type, dtype_name


class CpuBackend(Backend):
    """pandas with Arrow-backed columns; kernels in ``pyarrow.compute``."""

    name = "cpu"
    #: Reads string columns as dictionaries when asked (see :meth:`dictionary_codes`).
    reads_dictionaries = True

    # ---- frames ---------------------------------------------------------------------------
    def owns(self, df: Any) -> bool:
        return type(df).__module__.split(".")[0] in ("pandas", "pyarrow", "numpy")

    def from_arrow(self, table: pa.Table) -> pd.DataFrame:
        """Strings and lists held with 32-bit offsets (``string``, ``list``) whatever their
        source (pandas 3 strings arrive as ``large_string``), as on the GPU backend."""
        return ax.small_offsets(table).to_pandas(types_mapper=pd.ArrowDtype,
                                                 ignore_metadata=True)

    def to_arrow(self, df: Any) -> pa.Table:
        table = pa.Table.from_pandas(df, preserve_index=False)
        return table.replace_schema_metadata(None)

    def from_pandas(self, df: pd.DataFrame) -> pd.DataFrame:
        """Any pandas DataFrame as Arrow-backed columns (NaN in floats becomes null)."""
        if all(isinstance(t, pd.ArrowDtype) and ax.small_type(t.pyarrow_dtype) == t.pyarrow_dtype
               for t in df.dtypes):
            return df.reset_index(drop=True)
        return self.from_arrow(self.to_arrow(df.reset_index(drop=True)))

    def to_pandas(self, df: Any) -> pd.DataFrame:
        return df

    read_parquet = shared.read_parquet
    write_parquet = shared.write_parquet
    empty = shared.empty

    def concat(self, frames: Sequence[Any]) -> Any:
        return pd.concat(list(frames), ignore_index=True)

    num_rows = shared.num_rows

    def hconcat(self, frames: Sequence[Any]) -> Any:
        """Frames of the same rows side by side."""
        return frames[0] if len(frames) == 1 else pd.concat(list(frames), axis=1)

    def schema_of(self, df: Any) -> Schema:
        return Schema.from_arrow(self.to_arrow(df.iloc[:0]).schema)

    select = shared.select
    with_columns = shared.with_columns
    rename = shared.rename

    def filter_rows(self, df: Any, mask: Any) -> Any:
        keep = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
        return df[keep].reset_index(drop=True)

    def permute_rows(self, df: Any, seed: int) -> Any:
        order = np.random.default_rng(seed).permutation(len(df))
        return df.iloc[order].reset_index(drop=True)

    def take_rows(self, df: Any, positions: np.ndarray) -> Any:
        return df.iloc[positions].reset_index(drop=True)

    def sort_rows(self, df: Any, column: str) -> Any:
        if df[column].is_monotonic_increasing:  # e.g. rows back from an order-keeping shuffle
            return df.reset_index(drop=True)
        return df.sort_values(column, kind="stable").reset_index(drop=True)

    # ---- columns --------------------------------------------------------------------------
    def column(self, df: Any, name: str) -> pa.ChunkedArray:
        if name not in df.columns:
            raise SchemaError(f"Column {name!r} is not in the data; available columns: "
                              f"{names_text(df.columns)}.")
        return self.from_series(df[name])

    def series(self, col: Any, index: Any = None) -> pd.Series:
        if isinstance(col, np.ndarray):
            col = pa.array(col)
        return pd.Series(pd.arrays.ArrowExtensionArray(col), index=index)

    def from_series(self, series: Any) -> Any:
        """A native column from a Series of this backend (any dtype)."""
        if isinstance(series.dtype, pd.ArrowDtype):
            return pa.chunked_array(series.array.__arrow_array__())
        arr = pa.array(series, from_pandas=True)  # pandas' Arrow strings give chunks
        return arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])

    def to_arrow_array(self, col: Any) -> pa.ChunkedArray:
        return ax.chunked(col)

    def from_arrow_array(self, arr: pa.Array | pa.ChunkedArray) -> Any:
        return self.to_arrow_array(arr)

    to_pandas_list = shared.to_pandas_list

    def from_numpy(self, values: np.ndarray, null_mask: np.ndarray | None = None) -> Any:
        return pa.chunked_array([pa.array(values, mask=null_mask)])

    def dtype(self, col: Any) -> str:
        return dtype_name(col.type)

    length = shared.length

    # ---- kernels --------------------------------------------------------------------------
    def is_missing(self, col: Any) -> Any:
        return ax.missing(col)

    def missing_mask(self, col: Any) -> np.ndarray:
        return ax.missing_numpy(self.to_arrow_array(col))

    def invert(self, mask: Any) -> Any:
        return pc.invert(mask)

    def logical_and(self, a: Any, b: Any) -> Any:
        return pc.and_kleene(a, b)

    def fill_missing(self, col: Any, value: Any) -> Any:
        ax.check_fill_value(dtype_name(col.type), value)
        fill = pa.scalar(value).cast(col.type)
        if buffers.numeric(col.type):  # NumPy on the buffers: about 5x Arrow's fill_null
            return buffers.fill_values(col, fill.as_py())
        return pc.fill_null(ax.nan_to_null(col), fill)

    def clip(self, col: Any, lower: float | None, upper: float | None) -> Any:
        """Clip to ``[lower, upper]``; nulls stay null. On integers a fractional bound is
        rounded inwards (``x >= 1.5`` is ``x >= 2``), which clips exactly."""
        lower, upper = ax.integer_bounds(col.type, lower, upper)
        if buffers.numeric(col.type) and all(ax.representable(b, col.type)
                                             for b in (lower, upper)):
            return buffers.clip_values(col, lower, upper)
        if lower is not None:
            col = pc.max_element_wise(col, pa.scalar(lower).cast(col.type), skip_nulls=False)
        if upper is not None:
            col = pc.min_element_wise(col, pa.scalar(upper).cast(col.type), skip_nulls=False)
        return col

    def cast(self, col: Any, dtype: str) -> Any:
        return ax.cast(self.to_arrow_array(col), dtype)

    def log1p(self, col: Any) -> Any:
        """``log(1 + x)`` as float32; values below -1 give NaN, nulls stay null."""
        if buffers.numeric(col.type):  # NumPy's log1p: about 5x pyarrow.compute's
            return buffers.log1p_values(col)
        x = pc.cast(col, pa.float64(), safe=False)  # ints past 2**53: nearest float
        return pc.cast(pc.log1p(x), pa.float32())

    def affine(self, col: Any, shift: float, scale: float, dtype: str = "float32") -> Any:
        """``(x - shift) / scale`` computed in float64, returned as ``dtype``."""
        target = arrow_type(dtype)
        if buffers.numeric(col.type) and (pa.types.is_float32(target)
                                          or pa.types.is_float64(target)):
            return buffers.affine_values(col, shift, scale, target)  # NumPy, in blocks
        x = pc.cast(col, pa.float64(), safe=False)  # ints past 2**53: nearest float
        return pc.cast(pc.divide(pc.subtract(x, shift), scale), arrow_type(dtype))

    elementwise = shared.elementwise

    def digitize(self, col: Any, boundaries: Sequence[float]) -> Any:
        return ax.digitize(self.to_arrow_array(col), boundaries)

    moments = shared.moments
    extremes = shared.extremes
    finite_values = shared.finite_values
    hash64 = shared.hash64

    def null_mask(self, col: Any) -> np.ndarray:
        return ax.missing_numpy(self.to_arrow_array(col))  # NaN is missing

    def from_indices(self, indices: np.ndarray) -> Any:
        return pa.chunked_array([pa.array(indices)])

    def lookup(self, col: Any, table: Any, hashes: np.ndarray) -> np.ndarray:
        """Row of each value in a vocabulary table (-1 when absent or null); ``hashes`` are
        the values' :func:`~.hashing.hash_array`."""
        return table.positions(self.to_arrow_array(col), hashes)

    def value_counts(self, col: Any) -> pa.Table:
        return ax.value_counts(self.to_arrow_array(col))

    def keyed_value_counts(self, col: Any) -> kc.Counts:
        arr = self.to_arrow_array(col)
        if pa.types.is_dictionary(arr.type) and arr.num_chunks > 1:
            # each row group's codes counted, the row groups' counts summed in one sort
            keyed = kc.encode_parts([ax.dictionary_counts(c) for c in arr.chunks])
            if keyed is not None:
                return keyed
        return kc.encode(ax.value_counts(arr))

    def dictionary_codes(self, col: Any) -> list[tuple[np.ndarray, pa.Array]] | None:
        """A dictionary-encoded column as ``(codes, dictionary)`` per chunk (each parquet
        row group has its own dictionary): int32 codes into the chunk's dictionary of
        distinct values, -1 where the row is null; None for a plain column. The chunks'
        dictionaries are not unified: on wide columns they hardly overlap, and unifying
        them costs more than looking up the few values they share twice.

        >>> b = CpuBackend()
        >>> [(codes.tolist(), values.to_pylist()) for codes, values in
        ...  b.dictionary_codes(pa.array(["b", None, "b"]).dictionary_encode())]
        [([0, -1, 0], ['b'])]
        """
        arr = self.to_arrow_array(col)
        if not pa.types.is_dictionary(arr.type):
            return None
        coded = []
        for chunk in arr.chunks:
            codes, dictionary = ax.dictionary_indices(chunk), chunk.dictionary
            if dictionary.null_count:  # a null dictionary entry is a null row
                nulls = np.flatnonzero(dictionary.is_null().to_numpy(zero_copy_only=False))
                codes = np.where(np.isin(codes, nulls), np.int32(-1), codes)
            coded.append((codes, dictionary))
        return coded

    def take(self, col: Any, positions: np.ndarray) -> Any:
        return col.take(pa.array(positions))

    def keyed_aggregate(self, keys: Mapping[str, Any], columns: Mapping[str, Any],
                        aggs: Sequence[tuple[str, str, str]]) -> pa.Table:
        """Per-group statistics as a ``pyarrow.Table``: the ``keys`` columns, then one column
        per ``(out_name, column, func)`` of ``aggs``; ``func`` is ``size`` (rows of the group),
        ``count`` (non-missing values), ``sum``, ``min``, ``max`` or ``var0`` (population
        variance). NaN counts as missing; rows with a missing key (null, NaN) are left out;
        groups come in no particular order."""
        arrays = {k: ax.nan_to_null(self.to_arrow_array(v)) for k, v in keys.items()}
        for name, col in columns.items():
            arrays[name] = ax.nan_to_null(self.to_arrow_array(col))
        specs, names = [], []
        for _, col, func in aggs:
            if func == "size":
                specs.append(([], "count_all"))
                names.append("count_all")
            elif func == "var0":
                specs.append((col, "variance", pc.VarianceOptions(ddof=0)))
                names.append(f"{col}_variance")
            else:
                specs.append((col, func))
                names.append(f"{col}_{func}")
        grouped = pa.table(arrays).group_by(list(keys), use_threads=False).aggregate(specs)
        out = pa.table({**{k: grouped[k] for k in keys},
                        **{out: grouped[n] for (out, _, _), n in zip(aggs, names, strict=True)}})
        valid = functools.reduce(pc.and_, [pc.is_valid(out[k]) for k in keys])
        return out.filter(valid)

    def concat_columns(self, cols: Sequence[Any]) -> Any:
        arrays = [self.to_arrow_array(c) for c in cols]
        if len({a.type for a in arrays}) > 1:  # e.g. dictionary-encoded and plain strings
            arrays = [a.cast(a.type.value_type) if pa.types.is_dictionary(a.type) else a
                      for a in arrays]
        return pa.chunked_array([c for a in arrays for c in a.chunks], type=arrays[0].type)

    def join_as_strings(self, cols: Sequence[Any], sep: str = "\x1f") -> Any:
        return ax.join_as_strings([self.to_arrow_array(c) for c in cols], sep)

    # ---- list (multi-hot) columns ---------------------------------------------------------
    def list_values(self, col: Any) -> Any:
        return ax.list_values(self.to_arrow_array(col))

    def list_with_values(self, col: Any, values: Any) -> Any:
        return ax.list_with_values(self.to_arrow_array(col), self.to_arrow_array(values))

    def list_length_range(self, col: Any) -> tuple[int, int] | None:
        return ax.list_length_range(self.to_arrow_array(col))

    def list_slice(self, col: Any, start: int, end: int | None, pad_length: int | None = None,
                   pad_value: Any = 0) -> Any:
        return ax.list_slice(self.to_arrow_array(col), start, end, pad_length, pad_value)

    # ---- groups of rows (sequence operators) ----------------------------------------------
    def sort_rows_by(self, df: Any, columns: Sequence[str]) -> Any:
        """Rows sorted by ``columns`` (stable: ties keep their order; nulls last)."""
        if not columns or len(df) < 2:
            return df.reset_index(drop=True)
        keys = self.to_arrow(self.select(df, columns))
        keys = pa.table([ax.nan_to_null(c) for c in keys.columns], names=keys.column_names)
        order = pc.sort_indices(keys,  # NaN is missing: sorted with the nulls, by position
                                sort_keys=[(c, "ascending", "at_end") for c in columns])
        return df.iloc[order.to_numpy()].reset_index(drop=True)

    def group_ids(self, df: Any, keys: Sequence[str]) -> np.ndarray:
        """Consecutive group number of each row of a frame sorted by ``keys`` (missing keys,
        null or NaN, equal)."""
        n = len(df)
        change = np.zeros(n, dtype=bool)
        change[:1] = True
        for key in keys:
            a = ax.nan_to_null(self.to_arrow_array(self.column(df, key)).combine_chunks())
            cur, prev = a[1:], a[:-1]
            same = pc.or_(pc.fill_null(pc.equal(cur, prev), False),
                          pc.and_(pc.is_null(cur), pc.is_null(prev)))
            change[1:] |= ~same.to_numpy(zero_copy_only=False)
        return np.cumsum(change)

    def difference_lag(self, df: Any, keys: Sequence[str], column: str, shift: int) -> Any:
        """``x - x[shift rows before]`` where that row has the same ``keys``, else null; the
        rows are sorted by ``keys``. Integers give int64, floats float64."""
        col = self.to_arrow_array(self.column(df, column))
        kind = pa.float64() if pa.types.is_floating(col.type) else pa.int64()
        x = pc.cast(col, kind)
        values = pc.fill_null(x, 0).to_numpy(zero_copy_only=False)
        nulls = pc.is_null(x).to_numpy(zero_copy_only=False)
        gid = self.group_ids(df, keys)
        source = np.arange(len(values)) - shift
        inside = (source >= 0) & (source < len(values))
        source = np.clip(source, 0, max(len(values) - 1, 0))
        ok = inside & (gid[source] == gid) & ~nulls & ~nulls[source]
        return self.from_numpy(values - values[source], ~ok)

    def group_aggregate(self, df: Any, keys: Sequence[str],
                        aggs: Sequence[tuple[str, str, str]]) -> Any:
        """One row per distinct ``keys`` of a frame sorted by them (null keys form a group),
        with one column per ``(column, aggregation, output name)``. ``list`` (any column type,
        lists too: the group's rows as offsets), ``first`` and ``last`` follow the row order;
        the other aggregations skip nulls."""
        table = self.to_arrow(df)
        starts = np.flatnonzero(np.diff(self.group_ids(df, keys), prepend=0))
        offsets = pa.array(np.append(starts, table.num_rows).astype(np.int32))
        columns = {k: ax.nan_to_null(table.column(k).take(pa.array(starts))) for k in keys}
        specs = [(col, *ARROW_AGGREGATIONS[agg]) for col, agg, _ in aggs if agg != "list"]
        out = pa.TableGroupBy(table, list(keys), use_threads=False).aggregate(specs) \
            if specs else None
        aggregated = iter([c for c in out.column_names if c not in keys] if specs else [])
        for col, agg, name in aggs:
            if agg == "list":
                values = table.column(col).combine_chunks()
                columns[name] = pa.ListArray.from_arrays(offsets, values)
            else:  # "<column>_<function>", in the order of ``specs``
                arr = out.column(next(aggregated))
                columns[name] = arr.cast(pa.int64()) if agg == "count" else arr
        return self.from_arrow(pa.table(columns))


@functools.cache
def cpu_backend() -> CpuBackend:
    """The one CPU backend instance."""
    return CpuBackend()
