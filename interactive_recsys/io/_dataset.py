"""Datasets: parquet or csv files, or in-memory frames, as lazy partitions sized in bytes.

The files a Dataset reads are found by :mod:`._paths`, sized by :mod:`._part_size`, their
parquet footers read by :mod:`._file_schemas`, and and the files a derived
dataset reads found in its graph by :mod:`._provenance` (:meth:`Dataset.input_files`).

>>> import pandas as pd
>>> ds = Dataset(pd.DataFrame({"a": [1, 2, 3]}))
>>> ds.num_rows, ds.schema["a"].dtype
(3, 'int64')
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
from dask.dataframe.io.csv import read_pandas

from interactive_recsys.backend import Backend, backend_of, convert, dictionary_schema, get_backend
from interactive_recsys.backend._arrow import small_type
from interactive_recsys.backend._user_frames import check_dtype_backend, user_frame
from interactive_recsys.errors import DatasetError
from interactive_recsys.io._csv_input import (
    PATH_COLUMN,
    CsvBlockReader,
    CsvNormalizer,
    check_csv_header,
    check_csv_names,
    failing_column,
    files_with_rows,
    no_rows_error,
    pandas_csv_dtype,
    refuse_mixed_compression,
)
from interactive_recsys.io._export import write_dataset
from interactive_recsys.io._file_schemas import read_metadata, unify_schemas
from interactive_recsys.io._hive import HivePartitions, discover
from interactive_recsys.io._output_pins import OutputCheck, open_pinned
from interactive_recsys.io._parquet_pieces import (
    ParquetPiece,
    _PieceReader,
    column_sizes,
    plan_pieces,
    sampled_bytes_per_row,
)
from interactive_recsys.io._part_size import (
    parse_part_size,
)
from interactive_recsys.io._paths import (
    expand_paths,
    infer_engine,
    input_folders,
)
from interactive_recsys.io._provenance import source_files
from interactive_recsys.io._sample import read_head
from interactive_recsys.io._write_options import DEFAULT_WRITE_OPTIONS, WriteOptions
from interactive_recsys.params import param_error
from interactive_recsys.runtime.jobs import background_job, compute, compute_partition
from interactive_recsys.schema import RESERVED_PREFIX, Schema, Tags, arrow_type, normalize_tags
from interactive_recsys.store._pinned import PinnedOutputs
from interactive_recsys.store.storage import filesystem_of

__all__ = ["Dataset", "as_dataset", "with_written_roles"]


class Dataset:
    """A lazy, partitioned dataset.

    Parameters
    ----------
    source : path, directory, glob or list of paths (parquet or csv); a pandas or cuDF
        DataFrame; a Dask DataFrame; a ``pyarrow.Table``; or another ``Dataset``.
    engine : ``"parquet"`` or ``"csv"`` (default: from the file extensions).
    part_size : bytes per partition, e.g. ``"128MB"`` (default: 1/16 of a worker's memory).
    sep, names, dtypes, header : csv options (``header=None``: no header row; ``dtypes``
        maps columns to dtype names such as ``"int64"`` or ``"string"``; integers with
        empty fields stay integers with nulls).
    backend : ``"auto"`` (GPU when one works), ``"cpu"`` or ``"gpu"``.
    tags : extra tags per column, e.g. ``{"label": ["target"]}``.
    storage_options : options of the fsspec filesystem when ``source`` is a URL
        (``s3://``, ``gs://``, ``abfs://``), e.g. ``{"key": ..., "secret": ...,
        "client_kwargs": {"endpoint_url": ...}}``; they travel to the Dask workers with
        the tasks. A folder written by this library is read only when its ``_SUCCESS``
        manifest is complete.

    A local output written again after the Dataset was opened is never mixed into its
    rows: each read checks that the folder still holds the output listed, else raises a
    :class:`~interactive_recsys.errors.DatasetError` saying to open the Dataset again
    (:mod:`._output_pins`).
    """

    def __init__(self, source: Any, *, engine: str | None = None,
                 part_size: str | int | None = None, sep: str = ",",
                 names: Sequence[str] | None = None, dtypes: Mapping[str, str] | None = None,
                 header: int | str | None = "infer", backend: str = "auto",
                 tags: Mapping[str, Iterable[str | Tags]] | None = None,
                 storage_options: Mapping[str, Any] | None = None) -> None:
        self.storage_options = dict(storage_options or {})
        self._fs: Any = None
        #: the local outputs it reads, checked after each read (:mod:`._output_pins`)
        self._outputs: OutputCheck | None = None
        args = (source, engine, part_size, sep, names, dtypes, header, backend, tags)
        with dask.config.set({"dataframe.convert-string": False}):  # keep Arrow dtypes as is
            if not isinstance(source, str | os.PathLike | list | tuple):
                self._open(*args)
                return
            _, pins = open_pinned(source, lambda: self._open(*args))
            self._hold_outputs(pins)

    def _hold_outputs(self, pins: PinnedOutputs) -> None:
        """Check each read of a local piece against the outputs ``pins`` holds, held since
        before the files were listed; nothing held (and ``pins`` closed) otherwise."""
        outputs = OutputCheck(pins, self.files) if self._pieces and self._fs is None else None
        if not outputs:
            pins.close()
            return
        self._outputs = outputs
        self._ddf = self._read_pieces(())  # the same partitions, each read then checked

    def _open(self, source: Any, engine: str | None, part_size: str | int | None, sep: str,
              names: Sequence[str] | None, dtypes: Mapping[str, str] | None, header: Any,
              backend: str, tags: Mapping[str, Iterable[str | Tags]] | None) -> None:
        self.backend: Backend = get_backend(backend)
        self._num_rows: int | None = None
        self.files: list[str] = []
        self.sources: list[str] = []  # files a derived dataset is computed from, when known
        self.folders: list[str] = []  # folders named as input (output guards)
        self._pieces: list[ParquetPiece] | None = None  # parquet: what the partitions read
        self._file_schema, self.frame = None, None  # frame: the frame read, when in memory
        #: how the files are read (engine, csv options): part of a fit's reuse key
        self.read_options: dict[str, Any] = {}
        self._hive: HivePartitions | None = None  # key=value folders: columns (.hive)
        if isinstance(source, Dataset):
            self._ddf, arrow_schema = source._ddf, source.schema.to_arrow()
            self._num_rows, self.files = source._num_rows, source.files
            self.sources, self.folders = source.sources, source.folders
            self._pieces, self._file_schema = source._pieces, source._file_schema
            self._hive = source._hive
            self.backend, self.frame = source.backend, source.frame
            self.storage_options, self._fs = source.storage_options, source._fs
            self.read_options = source.read_options
            self._outputs = source._outputs
        elif isinstance(source, str | os.PathLike | list | tuple):
            self.files = expand_paths(source, engine, self.storage_options)
            self.folders = input_folders(source)
            self._fs = filesystem_of(self.files, self.storage_options)
            self._hive = discover(self.files, source)
            engine = engine or infer_engine(self.files)
            self.read_options = {"engine": engine} if engine != "csv" else {
                "engine": engine, "sep": sep, "names": None if names is None else list(names),
                "dtypes": dict(dtypes or {}), "header": header}
            if engine == "parquet":
                self._ddf, arrow_schema = self._open_parquet(parse_part_size(part_size))
            elif engine == "csv":
                self._ddf, arrow_schema = self._open_csv(parse_part_size(part_size), sep, names,
                                                         dtypes, header)
            else:
                raise param_error("engine", None, f"must be 'parquet' or 'csv'. Got "
                                  f"{engine!r} instead.")
        else:
            self._ddf, arrow_schema = self._from_frame(source, part_size)
        reserved = [n for n in arrow_schema.names if n.startswith(RESERVED_PREFIX)]
        if reserved:
            raise DatasetError(f"Column {reserved[0]!r} uses the prefix {RESERVED_PREFIX!r}, "
                               "reserved for "
                               "interactive-recsys's internal columns (e.g. the shuffle key). "
                               "Rename it before reading, e.g. df.rename(columns={"
                               f"{reserved[0]!r}: 'my_{reserved[0].strip('_')}'}}).")
        self._schema = with_written_roles(Schema.from_arrow(arrow_schema), self.folders)
        if tags:
            self._schema = self._with_tags(self._schema, tags)

    @classmethod
    def from_ddf(cls, ddf: dd.DataFrame, schema: Schema, backend: Backend,
                 num_rows: int | None = None, sources: Sequence[str] = ()) -> Dataset:
        """Wrap a Dask DataFrame whose partitions already follow ``schema`` (internal use);
        ``sources``: the files it is computed from, when its graph hides them (e.g. built
        with ``from_delayed``), for the output guards (``input_files``)."""
        ds = cls.__new__(cls)
        ds.backend, ds._ddf, ds._schema, ds._num_rows, ds.files = (backend, ddf, schema,
                                                                  num_rows, [])
        ds._pieces, ds._file_schema, ds.sources = None, None, list(sources)
        ds._hive = None
        ds.folders, ds.frame = [], None
        ds.storage_options, ds._fs, ds.read_options = {}, None, {}
        ds._outputs = None
        return ds

    @staticmethod
    def _with_tags(schema: Schema, tags: Mapping[str, Iterable[str | Tags]]) -> Schema:
        cols = []
        for col in schema.values():
            cols.append(col.with_tags(add=normalize_tags(tags.get(col.name, ()))))
        unknown = set(tags) - set(schema.names)
        if unknown:
            raise DatasetError(f"tags name columns {sorted(unknown)} that are not in the data; "
                               f"columns are {schema.names}.")
        return Schema(cols)

    def _open_parquet(self, part_size: int) -> tuple[dd.DataFrame, pa.Schema]:
        metadata, schemas = read_metadata(self.files, self._fs)
        schema = unify_schemas(schemas)
        first = self.files[0]
        per_row = sampled_bytes_per_row(first, metadata[first], self._fs)
        if self._hive is not None:  # the partition columns: after the files' own
            self._hive.check_columns(schema.names, self.folders[0] if self.folders
                                     else first)
            per_row += self._hive.bytes_per_row()
        pieces = plan_pieces(metadata, part_size, per_row)
        self._num_rows = sum(p.num_rows for p in pieces)
        self._pieces, self._file_schema = pieces, schema
        return self._read_pieces(()), self._full_schema()

    def _full_schema(self) -> pa.Schema:
        """The files' schema, then the partition columns of hive folders (:mod:`.hive`)."""
        assert self._file_schema is not None
        if self._hive is None:
            return self._file_schema
        return pa.schema([*self._file_schema, *self._hive.schema])

    def _read_pieces(self, dictionary: Sequence[str]) -> dd.DataFrame:
        assert self._pieces is not None and self._file_schema is not None
        meta = self.backend.from_arrow(dictionary_schema(self._full_schema(),
                                                         dictionary).empty_table())
        reader = _PieceReader(self.backend.name, self._file_schema, dictionary, self._fs,
                              self._hive, self._outputs)
        reader.irs_folders = self.folders
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_map(reader, self._pieces, meta=meta, label="read-parquet",
                               enforce_metadata=False)

    def _open_csv(self, part_size: int, sep: str, names: Sequence[str] | None,
                  dtypes: Mapping[str, str] | None, header: Any) -> tuple[dd.DataFrame, pa.Schema]:
        dtypes = dict(dtypes or {})
        kwargs: dict[str, Any] = {"sep": sep, "blocksize": part_size,
                                  "dtype": {k: pandas_csv_dtype(v) for k, v in dtypes.items()}}
        if names is not None:
            kwargs["names"] = list(names)
        if header != "infer":
            kwargs["header"] = header
        gzipped = [f for f in self.files if f.endswith(".gz")]
        if gzipped:
            refuse_mixed_compression(self.files, gzipped)
            kwargs.update(blocksize=None, compression="gzip")
        check_csv_names(self.files, sep, names, self.storage_options)
        files = self.files
        if self._fs is not None:
            kwargs["storage_options"] = self.storage_options
        else:  # local raw text with no header or another separator is refused first
            check_csv_header(self.files, sep, names, header)
        with_rows = files_with_rows(self.files, sep, None if names is not None and header
                                    == "infer" else header, self.storage_options)
        files = with_rows or files  # header-only files add no rows
        try:
            raw = dd.read_csv(files, **kwargs)
        except (OSError, ValueError) as exc:  # an empty file: not even a header
            if not with_rows:
                raise no_rows_error(self.files, dtypes) from None
            raise DatasetError(f"Cannot read the csv input {files[:3]}: {exc}") from exc
        if not with_rows and set(map(str, raw._meta.columns)) - set(dtypes):
            raise no_rows_error(self.files, dtypes)  # no types to read from no rows
        hive = self._hive
        if hive is not None:  # each block names its file: its partition columns (.hive)
            hive.check_columns(list(map(str, raw._meta.columns)),
                               self.folders[0] if self.folders else files[0])
            kwargs["include_path_column"] = PATH_COLUMN
        try:
            expected = {c: t for c, t in raw._meta.dtypes.items() if c not in dtypes}
            raw = read_pandas(CsvBlockReader(expected, files), files, **kwargs)
        except (OSError, ValueError) as exc:
            raise DatasetError(f"Cannot read the csv input {files[:3]}: {exc}") from exc
        sample = pa.Table.from_pandas(raw._meta.drop(columns=[PATH_COLUMN], errors="ignore"),
                                      preserve_index=False).schema
        fields = [pa.field(f.name, small_type(arrow_type(dtypes[f.name])) if f.name in dtypes else
                           (pa.string() if pa.types.is_string(f.type) or
                            pa.types.is_large_string(f.type) or pa.types.is_null(f.type)
                            else f.type)) for f in sample]
        schema = pa.schema(fields)
        full = schema if hive is None else pa.schema([*schema, *hive.schema])
        meta = self.backend.from_arrow(full.empty_table())
        normalizer = CsvNormalizer(self.backend.name, schema, files, hive)
        normalizer.irs_folders = self.folders
        return raw.map_partitions(normalizer, meta=meta, enforce_metadata=False), full

    def _from_frame(self, source: Any, part_size: Any) -> tuple[dd.DataFrame, pa.Schema]:
        if isinstance(source, pa.Table):
            source = self.backend.from_arrow(source)
        if isinstance(source, dd.DataFrame):
            schema = backend_of(source._meta).to_arrow(source._meta).schema
            meta = self.backend.from_arrow(schema.empty_table())
            return source.map_partitions(_Converter(self.backend.name, schema), meta=meta,
                                         enforce_metadata=False), schema
        if not hasattr(source, "columns") or not hasattr(source, "iloc"):
            raise DatasetError(f"Cannot make a Dataset from a {type(source).__name__}; pass a "
                               "path, a glob, a list of files, a DataFrame, a Dask DataFrame or "
                               "a pyarrow Table.")
        self.frame = frame = _Converter(self.backend.name, None)(source)
        self._num_rows = len(frame)
        schema = self.backend.to_arrow(frame.iloc[:0]).schema
        size = max(1, int(frame.memory_usage(deep=True).sum()))
        nparts = max(1, min(len(frame) or 1, math.ceil(size / parse_part_size(part_size))))
        return dd.from_pandas(frame, npartitions=nparts, sort=False), schema

    # ---- public API -----------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        return self._schema

    @property
    def npartitions(self) -> int:
        return self._ddf.npartitions

    @property
    def num_rows(self) -> int:
        """Number of rows (from parquet metadata when possible, else counted once)."""
        if self._num_rows is None:
            (rows,) = compute(self._ddf.map_partitions(len).sum(), phase="count rows")
            self._num_rows = int(rows)
        return self._num_rows

    @property
    def known_num_rows(self) -> int | None:
        """The number of rows if known without reading data (parquet metadata, an in-memory
        frame, a transform that keeps rows), else ``None``; never computes."""
        return self._num_rows

    def to_ddf(self, columns: Sequence[str] | None = None, *,
               dtype_backend: str = "numpy_nullable") -> dd.DataFrame:
        """The lazy Dask DataFrame: pandas on CPU, cuDF on GPU (as it is).

        ``dtype_backend`` (as pandas' readers): ``"numpy_nullable"`` gives NumPy dtypes, or
        pandas' nullable ones in a partition where the column has nulls, and list columns
        as NumPy arrays per row; ``"pyarrow"`` the Arrow-backed columns the engine uses
        (see ``backend._user_frames``). The declared dtypes
        (``ddf.dtypes``) are the NumPy ones.
        """
        check_dtype_backend(dtype_backend, "Dataset.to_ddf")
        ddf = self.arrow_ddf(columns)
        if dtype_backend == "pyarrow" or self.backend.name != "cpu":
            return ddf
        return ddf.map_partitions(user_frame, dtype_backend,
                                  meta=user_frame(ddf._meta, dtype_backend),
                                  enforce_metadata=False)

    def arrow_ddf(self, columns: Sequence[str] | None = None,
                  dictionary: Sequence[str] = ()) -> dd.DataFrame:
        """The lazy Dask DataFrame the engine reads (pandas with Arrow columns on CPU, cuDF
        on GPU).

        String columns named in ``dictionary`` come dictionary-encoded when the data is
        parquet and the backend can
        (:attr:`~interactive_recsys.backend.Backend.reads_dictionaries`); for operators that take
        such input (``Operator.dictionary_input``), never for user code.
        """
        ddf = self._ddf
        if dictionary and self._pieces is not None and self.backend.reads_dictionaries:
            ddf = self._read_pieces(dictionary)
        return ddf if columns is None else ddf[list(columns)]

    def to_iter(self, columns: Sequence[str] | None = None, *,
                dtype_backend: str = "pyarrow") -> Iterator[Any]:
        """Partitions one by one, computed lazily (memory: one partition at a time); the
        engine's frames unless ``dtype_backend="numpy_nullable"`` (see :meth:`to_ddf`)."""
        check_dtype_backend(dtype_backend, "Dataset.to_iter")
        ddf = self.arrow_ddf(columns)
        for i in range(ddf.npartitions):
            yield user_frame(compute_partition(ddf, i, phase="read partition"), dtype_backend)

    def head(self, n: int = 5, columns: Sequence[str] | None = None, *,
             dtype_backend: str = "pyarrow") -> pd.DataFrame:
        """The first ``n`` rows as a pandas DataFrame, to look at: the engine's Arrow columns
        by default (nulls shown as ``<NA>``, lists as lists), NumPy dtypes with
        ``dtype_backend="numpy_nullable"`` (see :meth:`to_ddf`).

        With ``columns``, a sample to compute on (a preview, a profile): only those columns,
        in the dataset's dtypes; parquet files are read from the first row groups of the
        first file, decoding only ``n`` rows (``read_head``)."""
        if columns is not None:
            columns = list(columns)
            table = read_head(self.files, self.schema.select(columns).to_arrow(), n, columns)
            if table is not None:
                return self.backend.to_pandas(self.backend.from_arrow(table))
            return self.head(n)[columns]
        check_dtype_backend(dtype_backend, "Dataset.head")
        frames, got = [], 0
        for part in self.to_iter():
            frames.append(part.iloc[: n - got])
            got += len(frames[-1])
            if got >= n:
                break
        out = self.backend.concat(frames) if frames else self.backend.empty(self.schema)
        return user_frame(self.backend.to_pandas(out).reset_index(drop=True), dtype_backend)

    def compute(self, *, dtype_backend: str = "numpy_nullable") -> Any:
        """All rows in one frame of the backend (small data only): pandas with NumPy dtypes
        (nullable ones for columns with nulls) by default, or Arrow-backed with
        ``dtype_backend="pyarrow"``; cuDF on GPU (see :meth:`to_ddf`). A named phase of
        the job layer (dashboard, cancellation)."""
        check_dtype_backend(dtype_backend, "Dataset.compute")
        frame, = compute(self._ddf, phase="compute")
        return user_frame(frame.reset_index(drop=True), dtype_backend)

    @background_job("to_parquet")
    def to_parquet(self, path: str | os.PathLike, *,
                   shuffle: str | None = DEFAULT_WRITE_OPTIONS.shuffle,
                   out_files_per_proc: int | None = DEFAULT_WRITE_OPTIONS.out_files_per_proc,
                   overwrite: bool = DEFAULT_WRITE_OPTIONS.overwrite,
                   seed: int = DEFAULT_WRITE_OPTIONS.seed,
                   row_group_size: int = DEFAULT_WRITE_OPTIONS.row_group_size,
                   background: bool = False, hugectr: Any = False,
                   storage_options: Mapping[str, Any] | None = None) -> Any:
        """Write parquet files, ``_schema.json``, Merlin's ``schema.pbtxt`` and ``_SUCCESS``
        atomically; the keywords are :class:`~interactive_recsys.io.WriteOptions`
        (see ``io._writer``). ``hugectr=True`` (or a dict of
        :class:`~interactive_recsys.io._hugectr.HugeCTROptions`) also writes what HugeCTR's
        parquet reader needs (``_file_list.txt``, ``_metadata.json``, keysets).
        ``path`` may be an fsspec URL; ``storage_options`` (default: this dataset's) open it.

        Returns a summary dict, or with ``background=True`` at once a
        :class:`~interactive_recsys.runtime.jobs.Job` whose result is that summary."""
        options = WriteOptions(shuffle=shuffle, out_files_per_proc=out_files_per_proc,
                               overwrite=overwrite, seed=seed, row_group_size=row_group_size,
                               storage_options=storage_options if storage_options is not None
                               else self.storage_options)
        return write_dataset(self, path, options, hugectr_options=hugectr,
                             protect=self.input_files())

    def input_files(self) -> list[str]:
        """The files this dataset reads: its own, those it was derived from, or found in its
        graph; with the folders named as input (for the output guards,
        ``check_not_inside_input``).

        >>> import pandas as pd
        >>> Dataset(pd.DataFrame({"a": [1]})).input_files()
        []
        """
        own = {*self.files, *getattr(self, "sources", ()), *getattr(self, "folders", ())}
        return sorted(own) or source_files(self.arrow_ddf())

    def column_bytes(self) -> dict[str, int] | None:
        """Bytes of each column: parquet's uncompressed sizes (every file's footer), or the
        frame's memory for a frame in memory; ``None`` where they are not known without
        reading the data (csv, a Dask DataFrame). It reads the footers: call it off the
        kernel's thread for data in an object store.

        >>> import pandas as pd
        >>> Dataset(pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]})).column_bytes()
        {'a': 16, 'b': 16}
        """
        if self.frame is not None:
            usage = self.frame.memory_usage(deep=True, index=False)
            return {str(c): int(n) for c, n in usage.items()}
        if self._pieces is None:
            return None
        return column_sizes(read_metadata(self.files, self._fs)[0].values())

    def describe_input(self) -> str:
        """The input as errors name it: its folder, its file, or its first files.

        >>> import pandas as pd
        >>> Dataset(pd.DataFrame({"a": [1]})).describe_input()
        'the in-memory frame'
        """
        files = list(self.files or getattr(self, "sources", ()))
        if len(self.folders) == 1:
            return f"the folder {self.folders[0]!r}"
        if len(files) == 1:
            return f"the file {files[0]!r}"
        if files:
            return f"the {len(files)} files {files[:3]}" + (" ..." if len(files) > 3 else "")
        return "the in-memory frame"

    def __repr__(self) -> str:
        rows = self._num_rows if self._num_rows is not None else "?"
        src = f", files={len(self.files)}" if self.files else ""
        return (f"Dataset(rows={rows}, partitions={self.npartitions}, "
                f"columns={len(self.schema)}, backend={self.backend.name!r}{src})")


class _Converter:
    """Any pandas or cuDF frame as a frame of a backend (Arrow-backed columns on CPU)."""

    def __init__(self, backend_name: str, schema: pa.Schema | None) -> None:
        self.backend_name, self.schema = backend_name, schema

    def __call__(self, frame: Any) -> Any:
        try:
            return convert(frame, backend=self.backend_name, schema=self.schema)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            column = failing_column(frame, self.schema) if isinstance(frame, pd.DataFrame) \
                else "?"
            raise DatasetError(
                f"Column {column!r} mixes value types or does not match its type ({exc}); a "
                f"column needs one type. Convert it first, e.g. df[{column!r}] = "
                f"df[{column!r}].astype(str) (or pd.to_numeric(..., errors='coerce')).") from exc


def with_written_roles(schema: Schema, folders: Sequence[str]) -> Schema:
    """``schema`` with the tags and properties (cardinality...) that ``_schema.json`` of a
    folder this library wrote gives its columns (read as one folder, dtypes unchanged),
    as NVTabular reads its ``schema.pbtxt`` back."""
    path = os.path.join(folders[0], "_schema.json") if len(folders) == 1 else ""
    if not path or not os.path.isfile(path):
        return schema
    try:
        with open(path) as f:
            written = Schema.from_dict(json.load(f)["schema"])
    except (OSError, ValueError, KeyError, TypeError):
        return schema  # not ours, or damaged: the data's own schema
    return Schema(c.with_(tags=c.tags | w.tags, properties={**w.properties, **c.properties})
                  if (w := written.get(c.name)) is not None and w.dtype == c.dtype else c
                  for c in schema.values())


def as_dataset(data: Any) -> Dataset:
    return data if isinstance(data, Dataset) else Dataset(data)

