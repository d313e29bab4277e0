"""Give the memory a task freed back to the system when a worker runs high.

glibc keeps freed blocks in its heaps for reuse and returns only the top of a heap
(``MALLOC_TRIM_THRESHOLD_``, which Dask sets for its workers). Blocks freed below a block
still in use stay in the process's RSS, and Dask counts them as unmanaged memory, the
memory that pauses and restarts workers. A fit's last phase leaves many such holes: on the
32M-row Kaggle-profile fit (2 workers x 3 GB) the workers held 661 and 956 MB after it and
318 and 376 MB once ``malloc_trim(0)`` had returned the free pages.

Trimming costs a page fault for each page used again: on the 100M-row job, where a
worker stays above a quarter of its limit, trimming after every task took 6% more CPU.
Below about half the limit the freed blocks do no harm (the next task reuses them), so
:class:`ReleaseFreedMemory` trims only after a task that left the worker's RSS above
:data:`RELEASE_ABOVE` of its memory limit, with at least :data:`MIN_FREE_BYTES` free in the
heaps: before Dask's thresholds (spill managed data at 60% of the limit, pause at 80%) count
freed memory as the worker's. Without glibc (macOS, musl) it does nothing.

>>> plugin = ReleaseFreedMemory()
>>> plugin.high(rss=1600 * 2**20, limit=3 * 2**30), plugin.high(rss=900 * 2**20, limit=3 * 2**30)
(True, False)
>>> plugin.high(rss=1600 * 2**20, limit=None)  # no limit, no trimming
False
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import time
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

#: Fraction of the worker's memory limit above which freed memory is returned after a task
#: (under Dask's ``distributed.worker.memory.target``, 0.6, where it starts spilling).
RELEASE_ABOVE = 0.5
#: Free heap bytes below which a trim is not worth its cost.
MIN_FREE_BYTES = 64 * 2**20


@functools.cache
def _trim_libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_memory() -> None:
    """Give freed heap memory back to the OS (glibc ``malloc_trim``), so that a memory-limited
    Dask worker does not see a partition's temporaries as unmanaged memory and pause."""
    libc = _trim_libc()
    if libc is not None:
        libc.malloc_trim(0)



class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (glibc >= 2.33)."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def glibc() -> Any | None:
    """glibc with ``malloc_trim`` and ``mallinfo2``, or ``None`` where there is none."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def free_heap_bytes(libc: Any) -> int:
    """Bytes free in glibc's heaps, held by the process (``mallinfo2().fordblks``)."""
    return int(libc.mallinfo2().fordblks)


class ReleaseFreedMemory(WorkerPlugin):
    """After each task, return freed heap memory (``malloc_trim(0)``) when the worker's RSS
    is above ``release_above`` of its memory limit and ``min_free`` bytes are free.

    ``stats`` counts the checks, the trims and the seconds they took.
    """

    name = "irs-release-freed-memory"

    def __init__(self, release_above: float = RELEASE_ABOVE,
                 min_free: int = MIN_FREE_BYTES) -> None:
        self.release_above, self.min_free = release_above, min_free
        self.stats = {"trims": 0, "trim_s": 0.0, "checks": 0}
        self._libc: Any = None
        self._worker: Any = None
        self._process: Any = None

    def setup(self, worker: Any) -> None:
        import psutil

        self._libc, self._worker, self._process = glibc(), worker, psutil.Process()

    def high(self, rss: int, limit: int | None) -> bool:
        """Whether ``rss`` is above ``release_above`` of ``limit`` (never without a limit)."""
        return bool(limit) and rss > self.release_above * limit

    def release_if_high(self) -> bool:
        """Trim when the worker runs high and enough is free; whether it trimmed."""
        if self._libc is None or not self.high(self._process.memory_info().rss,
                                               self._worker.memory_manager.memory_limit):
            return False  # the cheap test first: RSS is read from /proc, heaps are walked
        self.stats["checks"] += 1
        if free_heap_bytes(self._libc) < self.min_free:
            return False
        started = time.perf_counter()
        self._libc.malloc_trim(0)
        self.stats["trims"] += 1
        self.stats["trim_s"] += time.perf_counter() - started
        return True

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if start == "executing":
            self.release_if_high()
