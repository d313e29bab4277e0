"""Checks of the statistics files a saved workflow points to: a damaged or edited file is a
:class:`~interactive_recsys.errors.WorkflowFormatError` naming the file and the check, never
a raw ``ArrowInvalid`` or a silently wrong encoding.

* :func:`check_parquet_files` (at load, every artifact file): each ``.parquet`` file has a
  readable parquet footer. Only the footers are read.
* :func:`check_vocabulary_files` (at load, each Categorify vocabulary): its split files hold
  ``value``, ``count`` and integer ``index`` columns, and their rows add up to the
  vocabulary's ``size``. Only the footers are read.
* :func:`check_vocabulary` (at update, on the whole vocabulary; on each split when it is
  loaded for lookups): one row per value, no null value, counts whole and non-negative, ids
  unique and in ``[first_index, cardinality)``.

>>> import pyarrow as pa
>>> table = pa.table({"value": ["a", "b"], "count": [2, -1], "index": [3, 4]})
>>> try:
...     check_vocabulary(table, "v/part.00000.parquet", first_index=3, cardinality=5)
... except WorkflowFormatError as exc:
...     print(str(exc)[:79])
'v/part.00000.parquet' is not a valid vocabulary file: the check 'counts are no
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.errors import WorkflowFormatError
from interactive_recsys.store import storage

FIX = ("The file was edited or damaged after the workflow was saved: save the workflow "
       "again from a fitted one, or fit it again.")


def _bad(path: str, check: str, detail: str) -> WorkflowFormatError:
    return WorkflowFormatError(f"{path!r} is not a valid vocabulary file: the check {check!r} "
                               f"fails ({detail}). {FIX}")


def read_footer(path: str, storage_options: Any = None) -> Any:
    """The parquet metadata of ``path``, or :class:`WorkflowFormatError` naming the file."""
    import pyarrow.parquet as pq

    fs = storage.filesystem(path, storage_options)
    try:
        if fs is None:
            return pq.read_metadata(path)
        fs.invalidate_cache(storage.strip(path))  # rewritten since this process listed it
        with storage.guarded(fs.open, path, storage.strip(path), "rb") as f:
            return pq.read_metadata(f)
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise WorkflowFormatError(f"{path!r}, a file of the saved workflow, is missing. "
                                      f"{FIX}") from None
        raise WorkflowFormatError(f"{path!r} is not a parquet file ({type(exc).__name__}: "
                                  f"{str(exc)[:160]}). {FIX}") from None


def read_checked(path: str, storage_options: Any = None) -> pa.Table:
    """``storage.read_table(path)``; a file that is not parquet (replaced after the load's
    checks) is a :class:`WorkflowFormatError` naming it, never a raw ``ArrowInvalid``."""
    try:
        return storage.read_table(path, storage_options)
    except (pa.ArrowException, ValueError) as exc:
        raise WorkflowFormatError(f"{path!r} is not a parquet file ({type(exc).__name__}: "
                                  f"{str(exc)[:160]}). {FIX}") from None


def check_parquet_files(folder: str, files: list[str], storage_options: Any = None) -> None:
    """Every ``.parquet`` file of ``files`` (relative to ``folder``) has a parquet footer."""
    for rel in files:
        if rel.endswith(".parquet"):
            read_footer(storage.join(folder, *rel.split("/")), storage_options)


def split_path(directory: str, split: int) -> str:
    """The file of one split of a vocabulary folder."""
    return storage.join(directory, f"part.{split:05d}.parquet")


def check_vocabulary_files(directory: str, info: dict[str, Any],
                           storage_options: Any = None) -> None:
    """The split files of one vocabulary (``info``: its state entry) are parquet files with
    the vocabulary's columns, and hold ``size`` rows in all (footers only)."""
    rows = 0
    for split in range(info["splits"]):
        path = split_path(directory, split)
        meta = read_footer(path, storage_options)
        schema = meta.schema.to_arrow_schema()
        missing = [c for c in ("value", "count", "index") if c not in schema.names]
        if missing:
            raise _bad(path, "columns value, count, index", f"it has no {missing[0]!r}; its "
                       f"columns are {schema.names[:8]}")
        for column in ("count", "index"):
            if not pa.types.is_integer(schema.field(column).type):
                raise _bad(path, f"{column} is an integer column",
                           f"it is {schema.field(column).type}")
        rows += meta.num_rows
    if rows != info["size"]:
        raise _bad(directory, "one row per value of the vocabulary",
                   f"its split files hold {rows} rows, the state says size {info['size']}")


def check_vocabulary(table: pa.Table, path: str, *, first_index: int, cardinality: int,
                     whole: bool = True, retired: int = 0) -> None:
    """Check a vocabulary table (``value, count, index``): ids not null and in
    ``[first_index, cardinality)``; and, when ``whole`` (every split, as an update reads it),
    one row per value, no null value, counts non-negative, ids unique and all there but the
    ``retired`` ones (ids whose value an update cut: ``max_frequency``). A split
    loaded for lookups (``whole=False``) gets the range check only: one pass, and an id
    past the cardinality is what would break an embedding table."""
    if table.num_rows == 0:
        if whole and cardinality - retired != first_index:
            raise _bad(path, "one row per value of the vocabulary",
                       f"it is empty, the state says cardinality {cardinality}")
        return
    index = table["index"]
    if index.null_count:
        raise _bad(path, "ids are not null", f"{index.null_count} null ids")
    low, high = (v.as_py() for v in pc.min_max(index).values())
    if low < first_index or high >= cardinality:
        raise _bad(path, f"ids are in [{first_index}, {cardinality})",
                   f"an id {low if low < first_index else high}")
    if not whole:
        return
    count = table["count"]
    if count.null_count or table["value"].null_count:
        raise _bad(path, "values and counts are not null",
                   f"{count.null_count + table['value'].null_count} nulls")
    if pc.min(count).as_py() < 0:
        raise _bad(path, "counts are not negative", f"a count of {pc.min(count).as_py()}")
    ids = np.sort(np.asarray(index.to_numpy() if isinstance(index, pa.Array)
                             else index.combine_chunks().to_numpy(), dtype=np.int64))
    twice = np.flatnonzero(ids[1:] == ids[:-1])
    if len(twice):
        raise _bad(path, "ids are unique", f"id {int(ids[twice[0]])} is given more than once")
    if whole and table.num_rows != cardinality - first_index - retired:
        raise _bad(path, "one row per value of the vocabulary",
                   f"{table.num_rows} rows for the {cardinality - first_index - retired} ids "
                   f"of cardinality {cardinality}" + (f" ({retired} retired)" if retired else ""))
    distinct = pc.count_distinct(table["value"]).as_py()
    if distinct != table.num_rows:
        raise _bad(path, "one row per value",
                   f"{table.num_rows - distinct} values appear on more than one row")


def check_pending(table: pa.Table, path: str) -> None:
    """The values below the threshold (``value, count``): one row per value, counts >= 0."""
    if "value" not in table.column_names or "count" not in table.column_names:
        raise _bad(path, "columns value, count", f"its columns are {table.column_names[:8]}")
    if table.num_rows == 0:
        return
    if table["count"].null_count or (pc.min(table["count"]).as_py() or 0) < 0:
        raise _bad(path, "counts are not negative", "a null or negative count")
    if pc.count_distinct(table["value"]).as_py() != table.num_rows:
        raise _bad(path, "one row per value", "a value appears on more than one row")
