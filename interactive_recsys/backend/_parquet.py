"""Parquet row groups read as Arrow tables conformed to a dataset's schema (missing columns
as nulls, numbers cast to the unified type, chosen string columns kept dictionary-encoded)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pyarrow as pa
import pyarrow.parquet as pq


def read_parquet_table(path: str, columns: Sequence[str] | None,
                       row_groups: Sequence[int] | None, schema: pa.Schema,
                       dictionary: Collection[str] = ()) -> pa.Table:
    """Read some row groups of one file and conform them to ``schema``.

    Columns missing from the file become nulls; numeric types are cast to the
    unified type chosen when the dataset was opened. String columns named in
    ``dictionary`` come as dictionary arrays (see :func:`dictionary_schema`):
    parquet's dictionary pages are kept instead of decoded into one string per row.
    """
    wanted = list(columns) if columns is not None else schema.names
    target = dictionary_schema(pa.schema([schema.field(n) for n in wanted]), dictionary)
    metadata = pq.read_metadata(path)
    present = set(metadata.schema.to_arrow_schema().names)
    as_dictionary = [n for n in wanted if n in present
                     and pa.types.is_dictionary(target.field(n).type)]
    pf = pq.ParquetFile(path, metadata=metadata, read_dictionary=as_dictionary or None)
    read_cols = [c for c in wanted if c in present]
    if row_groups is None:
        table = pf.read(columns=read_cols)
    else:
        table = pf.read_row_groups(list(row_groups), columns=read_cols)
    arrays = []
    for field in target:
        if field.name in present:
            arr = table.column(field.name)
            if arr.type != field.type:
                arr = arr.cast(field.type)
        else:
            arr = pa.nulls(table.num_rows, field.type)
        arrays.append(arr)
    return pa.table(arrays, schema=target)


def dictionary_schema(schema: pa.Schema, dictionary: Collection[str]) -> pa.Schema:
    """``schema`` with the string columns named in ``dictionary`` as dictionary types."""
    fields = []
    for f in schema:
        if f.name in dictionary and (pa.types.is_string(f.type)
                                     or pa.types.is_large_string(f.type)):
            f = f.with_type(pa.dictionary(pa.int32(), pa.string()))
        fields.append(f)
    return pa.schema(fields)
