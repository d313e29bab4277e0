"""``Categorify(vocabulary=...)``: vocabularies made elsewhere, in id order.

The parameter takes, per vocabulary (a column, or a joint group by its key or by one of its
columns):

* the values in id order: a list, a NumPy array, a pandas Series or Index, an Arrow array,
  or what :meth:`~interactive_recsys.Workflow.vocabulary` returns (another fitted workflow's
  vocabulary);
* the path of a parquet file holding them: its one column, or its ``value`` column (in the
  order of its ``index`` column when it has one: the vocabulary files a fit writes);

as a mapping ``{column: values}``, or, for the whole parameter, the path of a parquet file
whose columns are the vocabularies (each named by its column).

The ``i``-th value gets id ``first + i``, where ``first`` is the first id after the reserved
ones (padding, null and the out-of-vocabulary ids: ``2 + num_buckets``, or 3); every other
value is out of vocabulary (hashed into the ``num_buckets`` buckets when set). Nothing is
counted: a fit writes the given values as the step's vocabulary without reading the column,
and ``Workflow.update`` leaves them as they are (the vocabulary is fixed; new values stay out
of it). Duplicate values, nulls (NaN included), an empty vocabulary, a value type other than
the column's and a column left out of the mapping are refused, by name.

Saving writes each vocabulary as parquet under the workflow's artifacts
(``given_vocabularies/<sha256>.parquet``); ``workflow.json`` names it by content hash, size
and dtype, never the values, however many there are. A loaded workflow finds the values
there when it is fitted again.

The ``repr`` (and so the builder's form field and exported code) shows a vocabulary of at
most :data:`SHOWN` values as its list of values, a larger one by that content hash; both
read back into an equal operator. The builder's form shows a vocabulary held by content hash
read-only (its values are not text to edit there): give such a vocabulary in code.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> op = ops.Categorify(vocabulary={"c": ["b", "a"]})
>>> op
Categorify(vocabulary={'c': ['b', 'a']})
>>> wf = irs.Workflow(["c"] >> op)
>>> wf.fit_transform(pd.DataFrame({"c": ["a", "b", "z", None]}))["c"].tolist()
[4, 3, 2, 1]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.hashing import hash_array
from interactive_recsys.ops._join_external import table_sha256
from interactive_recsys.params import param_error
from interactive_recsys.schema import arrow_type, dtype_name, element_dtype
from interactive_recsys.store import storage
from interactive_recsys.tables._vocabulary import split_rows, write_split

GIVEN_DIR = "given_vocabularies"
#: A vocabulary of at most this many values shows them in its ``repr``; a larger one its hash.
SHOWN = 10


def _error(text: str) -> ParameterError:
    return param_error("vocabulary", "Categorify", text)


def _family(dtype: str) -> str:
    """Values match a column within a family: integers, floats, strings, booleans..."""
    if dtype.startswith(("int", "uint")):
        return "integer"
    if dtype.startswith("float"):
        return "float"
    return "string" if dtype in ("string", "large_string") else dtype.split("[")[0]


def _read_parquet(path: str) -> pa.Table:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise _error(f"names {path!r}, which is not a readable parquet file ({exc}). Pass a "
                     "parquet path, or the values themselves.") from None
    index = (table.schema.pandas_metadata or {}).get("index_columns", [])
    return table.drop([c for c in index if isinstance(c, str) and c in table.column_names])


def _file_values(path: str, key: str) -> pa.Array:
    """The values of one vocabulary's parquet file (see the module docstring)."""
    table = _read_parquet(path)
    if "value" in table.column_names:
        if "index" in table.column_names:
            table = table.take(pc.sort_indices(table["index"]))
        return table["value"].combine_chunks()
    if table.num_columns != 1:
        raise _error(f"names {path!r} for {key!r}, whose columns are {table.column_names}; "
                     "the file of one vocabulary holds one column (or a 'value' column).")
    return table.column(0).combine_chunks()


