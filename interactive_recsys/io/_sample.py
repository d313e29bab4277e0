"""The first rows of some columns of a parquet dataset, to compute on (a preview, a column
profile): read from the first row groups of its first file, decoding only the rows needed
(:meth:`Dataset.head` with ``columns``; other inputs are read from their first partitions).

>>> import pathlib, tempfile
>>> import pyarrow as pa, pyarrow.parquet as pq
>>> path = pathlib.Path(tempfile.mkdtemp()) / "part.parquet"
>>> pq.write_table(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), path)
>>> read_head([str(path)], pa.schema([("b", pa.string())]), 2, ["b"])["b"].to_pylist()
['x', 'y']
>>> read_head([str(path)], pa.schema([("b", pa.string())]), 9, ["b"]) is None  # too short
True
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq


def read_head(files: Sequence[str], arrow_schema: pa.Schema, n_rows: int,
              columns: list[str]) -> pa.Table | None:
    """The first ``n_rows`` rows of ``columns`` of the first of ``files``, cast to
    ``arrow_schema``; ``None`` when that file cannot give them (not parquet, too few rows, a
    column missing): the caller reads its first partitions instead."""
    pf = _parquet_file(files[0]) if files else None
    if pf is None or pf.metadata.num_rows < n_rows or \
            not set(columns) <= set(pf.schema_arrow.names):
        return None
    batches, got = [], 0
    for batch in pf.iter_batches(batch_size=n_rows, columns=columns):
        batches.append(batch.slice(0, n_rows - got))
        got += batches[-1].num_rows
        if got >= n_rows:
            break
    return pa.Table.from_batches(batches).select(columns).cast(arrow_schema)


def _parquet_file(path: str) -> pq.ParquetFile | None:
    try:
        return pq.ParquetFile(path)
    except (OSError, pa.ArrowException):  # csv input: read through the dataset
        return None
