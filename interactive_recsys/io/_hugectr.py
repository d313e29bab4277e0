"""HugeCTR parquet output: ``_file_list.txt``, ``_metadata.json`` and keyset files.

What HugeCTR's Parquet ``DataReader`` reads (NVIDIA-Merlin/HugeCTR,
``HugeCTR/include/data_readers/file_list.hpp``, ``src/data_readers/metadata.cpp``,
``file_source_parquet.hpp``, ``dataframe_container.cu``), and how this module meets it:

* ``_file_list.txt``: the number of files on the first line, then one parquet path per line.
  HugeCTR looks for ``_metadata.json`` in the directory of the *first listed path* (a bare
  file name would make it look in ``part.00000.parquet/``), so the paths are absolute;
* ``_metadata.json``: ``file_stats`` (``file_name``, ``num_rows``: HugeCTR checks the count
  against the parquet footer and matches files by base name), and ``cats``, ``conts``,
  ``labels``: ``{"col_name", "index"}`` with the column's position in the parquet file;
* label and dense columns are ``float32``; slot (categorical) columns ``int64`` keys, or
  ``list<int64>`` for multi-hot slots (list offsets ``int32``); no missing values;
* ``slot_size_array`` (DataReaderParams): with it HugeCTR adds to the keys of slot ``i`` the
  offset ``slot_size_array[0] + ... + slot_size_array[i - 1]`` (one key space). It is
  stored in ``_hugectr.json`` and returned. With ``one_key_space=True`` the offsets are added
  here, in the files, and HugeCTR must get no ``slot_size_array``;
* keyset files for the embedding training cache: raw little-endian ``int64`` keys, no header
  (``ParameterServer::load_keyset_from_file`` reads ``file size / sizeof(key)`` keys), the
  unique keys of every slot with its offset added (as HugeCTR's ``generate_keyset.py``):
  ``_keysets/<file>.keyset`` per parquet file and ``_file_list.keyset`` for the whole list.
  (Merlin's ``_hugectr.keyset`` writes 4-byte big-endian numbers ``0..cardinality`` instead,
  which is not what that loader reads.)

Examples
--------
>>> slot_offsets([3, 5, 2])
[0, 3, 8]
>>> HugeCTROptions.from_arg({"one_key_space": True}).one_key_space
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from interactive_recsys.backend import get_backend
from interactive_recsys.errors import DatasetError, ParameterError
from interactive_recsys.params import param_error
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.schema import Schema, Tags, is_integer_dtype, is_numeric_dtype

FILE_LIST = "_file_list.txt"
METADATA = "_metadata.json"
SUMMARY = "_hugectr.json"
KEYSET_SUFFIX = ".keyset"
KEYSET_DIR = "_keysets"
KEY_DTYPE = np.dtype("<i8")


@dataclass(frozen=True)
class HugeCTROptions:
    """``one_key_space``: add the per-slot offsets to the keys in the files;
    ``keysets``: write the keyset files of the embedding training cache."""

    one_key_space: bool = False
    keysets: bool = True

    @classmethod
    def from_arg(cls, arg: bool | Mapping[str, Any] | HugeCTROptions) -> HugeCTROptions | None:
        """``hugectr=`` of ``to_parquet``: False/None (off), True, a dict of options."""
        if arg is None or arg is False:
            return None
        if arg is True:
            return cls()
        if isinstance(arg, HugeCTROptions):
            return arg
        if isinstance(arg, Mapping):
            unknown = sorted(set(arg) - {"one_key_space", "keysets"})
            if unknown:
                raise ParameterError(f"Unknown HugeCTR option(s) {unknown}; the options are "
                                     "'one_key_space' and 'keysets'.")
            return cls(**{k: bool(v) for k, v in arg.items()})
        raise param_error("hugectr", None, f"must be True, False or a dict of options "
                          f"(one_key_space, keysets). Got {arg!r} instead.")


def slot_offsets(slot_sizes: list[int]) -> list[int]:
    """The offset HugeCTR adds to each slot's keys: the sum of the sizes before it."""
    return [int(x) for x in np.concatenate([[0], np.cumsum(slot_sizes[:-1])])] \
        if slot_sizes else []


