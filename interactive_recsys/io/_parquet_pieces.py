"""Parquet pieces: row groups of one file read as one partition of a :class:`~.dataset.Dataset`
(planned by size, read by a picklable reader that Dask's column pushdown reaches). A piece of
a local output is checked after it is read: its output was not written again since the
Dataset was opened (:mod:`._output_pins`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from interactive_recsys.backend import get_backend, read_parquet_table
from interactive_recsys.errors import DatasetError
from interactive_recsys.io._hive import HivePartitions
from interactive_recsys.io._output_pins import OutputCheck
from interactive_recsys.store.storage import published_copy, strip


@dataclass(frozen=True)
class ParquetPiece:
    """Row groups of one file read as one partition."""

    path: str
    row_groups: tuple[int, ...]
    num_rows: int


def sampled_bytes_per_row(path: str, md: pq.FileMetaData, fs: Any = None) -> float:
    """In-memory bytes per row, measured on the file's first row group.

    Parquet's own sizes undercount dictionary-encoded columns (a few bytes per row on
    disk, tens in memory), so partitions are sized from a real decoded sample.
    """
    if md.num_row_groups == 0 or md.row_group(0).num_rows == 0:
        return 0.0
    table = pq.ParquetFile(path if fs is None else strip(path), filesystem=fs).read_row_group(0)
    return table.nbytes / table.num_rows


def column_sizes(metadata: Iterable[pq.FileMetaData]) -> dict[str, int]:
    """Uncompressed bytes of each top-level column over every row group of the files.

    >>> import io, pyarrow as pa
    >>> buf = io.BytesIO(); pq.write_table(pa.table({"a": [1, 2, 3]}), buf)
    >>> sizes = column_sizes([pq.ParquetFile(buf).metadata]); list(sizes), sizes["a"] > 0
    (['a'], True)
    """
    sizes: dict[str, int] = {}
    for md in metadata:
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            for j in range(rg.num_columns):
                column = rg.column(j)
                name = column.path_in_schema.split(".", 1)[0]
                sizes[name] = sizes.get(name, 0) + column.total_uncompressed_size
    return sizes


def plan_pieces(metadata: Mapping[str, pq.FileMetaData], part_size: int,
                bytes_per_row: float = 0.0) -> list[ParquetPiece]:
    """Group consecutive row groups of each file into pieces of about ``part_size`` bytes
    in memory (the larger of parquet's uncompressed size and ``bytes_per_row`` x rows)."""
    pieces = []
    for path, md in metadata.items():
        group: list[int] = []
        size = rows = 0
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            rg_size = max(rg.total_byte_size, rg.num_rows * bytes_per_row)
            if group and size + rg_size > part_size:
                pieces.append(ParquetPiece(path, tuple(group), rows))
                group, size, rows = [], 0, 0
            group.append(i)
            size += rg_size
            rows += rg.num_rows
        if group or md.num_row_groups == 0:
            pieces.append(ParquetPiece(path, tuple(group), rows))
    return pieces


class _PieceReader:
    """Reads one piece with a backend (a picklable callable for ``dd.from_map``).

    Its ``columns=`` keyword lets Dask push column selections down: selecting columns of
    the Dask DataFrame reads only those columns from the files. ``outputs`` checks, after
    each local read, that the piece's output was not written again since the Dataset was
    opened (else the "open the Dataset again" error, never rows of another output).
    """

    def __init__(self, backend_name: str, schema: pa.Schema,
                 dictionary: Sequence[str] = (), fs: Any = None,
                 hive: HivePartitions | None = None, outputs: OutputCheck | None = None
                 ) -> None:
        self.backend_name, self.schema, self.dictionary = backend_name, schema, tuple(dictionary)
        self.fs = fs  # an fsspec filesystem for URLs (picklable, with its options); None: local
        self.hive = hive  # the columns of key=value folders (not in the files)
        self.outputs = outputs or None  # the local outputs held (None: nothing to check)

    def __call__(self, piece: ParquetPiece, columns: Sequence[str] | None = None) -> Any:
        backend = get_backend(self.backend_name)
        wanted = list(columns) if columns is not None else None
        if self.hive is not None:
            wanted = wanted if wanted is not None else [*self.schema.names, *self.hive.names]
            columns = [c for c in wanted if c not in self.hive.names]
        try:
            if self.fs is None:
                table = read_parquet_table(piece.path, columns, piece.row_groups, self.schema,
                                           self.dictionary)
                if self.outputs is not None:  # read from the output opened, or raise
                    self.outputs.check(piece.path)
            else:
                with self._open(piece.path) as f:
                    table = read_parquet_table(f, columns, piece.row_groups, self.schema,
                                               self.dictionary)
            if self.hive is not None and wanted is not None:
                table = self.hive.add(table, piece.path, wanted, piece.num_rows,
                                       self.dictionary)
            return backend.from_arrow(table)
        except (OSError, pa.ArrowException) as exc:
            if self.outputs is not None:  # the output was replaced: that is the error to give
                self.outputs.check(piece.path)
            why = _changed_since_open(piece.path, self.schema) if self.fs is None else ""
            raise DatasetError(f"Cannot read {piece.path!r} (row groups {piece.row_groups}): "
                               f"{exc}{why}") from exc


    def _open(self, path: str) -> Any:
        """The remote file ``path``, opened; a listing cached before another process
        published is dropped and the file looked up again, once. A file of a committed output
        read from its staging folder, whose publish finished meanwhile, is read from its
        published copy (the same bytes). A file still missing raises a clear error."""
        try:
            return self.fs.open(strip(path), "rb")
        except FileNotFoundError:
            pass
        try:
            return self.fs.open(published_copy(self.fs, path) or strip(path), "rb")
        except FileNotFoundError as exc:
            raise DatasetError(f"{path!r} is gone: the output it belongs to was written again "
                               "(overwritten) after this Dataset was opened, so the file list "
                               "it holds is out of date. Open the Dataset again "
                               "(irs.Dataset(...)) to read the output as it is now.") from exc


def _changed_since_open(path: str, schema: pa.Schema) -> str:
    """Why a file no longer reads with the types it had when the Dataset was opened ('')."""
    try:
        now = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return ""
    for field in schema:
        if field.name in now.names and now.field(field.name).type != field.type:
            return (f". Column {field.name!r} is {now.field(field.name).type} in the file now, "
                    f"but was {field.type} when the Dataset was opened: the file changed "
                    "since. Open the Dataset again (irs.Dataset(...)) to read its new types.")
    return ""
