"""Popularity and EASE: the baselines a user would try first.

EASE (Steck 2019, "Embarrassingly Shallow Autoencoders for Sparse Data") is the closed-form
item-item model ``B = argmin ||X - XB||² + l2 ||B||²`` with ``diag(B) = 0``:
``P = (XᵀX + l2·I)⁻¹``, ``B = -P / diag(P)`` (column-wise), ``B_ii = 0``; a user's scores are
``x_u B``. Computed in float64 with NumPy; ``XᵀX`` is accumulated over blocks of users, so
the dense user-item matrix is never built whole.

Examples
--------
>>> import pandas as pd
>>> train = pd.DataFrame({"user_id": [1, 1, 2, 2, 3], "item_id": [10, 20, 10, 20, 10]})
>>> pop = Popularity().fit(train)
>>> pop.arrays_["counts"].tolist()
[3.0, 2.0]
>>> ease = EASE(l2=1.0).fit(train)
>>> ease.arrays_["B"].shape
(2, 2)
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .base import Model, register
from .data import Interactions, to_dense

#: Users per block when building ``XᵀX`` and when scoring (bounded memory).
BLOCK_BYTES = 2**26


def _positive(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value > 0


@register
class Popularity(Model):
    """Every user gets the items most users had in the training data.

    Parameters
    ----------
    user_col, item_col : the user and item id columns.
    """

    PARAMS: dict = {}

    @classmethod
    def fit_arrays(cls, params: dict[str, Any], data: Interactions) -> dict[str, np.ndarray]:
        return {"counts": np.bincount(data.indices, minlength=data.n_items).astype(np.float64)}

    @classmethod
    def score_arrays(cls, params: dict[str, Any], arrays: dict[str, np.ndarray],
                     indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
        counts = arrays["counts"]
        return np.broadcast_to(counts, (len(indptr) - 1, len(counts))).copy()


@register
class EASE(Model):
    """Closed-form item-item autoencoder (Steck 2019).

    Parameters
    ----------
    l2 : float, default 500
        L2 regularization (larger for denser data; a few hundred suits MovieLens).
    user_col, item_col : the user and item id columns.
    """

    PARAMS = {"l2": (500.0, _positive, "a positive number")}

    @classmethod
    def fit_arrays(cls, params: dict[str, Any], data: Interactions) -> dict[str, np.ndarray]:
        n = data.n_items
        gram = np.zeros((n, n), np.float64)
        for start, stop in data.row_blocks(max(1, BLOCK_BYTES // (8 * max(n, 1)))):
            x = data.dense(start, stop)
            gram += x.T @ x
        gram[np.diag_indices(n)] += float(params["l2"])
        p = np.linalg.inv(gram)
        b = p / -np.diag(p)
        b[np.diag_indices(n)] = 0.0
        return {"B": b}

    @classmethod
    def score_arrays(cls, params: dict[str, Any], arrays: dict[str, np.ndarray],
                     indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
        b = arrays["B"]
        return to_dense(indptr, indices, b.shape[0], dtype=b.dtype) @ b