def roles(schema: Schema) -> dict[str, list[str]]:
    """Labels (``target``), slots (``categorical``) and dense columns (``continuous``)."""
    out: dict[str, list[str]] = {"labels": [], "cats": [], "conts": []}
    for col in schema.values():
        if Tags.TARGET.value in col.tags:
            out["labels"].append(col.name)
        elif Tags.CATEGORICAL.value in col.tags:
            out["cats"].append(col.name)
        elif Tags.CONTINUOUS.value in col.tags:
            out["conts"].append(col.name)
    return out


def hugectr_schema(schema: Schema, options: HugeCTROptions) -> Schema:
    """The output schema with HugeCTR's types: int64 keys, float32 labels and dense columns."""
    r = roles(schema)
    if not r["cats"]:
        raise DatasetError("HugeCTR output needs categorical (slot) columns, but no column is "
                           "tagged 'categorical'. Categorify the categorical columns or tag them "
                           "(Dataset(..., tags={'C1': ['categorical']})).")
    if not r["labels"]:
        raise DatasetError("HugeCTR output needs a label column (HugeCTR trains on it), but no "
                           f"column of {schema.names[:8]} is tagged 'target'. Tag the label in "
                           "the workflow, e.g. ['label'] >> ops.AddTags(['target']), or when "
                           "reading: Dataset(..., tags={'label': ['target']}) (irs run "
                           "--label COLUMN).")
    cols = []
    for col in schema.values():
        if col.name in r["cats"]:
            if not is_integer_dtype(col.dtype):
                raise DatasetError(f"HugeCTR reads slot keys as integers, but the categorical "
                                   f"column {col.name!r} has dtype {col.dtype}. Encode it first "
                                   "(ops.Categorify or ops.HashBucket).")
            if options.one_key_space and col.cardinality is None:
                raise DatasetError(f"HugeCTR output with one_key_space=True needs the "
                                   f"cardinality of every slot, but column {col.name!r} has "
                                   "none. Encode it with ops.Categorify/HashBucket, or leave "
                                   "one_key_space off (HugeCTR then adds the offsets).")
            col = col.with_(dtype="list<int64>" if col.is_list else "int64")
        elif col.name in r["labels"] or col.name in r["conts"]:
            if col.is_list or not is_numeric_dtype(col.dtype):
                raise DatasetError(f"HugeCTR reads labels and dense features as float32 scalars, "
                                   f"but column {col.name!r} has dtype {col.dtype}. Convert or "
                                   "drop it, or remove its 'target'/'continuous' tag.")
            col = col.with_(dtype="float32")
        cols.append(col)
    return Schema(cols)


class _Convert:
    """One partition in HugeCTR's types (keys shifted into one key space if asked)."""

    def __init__(self, backend_name: str, schema: Schema, offsets: dict[str, int]) -> None:
        self.backend_name, self.schema, self.offsets = backend_name, schema, offsets

    def __call__(self, df: Any) -> Any:
        b = get_backend(self.backend_name)
        table = b.to_arrow(df).select(self.schema.names).cast(self.schema.to_arrow())
        for name, offset in self.offsets.items():
            if offset:
                i = table.schema.get_field_index(name)
                table = table.set_column(i, name, _shift(table[name], offset))
        return b.from_arrow(table)


def _shift(col: pa.ChunkedArray, offset: int) -> pa.ChunkedArray:
    chunks = []
    for chunk in col.chunks:
        if pa.types.is_list(chunk.type):
            values = pc.add(chunk.values, pa.scalar(offset, pa.int64()))
            chunk = pa.ListArray.from_arrays(chunk.offsets, values, mask=chunk.is_null())
        else:
            chunk = pc.add(chunk, pa.scalar(offset, pa.int64()))
        chunks.append(chunk)
    return pa.chunked_array(chunks, col.type)


