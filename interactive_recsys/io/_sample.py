"""The first rows of some columns of a dataset, to compute on (a preview, a column profile):
parquet files are read from the first row groups of their first file, decoding only the
rows needed; any other dataset from its first partition(s).

>>> import pandas as pd
>>> from interactive_recsys.io._dataset import as_dataset
>>> ds = as_dataset(pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}))
>>> read_head(ds, 2, ["b"])["b"].tolist()
['x', 'y']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from interactive_recsys.io._dataset import Dataset


def read_head(ds: Dataset, n_rows: int, columns: list[str]) -> pd.DataFrame:
    """The first ``n_rows`` rows of ``columns`` of ``ds`` as a pandas frame (what
    :meth:`Dataset.head` gives with ``columns``)."""
    arrow_schema = ds.schema.select(columns).to_arrow()
    pf = _parquet_file(ds.files[0]) if ds.files else None
    if pf is not None and pf.metadata.num_rows >= n_rows and \
            set(columns) <= set(pf.schema_arrow.names):
        batches, got = [], 0
        for batch in pf.iter_batches(batch_size=n_rows, columns=columns):
            batches.append(batch.slice(0, n_rows - got))
            got += batches[-1].num_rows
            if got >= n_rows:
                break
        table = pa.Table.from_batches(batches).select(columns).cast(arrow_schema)
        return ds.backend.to_pandas(ds.backend.from_arrow(table))
    return ds.head(n_rows)[columns]


def _parquet_file(path: str) -> pq.ParquetFile | None:
    try:
        return pq.ParquetFile(path)
    except (OSError, pa.ArrowException):  # csv input: read through the dataset
        return None
