"""Dask's memory accounting sees a partial's arrays, not an object of a few bytes."""

import numpy as np
import pyarrow as pa
from dask.sizeof import sizeof

from interactive_recsys.backend._keyed_counts import KeyedCounts


def test_dask_counts_the_arrays_of_keyed_counts() -> None:
    counts = KeyedCounts(np.arange(1000, dtype=np.uint64), np.ones(1000, np.int64), "int",
                         pa.int64())
    assert 16_000 <= sizeof(counts) <= 16_000 + 128
