"""Monitor against a real LocalCluster running a real workflow (fit, write, persist)."""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import dask
import distributed  # noqa: F401  (its config must exist before dask.config.set below)
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.runtime.monitor import MEMORY_FIELDS, Monitor, task_group

ROWS, FILES = 240_000, 6


def _write_input(directory: str) -> str:
    """Six parquet files of a Criteo-like table (strings and numbers), seeded."""
    rng = np.random.default_rng(7)
    path = os.path.join(directory, "in")
    os.makedirs(path)
    vocab = np.array([f"item-{i:05d}" for i in range(5000)])
    per = ROWS // FILES
    for f in range(FILES):
        table = pa.table({"C1": vocab[rng.zipf(1.3, per) % 5000],
                          "C2": vocab[rng.integers(0, 300, per)],
                          "I1": rng.poisson(4, per).astype(np.int64),
                          "F1": rng.normal(0, 1, per)})
        pq.write_table(table, os.path.join(path, f"part-{f}.parquet"))
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One monitored run: fit (2 phases), write, then persist the output on a worker whose
    memory target is forced low, so that it spills to disk."""
    tmp = str(tmp_path_factory.mktemp("monitor"))
    source = _write_input(tmp)
    low = {"distributed.worker.memory.target": 0.01, "distributed.worker.memory.spill": False,
           "distributed.worker.memory.pause": False, "distributed.worker.memory.terminate": False}
    with dask.config.set(low):
        client = irs.start_cluster(2, memory_limit="400MB", dashboard=False, gpu=False)
    try:
        monitor = Monitor(client, interval_ms=100)
        ds = irs.Dataset(source)
        node = (["C1", "C2"] >> ops.Categorify() >> ops.Normalize()) + (
            ["I1", "F1"] >> ops.FillMissing(0) >> ops.Normalize())
        wf = irs.Workflow(node, artifacts_dir=os.path.join(tmp, "artifacts"))
        wf.fit(ds)
        out = wf.transform(ds)
        summary = out.to_parquet(os.path.join(tmp, "out"))
        from distributed import wait

        persisted = client.persist(irs.Dataset(source).to_ddf())
        wait(persisted)
        time.sleep(1.2)  # a couple of heartbeats: the scheduler sees the spilled data
        monitor.stop()
        monitor.sample()  # the last records of the task stream
        yield {"monitor": monitor, "client": client, "workflow": wf, "summary": summary}
        del persisted
    finally:
        client.close()
        client.cluster.close()


def _series(monitor: Monitor, field: str) -> list[int]:
    return [sum(w[field] for w in s["workers"].values()) for s in monitor.samples]


def test_memory_series_move_and_add_up(run: dict[str, Any]) -> None:
    monitor = run["monitor"]
    assert len(monitor.samples) >= 5
    for sample in monitor.samples:
        assert len(sample["workers"]) == 2
        for w in sample["workers"].values():
            assert set(MEMORY_FIELDS) <= set(w) and w["limit"] == 400_000_000
            assert w["process"] == w["managed"] + w["unmanaged"]  # the scheduler's identity
            assert w["unmanaged"] == w["unmanaged_old"] + w["unmanaged_recent"]
    process, managed = _series(monitor, "process"), _series(monitor, "managed")
    assert min(process) > 0 and len(set(process)) > 1
    assert managed[0] == 0 and max(managed) > 0
    times = [s["time"] for s in monitor.samples]
    assert times == sorted(times) and times[-1] - times[0] > 0.5


def test_spill_to_disk_shows_up_with_a_low_memory_target(run: dict[str, Any]) -> None:
    spilled = _series(run["monitor"], "spilled")
    assert spilled[0] == 0
    assert spilled[-1] > 0  # 400 MB limit x 1% target: the persisted table goes to disk


def test_task_stream_records_carry_the_workflow_operators(run: dict[str, Any]) -> None:
    monitor, client = run["monitor"], run["client"]
    tasks = list(monitor.tasks)
    workers = set(client.scheduler_info(n_workers=-1)["workers"])
    groups = {t["group"] for t in tasks}
    operators = {type(n.op).__name__.lower() for n in run["workflow"].nodes if n.kind == "op"}
    assert operators == {"categorify", "normalize", "fillmissing"}
    # every statistics operator names its own tasks; fillmissing runs inside fit/transform
    assert {"categorify", "normalize", "fit", "write_part"} <= groups
    assert any("transform" in g for g in groups)  # transform tasks (fused with their read)
    for t in tasks:
        assert t["worker"] in workers and t["start"] <= t["stop"]
        assert t["action"] in {"compute", "transfer", "disk-read", "disk-write"}
        assert t["group"] == task_group(t["key"])
    keys = [(t["key"], t["start"], t["action"]) for t in tasks]
    assert len(keys) == len(set(keys))  # incremental reads never repeat a record
    assert sum(t["group"] == "write_part" for t in tasks) == len(run["summary"]["files"])


def test_progress_reaches_100_percent_per_phase(run: dict[str, Any]) -> None:
    phases = run["monitor"].progress()
    assert [p["name"] for p in phases] == ["fit 1/2", "fit 2/2", "write"]
    for p in phases:
        assert p["status"] == "finished" and p["fraction"] == 1.0 and p["done"] == p["total"]
        assert p["stopped"] >= p["started"]
    from interactive_recsys.runtime.jobs import BOARD

    # the Monitor counted each phase's tasks in the task stream, all of them
    for phase in BOARD.phases(run["monitor"].started - 1)[:3]:
        assert phase.observed == phase.total > FILES


def test_without_gpu_series_are_absent(run: dict[str, Any]) -> None:
    if irs.gpu_available():
        pytest.skip("this machine has a GPU")
    monitor = run["monitor"]
    assert not monitor.has_gpu and monitor.gpu_status == "no GPU"
    assert all("gpus" not in s for s in monitor.samples)
    assert "no GPU" in repr(monitor)


def test_overhead_is_measured(run: dict[str, Any]) -> None:
    overhead = run["monitor"].overhead()
    assert overhead["samples"] == len(run["monitor"].samples)
    assert 0 < overhead["mean_ms"] <= overhead["max_ms"]
    assert 0 < overhead["busy_fraction"] < 1


def _until(ready: Any, timeout: float = 120.0) -> None:
    """Wait until ``ready()`` holds: a guard against a hang only."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"not true after {timeout} s"
        time.sleep(0.05)


