"""``Workflow.inverse_transform``: Categorify's ids back to the values they stand for.

Each column of the data that the workflow outputs is traced back to the step that made it,
through the steps that keep its values (``Operator.unchanged_input``: renaming, tags,
column selection, row filters and joins, a ``Groupby``'s keys):

* a ``Categorify`` output is read back through its vocabulary (joint groups share one);
* a ``HashBucket`` or ``HashedCross`` output is refused by name: a hash has no inverse;
* ids changed again after their ``Categorify`` (a ``LambdaOp``, a ``Clip``...), or ids that a
  later step made into new columns (a ``Groupby``'s lists of ids), are refused by name;
* any other column (a label, a normalized number, a column of the data the workflow does not
  output) passes unchanged.

What each id gives:

* a vocabulary id: its value, in the column's original dtype (lists of ids give lists);
* the null id (1) and the padding id (0): null;
* an out-of-vocabulary id (2, or any of the ``num_buckets`` bucket ids), and an id whose
  value ``max_frequency`` cut in an update (a retired id): the **marker** of the column,
  ``"<OOV>"`` for strings and ``-1`` for numbers (Keras' ``StringLookup`` and
  ``IntegerLookup`` use the same convention), or the one given in ``oov={column: marker}``.
  A marker is a value of the column's own dtype, refused when the vocabulary holds it: what
  comes back is either a value of the vocabulary or the marker, never both, so no real
  value can be mistaken for it. Columns of other dtypes (booleans, timestamps...) have no
  default marker: give one, or an out-of-vocabulary id is an error naming it.
  ``oov={column: None}`` asks for null instead;
* an id outside ``[0, cardinality)``: an error naming the column and the id.

A ``combo`` encoding (``Categorify(encode_type="combo")`` on ``["a", "b"]``, output ``a_b``)
keys each combination by its members' values as text; it comes back as one column per
member, ``a_b.a`` and ``a_b.b``, in place of ``a_b``, each in its member's dtype (a member
stored as the text ``"\\x00"``, which is how the key writes a null, reads back as null). Its
marker is each member's marker (``oov={"a_b": {"a": ..., "b": ...}}`` gives them).

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> df = pd.DataFrame({"item": ["b", "a", "b", None], "n": [1.0, 2.0, 3.0, 4.0]})
>>> wf = irs.Workflow((["item"] >> ops.Categorify()) + (["n"] >> ops.Normalize()))
>>> ids = wf.fit_transform(df)
>>> ids["item"].tolist()
[3, 4, 3, 1]
>>> wf.inverse_transform(pd.DataFrame({"item": [4, 3, 2, 1]}))["item"].tolist()
['a', 'b', '<OOV>', nan]
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import get_backend
from interactive_recsys.errors import DatasetError, ParameterError, SchemaError
from interactive_recsys.io._dataset import Dataset
from interactive_recsys.ops._categorify import Categorify
from interactive_recsys.ops._hash_bucket import HashBucket
from interactive_recsys.ops._hashed_cross import HashedCross
from interactive_recsys.schema import ColumnSchema, Schema, Tags, arrow_type, element_dtype
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.tables._layout import FIRST_FREE_INDEX
from interactive_recsys.tables._vocabulary import read_vocabulary
from interactive_recsys.tables._vocabulary_check import split_path
from interactive_recsys.workflow._graph import Node

#: The out-of-vocabulary marker of string columns, and of numeric ones.
OOV_STRING, OOV_NUMBER = "<OOV>", -1
#: Separator and null of a combo key (``backend.join_as_strings``).
COMBO_SEP, COMBO_NULL = "\x1f", "\x00"


@dataclass(frozen=True)
class Encoded:
    """Where an output column's ids come from: the ``Categorify`` step ``node_id`` and its
    vocabulary ``key`` (``info``: its state entry; ``members``: the input columns it encodes
    with their dtypes, several for a combo group)."""

    column: str
    node_id: str
    op: Categorify
    key: str
    info: dict[str, Any]
    members: tuple[tuple[str, str], ...]

    @property
    def combo(self) -> bool:
        return self.op.encode_type == "combo" and len(self.members) > 1


# ---- tracing an output column to its step ----------------------------------------------------
def encoded_columns(workflow: Any, columns: Sequence[str]) -> dict[str, Encoded]:
    """The ``columns`` (output columns of ``workflow``) whose ids a ``Categorify`` made, each
    traced back (see the module docstring); the other columns are left out, and a column
    that holds ids that cannot be read back is refused by name."""
    output = workflow.output_node
    schemas = workflow._state.schemas(output)
    found = {}
    for column in columns:
        source = schemas.sources[id(output)].get(column)
        if source is None:
            continue
        origin = _origin(source, schemas)
        if origin is not None:
            found[column] = _encoded(workflow, column, origin, schemas)
        else:
            _refuse_derived(workflow, column, source, schemas)
    return found


def _origin(source: tuple[Node | None, str], schemas: Any) -> tuple | None:
    """``(categorify node, its output name, data steps passed)`` of the ids a column holds,
    or None when it holds no Categorify ids (an input column, a column a step made)."""
    node, name = source
    passed: list[Node] = []
    while node is not None:
        op = node.op
        if isinstance(op, Categorify):
            return node, name, passed
        if isinstance(op, HashBucket | HashedCross):
            return node, name, passed
        upstream = Node._sources(node, schemas)
        before = op.unchanged_input(name, list(upstream))
        if before is None:
            if name not in upstream:
                return None
            passed.append(node)
            before = name
        node, name = upstream[before]
    return None


def _encoded(workflow: Any, column: str, origin: tuple, schemas: Any) -> Encoded:
    node, name, passed = origin
    node_id = workflow.node_id(node)
    if isinstance(node.op, HashBucket | HashedCross):
        raise SchemaError(f"Column {column!r} holds the hashed ids of "
                          f"{type(node.op).__name__} ({node_id}), which have no inverse: many "
                          "values share each bucket. Leave it out of inverse_transform "
                          f"(columns=...), or encode it with Categorify to read it back.")
    if passed:
        step = passed[0]
        raise SchemaError(f"Column {column!r} holds the ids of {node_id} changed again by "
                          f"{step.op!r} ({workflow.node_id(step)}), so they no longer index "
                          "its vocabulary. Read back the ids before that step, or leave the "
                          "column out of inverse_transform (columns=...).")
    op = node.op
    groups = node.input_groups(workflow.input_schema, schemas)
    key = op.output_names(groups)[name]
    group = op.vocab_keys(groups)[key]
    inputs = node.input_schema(workflow.input_schema, schemas)
    if op.encode_type != "combo" or len(group) == 1:
        group = (name,)  # a plain column, or one of a joint group (one dtype)
    members = tuple((n, element_dtype(inputs[n].dtype)) for n in group)
    return Encoded(column, node_id, op, key, workflow._state.states[node_id]["vocabs"][key],
                   members)


def _refuse_derived(workflow: Any, column: str, source: tuple[Node | None, str],
                    schemas: Any) -> None:
    """Refuse a categorical column that a step made from Categorify ids (a Groupby's list
    of item ids): it holds ids, but of no vocabulary this inverse can name."""
    node, _ = source
    col = schemas[id(workflow.output_node)][column]
    if node is None or Tags.CATEGORICAL.value not in col.tags:
        return
    upstream = Node._sources(node, schemas)
    for name, where in upstream.items():
        if _origin(where, schemas) is not None:
            raise SchemaError(f"Column {column!r} is made by {node.op!r} "
                              f"({workflow.node_id(node)}) from the ids in {name!r}, not by a "
                              "Categorify, so no vocabulary reads it back. Read back the ids "
                              "before that step, or leave the column out of inverse_transform "
                              "(columns=...).")


# ---- the vocabulary of one column ------------------------------------------------------------
@functools.lru_cache(maxsize=32)
def _by_position(directory: str, splits: int, first: int, cardinality: int, dtype: str,
                 versions: tuple, options: str) -> pa.Array:
    """The vocabulary's values by ``id - first`` (null at a retired id), as ``dtype``; read
    once per process and file version."""
    table = read_vocabulary(directory, splits, json.loads(options) or None)
    where = np.full(cardinality - first, -1, np.int64)
    where[table["index"].to_numpy().astype(np.int64) - first] = np.arange(table.num_rows)
    values = table["value"].combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    values = pc.cast(values, arrow_type(dtype))
    return values.take(pa.array(where, mask=where < 0))


def vocabulary_series(workflow: Any, column: str) -> pd.Series:
    """``Workflow.vocabulary``: the values of ``column``'s vocabulary in id order."""
    workflow._check_fitted()
    if column not in workflow.output_columns:
        raise SchemaError(f"Column {column!r} is not an output of this workflow; its outputs "
                          f"are {workflow.output_columns}.")
    encoded = encoded_columns(workflow, [column]).get(column)
    if encoded is None:
        raise SchemaError(f"Column {column!r} is not encoded by a Categorify of this workflow, "
                          "so it has no vocabulary.")
    values = ColumnReader.at(workflow, encoded).values()
    first = encoded.op.first_vocab_index
    held = pc.is_valid(values).to_numpy(zero_copy_only=False)
    ids = np.flatnonzero(held) + first
    series = values.filter(pa.array(held)).to_pandas()
    return series.set_axis(pd.Index(ids, name="id")).rename(column)


