"""Implicit-feedback interactions as index arrays: the one input every model is fitted from.

A user's interactions are the distinct items they rated or clicked. Users and items get
dense codes (``0..n-1``, in ascending order of their ids); the user-item matrix is kept as
CSR arrays (``indptr``, ``indices``), never as a dense matrix.

>>> import pandas as pd
>>> data = Interactions.from_frame(pd.DataFrame({"u": [5, 5, 7, 5], "i": [30, 10, 10, 30]}),
...                                "u", "i")
>>> data.users.tolist(), data.items.tolist()
([5, 7], [10, 30])
>>> data.indptr.tolist(), data.indices.tolist()
([0, 2, 3], [0, 1, 0])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from interactive_recsys.errors import DatasetError


@dataclass(frozen=True)
class Interactions:
    """Distinct (user, item) pairs as CSR arrays over user and item codes."""

    users: np.ndarray  # user ids, ascending; row r of the matrix is users[r]
    items: np.ndarray  # item ids, ascending; column c is items[c]
    indptr: np.ndarray  # int64, len(users) + 1
    indices: np.ndarray  # int64 item codes, ascending within each user

    @property
    def n_users(self) -> int:
        return len(self.users)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def nnz(self) -> int:
        return len(self.indices)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, user_col: str, item_col: str,
                   items: np.ndarray | None = None) -> Interactions:
        """Codes for the pairs of ``frame``; with ``items`` given, other items are dropped."""
        for col in (user_col, item_col):
            if col not in frame.columns:
                raise DatasetError(f"Column {col!r} is not in the data; columns are "
                                   f"{list(frame.columns)}. Pass user_col=/item_col= naming "
                                   "the user and item id columns.")
        user_values = _plain(frame[user_col])
        item_values = _plain(frame[item_col])
        if items is None:
            items = np.unique(item_values)
        users, user_codes = np.unique(user_values, return_inverse=True)
        item_codes, known = encode(items, item_values)
        user_codes, item_codes = user_codes[known], item_codes[known]
        pairs = np.unique(user_codes.astype(np.int64) * max(len(items), 1) + item_codes)
        rows, cols = np.divmod(pairs, max(len(items), 1))
        indptr = np.zeros(len(users) + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=len(users)), out=indptr[1:])
        return cls(users, np.asarray(items), indptr, cols.astype(np.int64))

    def row_blocks(self, rows: int) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` user ranges of at most ``rows`` users."""
        for start in range(0, self.n_users, rows):
            yield start, min(self.n_users, start + rows)

    def dense(self, start: int = 0, stop: int | None = None,
              dtype: Any = np.float64) -> np.ndarray:
        """The 0/1 matrix of users ``start:stop`` (``[stop - start, n_items]``)."""
        return to_dense(self.indptr, self.indices, self.n_items, start, stop, dtype)

    def item_lists(self) -> pd.DataFrame:
        """One row per user: ``user`` (its code) and ``items`` (list of item codes)."""
        import pyarrow as pa

        lists = pa.ListArray.from_arrays(pa.array(self.indptr.astype(np.int32)),
                                         pa.array(self.indices))
        return pd.DataFrame({"user": np.arange(self.n_users, dtype=np.int64),
                             "items": pd.arrays.ArrowExtensionArray(lists)})


def _plain(series: pd.Series) -> np.ndarray:
    if series.isna().any():
        raise DatasetError(f"Column {series.name!r} has {int(series.isna().sum())} missing "
                           "values; user and item ids must be present. Drop those rows first "
                           "(ops.Dropna()).")
    values = series.to_numpy()
    return values.astype(str) if values.dtype == object else values


def encode(items: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``values`` in the sorted ``items`` and a mask of the values found there.

    >>> codes, known = encode(np.array([10, 20, 30]), np.array([20, 25, 10]))
    >>> codes[known].tolist(), known.tolist()
    ([1, 0], [True, False, True])
    """
    if len(items) == 0:
        return np.zeros(len(values), np.int64), np.zeros(len(values), bool)
    codes = np.searchsorted(items, values)
    codes = np.minimum(codes, len(items) - 1)
    return codes.astype(np.int64), items[codes] == values


def to_dense(indptr: np.ndarray, indices: np.ndarray, n_items: int, start: int = 0,
             stop: int | None = None, dtype: Any = np.float64) -> np.ndarray:
    """Rows ``start:stop`` of a CSR 0/1 matrix as a dense array."""
    stop = len(indptr) - 1 if stop is None else stop
    out = np.zeros((stop - start, n_items), dtype)
    lo, hi = indptr[start], indptr[stop]
    rows = np.repeat(np.arange(stop - start), np.diff(indptr[start:stop + 1]))
    out[rows, indices[lo:hi]] = 1
    return out
