"""Cluster launcher and connection: real local clusters, real (unanswered) addresses."""

from __future__ import annotations

import os
import socket
import time

import pytest

import interactive_recsys as irs
from interactive_recsys.runtime.cluster import WORKER_ENV, ClusterError, ClusterTimeoutError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(name: str) -> str | None:
    return os.environ.get(name)


def test_cpu_cluster_binds_loopback_with_memory_limit_and_worker_env() -> None:
    from distributed import LocalCluster, default_client

    client = irs.start_cluster(1, memory_limit="300MB", dashboard=False, gpu=False)
    try:
        assert isinstance(client.cluster, LocalCluster)
        assert default_client() is client
        info = client.scheduler_info(n_workers=-1)
        assert info["address"].startswith("tcp://127.0.0.1:")
        [worker] = info["workers"].values()
        assert worker["memory_limit"] == 300_000_000
        assert all(address.startswith("tcp://127.0.0.1:") for address in info["workers"])
        env = client.run(_env, "ARROW_DEFAULT_MEMORY_POOL")
        assert list(env.values()) == [WORKER_ENV["ARROW_DEFAULT_MEMORY_POOL"]]
    finally:
        client.cluster.close()
        client.close()


def test_routine_shuffle_messages_stay_out_of_the_log_real_problems_do_not() -> None:
    """A P2P shuffle on an ``irs.start_cluster`` cluster logs nothing at WARNING (distributed
    logs two routine records per shuffle there, which a notebook shows in red)."""
    import logging

    import dask
    import dask.dataframe as dd
    import pandas as pd

    from interactive_recsys.runtime.cluster import _RoutineShuffleFilter

    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("distributed.shuffle._scheduler_plugin")
    logger.addHandler(handler)
    client = irs.start_cluster(2, memory_limit="300MB", dashboard=False, gpu=False)
    frame = dd.from_pandas(pd.DataFrame({"u": list(range(40)) * 5, "x": range(200)}),
                           npartitions=4)

    def shuffle_rows() -> int:
        with dask.config.set({"dataframe.shuffle.method": "p2p"}):
            return len(frame.shuffle(on="u").compute())

    try:
        filters = [f for f in logger.filters if isinstance(f, _RoutineShuffleFilter)]
        assert len(filters) == 1  # installed once by start_cluster
        for f in filters:
            logger.removeFilter(f)
        assert shuffle_rows() == 200
        routine = [r.getMessage() for r in records]
        assert any("initialized by task" in m for m in routine), routine  # what is dropped
        records.clear()
        irs.cluster.quiet_routine_shuffle_logs()
        assert shuffle_rows() == 200
        assert records == []
        logger.warning("Shuffle %s restarted due to stimulus '%s", "abc", "x")
        assert [r.getMessage() for r in records] == ["Shuffle abc restarted due to stimulus 'x"]
    finally:
        logger.removeHandler(handler)
        irs.stop_cluster(client)


def test_connect_to_an_existing_scheduler(client: object) -> None:
    other = irs.connect(client.scheduler.address, timeout=60)  # type: ignore[attr-defined]
    try:
        assert other.scheduler_info(n_workers=-1)["workers"].keys() == \
            client.scheduler_info(n_workers=-1)["workers"].keys()  # type: ignore[attr-defined]
        assert other.submit(sum, [1, 2, 3]).result() == 6
    finally:
        other.close()


def test_connect_to_an_address_that_does_not_answer_times_out_clearly() -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    started = time.perf_counter()
    with pytest.raises(ClusterTimeoutError) as info:
        irs.connect(address, timeout=1)
    assert time.perf_counter() - started < 15
    message = str(info.value)
    assert address in message and "dask scheduler" in message and "timeout=" in message
    assert isinstance(info.value, TimeoutError)


def test_gpu_true_without_a_gpu_says_how_to_fall_back() -> None:
    if irs.gpu_available():
        pytest.skip("this machine has a working GPU")
    with pytest.raises(ClusterError) as info:
        irs.start_cluster(gpu=True)
    message = str(info.value)
    assert "gpu=True" in message and "gpu=False" in message and "no" in message.lower()


