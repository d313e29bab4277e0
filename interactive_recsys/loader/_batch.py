"""One training batch: a dense continuous block, labels, jagged sparse features, extras.

Examples
--------
>>> import numpy as np
>>> from interactive_recsys.loader._jagged import JaggedBatch
>>> sparse = JaggedBatch.from_segments(["c"], [np.array([5, 6])], [np.array([1, 1])])
>>> b = Batch(dense=np.zeros((2, 3), np.float32), labels=np.array([0.0, 1.0], np.float32),
...           sparse=sparse, extras={}, dense_names=["i1", "i2", "i3"], label_names=["y"])
>>> len(b), b.dense.shape
(2, (2, 3))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interactive_recsys.loader._jagged import JaggedBatch, as_tensor


@dataclass(frozen=True)
class Batch:
    """A batch of rows, as NumPy arrays or torch tensors.

    Attributes
    ----------
    dense : array ``[batch_size, len(dense_names)]`` of float32
        The continuous columns side by side.
    labels : array ``[batch_size]`` (one label column) or ``[batch_size, n_labels]``, or None
        float32 unless the loader was given another ``label_dtype``.
    sparse : JaggedBatch
        The categorical columns (single-hot ones as rows of length 1).
    extras : dict of str to array ``[batch_size]``
        Columns passed through unchanged (``extra_cols``), e.g. row ids.
    dense_names, label_names : list of str
        The columns of ``dense`` and of ``labels``, in order.
    """

    dense: Any
    labels: Any
    sparse: JaggedBatch
    extras: dict[str, Any] = field(default_factory=dict)
    dense_names: list[str] = field(default_factory=list)
    label_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return self.sparse.batch_size

    def to_torch(self, device: Any = None, non_blocking: bool = False,
                 pin_memory: bool = False) -> Batch:
        """Every array as a torch tensor on ``device`` (zero-copy on the CPU)."""

        def move(a: Any) -> Any:
            return None if a is None else as_tensor(a, device, non_blocking, pin_memory)

        return Batch(move(self.dense), move(self.labels),
                     self.sparse.to_torch(device, non_blocking, pin_memory),
                     {k: move(v) for k, v in self.extras.items()},
                     list(self.dense_names), list(self.label_names))

    def __repr__(self) -> str:
        kind = "torch" if not isinstance(self.dense, np.ndarray) else "numpy"
        return (f"Batch({kind}, rows={len(self)}, dense={tuple(self.dense.shape)}, "
                f"sparse_keys={len(self.sparse.keys)}, labels={self.label_names})")
