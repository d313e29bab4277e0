"""The schema of a parquet input: each file's footer read (its metadata and Arrow schema),
and one schema for all of them (integers and floats widen, a column missing in a file is
nullable).

>>> import pyarrow as pa
>>> unify_schemas({"a.parquet": pa.schema([("x", pa.int32())]),
...                "b.parquet": pa.schema([("x", pa.float64()), ("y", pa.string())])})
x: double
y: string
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from interactive_recsys.errors import DatasetError
from interactive_recsys.store.storage import published_copy, strip

__all__ = ["read_metadata", "unify_schemas"]


def _unify_type(name: str, types: dict[str, pa.DataType]) -> pa.DataType:
    distinct = set(types.values())
    if len(distinct) > 1:  # an all-null file (Arrow null: pandas' all-None) takes any type
        distinct.discard(pa.null())
    if len(distinct) == 1:
        return distinct.pop()
    if all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in distinct):
        return pa.large_string()
    if all(pa.types.is_integer(t) for t in distinct):
        return pa.int64()
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in distinct):
        return pa.float64()
    shown = ", ".join(f"{os.path.basename(f)}: {t}" for f, t in list(types.items())[:4])
    raise DatasetError(f"Column {name!r} has incompatible types across files ({shown}). Rewrite "
                       "the files with one type for it, or read them as separate datasets.")


def unify_schemas(file_schemas: Mapping[str, pa.Schema]) -> pa.Schema:
    """One schema for several files: int/float widen, a column missing in a file is nullable."""
    order: dict[str, None] = {}
    for schema in file_schemas.values():
        for name in schema.names:
            order.setdefault(name)
    fields = []
    for name in order:
        types = {f: s.field(name).type for f, s in file_schemas.items() if name in s.names}
        fields.append(pa.field(name, _unify_type(name, types)))
    return pa.schema(fields)


def read_metadata(files: list[str], fs: Any = None
                   ) -> tuple[dict[str, pq.FileMetaData], dict[str, pa.Schema]]:
    metadata, schemas = {}, {}
    for f in files:
        try:
            pf = pq.ParquetFile(f if fs is None else strip(f), filesystem=fs)
        except FileNotFoundError as exc:  # listed a moment ago: its folder was written again
            moved = published_copy(fs, f) if fs is not None else None
            if moved is None:
                raise DatasetError(f"{f!r} is gone: its folder was written again while this "
                                   "Dataset was being opened. Open the Dataset again.") from exc
            pf = pq.ParquetFile(moved, filesystem=fs)  # its publish finished: the same bytes
        except (OSError, pa.ArrowException) as exc:
            raise DatasetError(f"{f!r} is not a readable parquet file ({exc}). Remove or "
                               "rewrite it.") from exc
        metadata[f], schemas[f] = pf.metadata, pf.schema_arrow
        dups = sorted({n for n in pf.schema_arrow.names if pf.schema_arrow.names.count(n) > 1})
        if dups:
            raise DatasetError(f"{f!r} has duplicate column names {dups}: columns are found by "
                               "name, so each name must appear once. Rewrite the file with "
                               "unique names (e.g. rename the second one).")
    return metadata, schemas
