"""Hive partition folders: ``key=value`` folder names read as columns, as pandas and pyarrow do.

A folder such as ``events/day=2026-11-01/part.parquet`` keeps the column ``day`` in its
folder names, not in its files. :class:`~.dataset.Dataset` (and ``nvt.Dataset``) opened on
such a folder adds that column to every row of the files below it, as
``pyarrow.dataset.dataset(folder, partitioning="hive")`` and ``pandas.read_parquet(folder)``
do, for parquet and csv folders alike:

* the type is the one pyarrow infers: ``int32`` when every value is a 32-bit integer
  (``007`` is 7), else ``string``. pandas gives the same values as a ``category`` of that
  type; here the column is a plain ``int32`` or ``string`` column, which every operator takes
  (``Categorify`` encodes it like any string column);
* ``__HIVE_DEFAULT_PARTITION__`` is null, and values are URL-decoded (``a%2Fb`` is ``a/b``);
* a file with no such folder above it has nulls in that column; a key with only nulls is a
  ``string`` column of nulls (pyarrow refuses it);
* columns come after the files' columns, in the order the keys first appear.

Only folders named as input are looked into, as pandas does: a glob or a list of files adds
no column. A key that is also a column of the files is refused (pyarrow refuses it too), as
is a path naming one key twice.

>>> parts = discover(["d/day=2026-11-01/k=7/a.parquet", "d/day=2026-11-02/k=8/b.parquet"], "d")
>>> parts.schema.names, [str(t) for t in parts.schema.types]
(['day', 'k'], ['string', 'int32'])
>>> parts.values["d/day=2026-11-02/k=8/b.parquet"]
('2026-11-02', 8)
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from interactive_recsys.errors import DatasetError
from interactive_recsys.store.storage import is_remote, protocol, strip

#: The folder value that Hive, Spark and pyarrow write for a null key.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class HivePartitions:
    """The partition columns of a dataset's files: their Arrow ``schema`` and, per file, its
    values (in the schema's order, ``None`` for null)."""

    schema: pa.Schema
    values: Mapping[str, tuple[Any, ...]]

    @property
    def names(self) -> list[str]:
        return list(self.schema.names)

    def bytes_per_row(self) -> float:
        """In-memory bytes a row of these columns takes (for sizing partitions)."""
        size = 0.0
        for i, field in enumerate(self.schema):
            if pa.types.is_integer(field.type):
                size += field.type.bit_width / 8
            else:  # an offset and the text
                texts = [len(str(v[i])) for v in self.values.values() if v[i] is not None]
                size += 4 + (sum(texts) / len(texts) if texts else 0)
        return size

    def column(self, path: str, name: str, num_rows: int, dictionary: bool = False
               ) -> pa.Array:
        """The column ``name`` of ``num_rows`` rows of the file ``path`` (one value
        repeated); a dictionary array when asked (the reader's dictionary input)."""
        i = self.schema.get_field_index(name)
        value, kind = self.values[path][i], self.schema.field(i).type
        if dictionary and pa.types.is_string(kind):
            indices = pa.array(np.zeros(num_rows, np.int32) if value is not None
                               else [None] * num_rows, pa.int32())
            return pa.DictionaryArray.from_arrays(indices, pa.array([value], kind)
                                                  if value is not None else pa.array([], kind))
        if value is None:
            return pa.nulls(num_rows, kind)
        return pa.repeat(pa.scalar(value, kind), num_rows)

    def add(self, table: pa.Table, path: str, wanted: Sequence[str], num_rows: int,
            dictionary: Sequence[str] = ()) -> pa.Table:
        """``table`` (the file's columns of ``wanted``, ``num_rows`` rows: a table of no
        columns has none) with the partition columns of ``wanted`` added, in its order."""
        columns = [table.column(n) if n not in self.schema.names else
                   self.column(path, n, num_rows, n in dictionary) for n in wanted]
        return pa.table(columns, names=list(wanted))

    def check_columns(self, file_columns: Sequence[str], where: str) -> None:
        """Refuse a key that is also a column of the files."""
        both = [n for n in self.schema.names if n in set(file_columns)]
        if both:
            raise DatasetError(
                f"{both[0]!r} is both a column of the files in {where!r} and a partition "
                f"folder name ({both[0]}=...): a row cannot take its value from both "
                "(pyarrow and pandas refuse it too). Rename the folders or the column, or "
                "read the files as a list (a glob adds no partition column).")


def partition_keys(relative: str, where: str) -> dict[str, str | None]:
    """The ``key=value`` folders of a file's path relative to its input folder (the file's
    own name left out), values URL-decoded, ``HIVE_NULL`` as ``None``."""
    keys: dict[str, str | None] = {}
    for segment in relative.replace(os.sep, "/").split("/")[:-1]:
        key, sep, value = segment.partition("=")
        if not sep or not key:
            continue  # a plain folder: no column, as pyarrow's hive partitioning
        if key in keys:
            raise DatasetError(f"The path {relative!r} in {where!r} names the partition key "
                               f"{key!r} twice; rename one of its folders.")
        value = urllib.parse.unquote(value)
        keys[key] = None if value == HIVE_NULL else value
    return keys


def _infer(values: list[str | None]) -> tuple[pa.DataType, list[Any]]:
    """pyarrow's type of a key's values: int32 when all parse as 32-bit integers (with
    Arrow's own parser), else string."""
    present = [v for v in values if v is not None]
    if present:
        try:
            ints = pa.array(values, pa.string()).cast(pa.int32())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            return pa.int32(), ints.to_pylist()
    return pa.string(), values


def discover(files: Sequence[str], source: Any) -> HivePartitions | None:
    """The partition columns of ``files`` found below the folders named in ``source`` (a
    path or URL, or a list of them), or ``None`` when there are none."""
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    roots = [_root(os.fspath(i)) for i in items
             if isinstance(i, str | os.PathLike) and not _has_magic(os.fspath(i))]
    found: dict[str, dict[str, str | None]] = {}
    for f in files:
        for root in roots:
            for prefix in {root + "/", root + os.sep}:
                if root and f.startswith(prefix):
                    found[f] = partition_keys(f[len(prefix):], root)
                    break
            if f in found:
                break
    names = list(dict.fromkeys(k for keys in found.values() for k in keys))
    if not names:
        return None
    fields, columns = [], []
    for name in names:
        kind, values = _infer([found.get(f, {}).get(name) for f in files])
        fields.append(pa.field(name, kind))
        columns.append(values)
    return HivePartitions(pa.schema(fields), {f: tuple(c[i] for c in columns)
                                              for i, f in enumerate(files)})


def _root(item: str) -> str:
    """A folder as its files' paths start: a URL as the reader lists it
    (``scheme://`` + the filesystem's own path), a local path as given."""
    if is_remote(item):
        return f"{protocol(item)}://{strip(item)}".rstrip("/")
    return item.rstrip("/" + os.sep)


def _has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")
