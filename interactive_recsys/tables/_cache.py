"""The one per-process cache of loaded statistics tables (vocabularies, keyed statistics).

Lookups run once per partition and read the same split files again and again; each file is
read and indexed once per process, kept while it is unchanged (keyed by path and
modification time), least recently used first out, and bounded in bytes
(:func:`cache_budget`).

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
>>> pq.write_table(pa.table({"value": ["a", "b"]}), path)
>>> cache = TableCache()
>>> first = cache.get(path, lambda table: table.combine_chunks())
>>> cache.get(path, lambda table: 1 / 0) is first   # not loaded again
True
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from interactive_recsys.store import storage


def cache_budget(memory_limit: int | None = None) -> int:
    """Bytes of tables a process keeps loaded: a quarter of the Dask worker's memory limit
    (the cache is memory Dask cannot spill, so it must leave room for partitions; with a
    tenth, the vocabularies of 32M Kaggle-profile rows, 21M distinct values in the five
    widest columns, no longer fitted a 12 GB worker's cache and were re-read for every
    partition: 3.4x the transform's time), or a quarter of this machine's memory outside a
    worker (``IRS_VOCAB_CACHE_BYTES`` overrides). ``memory_limit``: the worker's limit, for
    a caller outside the worker's tasks (where the worker is not found).
    """
    if os.environ.get("IRS_VOCAB_CACHE_BYTES"):
        return int(os.environ["IRS_VOCAB_CACHE_BYTES"])
    limit = memory_limit
    try:
        from distributed import get_worker

        limit = limit or get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):
        pass
    if limit:
        return int(limit) // 4
    import psutil

    return int(psutil.virtual_memory().total) // 4


class TableCache:
    """Loaded tables, bounded in bytes (at least one table is kept).

    ``get(path, load)`` reads the parquet file and keeps ``load(table)`` (anything with an
    ``nbytes``). When the tables a job needs do not fit, they are re-read as needed: slower,
    but the worker stays inside its memory limit. Threads asking for one file at once read
    it once.

    What goes when the budget is full: a table unused for :data:`STALE_S` seconds (a job
    that ended), least recently used first; else, while every table is in use, the most
    recently used one. A transform visits the same tables in the same order on every
    partition, and least-recently-used eviction of such a cycle misses every time once it
    is a little larger than the budget (each table is evicted just before its turn); this
    way only the overflow is re-read.
    """

    def __init__(self) -> None:
        self._tables: OrderedDict[tuple[str, int], Any] = OrderedDict()
        self._bytes = 0  # sum of the entries' nbytes, kept as they come and go
        self._used: dict[tuple[str, int], float] = {}  # last use (time.monotonic)
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        #: what the cache did since it was made or cleared (see :meth:`stats`)
        self._counts = dict.fromkeys(("hits", "loads", "evictions", "peak_bytes"), 0)

    def get(self, path: str, load: Callable[[pa.Table], Any],
            storage_options: storage.StorageOptions = None) -> Any:
        """``load(table)`` of the parquet file ``path`` (a local path or an fsspec URL,
        opened with ``storage_options``)."""
        with self._lock:
            loading = self._loading.setdefault(path, threading.Lock())
        with loading:
            key = (path, storage.version(path, storage_options))
            with self._lock:
                if key in self._tables:
                    self._counts["hits"] += 1
                    self._tables.move_to_end(key)
                    self._used[key] = time.monotonic()
                    return self._tables[key]
            loaded = self.put(path, storage.read_table(path, storage_options), load,
                              storage_options)
            with self._lock:
                self._counts["loads"] += 1
            return loaded

    def put(self, path: str, table: pa.Table, load: Callable[[pa.Table], Any],
            storage_options: storage.StorageOptions = None) -> Any:
        """Keep ``load(table)`` for ``path`` (e.g. a table just written there)."""
        loaded = load(table)
        key = (path, storage.version(path, storage_options))
        with self._lock:
            old = self._tables.pop(key, None)
            self._bytes += loaded.nbytes - (old.nbytes if old is not None else 0)
            self._tables[key] = loaded
            self._used[key] = time.monotonic()
            self._counts["peak_bytes"] = max(self._counts["peak_bytes"], self._bytes)
            budget = cache_budget()
            while len(self._tables) > 1 and self._bytes > budget:
                victim = self._victim(key)
                self._bytes -= self._tables.pop(victim).nbytes
                del self._used[victim]
                self._counts["evictions"] += 1
        return loaded

    def stats(self, memory_limit: int | None = None) -> dict[str, int]:
        """What the cache did since it was made or cleared: ``hits`` (tables found loaded),
        ``loads`` (files read), ``evictions``, ``peak_bytes``; and what it holds now,
        ``tables`` and ``bytes``, against ``budget`` (:func:`cache_budget` of
        ``memory_limit``, when called outside a worker's task). A job whose
        ``loads`` exceed its tables re-read some of them: their bytes did not fit."""
        with self._lock:
            return {**self._counts, "tables": len(self._tables), "bytes": self._bytes,
                    "budget": cache_budget(memory_limit)}

    def _victim(self, new: tuple[str, int]) -> tuple[str, int]:
        """The entry to evict to make room for ``new`` (see the class)."""
        oldest = next(iter(self._tables))
        if oldest != new and time.monotonic() - self._used[oldest] > STALE_S:
            return oldest
        return next(k for k in reversed(self._tables) if k != new)

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()
            self._used.clear()
            self._bytes = 0
            self._counts = dict.fromkeys(self._counts, 0)


#: Seconds after its last use that a table counts as no longer in use (its job ended).
STALE_S = 60.0

#: The process's cache: every lookup of a vocabulary or statistics table goes through it.
TABLES = TableCache()
