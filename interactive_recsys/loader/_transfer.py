"""The transfer stage: batches to torch tensors, and to a GPU on a side CUDA stream.

On a CUDA device the copy runs in the transfer thread: host arrays are copied into pinned
(page-locked) memory, then sent with ``non_blocking=True`` on a dedicated stream, and an
event is recorded. Before the consumer gets the batch, its current stream waits for that
event (no host synchronization), and every tensor is marked as used by that stream so the
caching allocator does not reuse its memory too early.

Examples
--------
>>> to_device, finish = device_stages(None)
>>> to_device is None and finish is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interactive_recsys.loader._batch import Batch


def device_stages(device: Any, pin_memory: bool = True,
                  after: Callable[[Batch], Batch] | None = None
                  ) -> tuple[Callable[[Batch], Any] | None, Callable[[Any], Batch] | None]:
    """``(transfer, finish)`` for :class:`~.pipeline.BatchIterator`; ``(None, None)`` on CPU.

    ``after(batch)`` runs on the device batch right after the copy, in the transfer thread
    and on the copy stream (the online transform): its kernels are queued behind the copy
    and the consumer's stream waits for them too."""
    if device is None:
        return None, None
    import torch

    device = torch.device(device)
    if device.type == "cpu":
        return None, None
    if device.type != "cuda":  # e.g. "mps": plain copies, pinned when possible
        def plain(b: Batch) -> Batch:
            moved = b.to_torch(device, non_blocking=False)
            return moved if after is None else after(moved)
        return plain, None
    stream = torch.cuda.Stream(device=device)

    def transfer(batch: Batch) -> tuple[Batch, Any]:
        with torch.cuda.stream(stream):
            moved = batch.to_torch(device, non_blocking=True, pin_memory=pin_memory)
            if after is not None:
                moved = after(moved)
            event = torch.cuda.Event()
            event.record(stream)
        return moved, event

    def finish(item: tuple[Batch, Any]) -> Batch:
        moved, event = item
        current = torch.cuda.current_stream(device)
        current.wait_event(event)
        for t in _tensors(moved):
            t.record_stream(current)
        return moved

    return transfer, finish


def _tensors(batch: Batch) -> list[Any]:
    s = batch.sparse
    out = [batch.dense, batch.labels, s.values, s.lengths, s.offsets, *batch.extras.values()]
    return [t for t in out if t is not None]