def _cudf_spill_on() -> tuple[bool, bool, bool]:
    import cudf
    import dask
    from distributed.worker import DEFAULT_METRICS

    return (bool(cudf.get_option("spill")), bool(dask.config.get("distributed.diagnostics.cudf")),
            "cudf" in DEFAULT_METRICS)


def _start_environment() -> tuple[str | None, bool]:
    """The worker process's environment as it was when the process started (/proc), and
    the cuDF metric switch as Dask's configuration reads it from that environment."""
    import dask

    with open("/proc/self/environ", "rb") as f:
        start = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    value = start.get(b"DASK_DISTRIBUTED__DIAGNOSTICS__CUDF")
    from_env = dask.config.collect_env({"DASK_DISTRIBUTED__DIAGNOSTICS__CUDF": value.decode()}) \
        if value else {}
    return (value.decode() if value else None,
            bool(from_env.get("distributed", {}).get("diagnostics", {}).get("cudf")))


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="needs Linux /proc")
def test_cudf_metric_switch_is_in_the_worker_environment_from_its_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU cluster's worker environment (the cuDF spill metric switch) reaches worker
    processes before they import distributed.worker: checked on a CPU LocalCluster started
    through the same pre-spawn mechanism."""
    from distributed import Client, LocalCluster

    from interactive_recsys.runtime.cluster import _pre_spawn, worker_environment

    # the Nanny sets pre-spawn variables in this process too: start without, restore after
    monkeypatch.delenv("DASK_DISTRIBUTED__DIAGNOSTICS__CUDF", raising=False)
    with _pre_spawn(worker_environment(gpu=True)):
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None, memory_limit="300MB")
    try:
        with Client(cluster) as client:
            assert set(client.run(_start_environment).values()) == {("True", True)}
            # the CPU workers' own variables come through the same way
            assert set(client.run(_env, "ARROW_DEFAULT_MEMORY_POOL").values()) == {"system"}
    finally:
        cluster.close()


def test_gpu_cluster_is_started_with_host_cudf_spilling_and_the_metric_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """start_cluster(gpu=True) hands LocalCUDACluster host= (not the deprecated ip=), cuDF
    spilling with statistics, and the metric switch in the pre-spawn environment (a
    stand-in LocalCUDACluster records its call: this machine has no GPU)."""
    import sys
    import types

    import dask
    from distributed import LocalCluster

    from interactive_recsys.runtime import cluster as cluster_module

    calls = []

    def local_cuda_cluster(**kwargs):  # stand-in: records, then starts a CPU cluster
        calls.append((kwargs, dict(dask.config.get("distributed.nanny.pre-spawn-environ"))))
        return LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                            dashboard_address=None)

    monkeypatch.setitem(sys.modules, "dask_cuda",
                        types.SimpleNamespace(LocalCUDACluster=local_cuda_cluster))
    monkeypatch.setattr(cluster_module, "gpu_available", lambda: True)
    monkeypatch.delenv("DASK_DISTRIBUTED__DIAGNOSTICS__CUDF", raising=False)
    client = irs.start_cluster(gpu=True, dashboard=False, device_memory_limit=0.5)
    try:
        kwargs, environ = calls[0]
        assert kwargs["host"] == "127.0.0.1" and "ip" not in kwargs
        assert kwargs["enable_cudf_spill"] is True and kwargs["cudf_spill_stats"] == 1
        assert kwargs["device_memory_limit"] == 0.5
        assert environ["DASK_DISTRIBUTED__DIAGNOSTICS__CUDF"] == "True"
        assert environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"
    finally:
        client.cluster.close()
        client.close()


@pytest.mark.gpu
def test_gpu_cluster_has_one_worker_per_gpu_and_cudf_spilling() -> None:
    from dask_cuda import LocalCUDACluster

    from interactive_recsys.runtime.cluster import gpu_count

    client = irs.start_cluster(gpu=True, dashboard=False, device_memory_limit=0.5,
                               rmm_pool_size="512MB")
    try:
        assert isinstance(client.cluster, LocalCUDACluster)
        assert len(client.scheduler_info(n_workers=-1)["workers"]) == gpu_count()
        # the metric is registered in the worker (distributed.worker's import saw the switch)
        assert set(client.run(_cudf_spill_on).values()) == {(True, True, True)}
    finally:
        client.cluster.close()
        client.close()
