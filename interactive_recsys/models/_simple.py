"""Popularity and EASE: the baselines a user would try first.

EASE (Steck 2019, "Embarrassingly Shallow Autoencoders for Sparse Data") is the closed-form
item-item model ``B = argmin ||X - XB||² + l2 ||B||²`` with ``diag(B) = 0``:
``P = (XᵀX + l2·I)⁻¹``, ``B = -P / diag(P)`` (column-wise), ``B_ii = 0``; a user's scores are
``x_u B``. Computed in float64 (NumPy; the inverse with torch on the GPU when the worker
has one); ``XᵀX`` is accumulated over blocks of users, so the dense user-item matrix is never
built whole.

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

from typing import Any

import numpy as np

from interactive_recsys.models._base import Model, register
from interactive_recsys.models._data import Interactions, to_dense
from interactive_recsys.params import Param
from interactive_recsys.runtime.cluster import gpu_count

#: Users per block when building ``XᵀX`` and when scoring (bounded memory).
BLOCK_BYTES = 2**26


def _device() -> str | None:
    """``"cuda"`` when torch sees a GPU on this worker, else ``None`` (NumPy)."""
    if gpu_count() == 0:  # asks NVML: no torch import (seconds) on CPU machines
        return None
    try:
        import torch
    except ImportError:
        return None
    return "cuda" if torch.cuda.is_available() else None


def ease_weights(gram: np.ndarray, l2: float, device: str | None = None) -> np.ndarray:
    """``B = -P / diag(P)``, ``diag(B) = 0``, ``P = (gram + l2·I)⁻¹``, in float64: NumPy, or
    torch on ``device`` (``"cuda"`` on a GPU worker; the inverse is the costly part).

    >>> ease_weights(np.array([[2.0, 1.0], [1.0, 2.0]]), 1.0).round(4).tolist()
    [[0.0, 0.3333], [0.3333, 0.0]]
    """
    n = gram.shape[0]
    if device is None:
        p = np.linalg.inv(gram + l2 * np.eye(n))
        b = p / -np.diag(p)
    else:
        import torch

        g = torch.as_tensor(gram, dtype=torch.float64, device=device)
        p = torch.linalg.inv(g + l2 * torch.eye(n, dtype=torch.float64, device=device))
        b = (p / -torch.diagonal(p)).cpu().numpy()
    b[np.diag_indices(n)] = 0.0
    return b


@register
class Popularity(Model):
    """Every user gets the items most users had in the training data.

    Parameters
    ----------
    user_col, item_col : the user and item id columns.
    """

    @classmethod
    def array_shapes(cls, params: dict[str, Any], n_items: int) -> dict[str, tuple[int, ...]]:
        return {"counts": (n_items,)}

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

    l2 = Param(500.0, kind="number", low=0, closed="neither", doc="L2 regularization.")

    @classmethod
    def array_shapes(cls, params: dict[str, Any], n_items: int) -> dict[str, tuple[int, ...]]:
        return {"B": (n_items, n_items)}

    @classmethod
    def fit_arrays(cls, params: dict[str, Any], data: Interactions) -> dict[str, np.ndarray]:
        n = data.n_items
        gram = np.zeros((n, n), np.float64)
        for start, stop in data.row_blocks(max(1, BLOCK_BYTES // (8 * max(n, 1)))):
            x = data.dense(start, stop)
            gram += x.T @ x
        return {"B": ease_weights(gram, float(params["l2"]), _device())}

    @classmethod
    def score_arrays(cls, params: dict[str, Any], arrays: dict[str, np.ndarray],
                     indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
        b = arrays["B"]
        return to_dense(indptr, indices, b.shape[0], dtype=b.dtype) @ b