# ---- the markers -----------------------------------------------------------------------------
class _NoMarker:
    """No marker: an out-of-vocabulary id is an error (a dtype without a default marker)."""

    def __repr__(self) -> str:
        return "no marker"


NO_MARKER = _NoMarker()


def _default_marker(dtype: str) -> Any:
    if dtype in ("string", "large_string"):
        return OOV_STRING
    if dtype.startswith(("int", "float")):
        return OOV_NUMBER
    return NO_MARKER


def _marker(where: str, dtype: str, given: Any) -> Any:
    """The marker of one column (or combo member) as an Arrow scalar of ``dtype``; None
    (null asked for) or :data:`NO_MARKER` as they are."""
    marker = _default_marker(dtype) if isinstance(given, _NoMarker) else given
    if isinstance(marker, _NoMarker) or marker is None:
        return marker
    try:
        return pa.scalar(marker, arrow_type(dtype))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        raise ParameterError(f"The out-of-vocabulary marker of {where!r} is {marker!r}, which "
                             f"is not a {dtype} value like the column's; give one of its "
                             "dtype.") from None


def _markers(encoded: Encoded, given: Any, values: list[pa.Array]) -> tuple[Any, ...]:
    """The markers of a column (one per combo member), checked: the vocabulary (``values``,
    per member) never holds them all in one entry."""
    column = encoded.column
    if encoded.combo:
        given = {} if isinstance(given, _NoMarker) else given
        if not isinstance(given, Mapping):
            raise ParameterError(f"The out-of-vocabulary marker of the combo column "
                                 f"{column!r} is one per member: oov={{{column!r}: "
                                 f"{{{', '.join(repr(m) for m, _ in encoded.members)}: ...}}}}; "
                                 f"got {given!r}.")
        given = [given.get(m, NO_MARKER) for m, _ in encoded.members]
        names = [f"{column}.{m}" for m, _ in encoded.members]
    else:
        given, names = [given], [column]
    markers = tuple(_marker(n, dtype, g) for n, (_, dtype), g
                    in zip(names, encoded.members, given, strict=True))
    if all(isinstance(m, pa.Scalar) for m in markers):
        same = np.ones(len(values[0]), bool)
        for part, m in zip(values, markers, strict=True):
            same &= pc.fill_null(pc.equal(part, m), False).to_numpy(zero_copy_only=False)
        if same.any():
            shown = markers[0].as_py() if len(markers) == 1 else tuple(m.as_py() for m in markers)
            raise ParameterError(f"The vocabulary of {column!r} holds {shown!r}, its "
                                 "out-of-vocabulary marker, so a value could not be told from "
                                 f"an out-of-vocabulary id; give another: oov={{{column!r}: "
                                 "...}.")
    return markers


