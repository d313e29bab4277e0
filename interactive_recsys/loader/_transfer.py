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
from interactive_recsys.params import param_error

_DEVICE_EXAMPLES = "'cpu', 'cuda', 'cuda:0' or 'mps'"


def check_device(device: Any, owner: str = "Loader") -> None:
    """Refuse ``device`` when PyTorch does not know it, or it is not available here.

    CUDA is checked without starting it (``torch.cuda.is_available``, the device count),
    so that a process may still fork after making a loader; any other device but the CPU
    is tried with an empty tensor.

    >>> check_device("cpu")
    >>> check_device("tpu")
    Traceback (most recent call last):
    ...
    interactive_recsys.errors.ParameterError: The 'device' parameter of Loader must be a \
PyTorch device such as 'cpu', 'cuda', 'cuda:0' or 'mps'. Got 'tpu' instead ...
    """
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        why = _reason(exc)
        if why.startswith("Expected one of"):  # its list of every type PyTorch knows
            kind = str(device).split(":")[0]
            why = f"PyTorch has no device type {kind!r}" + (
                "; a TPU is 'xla', with torch_xla" if kind.lower() == "tpu" else "")
        raise param_error("device", owner, f"must be a PyTorch device such as "
                          f"{_DEVICE_EXAMPLES}. Got {device!r} instead ({why}).") from None
    if dev.type == "cpu":
        return
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = ("this PyTorch was built without CUDA" if torch.version.cuda is None
                   else "PyTorch finds no CUDA GPU on this machine")
            raise param_error("device", owner, f"is {device!r}, but CUDA is not available "
                              f"here ({why}). Pass device='cpu' (or leave device=None) to "
                              "load on the CPU, or run where a GPU is.")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise param_error("device", owner, f"is {device!r}, but this machine has "
                              f"{count} CUDA device(s): cuda:0 to cuda:{count - 1}. Pass one "
                              "of them, or device='cpu'.")
        return
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as exc:  # not built in, no such hardware
        raise param_error("device", owner, f"is {device!r}, but PyTorch cannot use it here "
                          f"({_reason(exc)}). Pass device='cpu' (or leave device=None) to load "
                          "on the CPU.") from None


def _reason(exc: BaseException, limit: int = 160) -> str:
    """The first sentence of PyTorch's message (some run to many lines)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    end = text.find(". ")
    text = text[:end] if 0 < end < limit else text
    return text if len(text) <= limit else text[:limit - 3] + "..."


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
