"""The ``--input`` of ``irs run`` and ``irs update``, read as ``--input-format`` says: parquet
or csv (``auto``: from the file extensions), or raw Criteo TSV day files read with
:func:`~interactive_recsys.datasets.read_criteo`, the reader of the Studio's "Open as
Criteo"."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Any

from interactive_recsys.errors import DatasetError
from interactive_recsys.store.storage import is_remote

#: The choices of ``--input-format``; ``auto`` takes parquet or csv from the file extensions.
INPUT_FORMATS = ("auto", "parquet", "csv", "criteo")

#: The option that reads raw Criteo files, named by the errors of ``auto`` on them.
CRITEO_FIX = "--input-format criteo"


def criteo_paths(items: Sequence[str]) -> list[str]:
    """The raw Criteo files of ``--input``: a local folder gives its ``day_N`` files (plain
    or compressed) or Kaggle's ``train.txt``, as ``irs criteo`` finds them (``test.txt``,
    which has no label column, is left out); files, globs and URLs are kept as they are.

    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("day_1.gz", "day_0.gz", "README"):
    ...     _ = (tmp / name).write_text("")
    >>> [os.path.basename(p) for p in criteo_paths([str(tmp)])]
    ['day_0.gz', 'day_1.gz']
    """
    from interactive_recsys.datasets._criteo_torchrec import criteo_input_files  # lazy: NumPy

    paths: list[str] = []
    for item in items:
        if not is_remote(item) and os.path.isdir(item):
            paths.extend(f for f, stem in criteo_input_files(item) if stem != "test")
        else:
            paths.append(item)
    return paths


def open_input(args: argparse.Namespace, options: Mapping[str, Any] | None,
               tags: Mapping[str, Sequence[str]] | None = None) -> Any:
    """The Dataset of ``args.input`` read as ``args.input_format`` says, with ``tags``.

    With ``criteo`` it is exactly ``read_criteo(files)`` (tagged), so a workflow applied
    by ``irs run`` gives what it gives in Python. With ``auto``, input that turns out to be
    raw Criteo is refused with an error that names ``--input-format criteo``.
    """
    from interactive_recsys.io._dataset import Dataset  # lazy: Dask

    fmt = getattr(args, "input_format", "auto")
    if fmt == "criteo":
        from interactive_recsys.datasets._criteo import read_criteo  # lazy: as above

        paths = criteo_paths(args.input)
        ds = read_criteo(paths if len(paths) > 1 else paths[0], part_size=args.part_size,
                         storage_options=options)
        return Dataset(ds, tags=tags) if tags else ds
    source = args.input if len(args.input) > 1 else args.input[0]
    try:
        return Dataset(source, engine=None if fmt == "auto" else fmt,
                       part_size=args.part_size, tags=tags, storage_options=options)
    except DatasetError as exc:
        fix = _raw_criteo_fix(args.input, str(exc)) if fmt == "auto" else None
        if fix:
            raise DatasetError(f"{exc} {fix}") from exc
        raise


def _raw_criteo_fix(items: Sequence[str], message: str) -> str | None:
    """The fix to add to a failed read of raw Criteo, else ``None``: for a file the csv
    reader found to be raw Criteo, or a local folder whose first ``day_N`` (or
    ``train.txt``) file starts with a raw Criteo line (those names have no parquet or csv
    extension, so the folder looked empty)."""
    from interactive_recsys.datasets._criteo_torchrec import criteo_input_files  # lazy: NumPy
    from interactive_recsys.io._csv_input import (  # lazy: pandas
        RAW_CRITEO_HINT,
        check_csv_header,
    )

    if RAW_CRITEO_HINT in message:
        return f"On the command line, pass {CRITEO_FIX}."
    for item in items:
        if is_remote(item) or not os.path.isdir(item):
            continue
        try:
            first = criteo_input_files(item)[0][0]
            check_csv_header([first], "\t", None, "infer")
        except DatasetError as exc:
            if RAW_CRITEO_HINT in str(exc):
                return (f"Its {os.path.basename(first)!r} is raw Criteo data: pass "
                        f"{CRITEO_FIX} to read its day files.")
    return None
