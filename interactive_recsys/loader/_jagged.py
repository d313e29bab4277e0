"""Jagged sparse features of one batch, with their per-key metadata computed on the CPU.

The layout is TorchRec's ``KeyedJaggedTensor``: the values of every key are stored key
after key in one flat ``values`` array; ``lengths`` holds, key-major, how many values each
row has for each key (``len(keys) * batch_size`` entries) and ``offsets`` is its running
sum. ``length_per_key`` / ``offset_per_key`` are plain Python integers, computed here with
NumPy before any copy to a device: a ``KeyedJaggedTensor`` built from them never has to
read lengths back from the GPU (a device-to-host synchronization per batch otherwise).

Examples
--------
Two rows; ``"a"`` is single-hot, ``"b"`` multi-hot (row 0 has two values, row 1 none):

>>> import numpy as np
>>> jb = JaggedBatch.from_segments(["a", "b"], [np.array([7, 8]), np.array([3, 4])],
...                                [np.array([1, 1]), np.array([2, 0])])
>>> jb.values.tolist(), jb.lengths.tolist(), jb.offsets.tolist()
([7, 8, 3, 4], [1, 1, 2, 0], [0, 1, 2, 4, 4])
>>> jb.length_per_key, jb.offset_per_key
([2, 2], [0, 2, 4])
>>> values, offsets = jb.feature("b")
>>> values.tolist(), offsets.tolist()
([3, 4], [0, 2, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interactive_recsys.errors import ParameterError


@dataclass(frozen=True)
class JaggedBatch:
    """Keyed jagged features of ``batch_size`` rows (NumPy arrays or torch tensors).

    Attributes
    ----------
    keys : list of str
        Feature names, in the order of their values.
    values : array of int64
        All values, key after key, row after row within a key.
    lengths : array of int32
        Values per (key, row), key-major: ``len(keys) * batch_size`` entries.
    offsets : array of int32 (int64 beyond 2**31 - 1 values)
        ``[0, cumsum(lengths)...]``: ``len(lengths) + 1`` entries. (int32 halves the
        bytes written and copied per batch; TorchRec and ``torch.nn.EmbeddingBag`` take it.)
    length_per_key : list of int
        Number of values of each key (Python ints, on the CPU).
    offset_per_key : list of int
        Where each key's values start in ``values``, plus the total at the end.
    batch_size : int
        Rows in the batch (TorchRec's ``stride``).
    """

    keys: list[str]
    values: Any
    lengths: Any
    offsets: Any
    length_per_key: list[int]
    offset_per_key: list[int]
    batch_size: int

    @classmethod
    def from_segments(cls, keys: Sequence[str], values: Sequence[np.ndarray],
                      lengths: Sequence[np.ndarray]) -> JaggedBatch:
        """Build a batch from one ``values`` and one ``lengths`` array per key (vectorized).

        Every ``lengths[k]`` must have the same number of rows and sum to ``len(values[k])``.
        """
        keys = list(keys)
        if not (len(keys) == len(values) == len(lengths)):
            raise ParameterError(f"JaggedBatch needs one values and one lengths array per key; "
                                 f"got {len(keys)} keys, {len(values)} values, "
                                 f"{len(lengths)} lengths.")
        rows = {len(lens) for lens in lengths}
        if len(rows) > 1:
            raise ParameterError(f"Every key of a JaggedBatch must have the same number of "
                                 f"rows; got {dict(zip(keys, map(len, lengths), strict=True))}.")
        batch_size = rows.pop() if rows else 0
        length_per_key = [len(v) for v in values]
        offset_per_key = [0, *np.cumsum(length_per_key, dtype=np.int64).tolist()]
        for key, vals, lens in zip(keys, values, lengths, strict=True):
            if int(lens.sum()) != len(vals):
                raise ParameterError(f"The lengths of key {key!r} sum to {int(lens.sum())} but it "
                                     f"has {len(vals)} values.")
        flat = (np.concatenate(values).astype(np.int64, copy=False) if keys
                else np.zeros(0, np.int64))
        all_lengths = (np.concatenate(lengths).astype(np.int32, copy=False) if keys
                       else np.zeros(0, np.int32))
        offsets = np.zeros(len(all_lengths) + 1, offsets_dtype(len(flat)))
        np.cumsum(all_lengths, out=offsets[1:])
        return cls(keys, flat, all_lengths, offsets, length_per_key, offset_per_key, batch_size)

    def feature(self, key: str) -> tuple[Any, Any]:
        """The ``values`` of one key and its ``batch_size + 1`` offsets (starting at 0).

        ``torch.nn.EmbeddingBag(...)(values, offsets[:-1])`` pools one key directly.
        """
        try:
            k = self.keys.index(key)
        except ValueError:
            raise ParameterError(f"Key {key!r} is not in this batch; keys are "
                                 f"{self.keys}.") from None
        start, stop = self.offset_per_key[k], self.offset_per_key[k + 1]
        b = self.batch_size
        return self.values[start:stop], self.offsets[k * b:(k + 1) * b + 1] - start

    def to_torch(self, device: Any = None, non_blocking: bool = False,
                 pin_memory: bool = False) -> JaggedBatch:
        """The same batch as torch tensors on ``device`` (metadata stays Python ints).

        With ``pin_memory=True`` the host arrays are copied to page-locked memory first,
        so that ``non_blocking=True`` copies to a GPU really are asynchronous.
        """
        def move(a: Any) -> Any:
            return as_tensor(a, device, non_blocking, pin_memory)

        return JaggedBatch(list(self.keys), move(self.values), move(self.lengths),
                           move(self.offsets), list(self.length_per_key),
                           list(self.offset_per_key), self.batch_size)

    def to_torchrec(self) -> Any:
        """A ``torchrec.sparse.jagged_tensor.KeyedJaggedTensor`` with the CPU metadata passed in.

        Requires TorchRec. NumPy batches are converted to CPU tensors first.
        """
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

        t = self if _is_torch(self.values) else self.to_torch()
        return KeyedJaggedTensor(keys=list(t.keys), values=t.values, lengths=t.lengths,
                                 offsets=t.offsets, stride=t.batch_size,
                                 length_per_key=list(t.length_per_key),
                                 offset_per_key=list(t.offset_per_key))

    def __repr__(self) -> str:
        return (f"JaggedBatch(keys={len(self.keys)}, batch_size={self.batch_size}, "
                f"values={len(self.values)})")


def offsets_dtype(total: int) -> type:
    """int32 offsets while they fit, else int64."""
    return np.int32 if total < 2**31 else np.int64


def _is_torch(a: Any) -> bool:
    return type(a).__module__.startswith("torch")


def as_tensor(a: Any, device: Any = None, non_blocking: bool = False,
              pin_memory: bool = False) -> Any:
    """A NumPy array (or a tensor) as a torch tensor on ``device``.

    CPU results share memory with the array (read-only arrays are copied). For a GPU,
    ``pin_memory`` copies the array to page-locked memory first so that ``non_blocking``
    copies overlap with computation.
    """
    import torch

    if not isinstance(a, torch.Tensor):
        a = np.ascontiguousarray(a)
        if not a.flags.writeable:  # e.g. a view of the loader's cache: never share it
            a = a.copy()
    t = a if isinstance(a, torch.Tensor) else torch.from_numpy(a)
    if device is None or torch.device(device).type == "cpu":
        return t
    if pin_memory and not t.is_pinned():
        t = t.pin_memory()
    return t.to(device, non_blocking=non_blocking)
