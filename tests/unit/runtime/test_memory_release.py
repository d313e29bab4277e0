"""Freed heap memory goes back to the system after a task when a worker runs high: a real
one-worker cluster, a task that leaves 450 MiB of holes in glibc's heap."""

from __future__ import annotations

import os

import numpy as np
import pytest

import interactive_recsys as irs
from interactive_recsys.runtime._memory_release import ReleaseFreedMemory, glibc

pytestmark = pytest.mark.skipif(glibc() is None, reason="needs glibc (malloc_trim, mallinfo2)")

NAME = ReleaseFreedMemory.name


def _leave_holes(mib: int) -> np.ndarray:
    """Touch ``mib`` blocks of 1 MiB (heap blocks: the worker's mmap threshold is 32 MiB),
    free all but the last, so the freed ones lie below a block still in use."""
    blocks = [np.ones(2**17) for _ in range(mib)]  # 2**17 float64 = 1 MiB each
    return blocks[-1]


def _rss_mib() -> int:
    import psutil

    return psutil.Process().memory_info().rss >> 20


def _trim() -> int:
    return glibc().malloc_trim(0)


def _stats(dask_worker: object) -> dict:
    return dict(dask_worker.plugins[NAME].stats)  # type: ignore[attr-defined]


def _rss_after_holes(client: object) -> int:
    client.run(_trim)  # type: ignore[attr-defined]
    before = sum(client.run(_rss_mib).values())  # type: ignore[attr-defined]
    kept = client.submit(_leave_holes, 450, pure=False)  # type: ignore[attr-defined]
    kept.result()
    after = sum(client.run(_rss_mib).values())  # type: ignore[attr-defined]
    del kept
    return after - before


def test_start_cluster_workers_give_freed_memory_back_when_high() -> None:
    """300 MiB of the 450 MiB of holes stay resident without the plugin; with it (the
    worker above half of its 1 GB limit) they are returned after the task."""
    client = irs.start_cluster(1, memory_limit="1GB", dashboard=False, gpu=False)
    try:
        assert list(client.run(lambda dask_worker: NAME in dask_worker.plugins).values()) \
            == [True]
        with_plugin = _rss_after_holes(client)
        [stats] = client.run(_stats).values()
        assert stats["trims"] >= 1 and stats["checks"] >= stats["trims"]
        client.unregister_worker_plugin(NAME)
        without = _rss_after_holes(client)
    finally:
        client.cluster.close()
        client.close()
    assert without >= 300, without  # the holes are resident: the test can see them
    assert with_plugin <= without - 250, (with_plugin, without)


def test_a_worker_below_its_threshold_or_without_a_limit_is_left_alone() -> None:
    """No trimming under ``release_above`` of the limit, nor with no limit at all."""
    plugin = ReleaseFreedMemory(release_above=0.5)
    limit = 2 * 2**30
    assert not plugin.high(rss=limit // 2, limit=limit)
    assert plugin.high(rss=limit // 2 + 1, limit=limit)
    assert not plugin.high(rss=10 * limit, limit=None)
    assert not plugin.high(rss=10 * limit, limit=0)


def test_no_trim_when_too_little_is_free() -> None:
    """Above the threshold but with less than ``min_free`` free: checked, not trimmed."""

    class Worker:
        class memory_manager:  # the attribute path of a Dask Worker
            memory_limit = 1

    plugin = ReleaseFreedMemory(release_above=0.0, min_free=2**62)
    plugin.setup(Worker())
    assert plugin.release_if_high() is False
    assert plugin.stats == {"trims": 0, "trim_s": 0.0, "checks": 1}
    plugin.min_free = 0
    assert plugin.release_if_high() is True
    assert plugin.stats["trims"] == 1
    assert os.getpid() == plugin._process.pid