def prepare(ds: Any, options: HugeCTROptions) -> Any:
    """``ds`` with HugeCTR's column types (lazy); keys offset with ``one_key_space``."""
    schema = hugectr_schema(ds.schema, options)
    offsets: dict[str, int] = {}
    if options.one_key_space:
        cats = roles(schema)["cats"]
        offsets = dict(zip(cats, slot_offsets([schema[c].cardinality for c in cats]),
                           strict=True))
    ddf = ds.arrow_ddf().map_partitions(_Convert(ds.backend.name, schema, offsets),
                                     meta=ds.backend.empty(schema))
    return type(ds).from_ddf(ddf, schema, ds.backend, ds.known_num_rows)


def _file_stats(path: str, cats: list[str], checked: list[str], offsets: list[int] | None,
                keyset: str | None) -> dict[str, Any]:
    """Rows, missing values, per-slot maximum key and keyset of one written file."""
    pf = pq.ParquetFile(path)
    md = pf.metadata
    names = pf.schema_arrow.names
    for name in checked:  # footer statistics: no data read
        j = names.index(name)
        if pa.types.is_list(pf.schema_arrow.field(name).type):
            continue  # a null list is read as an empty one
        for g in range(md.num_row_groups):
            stats = md.row_group(g).column(j).statistics
            if stats is not None and stats.has_null_count and stats.null_count:
                raise DatasetError(f"HugeCTR does not allow missing values, but column {name!r} "
                                   f"has {stats.null_count} in {os.path.basename(path)}. Fill "
                                   "them first (ops.FillMissing, or Categorify's null index).")
    table = pf.read(columns=cats)
    maxima, counts, keys = [], [], []
    for i, name in enumerate(cats):
        col = table[name]
        if pa.types.is_list(col.type):
            col = pc.list_flatten(col)
        values = np.unique(col.to_numpy())
        maxima.append(int(values[-1]) if len(values) else -1)
        counts.append(len(values))
        if offsets is not None:
            keys.append(values + offsets[i])
    if keyset is not None:
        np.concatenate(keys or [np.zeros(0, KEY_DTYPE)]).astype(KEY_DTYPE).tofile(keyset)
    return {"num_rows": md.num_rows, "columns": names, "maxima": maxima, "counts": counts}


def _union_keyset(keysets: list[str], counts: list[list[int]], out: str) -> list[int]:
    """The union of per-file keysets, slot by slot (each file holds its slots in order)."""
    per_slot = []
    with open(out, "wb") as f:
        for s in range(len(counts[0]) if counts else 0):
            parts = []
            for path, c in zip(keysets, counts, strict=True):
                start = sum(c[:s])
                parts.append(np.fromfile(path, KEY_DTYPE, count=c[s], offset=start * 8))
            keys = np.unique(np.concatenate(parts))
            keys.astype(KEY_DTYPE).tofile(f)
            per_slot.append(len(keys))
    return per_slot