def _members(keys: pa.Array, encoded: Encoded) -> list[pa.Array]:
    """A combo group's keys as its members' values (see the module docstring)."""
    parts = pc.split_pattern(keys, COMBO_SEP)
    lengths = pc.list_value_length(parts)
    if pc.any(pc.fill_null(pc.not_equal(lengths, len(encoded.members)), False)).as_py():
        raise SchemaError(f"The combo column {encoded.column!r} has a value holding the "
                          "separator of its members (\\x1f), so it cannot be split back into "
                          f"{[m for m, _ in encoded.members]}.")
    out = []
    for i, (member, dtype) in enumerate(encoded.members):
        text = pc.list_element(parts, i)
        text = pc.if_else(pc.fill_null(pc.equal(text, COMBO_NULL), False),
                          pa.nulls(len(text), text.type), text)
        try:
            out.append(pc.cast(text, arrow_type(dtype)))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise SchemaError(f"The combo column {encoded.column!r}'s member {member!r} does "
                              f"not read back as {dtype} ({exc}).") from None
    return out


def _marked(column: str, values: pa.Array, gone: np.ndarray, marker: Any) -> pa.Array:
    """``values`` with the marker where the id was out of vocabulary (``gone``)."""
    if not gone.any():
        return values
    if isinstance(marker, _NoMarker):
        raise DatasetError(f"Column {column!r} holds an out-of-vocabulary id, and its dtype "
                           f"({values.type}) has no default marker for it; give one: "
                           f"inverse_transform(..., oov={{{column.split('.')[0]!r}: value}}) "
                           "(a value its vocabulary does not hold), or None for null.")
    marker = pa.scalar(None, values.type) if marker is None else marker
    return pc.if_else(pa.array(gone), marker, values)