def _as_array(values: Any, key: str) -> pa.Array:
    """One vocabulary's values as an Arrow array, checked: no null, no duplicate, not empty."""
    if isinstance(values, str | os.PathLike):
        array = _file_values(os.fspath(values), key)
    elif isinstance(values, pa.ChunkedArray):
        array = values.combine_chunks()
    elif isinstance(values, pa.Array):
        array = values
    elif hasattr(values, "to_numpy") and hasattr(values, "dtype"):  # pandas Series / Index
        array = pa.array(values, from_pandas=True)
    elif isinstance(values, np.ndarray | list | tuple):
        try:
            array = pa.array(list(values) if isinstance(values, tuple) else values,
                             from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise _error(f"gives {key!r} values of mixed types ({exc}); a vocabulary holds "
                         "values of one type, the column's.") from None
    else:
        raise _error(f"takes {{column: values}} (a list, an array, a Series, a parquet path) "
                     f"or a parquet path; got {type(values).__name__} for {key!r}.")
    array = _normalized(array)
    if not len(array):
        raise _error(f"gives {key!r} no values; give at least one (every other value is out "
                     "of vocabulary).")
    nulls = array.null_count + (int(pc.sum(pc.is_nan(array)).as_py() or 0)
                                if pa.types.is_floating(array.type) else 0)
    if nulls:
        raise _error(f"gives {key!r} {nulls} null value(s) (None or NaN); nulls have their "
                     "own id (1) and cannot be in a vocabulary. Drop them "
                     "(e.g. values.dropna()).")
    if pc.count_distinct(array).as_py() != len(array):
        counts = pc.value_counts(array)
        twice = counts.filter(pc.greater(counts.field("counts"), 1))[:3].to_pylist()
        raise _error(f"gives {key!r} values more than once ("
                     + ", ".join(f"{t['values']!r}: {t['counts']} times" for t in twice)
                     + "); a vocabulary holds distinct values, each with one id: drop the "
                       "duplicates (e.g. values.drop_duplicates()), keeping the order.")
    return array


def _normalized(array: pa.Array) -> pa.Array:
    """Values in one type per kind (int64, float64, large strings), so that equal values
    given as a list, an int32 Series or an Arrow array have one content hash.

    >>> _normalized(pa.array([1, 2], pa.int32())).type, _normalized(pa.array(["a"])).type
    (DataType(int64), DataType(large_string))
    """
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    kind = array.type
    target = (pa.int64() if pa.types.is_signed_integer(kind)
              else pa.uint64() if pa.types.is_unsigned_integer(kind)
              else pa.float64() if pa.types.is_floating(kind)
              else pa.large_string() if pa.types.is_string(kind) or pa.types.is_large_string(kind)
              or pa.types.is_string_view(kind)
              else pa.large_binary() if pa.types.is_binary(kind) else kind)
    return array if target == kind else array.cast(target)


class GivenVocabulary:
    """The vocabularies of a ``Categorify(vocabulary=...)``: each key's values in id order,
    held in memory, or described by content hash (a saved workflow's; the values are then
    read from its artifacts).

    ``describe()`` is what ``workflow.json`` stores: ``{key: {"sha256", "size",
    "dtype"}}``. Equal hashes mean equal vocabularies. Pickling (to Dask workers) leaves
    the values out: a transform reads the vocabulary files of the fitted state.
    """

    def __init__(self, arrays: Mapping[str, pa.Array] | None = None,
                 described: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.arrays = dict(arrays or {})
        self.described = dict(described) if described is not None else {
            key: {"sha256": table_sha256(pa.table({"value": a})), "size": len(a),
                  "dtype": dtype_name(a.type)} for key, a in self.arrays.items()}

    @classmethod
    def of(cls, value: Any) -> GivenVocabulary:
        """The vocabularies of a parameter value (see the module docstring)."""
        if isinstance(value, GivenVocabulary):
            return value
        if isinstance(value, str | os.PathLike):
            table = _read_parquet(os.fspath(value))
            return cls({name: _as_array(table[name], name) for name in table.column_names})
        if not isinstance(value, Mapping) or not value:
            raise _error("takes {column: values in id order}, a parquet path or "
                         f"wf.vocabulary(column) in a mapping; got {value!r:.80}.")
        for key in value:
            if not isinstance(key, str):
                raise _error(f"is keyed by column names; got the key {key!r}.")
        arrays = {k: _as_array(v, k) for k, v in value.items() if not isinstance(v, Mapping)}
        made = cls(arrays)
        return cls(arrays, {k: cls._checked_description(k, v) if isinstance(v, Mapping)
                            else made.described[k] for k, v in value.items()})

    @staticmethod
    def _checked_description(key: str, info: Mapping[str, Any]) -> dict[str, Any]:
        sha, size, dtype = info.get("sha256"), info.get("size"), info.get("dtype")
        if set(info) != {"sha256", "size", "dtype"} or not (
                isinstance(sha, str) and len(sha) == 64
                and all(c in "0123456789abcdef" for c in sha)) \
                or not isinstance(size, int) or isinstance(size, bool) or size < 1 \
                or not isinstance(dtype, str):
            raise _error(f"describes {key!r} with a malformed entry ({dict(info)!r:.120}); a "
                         "saved vocabulary is {'sha256', 'size', 'dtype'}: save the "
                         "workflow again.")
        return {"sha256": sha, "size": size, "dtype": dtype}

    def describe(self) -> dict[str, dict[str, Any]]:
        return {key: dict(info) for key, info in self.described.items()}

    # ---- the step's vocabulary keys -----------------------------------------------------
    def keys_for(self, vocab_keys: Mapping[str, tuple[str, ...]], combo: bool
                 ) -> dict[str, str]:
        """``{vocabulary key of the step: key given}``: a key given names a plain column's
        vocabulary, or a joint group's by its key or one of its columns; every vocabulary
        of the step needs one, and each key given must name one."""
        given, out = list(self.described), {}
        for key, group in vocab_keys.items():
            if combo and len(group) > 1:
                raise SchemaError(f"Categorify(vocabulary=...) encodes columns and joint "
                                  f"groups; the combo group {list(group)} has no vocabulary "
                                  "of values to give. Use encode_type='joint', or encode the "
                                  "group in a step of its own.")
            names = [n for n in dict.fromkeys((key, *group)) if n in self.described]
            if len(names) > 1:
                raise SchemaError(f"Categorify(vocabulary=...) gives the joint group "
                                  f"{list(group)} two vocabularies ({names}); give one.")
            if not names:
                raise SchemaError(f"Categorify(vocabulary=...) gives no vocabulary for "
                                  f"{key!r} (it has {given}); every column the step encodes "
                                  f"needs one: add {key!r} to the mapping, or encode it in "
                                  "another Categorify step.")
            out[key] = names[0]
        unused = [k for k in given if k not in out.values()]
        if unused:
            raise SchemaError(f"Categorify(vocabulary=...) gives a vocabulary for {unused}, "
                              f"which the step does not encode (it encodes "
                              f"{list(vocab_keys)}); remove it or select the column.")
        return out

    def check_dtype(self, key: str, column: str, dtype: str) -> None:
        """Refuse values whose type is not the column's (strings for an integer column...)."""
        given = self.described[key]["dtype"]
        if _family(given) != _family(element_dtype(dtype)):
            raise SchemaError(f"Categorify(vocabulary=...) gives {key!r} values of type "
                              f"{given}, but column {column!r} is {dtype}; give values of "
                              f"the column's type (e.g. pd.Series(values).astype("
                              f"{element_dtype(dtype)!r})).")

    # ---- the values ---------------------------------------------------------------------
    def values(self, key: str, dtype: str, *folders: str | None,
               storage_options: Any = None) -> pa.Array:
        """The values of ``key`` as the column's element ``dtype``: in memory, else from
        ``given_vocabularies/<sha256>.parquet`` in the first of ``folders`` that has it."""
        array = self.arrays.get(key)
        if array is None:
            sha = self.described[key]["sha256"]
            for folder in folders:
                path = storage.join(folder or "", GIVEN_DIR, f"{sha}.parquet")
                if folder and storage.exists(path, storage_options):
                    array = storage.read_table(path, storage_options)["value"].combine_chunks()
                    break
            else:
                raise ParameterError(f"Categorify's vocabulary of {key!r} (sha256 {sha[:12]}"
                                     "...) is not in the artifacts of this workflow; pass its "
                                     "values again as vocabulary={...}.")
        try:
            return pc.cast(array, arrow_type(element_dtype(dtype)))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"Categorify(vocabulary=...) gives {key!r} values that column "
                              f"type {dtype} cannot hold ({exc}); give values of the "
                              "column's type.") from None

    def write(self, key: str, values: pa.Array, artifacts_dir: str, key_dir: str,
              first_index: int, splits: int, storage_options: Any = None) -> dict[str, Any]:
        """Write ``key``'s values: their copy by content hash (what a saved workflow reads
        back) and the step's vocabulary files (``value, count, index``; count 0: nothing
        was counted); the vocabulary's state."""
        sha = self.described[key]["sha256"]
        relative = f"{GIVEN_DIR}/{sha}.parquet"
        copy = storage.join(artifacts_dir, GIVEN_DIR, f"{sha}.parquet")
        if not storage.exists(copy, storage_options):
            storage.write_table(pa.table({"value": self.arrays.get(key, values)}), copy,
                                storage_options)
        rows = split_rows(hash_array(values), splits)  # as a fit splits its counts
        for s, taken in enumerate(rows):
            piece = pa.table({"value": values.take(pa.array(taken, pa.int64())),
                              "count": pa.array(np.zeros(len(taken), np.int64))})
            write_split(piece, taken.astype(np.int64), first_index, None, key_dir, s,
                        storage_options)
        return {"path": key_dir, "splits": splits, "size": len(values),
                "cardinality": first_index + len(values),
                "given": {"path": relative, "sha256": sha}}

    # ---- identity, display, transport ---------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, GivenVocabulary) and self.described == other.described

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = object.__hash__

    def shown(self) -> dict[str, Any]:
        """What ``repr`` shows: per key, its values when at most :data:`SHOWN` are held
        here, else its description (content hash, size, dtype)."""
        return {key: self.arrays[key].to_pylist()
                if key in self.arrays and info["size"] <= SHOWN else dict(info)
                for key, info in self.described.items()}

    @property
    def read_only_in_form(self) -> bool:
        """Whether a form shows it read-only: some vocabulary is shown by content hash."""
        return any(isinstance(v, dict) for v in self.shown().values())

    def __repr__(self) -> str:
        return repr(self.shown())

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "arrays": {}}

    def __copy__(self) -> GivenVocabulary:  # immutable: copies (undo histories) share it
        return self

    def __deepcopy__(self, memo: dict) -> GivenVocabulary:
        return self

