"""Where the loader's rows come from: parquet row groups or the partitions of a Dataset.

A source exposes its :class:`~interactive_recsys.schema.Schema`, a list of *units* (the
pieces read in one go: one parquet row group, or one Dask partition) with their row
counts, and ``read(unit, columns, start, stop)`` returning an Arrow table. Reads run in the
loader's reader threads; any failure is raised as a :class:`DatasetError` naming the file.

* :class:`ParquetSource`: a directory written by ``Dataset.to_parquet`` /
  ``Workflow.transform(...).to_parquet`` (``part.NNNNN.parquet`` + ``_schema.json``, whose
  tags give the default column roles; some of its files keep them too, e.g. a train/valid
  split by file), any directory / glob / list of parquet files, or the summary dict
  ``to_parquet`` returns. Row counts come from the parquet footers.
* :class:`DatasetSource`: an :class:`~interactive_recsys.io._dataset.Dataset`, e.g. the lazy
  output of ``Workflow.transform``; partitions are computed (on the active Dask client, if
  any) when read. Their sizes are counted only when sharding needs them.

Examples
--------
>>> import tempfile, pandas as pd
>>> import interactive_recsys as irs
>>> path = tempfile.mkdtemp() + "/out"
>>> _ = irs.Dataset(pd.DataFrame({"c": [1, 2, 3]}), tags={"c": ["categorical"]}).to_parquet(path)
>>> src = open_source(path)
>>> src.schema["c"].tags, src.unit_rows
(frozenset({'categorical'}), [3])
>>> src.read(0, ["c"], 1, 3).column("c").to_pylist()
[2, 3]
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from interactive_recsys.errors import DatasetError
from interactive_recsys.io._dataset import Dataset
from interactive_recsys.io._hive import discover
from interactive_recsys.io._paths import expand_paths
from interactive_recsys.runtime import jobs
from interactive_recsys.schema import Schema
from interactive_recsys.store import storage
from interactive_recsys.store._pinned import PinnedOutputs, folders_of

SCHEMA_FILE = "_schema.json"
#: Listings of a source whose output is written again meanwhile, before the Loader gives up.
LIST_ATTEMPTS = 3


@dataclass(frozen=True)
class RowGroup:
    path: str
    index: int
    num_rows: int


class ParquetSource:
    """Parquet files read row group by row group.

    The local output folders it lists are held (:mod:`~interactive_recsys.store._pinned`)
    from before they are listed: an output written again meanwhile is listed again (up to
    :data:`LIST_ATTEMPTS` times), and one written again after the listing makes a later
    read raise the "make the Loader again" error, never return rows of the new output.
    """

    def __init__(self, source: str | os.PathLike | Sequence[str | os.PathLike],
                 storage_options: Mapping[str, Any] | None = None) -> None:
        self._pins = PinnedOutputs("Loader")
        guess = folders_of(_named_paths(source))
        for _ in range(LIST_ATTEMPTS):
            self._pins.pin(guess)
            try:
                self._list(source, storage_options)
            except DatasetError:  # e.g. a file gone: listed while a writer replaced it
                changed = self._pins.changed()
                if not changed:
                    raise
                self._pins.release(changed)
                continue
            listed = set(self._folder.values())
            changed = self._pins.changed() or self._pins.unheld(listed)
            if not changed:
                self._pins.release(self._pins.folders - listed)
                return
            self._pins.release(changed)
            guess = listed
        where = changed[0]
        raise DatasetError(f"The output {where!r} was written again while the Loader was "
                           f"listing it, {LIST_ATTEMPTS} times in a row. Make the Loader when "
                           "no writer is replacing it.")

    def _list(self, source: Any, storage_options: Mapping[str, Any] | None) -> None:
        """The files, their row groups and columns, and the schema."""
        files, schema = _files_and_schema(source, storage_options)
        self.files = files
        remote = [f for f in files if storage.is_remote(f)]
        #: the fsspec filesystem of URL files (None: local files)
        self._fs = storage.filesystem(remote[0], storage_options) if remote else None
        #: each local file's folder, whose output is checked after each read
        self._folder = {} if remote else {f: os.path.dirname(os.path.abspath(f))
                                          for f in files}
        self.row_groups: list[RowGroup] = []
        self._file_columns: dict[str, set[str]] = {}
        for path in files:
            try:
                with self._open(path) as pf:
                    md, names = pf.metadata, set(pf.schema_arrow.names)
            except (OSError, pa.ArrowException) as exc:
                raise DatasetError(f"{path!r} is not a readable parquet file ({exc}). Remove "
                                   "or rewrite it.") from exc
            self._file_columns[path] = names
            self.row_groups.extend(RowGroup(path, i, md.row_group(i).num_rows)
                                   for i in range(md.num_row_groups))
        self.schema = schema if schema is not None else \
            Schema.from_arrow(self._open(files[0]).schema_arrow)

    def _open(self, path: str) -> pq.ParquetFile:
        if self._fs is None:
            return pq.ParquetFile(path)
        try:
            return pq.ParquetFile(storage.strip(path), filesystem=self._fs)
        except FileNotFoundError:  # a stale listing, or a staged file whose publish finished
            pass
        try:
            return pq.ParquetFile(storage.published_copy(self._fs, path) or storage.strip(path),
                                  filesystem=self._fs)
        except FileNotFoundError as exc:
            raise DatasetError(f"{path!r} is gone: the output it belongs to was written again "
                               "after this Loader was made. Make the Loader again to read the "
                               "output as it is now.") from exc

    @property
    def units(self) -> int:
        return len(self.row_groups)

    @property
    def unit_rows(self) -> list[int]:
        return [rg.num_rows for rg in self.row_groups]

    def count_rows(self) -> list[int]:
        return self.unit_rows

    @property
    def num_rows(self) -> int:
        return sum(self.unit_rows)

    def check_columns(self, columns: Sequence[str]) -> None:
        """Fail early, naming the file, when a file lacks a column the loader needs."""
        for path, names in self._file_columns.items():
            missing = [c for c in columns if c not in names]
            if missing:
                raise DatasetError(f"File {path!r} has no column(s) {missing}. Rewrite it or "
                                   "leave those columns out of cat_cols/cont_cols/label_cols.")

    def describe(self, unit: int) -> str:
        rg = self.row_groups[unit]
        return f"{rg.path!r} (row group {rg.index})"

    def read(self, unit: int, columns: Sequence[str], start: int = 0,
             stop: int | None = None) -> pa.Table:
        rg = self.row_groups[unit]
        folder = self._folder.get(rg.path)
        try:
            with self._open(rg.path) as pf:
                table = pf.read_row_group(rg.index, columns=list(columns))
        except (OSError, pa.ArrowException) as exc:
            self._pins.check(folder)  # the output was replaced: that is the error to give
            raise DatasetError(f"Cannot read {self.describe(unit)}: {exc}. The file is damaged "
                               "or was changed after the loader opened it; rewrite it.") from exc
        self._pins.check(folder)  # read while the path held the output listed, or raise
        return _slice(table, start, stop)

    def __repr__(self) -> str:
        return f"ParquetSource(files={len(self.files)}, row_groups={len(self.row_groups)})"


class DatasetSource:
    """The partitions of an :class:`~interactive_recsys.io._dataset.Dataset`.

    The local output folders the dataset reads are held from when the source is made, and
    checked after each partition (as :class:`ParquetSource` does): an output written again
    during an epoch stops the loader with the "make the Loader again" error.
    """

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.schema = dataset.schema
        #: the local output folders it reads, checked after each read (as ParquetSource's)
        self._pins = PinnedOutputs("Loader")
        self._pins.pin(folders_of(f for f in dataset.input_files() if not storage.is_remote(f)))
        self._ddf = dataset.arrow_ddf()
        self._unit_rows: list[int] | None = None

    @property
    def unit_rows(self) -> list[int] | None:
        """Rows per partition, or None until :meth:`count_rows` ran."""
        return self._unit_rows

    def count_rows(self) -> list[int]:
        """Count the rows of every partition (computes the dataset once)."""
        if self._unit_rows is None:
            counts, = jobs.compute(self._ddf.map_partitions(len), phase="loader: rows per part")
            self._unit_rows = [int(n) for n in counts]
        return self._unit_rows

    @property
    def num_rows(self) -> int:
        if self._unit_rows is not None:
            return sum(self._unit_rows)
        return self.dataset.num_rows

    def check_columns(self, columns: Sequence[str]) -> None:
        """Columns are checked against the schema when they are resolved."""

    def describe(self, unit: int) -> str:
        return f"partition {unit} of {self.dataset!r}"

    def read(self, unit: int, columns: Sequence[str], start: int = 0,
             stop: int | None = None) -> pa.Table:
        try:
            frame = jobs.compute_partition(self._ddf, unit, phase="loader: read partition",
                                           columns=columns)
            table = self.dataset.backend.to_arrow(frame)
        except Exception as exc:
            self._pins.check_all()  # the output was replaced: that is the error to give
            raise DatasetError(f"Cannot compute {self.describe(unit)}: {exc}") from exc
        self._pins.check_all()
        return _slice(table, start, stop)

    @property
    def units(self) -> int:
        return self._ddf.npartitions

    def __repr__(self) -> str:
        return f"DatasetSource({self.dataset!r})"


def open_source(source: Any, storage_options: Mapping[str, Any] | None = None
                ) -> ParquetSource | DatasetSource:
    """A source for a path / list of paths (or URLs, opened with ``storage_options``), a
    ``to_parquet`` summary, or a Dataset."""
    if isinstance(source, Dataset):
        return DatasetSource(source)
    if isinstance(source, Mapping) and "path" in source:
        return ParquetSource(source["path"], storage_options)
    if isinstance(source, str | os.PathLike | list | tuple):
        return ParquetSource(source, storage_options)
    raise DatasetError(f"The loader cannot read a {type(source).__name__}. Pass a directory "
                       "written by to_parquet, parquet files (a path, a glob or a list), or an "
                       "irs.Dataset (e.g. workflow.transform(dataset)).")


def _named_paths(source: Any) -> list[str]:
    """The local paths ``source`` names (a glob's folder is its pattern's dirname)."""
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    return [storage.local_path(p) for p in items
            if isinstance(p, str | os.PathLike) and not storage.is_remote(p)]


def _files_and_schema(source: Any, storage_options: Mapping[str, Any] | None = None
                      ) -> tuple[list[str], Schema | None]:
    if storage.is_remote(source):
        return _remote_files_and_schema(os.fspath(source), storage_options)
    if isinstance(source, str | os.PathLike) and os.path.isdir(source):
        storage.published_files(os.fspath(source))  # an interrupted output is refused
        meta = os.path.join(source, SCHEMA_FILE)
        if os.path.exists(meta):
            files, schema = _read_schema_file(meta)
            missing = [f for f in files if not os.path.exists(f)]
            if missing:
                raise DatasetError(f"{meta!r} lists files that do not exist: {missing[:3]}. The "
                                   "output directory is incomplete; write it again.")
            return files, schema
    files = expand_paths(source, storage_options=storage_options)
    refuse_hive_folders(files, source)
    bad = [f for f in files if not f.endswith((".parquet", ".pq", ".parq"))]
    if bad:
        raise DatasetError(f"The loader reads parquet files only; got {bad[:3]}. Convert csv "
                           "input with irs.Dataset(...).to_parquet(path) first.")
    return files, _schema_of_written_files(files)


def refuse_hive_folders(files: list[str], source: Any) -> None:
    """The loader reads the files' own columns: refuse a folder of ``key=value`` folders,
    whose partition columns (:mod:`~interactive_recsys.io._hive`) it would lose."""
    hive = discover(files, source)
    if hive is not None:
        where = os.fspath(source) if isinstance(source, str | os.PathLike) else list(source)
        raise DatasetError(
            f"{where!r} is a hive-partitioned folder ({hive.names[0]}=...): the loader reads "
            f"only the columns inside the files, so {hive.names} would be lost. Write it "
            "once as one folder with those columns (irs.Dataset(folder).to_parquet(out), "
            "which keeps them) and load that.")


def _remote_files_and_schema(url: str, storage_options: Mapping[str, Any] | None
                             ) -> tuple[list[str], Schema | None]:
    """A URL: an output folder (its manifest checked, its ``_schema.json`` read), a glob or
    a file list (no tags). An output committed but still being copied into its folder is
    read from its staged copy (its ``_schema.json`` there lists the staged files); the
    loader only reads, it never finishes or removes anything."""
    files = expand_paths(url, "parquet", storage_options)  # checks a folder's manifest
    refuse_hive_folders(files, url)
    if not storage.isdir(url, storage_options):
        return files, None
    published = storage.published_output(url, storage_options)
    folder = url.rstrip("/") if published is None else published[0]
    meta = storage.join(folder, SCHEMA_FILE)
    listed = (meta in published[1]) if published is not None else storage.exists(
        meta, storage_options)
    if listed:
        fs = storage.filesystem(url, storage_options)
        text = storage.guarded(fs.cat_file, meta, storage.strip(meta)).decode()
        return _parse_schema_file(meta, text)
    return files, None


def _parse_schema_file(meta: str, text: str) -> tuple[list[str], Schema]:
    try:
        summary = json.loads(text)
        files = [storage.join(meta.rsplit("/", 1)[0] if storage.is_remote(meta)
                              else os.path.dirname(meta), name) for name in summary["files"]]
        return files, Schema.from_dict(summary["schema"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"Cannot use {meta!r} ({exc!r}); it was not written by "
                           "Dataset.to_parquet. Remove it to read the parquet files "
                           "without tags.") from exc


def _read_schema_file(meta: str) -> tuple[list[str], Schema]:
    try:
        with open(meta) as f:
            text = f.read()
    except OSError as exc:
        raise DatasetError(f"Cannot use {meta!r} ({exc!r}); it was not written by "
                           "Dataset.to_parquet. Remove it to read the parquet files "
                           "without tags.") from exc
    return _parse_schema_file(meta, text)


def _schema_of_written_files(files: list[str]) -> Schema | None:
    """The schema (with tags) of files picked from one ``to_parquet`` output directory."""
    folders = {os.path.dirname(os.path.abspath(f)) for f in files}
    if len(folders) != 1:
        return None
    meta = os.path.join(folders.pop(), SCHEMA_FILE)
    if not os.path.exists(meta):
        return None
    listed, schema = _read_schema_file(meta)
    listed_abs = {os.path.abspath(f) for f in listed}
    return schema if all(os.path.abspath(f) in listed_abs for f in files) else None


def _slice(table: pa.Table, start: int, stop: int | None) -> pa.Table:
    if start == 0 and (stop is None or stop >= table.num_rows):
        return table
    stop = table.num_rows if stop is None else stop
    return table.slice(start, stop - start)
