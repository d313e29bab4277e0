"""Atomic parquet output with optional shuffling.

Everything is written into a temporary sibling directory which is renamed to the
target only when every file, ``_schema.json`` and the ``_SUCCESS`` marker are
complete: a failed or interrupted run leaves no partial output.

Shuffle modes:

* ``None``: partitions written in order, one file each;
* ``"partition"``: rows shuffled within each partition;
* ``"worker"``: rows of each worker's share of partitions spread at random over that
  share's ``out_files_per_proc`` files, then shuffled within each file;
* ``"full"``: a global shuffle (every row may land in any file at any position), done as
  a Dask shuffle on a random key: out of core, unlike NVTabular's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from interactive_recsys.backend import get_backend
from interactive_recsys.io._write_options import DEFAULT_WRITE_OPTIONS, WriteOptions
from interactive_recsys.runtime._memory_release import release_memory
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.schema import RESERVED_PREFIX
from interactive_recsys.store import commit, storage
from interactive_recsys.store._outputs import atomic_directory, check_not_inside_input

__all__ = ["StagedOutput", "atomic_directory", "staged_parquet", "write_parquet"]

_KEY = RESERVED_PREFIX + "shuffle_key__"


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """Re-raise a failed write as an ``OSError`` that names the file (Arrow's do not)."""
    try:
        yield
    except (OSError, pa.ArrowException) as exc:
        if isinstance(exc, OSError) and exc.filename:
            raise
        found = re.search(r"errno (\d+)", str(exc), re.IGNORECASE)
        code = getattr(exc, "errno", None) or (int(found[1]) if found else errno.EIO)
        raise OSError(code, os.strerror(code) if found else str(exc), path) from exc


def _n_workers() -> int:
    try:
        from distributed import default_client

        return max(1, len(default_client().scheduler_info(n_workers=-1)["workers"]))
    except (ValueError, ImportError):
        return 1


#: Categorical columns with more ids than this are written without parquet dictionary pages.
PLAIN_ABOVE_CARDINALITY = 2**16


def dictionary_columns(schema: Any) -> list[str] | bool:
    """The columns worth parquet dictionary encoding: all but the wide categorical ones.

    A column whose ids (``cardinality`` from Categorify and friends) exceed
    :data:`PLAIN_ABOVE_CARDINALITY` has about as many distinct ids per row group as rows:
    the writer would hash every value into a dictionary as large as the data, for a file
    no smaller than plain int pages (measured on Kaggle-profile Criteo: same size, 17 %
    less writer CPU).

    >>> from interactive_recsys.schema import ColumnSchema, Schema
    >>> s = Schema([ColumnSchema("wide", "int64", properties={"cardinality": 10**6}),
    ...             ColumnSchema("narrow", "int64", properties={"cardinality": 10}),
    ...             ColumnSchema("x", "float32")])
    >>> dictionary_columns(s)
    ['narrow', 'x']
    """
    names = list(schema.names)
    keep = [n for n in names
            if not (schema[n].properties.get("cardinality") or 0) > PLAIN_ABOVE_CARDINALITY]
    return True if len(keep) == len(names) else keep


def _write_frame(backend: Any, df: Any, path: str, schema: pa.Schema, fs: Any = None,
                 **kwargs: Any) -> None:
    """The backend's parquet writer; for a URL, pyarrow's writer on an fsspec file (the
    backends' writers are the same pyarrow writer on a local file)."""
    if fs is None:
        with _naming(path):
            backend.write_parquet(df, path, schema=schema, **kwargs)
        return
    table = backend.to_arrow(df).cast(schema)
    try:
        with fs.open(storage.strip(path), "wb") as f:
            pq.write_table(table, f, **kwargs)
    except Exception as exc:
        raise storage.storage_error(path, exc) from exc


def _write_part(df: Any, path: str, schema: pa.Schema, backend_name: str,
                row_group_size: int, permute_seed: int | None = None,
                use_dictionary: bool | list[str] = True, fs: Any = None) -> int:
    backend = get_backend(backend_name)
    if _KEY in df.columns:  # full shuffle: the random key orders rows, whatever their arrival
        df = backend.sort_rows(df, _KEY).drop(columns=[_KEY])
    elif permute_seed is not None:
        df = backend.permute_rows(df, permute_seed)
    _write_frame(backend, df, path, schema, fs, row_group_size=row_group_size,
                 use_dictionary=use_dictionary)
    rows = backend.num_rows(df)
    del df
    release_memory()
    return rows


def _add_key(df: Any, seed: int, low: int, high: int, backend_name: str,
             partition_info: dict | None = None) -> Any:
    number = (partition_info or {}).get("number", 0)
    rng = np.random.default_rng([seed, number])
    backend = get_backend(backend_name)
    return backend.with_columns(df, {_KEY: backend.from_numpy(
        rng.integers(low, high, backend.num_rows(df)).astype(np.int64))})


def _split_random(df: Any, seed: int, pieces: int, directory: str, part: int,
                  schema: pa.Schema, backend_name: str, fs: Any = None) -> list[str]:
    backend = get_backend(backend_name)
    which = np.random.default_rng([seed, part]).integers(0, pieces, backend.num_rows(df))
    paths = []
    for j in range(pieces):
        path = storage.join(directory, f"_pieces/piece.{part:05d}.{j:03d}.parquet") if fs \
            else os.path.join(directory, f"piece.{part:05d}.{j:03d}.parquet")
        _write_frame(backend, backend.take_rows(df, np.flatnonzero(which == j)), path, schema,
                     fs)
        paths.append(path)
    return paths


def _merge_pieces(paths: list[str], out: str, schema: pa.Schema, seed: int,
                  row_group_size: int, fs: Any = None) -> int:
    table = pa.concat_tables([pq.read_table(storage.strip(p) if fs else p, schema=schema,
                                            filesystem=fs) for p in paths])
    table = table.take(pa.array(np.random.default_rng(seed).permutation(table.num_rows)))
    if fs is None:
        with _naming(out):
            pq.write_table(table, out, row_group_size=row_group_size)
        for p in paths:
            os.remove(p)
    else:
        _write_frame(get_backend("cpu"), table.to_pandas(), out, schema, fs,
                     row_group_size=row_group_size)
        fs.rm([storage.strip(p) for p in paths])
    return table.num_rows


@contextlib.contextmanager
def _output_directory(path: str, overwrite: bool, protect: dict,
                      storage_options: Mapping[str, Any] | None) -> Iterator[tuple[str, Any]]:
    """``(temporary folder, fs)``: a local sibling renamed into place (:mod:`.outputs`,
    ``fs`` None), or for a URL a staging prefix published with a manifest (:mod:`.storage`).
    """
    if not storage.is_remote(path):
        with atomic_directory(storage.local_path(path), overwrite=overwrite,
                              protect=protect) as tmp:
            yield tmp, None
        return
    with commit.remote_atomic_directory(path, storage_options, overwrite=overwrite,
                                         protect=protect) as staging:
        yield staging, storage.filesystem(path, storage_options)


def _worker_shuffle_tasks(parts: list, tmp: str, schema: pa.Schema, backend: str,
                          options: WriteOptions, workers: int, fs: Any
                          ) -> tuple[list, list[str]]:
    """``shuffle="worker"``: each worker's share of partitions spread at random over that
    share's ``out_files_per_proc`` files, each shuffled once merged."""
    files_per_group = options.out_files_per_proc or 1
    pieces = [dask.delayed(_split_random)(p, options.seed, files_per_group, tmp, i, schema,
                                          backend, fs) for i, p in enumerate(parts)]
    tasks, names = [], []
    for g in range(min(workers, len(parts))):
        members = pieces[g * len(parts) // workers:(g + 1) * len(parts) // workers]
        for j in range(files_per_group):
            name = f"part.{len(names):05d}.parquet"
            paths = [dask.delayed(lambda ps, j=j: ps[j])(m) for m in members]
            tasks.append(dask.delayed(_merge_pieces)(paths, storage.join(tmp, name), schema,
                                                     options.seed + len(names),
                                                     options.row_group_size, fs))
            names.append(name)
    return tasks, names


def _write_parts(ds: Any, tmp: str, fs: Any, options: WriteOptions) -> tuple[list[str],
                                                                              list[int]]:
    """Write the data files of ``ds`` into ``tmp`` as ``options.shuffle`` says; return their
    names and row counts."""
    backend, schema, ddf = ds.backend.name, ds.schema.to_arrow(), ds.arrow_ddf()
    workers = _n_workers()
    per_proc = options.out_files_per_proc
    n_out = per_proc * workers if per_proc else ddf.npartitions
    if options.shuffle == "full":
        keyed = ddf.map_partitions(_add_key, options.seed, 0, 2**62, backend,
                                   meta=ds.backend.with_columns(ddf._meta, {
                                       _KEY: ds.backend.from_numpy(np.zeros(0, np.int64))}))
        ddf = keyed.shuffle(on=_KEY, npartitions=n_out)
    elif ddf.npartitions != n_out and options.shuffle != "worker":
        ddf = ddf.repartition(npartitions=n_out)
    parts = ddf.to_delayed()
    if options.shuffle == "worker":
        tasks, names = _worker_shuffle_tasks(parts, tmp, schema, backend, options, workers, fs)
    else:
        names = [f"part.{i:05d}.parquet" for i in range(len(parts))]
        permute = options.shuffle == "partition"
        dictionary = dictionary_columns(ds.schema)
        tasks = [dask.delayed(_write_part)(p, storage.join(tmp, n), schema, backend,
                                           options.row_group_size,
                                           options.seed + i if permute else None,
                                           dictionary, fs)
                 for i, (p, n) in enumerate(zip(parts, names, strict=True))]
    return names, [int(r) for r in compute(*tasks, phase="write")]


@dataclass
class StagedOutput:
    """A parquet output whose data files are written but not yet published.

    :func:`staged_parquet` yields it; the output steps above the writer add their files to
    :attr:`directory` and their entries to :attr:`summary` before the block ends, so that
    they are published with the data, or not at all.
    """

    #: the local folder for the output's small files: the temporary sibling of a local
    #: output, or a local folder uploaded into the staging prefix of a URL
    directory: str
    #: where the output is published (an absolute path, or the URL)
    final: str
    #: the data files, relative to the output folder
    files: list[str]
    #: the summary ``to_parquet`` returns, also written as ``_schema.json``
    summary: dict[str, Any]
    #: where the data files are: :attr:`directory` locally, the staging URL for a URL
    data_dir: str
    #: the fsspec filesystem of a URL output, else ``None``
    fs: Any = None


@contextlib.contextmanager
def staged_parquet(ds: Any, path: str | os.PathLike,
                   options: WriteOptions = DEFAULT_WRITE_OPTIONS, *,
                   protect: Sequence[str] = ()) -> Iterator[StagedOutput]:
    """Write a Dataset's parquet files into a temporary folder, yield the
    :class:`StagedOutput` for the caller to add files, then publish everything at once.

    The block's end writes ``_schema.json`` (the summary) and the ``_SUCCESS`` manifest
    and publishes the output: locally a rename of the temporary sibling (:mod:`.outputs`);
    for a fsspec URL (``s3://bucket/out``, opened with ``options.storage_options``) the
    workers write under ``path/_temporary/``, the small files are uploaded there, and
    everything is published with the manifest (:func:`.commit.remote_atomic_directory`).
    An error in the block publishes nothing. After the block, the summary also has the
    output's ``path`` and the ``seconds`` it took.

    ``path`` must not be, or contain, ``protect`` (the dataset's input files), the current
    directory, home or ``/``, nor lie inside a folder read as input (see :mod:`.outputs`).
    """
    path = os.fspath(path)
    remote = storage.is_remote(path)
    started = time.perf_counter()
    inputs = list(protect)
    check_not_inside_input(path, inputs)
    final = path if remote else os.path.abspath(storage.local_path(path))
    with _output_directory(path, options.overwrite, {"the input": inputs},
                           options.storage_options) as (tmp, fs):
        names, rows = _write_parts(ds, tmp, fs, options)
        summary = {"files": names, "rows_per_file": rows, "num_rows": sum(rows),
                   "shuffle": options.shuffle, "schema": ds.schema.to_dict()}
        local = tempfile.mkdtemp(prefix="irs-output-") if remote else tmp
        try:  # small files: written here, uploaded for a URL
            yield StagedOutput(local, final, names, summary, tmp, fs)
            with open(os.path.join(local, "_schema.json"), "w") as f:
                json.dump(summary, f, indent=2)
            if remote:  # every file this write staged, checked before it is published
                commit.expect(tmp, {name: None for name in names})
                commit.expect(tmp, storage.upload_directory(local, tmp, options.storage_options))
            else:
                storage.local_manifest(tmp)  # last: lists every file with its size
        finally:
            if remote:
                shutil.rmtree(local, ignore_errors=True)
    summary["path"] = final
    summary["seconds"] = time.perf_counter() - started


def write_parquet(ds: Any, path: str | os.PathLike,
                  options: WriteOptions = DEFAULT_WRITE_OPTIONS, *,
                  protect: Sequence[str] = ()) -> dict[str, Any]:
    """Write a Dataset as parquet files + ``_schema.json`` + ``_SUCCESS``; return a summary.

    This writer knows files, not formats: the output steps above it
    (:func:`interactive_recsys.io._export.write_dataset`: Merlin's schema, HugeCTR's files)
    use :func:`staged_parquet` to add their files before the output is published.

    >>> import tempfile, pandas as pd
    >>> from interactive_recsys.io._dataset import Dataset
    >>> out = tempfile.mkdtemp() + "/out"
    >>> summary = write_parquet(Dataset(pd.DataFrame({"a": [1, 2, 3]})), out,
    ...                         WriteOptions(row_group_size=2))
    >>> summary["files"], summary["num_rows"], sorted(os.listdir(out))
    (['part.00000.parquet'], 3, ['_SUCCESS', '_schema.json', 'part.00000.parquet'])
    """
    with staged_parquet(ds, path, options, protect=protect) as output:
        pass
    return output.summary
