"""The files a Dataset reads: paths, folders, globs and URLs expanded to data files, with
the checks done before anything is read (a missing file, a pipe, a mix of kinds).

>>> infer_engine(["a.parquet", "b.pq"]), infer_engine(["a.csv.gz"])
('parquet', 'csv')
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import DatasetError
from interactive_recsys.store.storage import (
    StorageOptions,
    expand_url,
    is_remote,
    published_files,
)

__all__ = ["CSV_EXTENSIONS", "PARQUET_EXTENSIONS", "expand_paths", "infer_engine",
           "input_folders", "refuse_special_file"]

PARQUET_EXTENSIONS = (".parquet", ".pq", ".parq")
CSV_EXTENSIONS = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz")


def _data_extensions(engine: str | None) -> tuple[str, ...]:
    extensions = PARQUET_EXTENSIONS + CSV_EXTENSIONS
    return extensions if engine == "csv" else tuple(e for e in extensions if e != ".txt")


def expand_paths(source: str | os.PathLike | Sequence[str | os.PathLike],
                 engine: str | None = None,
                 storage_options: StorageOptions = None) -> list[str]:
    """Files named by a path, a directory, a glob or a list of those, in sorted order.

    In a directory, ``.txt`` files (often a README) are data only with ``engine="csv"``.
    Paths may be fsspec URLs (``s3://...``) opened with ``storage_options``; a folder that
    is an incomplete output (see :func:`.storage.published_files`) is refused. A folder
    with a ``_SUCCESS`` manifest is read as the files it lists, locally as in a store; a
    file added to it later is not read. Names starting with ``_`` or ``.`` are skipped.
    """
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    if not items:
        raise DatasetError("No input given (an empty list of files). Pass a path, a folder, a "
                           "glob or a non-empty list of parquet/csv files.")
    files: list[str] = []
    for item in items:
        item = os.fspath(item)
        if is_remote(item):
            files.extend(expand_url(item, _data_extensions(engine), storage_options))
            continue
        if os.path.isdir(item):
            listed = published_files(item)  # an interrupted output is refused
            extensions = PARQUET_EXTENSIONS + CSV_EXTENSIONS
            if engine != "csv":
                extensions = tuple(e for e in extensions if e != ".txt")
            if listed is None:  # a folder of another tool: its data files, as they are
                candidates = [p for p in glob.glob(os.path.join(item, "**", "*"),
                                                   recursive=True) if os.path.isfile(p)]
            else:  # an output: the files its manifest lists, as in a store (not files added)
                candidates = listed
            base = os.path.join(item, "")  # a prefix cut, not a relpath per file: 200,000 files
            found = sorted(p for p in candidates if p.endswith(extensions) and not any(
                part.startswith(("_", ".")) for part in (
                    p[len(base):] if p.startswith(base) else os.path.relpath(p, item)
                ).split(os.sep)))
            if not found:
                skipped = sorted(os.path.relpath(p, item) for p in glob.glob(
                    os.path.join(item, "**", "*"), recursive=True) if os.path.isfile(p))
                raise DatasetError(
                    f"The folder {item!r} holds no parquet or csv data files (found: "
                    f"{skipped[:5] or 'nothing'}). Parquet files end in {PARQUET_EXTENSIONS}, "
                    f"csv in {tuple(e for e in CSV_EXTENSIONS if e != '.txt')}; .txt files in a "
                    "folder are read only with engine='csv'.")
        elif glob.has_magic(item):
            found = sorted(p for p in glob.glob(item) if os.path.isfile(p))
        else:
            if not os.path.exists(item):
                raise DatasetError(f"Input file {item!r} does not exist. Check the path (the "
                                   f"current directory is {os.getcwd()!r}).")
            refuse_special_file(item)
            found = [item]
        if not found:
            raise DatasetError(f"No data files match {item!r}. Check the path or the glob "
                               f"pattern (parquet: {PARQUET_EXTENSIONS}, csv: {CSV_EXTENSIONS}).")
        files.extend(found)
    return files


def refuse_special_file(path: str | os.PathLike) -> None:
    """Refuse an input that is not a regular file (a FIFO, a socket, a device), before
    anything reads it: a reader of a named pipe waits for a writer forever, and a device
    has no end or size.

    >>> try:
    ...     refuse_special_file("/dev/null")
    ... except DatasetError as exc:
    ...     print(str(exc).split(":")[0])
    Input '/dev/null' is a character device, not a regular file
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing or unreadable: the caller's own error names it
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a file or a folder")
    raise DatasetError(
        f"Input {os.fspath(path)!r} is {kind}, not a regular file: it is refused before any "
        "read (a pipe or a device would be read without end, or block until a writer "
        "comes). Write the data to a file first (e.g. cat PIPE > data.csv) and pass that "
        "file, or a folder of parquet/csv files.")


def infer_engine(files: list[str]) -> str:
    engines = {"parquet" if f.endswith(PARQUET_EXTENSIONS) else "csv" for f in files}
    if len(engines) > 1:
        raise DatasetError(f"The input mixes parquet and csv files ({files[:4]}...); pass one "
                           "kind, or engine='parquet' / engine='csv'.")
    return engines.pop()


def input_folders(source: Any) -> list[str]:
    """The folders among the paths of a Dataset's ``source``."""
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    return [os.fspath(i) for i in items if isinstance(i, str | os.PathLike) and os.path.isdir(i)]
