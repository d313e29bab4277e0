"""Arrow-level helpers shared by both backends.

Everything here takes and returns ``pyarrow`` arrays or tables, never a pandas or cuDF
object: the CPU backend runs these on its Arrow-backed columns directly, the GPU backend
on the Arrow copies of its cuDF columns (``Series.to_arrow()``). One definition of a
kernel, one result on both devices.

Two rules live here:

* **NaN is missing.** A NaN in a float column counts as a missing value everywhere (as
  cuDF's ``isna`` and ``value_counts`` already treat it): :func:`missing`,
  :func:`value_counts`, :func:`digitize`, :func:`nan_to_null`.
* **32-bit offsets in memory.** cuDF hands strings and lists back with 64-bit offsets
  (``large_string``, ``large_list``); pandas and parquet give ``string`` / ``list``.
  :func:`small_offsets` turns the former into the latter, so outputs of both backends
  have the same Arrow types.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import _buffers as buffers
from interactive_recsys.backend import _keyed_counts as keyed_counts
from interactive_recsys.errors import SchemaError
from interactive_recsys.schema import arrow_type, dtype_name

#: Arrow hash aggregation (function, options) of each Groupby aggregation name.
ARROW_AGGREGATIONS: dict[str, tuple[str, Any]] = {
    "list": ("list", None),
    "count": ("count", pc.CountOptions(mode="only_valid")),
    "first": ("first", pc.ScalarAggregateOptions(skip_nulls=True)),
    "last": ("last", pc.ScalarAggregateOptions(skip_nulls=True)),
    "sum": ("sum", pc.ScalarAggregateOptions(min_count=0)),
    "mean": ("mean", None),
    "min": ("min", None),
    "max": ("max", None),
    "std": ("stddev", pc.VarianceOptions(ddof=1)),
    "var": ("variance", pc.VarianceOptions(ddof=1)),
}


def chunked(arr: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    """``arr`` as a ChunkedArray (unchanged when it is one)."""
    return arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])


# ---- types ----------------------------------------------------------------------------------
def small_type(t: pa.DataType) -> pa.DataType:
    """``t`` with 32-bit offsets at every level (``large_string`` -> ``string``...).

    >>> small_type(pa.large_list(pa.large_string()))
    ListType(list<item: string>)
    """
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(small_type(t.value_type)))
    return t


def small_offsets(data: Any) -> Any:
    """An array or table with :func:`small_type` types; data past 2 GiB per chunk (where
    32-bit offsets cannot address it) keeps its 64-bit offsets.

    >>> small_offsets(pa.table({"s": pa.array(["a"], pa.large_string())})).schema.types
    [DataType(string)]
    """
    if isinstance(data, pa.Table):
        target = pa.schema([f.with_type(small_type(f.type)) for f in data.schema])
        if target == data.schema:
            return data
        return pa.table([small_offsets(c) for c in data.columns], names=data.column_names)
    target = small_type(data.type)
    if target == data.type:
        return data
    try:
        return data.cast(target)
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return data


def cast(arr: pa.ChunkedArray, dtype: str) -> pa.ChunkedArray:
    """``arr`` cast to the backend-neutral ``dtype`` (strings with 32-bit offsets); integers
    past 2**53 cast to float become the nearest float (what a float can hold).

    >>> cast(pa.chunked_array([[2**63 - 1]]), "float64").to_pylist()
    [9.223372036854776e+18]
    """
    target = small_type(arrow_type(dtype))
    try:
        return pc.cast(arr, target, safe=not (pa.types.is_integer(arr.type)
                                              and pa.types.is_floating(target)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(f"Cannot cast a {dtype_name(arr.type)} column to {dtype}: "
                          f"{exc}") from exc


def representable(bound: float | None, t: pa.DataType) -> bool:
    """Whether ``bound`` converts to type ``t`` exactly (None always does)."""
    if bound is None or not pa.types.is_integer(t):
        return True
    info = np.iinfo(t.to_pandas_dtype())
    return info.min <= bound <= info.max


# ---- missing values (NaN is missing) --------------------------------------------------------
def missing(arr: Any) -> Any:
    """Null, or NaN in a float column (a boolean array without nulls).

    >>> missing(pa.array([1.0, None, float("nan")])).to_pylist()
    [False, True, True]
    """
    return pc.is_null(arr, nan_is_null=True)


def missing_numpy(arr: Any) -> np.ndarray:
    """:func:`missing` as a NumPy bool array."""
    return missing(arr).to_numpy(zero_copy_only=False)


def nan_to_null(arr: Any) -> Any:
    """A float column with its NaN turned into nulls (other columns unchanged).

    >>> nan_to_null(pa.array([float("nan"), 2.0])).to_pylist()
    [None, 2.0]
    """
    if pa.types.is_floating(arr.type):
        return pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
    return arr


# ---- statistics tables ----------------------------------------------------------------------
def sum_counts(tables: list[pa.Table]) -> pa.Table:
    """Sum the counts of equal values over several value/count tables (by their 64-bit keys
    where the values have them, ``_keyed_counts``)."""
    merged = keyed_counts.merge([keyed_counts.encode(t) for t in tables])
    return keyed_counts.decode(merged) if merged is not None else merge_sums(tables)


def _with_rows(tables: list[pa.Table]) -> list[pa.Table]:
    """The tables that have rows (or the first, to keep its schema)."""
    return [t for t in tables if t.num_rows] or tables[:1]


def _own_chunk(table: pa.Table) -> pa.Table:
    """``table`` as one chunk of its own: Acero's output chunks all share one string buffer,
    which Dask's ``sizeof`` counts once per chunk (a 90 MB table reported as 12 GB, and
    refused by memory-limited workers as "N GiB worth of input dependencies")."""
    return table.combine_chunks()


def merge_sums(tables: list[pa.Table], keys: Sequence[str] = ("value",)) -> pa.Table:
    """Sum every non-key column over equal keys.

    >>> t = merge_sums([pa.table({"value": ["a", "b"], "n": [1, 5]}),
    ...                 pa.table({"value": ["a"], "n": [7]})])
    >>> sorted(zip(t["value"].to_pylist(), t["n"].to_pylist())), t["n"].num_chunks
    ([('a', 8), ('b', 5)], 1)
    """
    tables = _with_rows(tables)
    if len(tables) == 1:
        return tables[0]
    merged = pa.concat_tables(tables, promote_options="permissive")
    names = [n for n in merged.column_names if n not in keys]
    summed = merged.group_by(list(keys), use_threads=False).aggregate(
        [(n, "sum") for n in names])
    return _own_chunk(pa.table({**{k: summed[k] for k in keys},
                                **{n: summed[f"{n}_sum"] for n in names}}))


def merge_moments(tables: list[pa.Table], columns: int) -> pa.Table:
    """Merge per-key ``size`` and, per value column ``i``, count ``n{i}``, sum ``s{i}``, sum of
    squared deviations ``m2_{i}`` (Chan et al.'s pairwise formula), min ``lo{i}``, max ``hi{i}``.
    """
    tables = _with_rows(tables)
    if len(tables) == 1:
        return tables[0]
    t = pa.concat_tables(tables, promote_options="permissive")
    aggs = [("size", "sum")]
    for i in range(columns):
        aggs += [(f"n{i}", "sum"), (f"s{i}", "sum"), (f"lo{i}", "min"), (f"hi{i}", "max")]
    g = t.group_by("value", use_threads=False).aggregate(aggs)
    pos = pc.index_in(t["value"], value_set=g["value"]).to_numpy(zero_copy_only=False)
    out = {"value": g["value"], "size": g["size_sum"]}
    for i in range(columns):
        n_part = t[f"n{i}"].to_numpy().astype(np.float64)
        s_part = t[f"s{i}"].to_numpy()
        n_all = g[f"n{i}_sum"].to_numpy().astype(np.float64)
        mean_all = np.divide(g[f"s{i}_sum"].to_numpy(), n_all, out=np.zeros(len(n_all)),
                             where=n_all > 0)
        mean_part = np.divide(s_part, n_part, out=np.zeros(len(n_part)), where=n_part > 0)
        spread = t[f"m2_{i}"].to_numpy() + n_part * np.square(mean_part - mean_all[pos])
        out.update({f"n{i}": g[f"n{i}_sum"], f"s{i}": g[f"s{i}_sum"],
                    f"m2_{i}": pa.array(np.bincount(pos, weights=spread, minlength=len(n_all))),
                    f"lo{i}": g[f"lo{i}_min"], f"hi{i}": g[f"hi{i}_max"]})
    return _own_chunk(pa.table(out))


def dictionary_indices(chunk: pa.DictionaryArray) -> np.ndarray:
    """The int32 indices of a dictionary array, -1 where null."""
    indices = chunk.indices
    if not indices.null_count and indices.type == pa.int32():
        return indices.to_numpy()  # a view of the buffer: no copy
    return pc.fill_null(indices.cast(pa.int32()), -1).to_numpy()


def dictionary_counts(chunk: pa.DictionaryArray) -> pa.Table:
    """``value``/``count`` of one dictionary array's values (those that occur)."""
    indices = dictionary_indices(chunk)
    if chunk.null_count:  # -1 counted in a first bin, dropped
        counts = np.bincount(indices + 1, minlength=len(chunk.dictionary) + 1)[1:]
    else:
        counts = np.bincount(indices, minlength=len(chunk.dictionary))
    seen = np.flatnonzero(counts)
    return pa.table({"value": chunk.dictionary.take(pa.array(seen)), "count": counts[seen]})


def value_counts(arr: pa.ChunkedArray) -> pa.Table:
    """A ``value``/``count`` table of the present values (no null, no NaN), any order;
    ``-0.0`` counts as ``0.0`` (as the value-defined hash and pandas treat it).

    >>> value_counts(pa.chunked_array([[2.0, float("nan"), 2.0, None]])).to_pylist()
    [{'value': 2.0, 'count': 2}]
    >>> value_counts(pa.chunked_array([[0.0, -0.0]])).to_pylist()
    [{'value': 0.0, 'count': 2}]
    """
    if pa.types.is_dictionary(arr.type):  # count codes: no hashing of every row's value
        return sum_counts([dictionary_counts(c) for c in arr.chunks] or [
            pa.table({"value": pa.array([], arr.type.value_type),
                      "count": pa.array([], pa.int64())})])
    arr = nan_to_null(arr)
    if pa.types.is_floating(arr.type):  # -0.0 + 0.0 is 0.0: one value
        arr = pc.add(arr, pa.scalar(0.0, arr.type))
    vc = pc.value_counts(arr)
    table = pa.table({"value": vc.field("values"), "count": vc.field("counts")})
    return table.filter(pc.is_valid(table["value"]))


def digitize(arr: pa.ChunkedArray, boundaries: Sequence[float]) -> pa.ChunkedArray:
    """Bucket id = number of boundaries ``<= x`` as int64; null and NaN give null.

    >>> digitize(pa.chunked_array([[0.5, None, float("nan"), 9.0]]), [1, 2]).to_pylist()
    [0, None, None, 2]
    """
    values = pc.cast(arr, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    ids = np.searchsorted(np.asarray(boundaries, dtype=np.float64), values, side="right")
    return pa.chunked_array([pa.array(ids.astype(np.int64), mask=missing_numpy(arr))])


def finite_values(arr: pa.ChunkedArray) -> np.ndarray:
    """The finite values as float64 (no null, NaN or infinity)."""
    x = pc.cast(arr, pa.float64(), safe=False)  # integers past 2**53: the nearest float
    return pc.filter(x, pc.is_finite(x)).to_numpy(zero_copy_only=False)


def moments(arr: pa.ChunkedArray) -> dict[str, float]:
    """count / mean / m2 (sum of squared deviations from the mean) / min / max of the
    finite values, and the count of the others (merged with Chan's formula). A numeric
    column of finite values only takes :func:`.buffers.dense_moments` (same result, no copy).

    >>> moments(pa.chunked_array([[1.0, 3.0, None, float("nan")]]))["m2"]
    2.0
    """
    dense = buffers.dense_moments(arr)
    if dense is not None:
        return dense
    finite = finite_values(arr)
    n = len(finite)
    shift = finite[0] if n else 0.0  # shifted mean: exact for constant columns
    mean = float(shift + (finite - shift).mean()) if n else 0.0
    return {"count": float(n), "mean": mean,
            "m2": float(np.square(finite - mean).sum()) if n else 0.0,
            "min": float(finite.min()) if n else float("nan"),
            "max": float(finite.max()) if n else float("nan"),
            "missing": float(len(arr) - n)}


def extremes(arr: pa.ChunkedArray) -> dict[str, float]:
    """count / min / max of the finite values and the count of the others: the part of
    :func:`moments` that min-max scaling needs, without the two passes of the mean and spread
    (the same numbers as :func:`moments`' fields).

    >>> extremes(pa.chunked_array([[1.0, 3.0, None, float("inf")]]))
    {'count': 2.0, 'min': 1.0, 'max': 3.0, 'missing': 2.0}
    """
    if pa.types.is_integer(arr.type) or (buffers.numeric(arr.type) and not arr.null_count):
        # no NaN or infinities in integers; floats: NumPy's min and max propagate NaN
        valid = len(arr) - arr.null_count
        lo, hi = _min_max(arr) if valid else (math.nan, math.nan)
        if not valid or (math.isfinite(lo) and math.isfinite(hi)):
            return {"count": float(valid), "min": lo, "max": hi,
                    "missing": float(arr.null_count)}
    finite = finite_values(arr)
    n = len(finite)
    return {"count": float(n), "min": float(finite.min()) if n else math.nan,
            "max": float(finite.max()) if n else math.nan, "missing": float(len(arr) - n)}


def _min_max(arr: pa.ChunkedArray) -> tuple[float, float]:
    """The least and largest valid value as floats (integers past 2**53: the nearest float,
    as the float64 cast of :func:`moments` gives); a float column's NaN gives NaN."""
    if pa.types.is_integer(arr.type):
        lo, hi = (m.as_py() for m in pc.min_max(arr).values())
        return float(lo), float(hi)
    return buffers.extremes([buffers.values(c) for c in arr.chunks if len(c)])


def join_as_strings(arrays: Sequence[pa.ChunkedArray], sep: str = "\x1f") -> pa.ChunkedArray:
    """One string per row joining the columns' values (null shown as ``\x00``).

    >>> join_as_strings([pa.chunked_array([["a", None]]), pa.chunked_array([[1, 2]])],
    ...                 "|").to_pylist()
    ['a|1', '\\x00|2']
    """
    parts = [pc.fill_null(pc.cast(a, pa.large_string()), "\x00") for a in arrays]
    return chunked(pc.binary_join_element_wise(*parts, pa.scalar(sep, pa.large_string())))


# ---- list (multi-hot) columns ---------------------------------------------------------------
def list_values(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """The values of a list column flattened by one level (nested lists stay lists).

    >>> list_values(pa.chunked_array([[[[1], [2, 3]], None, [[4]]]])).to_pylist()
    [[1], [2, 3], [4]]
    """
    return pa.chunked_array([c.flatten() for c in arr.chunks], type=arr.type.value_type)


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def element_values(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """The values of a column as profiles read them: list elements flattened (one level),
    dictionaries decoded.

    >>> element_values(pa.chunked_array([[["a"], None, ["b", "a"]]])).to_pylist()
    ['a', 'b', 'a']
    >>> element_values(pa.chunked_array([pa.array(["x", "y"]).dictionary_encode()])).type
    DataType(string)
    """
    values = pc.list_flatten(col) if is_list(col.type) else col
    return values.cast(values.type.value_type) if pa.types.is_dictionary(values.type) else values


def list_with_values(arr: pa.ChunkedArray, values: pa.ChunkedArray) -> pa.ChunkedArray:
    """A list column with the row structure of ``arr`` and new flat ``values``.

    >>> list_with_values(pa.chunked_array([[["a"], None, ["b", "c"]]]),
    ...                  pa.chunked_array([[1, 2, 3]])).to_pylist()
    [[1], None, [2, 3]]
    """
    arr = arr.combine_chunks()
    flat = values.combine_chunks()
    offsets = pc.subtract(arr.offsets, arr.offsets[0])
    mask = arr.is_null() if arr.null_count else None
    list_type = pa.LargeListArray if pa.types.is_large_list(arr.type) else pa.ListArray
    return pa.chunked_array([list_type.from_arrays(offsets, flat, mask=mask)])


def list_length_range(arr: pa.ChunkedArray) -> tuple[int, int] | None:
    """Shortest and longest list of a list column (null rows ignored; None if no list)."""
    lengths = pc.min_max(pc.list_value_length(arr))
    low, high = lengths["min"].as_py(), lengths["max"].as_py()
    return None if low is None else (int(low), int(high))


def slice_bounds(lengths: np.ndarray, start: int, end: int | None) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """Per row, where ``row[start:end]`` begins and how long it is (Python slice rules).

    >>> slice_bounds(np.array([5, 2, 0]), -3, None)
    (array([2, 0, 0]), array([3, 2, 0]))
    """
    lengths = np.asarray(lengths, dtype=np.int64)

    def bound(i: int) -> np.ndarray:
        return np.clip(lengths + i if i < 0 else np.full_like(lengths, i), 0, lengths)

    lo = bound(start)
    hi = lengths if end is None else bound(end)
    return lo, np.maximum(hi - lo, 0)


def list_slice(arr: pa.ChunkedArray, start: int, end: int | None,
               pad_length: int | None = None, pad_value: Any = 0) -> pa.ChunkedArray:
    """``row[start:end]`` of every list (Python slice rules), by arithmetic on the offsets;
    with ``pad_length`` every non-null row is padded at the end to that length.

    >>> list_slice(pa.chunked_array([[[1, 2, 3], None, [4]]]), 0, 2, 2).to_pylist()
    [[1, 2], None, [4, 0]]
    """
    arr = arr.combine_chunks()
    offsets = arr.offsets.to_numpy().astype(np.int64)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    lo, length = slice_bounds(np.where(valid, np.diff(offsets), 0), start, end)
    begin = offsets[:-1] + lo
    if pad_length is None:
        new_offsets = np.concatenate([[0], np.cumsum(length)])
        take = np.repeat(begin - new_offsets[:-1], length) + np.arange(new_offsets[-1])
        values = arr.values.take(pa.array(take))
    else:
        slots = np.arange(pad_length)[None, :] < length[:, None]
        take = np.full(slots.shape, -1, dtype=np.int64)
        take[slots] = np.repeat(begin, length) + (np.cumsum(slots, axis=1)[slots] - 1)
        pad = pa.array([pad_value]).cast(arr.type.value_type)
        flat = take.ravel()
        values = pa.concat_arrays([arr.values.take(pa.array(np.maximum(flat, 0))), pad])
        values = values.take(pa.array(np.where(flat < 0, len(values) - 1, np.arange(
            len(flat)))))
        new_offsets = np.arange(len(arr) + 1, dtype=np.int64) * pad_length
    list_type = pa.LargeListArray if pa.types.is_large_list(arr.type) else pa.ListArray
    out = list_type.from_arrays(pa.array(new_offsets, type=arr.offsets.type), values,
                                mask=arr.is_null() if arr.null_count else None)
    return pa.chunked_array([out])


# ---- parameters -----------------------------------------------------------------------------
def integer_bounds(arrow_type: pa.DataType, lower: float | None,
                   upper: float | None) -> tuple[float | None, float | None]:
    """Bounds rounded inwards for an integer column (exact clipping) and kept within its
    type's range (a bound beyond it clips nothing), unchanged otherwise; a bound that every
    value would have to take but the type cannot hold is refused.

    >>> integer_bounds(pa.int64(), -1e30, 2.5)
    (-9223372036854775808, 2)
    """
    if pa.types.is_integer(arrow_type):
        info = np.iinfo(arrow_type.to_pandas_dtype())
        if (lower is not None and lower > info.max) or (upper is not None and upper < info.min):
            raise SchemaError(f"Cannot clip a {arrow_type} column to [{lower}, {upper}]: every "
                              f"value would become a number {arrow_type} cannot hold (its "
                              f"range is {info.min} to {info.max}). Cast the column to float "
                              "first (e.g. ops.LambdaOp('x', dtype='float64')).")
        lower = None if lower is None else max(int(np.ceil(lower)), int(info.min))
        upper = None if upper is None else min(int(np.floor(upper)), int(info.max))
    return lower, upper


def check_fill_value(dtype: str, value: Any) -> None:
    """A fractional fill value cannot go into an integer column without changing it."""
    if dtype.startswith(("int", "uint")) and float(value) != int(value):
        raise SchemaError(f"Cannot fill an {dtype} column with {value!r}: it is not an integer. "
                          "Use an integer fill value, or cast the column to float first (e.g. "
                          "ops.LambdaOp('x', dtype='float64')).")


# ---- memory ----------------------------------------------------------------------------------
def prefer_jemalloc() -> str:
    """Use Arrow's jemalloc pool unless the user chose one (``ARROW_DEFAULT_MEMORY_POOL``);
    return the pool's name.

    pyarrow's default on Linux, mimalloc, hands freed pages back to the system at once, so
    the buffers of every partition are page-faulted in again; jemalloc keeps them for the next
    partition (on the standard Criteo workflow, system CPU time falls by about a seventh of
    the job's CPU time). Where jemalloc is not built in, the default pool stays.
    """
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        try:
            pa.set_memory_pool(pa.jemalloc_memory_pool())
        except (NotImplementedError, pa.ArrowNotImplementedError):
            pass
    return pa.default_memory_pool().backend_name


prefer_jemalloc()
