"""A scheduler lost mid-job (issue 40, item 14): one clear line, a distinct exit status, no
traceback, in the command line; :class:`ClusterLostError` in the API.

A real ``LocalCluster`` with no workers holds the job's tasks (they wait for a worker that
never comes), so the scheduler is closed while the job surely runs, at small scale.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli
from interactive_recsys.runtime import jobs
from tests.helpers import HANG_S

REPO = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def _no_worker_cluster() -> LocalCluster:
    return LocalCluster(n_workers=0, processes=False, dashboard_address=None,
                        protocol="tcp", host="127.0.0.1")


def _close(cluster: LocalCluster) -> None:
    """Close a cluster whose scheduler may be gone (its close would wait 30 s for it)."""
    with contextlib.suppress(TimeoutError):
        cluster.close(timeout=2)


def _wait_for_tasks(cluster: LocalCluster, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not cluster.scheduler.tasks:
        if time.monotonic() > deadline:
            pytest.fail("the job never reached the scheduler")
        time.sleep(0.05)


@pytest.fixture
def saved(tmp_path):
    df = pd.DataFrame({"c": np.arange(200) % 7, "x": np.arange(200.0)})
    df.to_parquet(tmp_path / "in.parquet")
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    wf.fit(df)
    wf.save(str(tmp_path / "wf"))
    return tmp_path


def test_irs_run_whose_scheduler_is_closed_mid_job_prints_one_line(saved):
    cluster = _no_worker_cluster()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "interactive_recsys.cli", "run", "--workflow", "wf",
             "--input", "in.parquet", "--output", "out", "--scheduler",
             cluster.scheduler_address], cwd=saved, env=ENV, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        _wait_for_tasks(cluster)  # the write phase is submitted and waits
        address = cluster.scheduler_address
        cluster.sync(cluster.scheduler.close)
        try:
            _, stderr = proc.communicate(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("irs run still ran 120 s after its scheduler was closed")
    finally:
        _close(cluster)
    assert proc.returncode == cli.EXIT_CLUSTER_LOST == 3, stderr
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("irs: error: ")]
    assert len(errors) == 1, stderr
    assert f"The Dask scheduler at {address} was lost while phase 'write' ran" in errors[0]
    assert "run the command again" in errors[0]
    assert not (saved / "out").exists()  # nothing published


def test_compute_raises_cluster_lost_error_in_the_api(saved):
    cluster = _no_worker_cluster()
    client = Client(cluster)
    got: dict = {}

    def fit() -> None:
        try:
            irs.Workflow(["x"] >> ops.Normalize()).fit(irs.Dataset(str(saved / "in.parquet")))
        except BaseException as exc:
            got["error"] = exc

    try:
        thread = threading.Thread(target=fit, daemon=True)
        thread.start()
        _wait_for_tasks(cluster)
        cluster.sync(cluster.scheduler.close)
        thread.join(120)
        assert not thread.is_alive(), "fit still ran after its scheduler was closed"
    finally:
        client.close()
        _close(cluster)
    err = got.get("error")
    assert isinstance(err, jobs.ClusterLostError), repr(err)
    assert isinstance(err, irs.IRSError) and isinstance(err, CancelledError)  # as before
    assert "was lost while phase" in str(err) and "fit" in str(err)


def test_a_cancelled_future_is_not_a_lost_scheduler():
    """A task cancelled on purpose while the scheduler runs is not reported as lost."""
    cluster = _no_worker_cluster()
    client = Client(cluster)
    try:
        future = client.submit(sum, [1, 2])
        client.cancel([future])
        assert not jobs.scheduler_lost(client, CancelledError("cancelled"), [future])
    finally:
        client.close()
        _close(cluster)