# ---- reading ids back ------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnReader:
    """Reads one column's ids back (pickled to the workers without its vocabulary, which
    each process reads from the artifacts once: :func:`_by_position`)."""

    encoded: Encoded
    directory: str
    versions: tuple
    options: str
    markers: tuple[Any, ...]

    @classmethod
    def at(cls, workflow: Any, encoded: Encoded) -> ColumnReader:
        """The reader of ``encoded``'s vocabulary in ``workflow``'s artifacts, no markers."""
        info = encoded.info
        directory = resolve(workflow.artifacts_dir, info["path"], "vocabulary path")
        options = workflow.storage_options or None
        versions = tuple(storage.version(split_path(directory, s), options)
                         for s in range(info["splits"]))
        return cls(encoded, directory, versions,
                   json.dumps(options or {}, sort_keys=True, default=str), ())

    @classmethod
    def of(cls, workflow: Any, encoded: Encoded, oov: Any) -> ColumnReader:
        """The reader with the column's markers (``oov``: given, or :data:`NO_MARKER`)."""
        reader = cls.at(workflow, encoded)
        values = reader.values()
        parts = _members(values, encoded) if encoded.combo else [values]
        return replace(reader, markers=_markers(encoded, oov, parts))

    def values(self) -> pa.Array:
        e = self.encoded
        dtype = "string" if e.combo else e.members[0][1]
        return _by_position(self.directory, e.info["splits"], e.op.first_vocab_index,
                            e.info["cardinality"], dtype, self.versions, self.options)

    def outputs(self) -> list[tuple[str, str]]:
        """``(name, element dtype)`` of each output column."""
        e = self.encoded
        if e.combo:
            return [(f"{e.column}.{m}", dtype) for m, dtype in e.members]
        return [(e.column, e.members[0][1])]

    def read(self, ids: pa.ChunkedArray) -> list[pa.Array]:
        """The values of ``ids`` (a column of integer ids, or lists of them): one array per
        output column."""
        ids = ids.combine_chunks()
        if pa.types.is_list(ids.type) or pa.types.is_large_list(ids.type):
            kind = pa.LargeListArray if pa.types.is_large_list(ids.type) else pa.ListArray
            offsets = pc.subtract(ids.offsets, ids.offsets[0])
            mask = ids.is_null() if ids.null_count else None
            return [kind.from_arrays(offsets, f, mask=mask) for f in self._flat(ids.values)]
        return self._flat(ids)

    def _flat(self, ids: pa.Array) -> list[pa.Array]:
        e = self.encoded
        first, cardinality = e.op.first_vocab_index, e.info["cardinality"]
        number = pc.fill_null(ids, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        bad = (number < 0) | (number >= cardinality)
        if bad.any():
            raise DatasetError(f"Column {e.column!r} holds the id {int(number[bad][0])}, "
                               f"outside [0, {cardinality}) of the vocabulary of {e.node_id} "
                               "(its cardinality): these ids were not made by this workflow's "
                               "Categorify.")
        held = number >= first
        out = self.values().take(pa.array(np.where(held, number - first, 0), mask=~held))
        retired = held & ~pc.is_valid(out).to_numpy(zero_copy_only=False)
        gone = ((number >= FIRST_FREE_INDEX) & ~held) | retired
        parts = _members(out, e) if e.combo else [out]
        return [_marked(name, part, gone, marker) for (name, _), part, marker
                in zip(self.outputs(), parts, self.markers, strict=True)]


def _read_partition(df: Any, readers: dict[str, ColumnReader], names: list[str],
                    backend_name: str) -> Any:
    """One partition with each read column's ids replaced by values (``names``: the output
    columns in order)."""
    b = get_backend(backend_name)
    new = {}
    for column, reader in readers.items():
        arrays = reader.read(b.to_arrow_array(b.column(df, column)))
        new.update({name: b.from_arrow_array(a) for (name, _), a
                    in zip(reader.outputs(), arrays, strict=True)})
    return b.select(b.with_columns(df, new), names)


def _checked_ids(schema: Schema, column: str) -> None:
    dtype = schema[column].dtype
    base = element_dtype(dtype)
    if not base.startswith(("int", "uint")):
        raise SchemaError(f"Column {column!r} holds {dtype} values, but Categorify's ids are "
                          f"integers; pass the ids as they were transformed (e.g. "
                          f"df[{column!r}].astype('Int64')).")


def inverse_dataset(workflow: Any, ds: Any, columns: Sequence[str] | None,
                    oov: Mapping[str, Any] | None) -> Any:
    """``Workflow.inverse_transform`` of a Dataset: lazy, partition by partition."""
    names = ds.schema.names if columns is None else list(columns)
    missing = [c for c in names if c not in ds.schema.names]
    if missing:
        raise SchemaError(f"inverse_transform(columns=...) names {missing}, which the data "
                          f"does not have; its columns are {ds.schema.names}.")
    outputs = set(workflow.output_columns)
    encoded = encoded_columns(workflow, [n for n in names if n in outputs])
    oov = dict(oov or {})
    unknown = [c for c in oov if c not in encoded]
    if unknown:
        raise ParameterError(f"inverse_transform(oov=...) names {unknown}, which are not "
                             f"Categorify columns of the data read back "
                             f"({sorted(encoded)}).")
    for column in encoded:
        _checked_ids(ds.schema, column)
    readers = {c: ColumnReader.of(workflow, e, oov.get(c, NO_MARKER))
               for c, e in encoded.items()}
    columns_out = []
    for col in ds.schema.values():
        if col.name not in readers:
            columns_out.append(col)
            continue
        for name, dtype in readers[col.name].outputs():
            if name != col.name and name in ds.schema.names:
                raise SchemaError(f"The combo column {col.name!r} reads back as {name!r}, "
                                  "which the data already has; rename that column first.")
            dtype = f"list<{dtype}>" if col.is_list else dtype
            columns_out.append(ColumnSchema(name, dtype))
    schema = Schema(columns_out)
    meta = ds.backend.empty(schema)
    ddf = ds.arrow_ddf().map_partitions(_read_partition, readers, schema.names,
                                        ds.backend.name, meta=meta, enforce_metadata=False)
    return Dataset.from_ddf(ddf, schema, ds.backend, ds.known_num_rows,
                            sources=ds.input_files())
