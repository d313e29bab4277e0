"""Cluster launcher and connection: real local clusters, real (unanswered) addresses."""

from __future__ import annotations

import os
import socket
import time

import pytest

import interactive_recsys as irs
from interactive_recsys.cluster import WORKER_ENV, ClusterError, ClusterTimeoutError


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


def test_connect_to_an_existing_scheduler(client: object) -> None:
    other = irs.connect(client.scheduler.address, timeout=5)  # type: ignore[attr-defined]
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


def _cudf_spill_on() -> tuple[bool, bool]:
    import cudf
    import dask

    return bool(cudf.get_option("spill")), bool(dask.config.get("distributed.diagnostics.cudf"))


@pytest.mark.gpu
def test_gpu_cluster_has_one_worker_per_gpu_and_cudf_spilling() -> None:
    from dask_cuda import LocalCUDACluster

    from interactive_recsys.cluster import gpu_count

    client = irs.start_cluster(gpu=True, dashboard=False, device_memory_limit=0.5,
                               rmm_pool_size="512MB")
    try:
        assert isinstance(client.cluster, LocalCUDACluster)
        assert len(client.scheduler_info(n_workers=-1)["workers"]) == gpu_count()
        assert set(client.run(_cudf_spill_on).values()) == {(True, True)}
    finally:
        client.cluster.close()
        client.close()