def write_metadata(directory: str, final_dir: str, files: list[str], schema: Schema,
                   options: HugeCTROptions) -> dict[str, Any]:
    """Write ``_file_list.txt``, ``_metadata.json``, keysets and ``_hugectr.json`` for the
    parquet ``files`` in ``directory`` (which will be renamed to ``final_dir``)."""
    r = roles(schema)
    cats = r["cats"]
    known = [schema[c].cardinality for c in cats]
    paths = [os.path.join(directory, f) for f in files]
    keysets: list[Any] = [None] * len(paths)
    if options.keysets:  # in a folder pyarrow skips: pandas.read_parquet(dir) keeps working
        os.makedirs(os.path.join(directory, KEYSET_DIR), exist_ok=True)
        keysets = [os.path.join(directory, KEYSET_DIR, f + KEYSET_SUFFIX) for f in files]
    # keyset offsets need the slot sizes: known cardinalities, else a first pass for maxima
    sizes: list[int] | None = [int(k) for k in known] if all(k is not None for k in known) \
        else None
    offsets = None
    if options.keysets and sizes is not None:
        offsets = [0] * len(cats) if options.one_key_space else slot_offsets(sizes)
    checked = r["labels"] + r["conts"] + cats
    stats = compute(*[dask.delayed(_file_stats)(p, cats, checked, offsets,
                                                k if offsets is not None else None)
                      for p, k in zip(paths, keysets, strict=True)], phase="HugeCTR: file stats")
    if sizes is None:  # slot size = largest key + 1 where the cardinality is not known
        maxima = np.max([s["maxima"] for s in stats], axis=0) if stats else [0] * len(cats)
        sizes = [int(k) if k is not None else int(m) + 1 for k, m in zip(known, maxima,
                                                                             strict=True)]
        if options.keysets:
            offsets = slot_offsets(sizes)
            stats = compute(*[dask.delayed(_file_stats)(p, cats, [], offsets, k)
                              for p, k in zip(paths, keysets, strict=True)],
                            phase="HugeCTR: keysets")
    columns = stats[0]["columns"] if stats else schema.names
    metadata = {
        "file_stats": [{"file_name": f, "num_rows": int(s["num_rows"])}
                       for f, s in zip(files, stats, strict=True)],
        "cats": [{"col_name": c, "index": columns.index(c)} for c in cats],
        "conts": [{"col_name": c, "index": columns.index(c)} for c in r["conts"]],
        "labels": [{"col_name": c, "index": columns.index(c)} for c in r["labels"]],
    }
    with open(os.path.join(directory, METADATA), "w") as fh:
        json.dump(metadata, fh, indent=2)
    with open(os.path.join(directory, FILE_LIST), "w") as fh:
        fh.write(f"{len(files)}\n" + "".join(os.path.join(final_dir, f) + "\n" for f in files))
    summary: dict[str, Any] = {
        "slot_size_array": sizes, "slot_offsets": slot_offsets(sizes),
        "one_key_space": options.one_key_space,
        # what to pass to DataReaderParams(slot_size_array=...): the offsets are in the files
        # already with one_key_space, so HugeCTR must not add them again
        "reader_slot_size_array": [] if options.one_key_space else sizes,
        "key_type": "int64", "cats": cats, "conts": r["conts"], "labels": r["labels"],
        "file_list": os.path.join(final_dir, FILE_LIST),
    }
    grown = {c: schema[c].properties["new_rows"] for c in cats
             if "new_rows" in schema[c].properties}
    if grown:  # after Workflow.update: the keys each slot gained, so a trainer appends them
        summary["vocabulary_version"] = {c: int(schema[c].properties["vocabulary_version"])
                                         for c in grown}
        summary["new_rows"] = {c: [int(a), int(b)] for c, (a, b) in grown.items()}
    if options.keysets:
        summary["keyset"] = os.path.join(final_dir, "_file_list" + KEYSET_SUFFIX)
        summary["file_keysets"] = [os.path.join(final_dir, KEYSET_DIR, f + KEYSET_SUFFIX)
                                   for f in files]
        summary["keys_per_slot"] = _union_keyset(
            keysets, [s["counts"] for s in stats],
            os.path.join(directory, "_file_list" + KEYSET_SUFFIX))
    with open(os.path.join(directory, SUMMARY), "w") as fh:
        json.dump(summary, fh, indent=2)
    return summary


def describe(summary: Mapping[str, Any]) -> str:
    """Lines to print: the slot sizes and the DataReaderParams call that reads the output."""
    reader = summary["reader_slot_size_array"]
    lines = [f"HugeCTR slot_size_array ({len(summary['slot_size_array'])} slots): "
             f"{summary['slot_size_array']}",
             "hugectr.DataReaderParams(data_reader_type=hugectr.DataReaderType_t.Parquet, "
             f"source=[{summary['file_list']!r}], "
             + (f"slot_size_array={reader}, " if reader else "") + "...)"]
    if summary.get("one_key_space"):
        lines.append("Keys are already in one key space (offsets added): pass no "
                     "slot_size_array to DataReaderParams.")
    return "\n".join(lines)


__all__ = ["FILE_LIST", "METADATA", "HugeCTROptions", "describe", "prepare", "roles",
           "slot_offsets", "write_metadata"]