def _unchanged_for(value: Any, seconds: float) -> bool:
    """Whether ``value()`` stays the same for ``seconds``."""
    before = value()
    time.sleep(seconds)
    return value() == before


def test_ring_buffers_are_bounded_and_pause_resume_stop(client: object) -> None:
    # monitors of earlier tests' widgets may still be closing: only this one's thread counts
    before = {t for t in threading.enumerate() if t.name == "irs-monitor"}
    monitor = Monitor(client, interval_ms=50, maxlen=3, start=False)
    for _ in range(5):
        monitor.sample()
    assert len(monitor.samples) == 3
    monitor.start()
    _until(lambda: len(monitor._sample_seconds) > 5)  # the thread samples
    monitor.pause()
    # a sample under way when it paused may still end (late on a busy machine): then none
    _until(lambda: _unchanged_for(lambda: len(monitor._sample_seconds), 1.0))
    count = len(monitor._sample_seconds)
    time.sleep(0.3)
    assert len(monitor._sample_seconds) == count  # paused: no sampling
    monitor.resume()
    _until(lambda: len(monitor._sample_seconds) > count)
    monitor.close()
    assert not monitor.running
    assert not [t for t in threading.enumerate() if t.name == "irs-monitor" and t not in before]


def test_subscriber_errors_are_recorded_not_raised(client: object) -> None:
    monitor = Monitor(client, start=False)
    seen: list[int] = []

    def broken(m: Monitor, sample: dict, tasks: list) -> None:
        seen.append(len(sample["workers"]))
        raise ValueError("boom")

    monitor.subscribe(broken)
    monitor.sample()
    assert seen == [2] and "boom" in monitor.errors[-1]
    monitor.close()


def test_monitor_needs_a_client() -> None:
    with dask.config.set(scheduler="threads"), \
            pytest.raises(irs.ParameterError, match="start_cluster"):
        Monitor(None)
    with pytest.raises(irs.ParameterError, match="interval_ms"):
        Monitor(None, interval_ms=0)


def test_device_limit_is_the_device_buffer_size_of_dask_cudas_host_file() -> None:
    """dask-cuda's DeviceHostFile keeps device objects in ``device_buffer``, a zict.Buffer
    whose ``n`` is the device_memory_limit (DeviceHostFile has no attribute of that name)."""
    from types import SimpleNamespace

    import zict

    from interactive_recsys.runtime.monitor import _device_limit

    host_file = SimpleNamespace(device_buffer=zict.Buffer({}, {}, n=123_456_789),
                                device_memory_limit=None)
    assert _device_limit(SimpleNamespace(data=host_file)) == 123_456_789
    no_limit = SimpleNamespace(device_buffer={})  # device_memory_limit=None: a plain dict
    if importlib.util.find_spec("cudf") is None:
        assert _device_limit(SimpleNamespace(data=no_limit)) is None
        assert _device_limit(SimpleNamespace(data={})) is None


@pytest.mark.gpu
def test_gpu_series_from_nvml_and_cudf_spill_metric() -> None:
    client = irs.start_cluster(gpu=True, dashboard=False, device_memory_limit=0.5)
    try:
        monitor = Monitor(client, start=False)
        import cudf

        frame = cudf.DataFrame({"a": np.arange(1_000_000)})
        pd.testing.assert_series_equal(frame["a"].to_pandas(), pd.Series(np.arange(1_000_000),
                                                                         name="a"))
        sample = monitor.sample()
        assert monitor.has_gpu and "GPU" in monitor.gpu_status
        devices = [g for gpus in sample["gpus"].values() for g in gpus]
        assert devices and all(0 < g["used"] <= g["total"] for g in devices)
        assert all(g["limit"] and g["limit"] < g["total"] for g in devices)
        assert all("cudf-spilled" in (w["cudf"] or {}) for w in sample["workers"].values())
        monitor.close()
    finally:
        client.close()
        client.cluster.close()


def test_monitor_of_a_scheduler_reached_by_address(client: object) -> None:
    remote = irs.connect(client.scheduler.address, timeout=60)  # type: ignore[attr-defined]
    try:
        monitor = Monitor(remote, start=False)
        sample = monitor.sample()
        assert set(sample["workers"]) == set(
            client.scheduler_info(n_workers=-1)["workers"])  # type: ignore[attr-defined]
        monitor.close()
    finally:
        remote.close()
