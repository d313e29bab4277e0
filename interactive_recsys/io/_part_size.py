"""How large a Dataset's partitions are: ``part_size``, in bytes.

>>> parse_part_size("128MB")
128000000
"""

from __future__ import annotations

import os

import psutil
from dask.utils import parse_bytes

from interactive_recsys.params import param_error
from interactive_recsys.runtime.cluster import MAX_PART_SIZE, MIN_PART_SIZE

__all__ = ["MAX_PART_SIZE", "MIN_PART_SIZE", "default_part_size", "parse_part_size"]


def default_part_size() -> int:
    """A sixteenth of a worker's memory (of the active Dask client, else of this machine)."""
    memory = None
    try:
        from distributed import default_client

        workers = default_client().scheduler_info(n_workers=-1)["workers"].values()
        limits = [w.get("memory_limit") or 0 for w in workers]
        memory = min(limit for limit in limits if limit) if any(limits) else None
    except (ValueError, ImportError):
        pass
    if memory is None:
        memory = psutil.virtual_memory().total // max(1, os.cpu_count() or 1)
    return int(min(MAX_PART_SIZE, max(MIN_PART_SIZE, memory // 16)))


def parse_part_size(part_size: str | int | None) -> int:
    if part_size is None:
        return default_part_size()
    try:
        size = parse_bytes(part_size) if isinstance(part_size, str) else int(part_size)
    except (ValueError, TypeError):
        size = -1
    if size <= 0:
        raise param_error("part_size", None, f"must be a positive size like '128MB' or "
                          f"a number of bytes. Got {part_size!r} instead.")
    return size
