"""Bad input and faults of the command line and the cluster (issue 23): each ends within its
timeout with a clear message and leaves nothing behind.

The hangs (a service that is not Dask, no workers, a memory limit too small for one
partition) run as real ``irs`` processes under a timeout: a hang fails the test instead of
stalling the suite. Every case checks the exit code, that stderr names the parameter or
address and the fix with no traceback, and that the output's folder is unchanged.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError
from interactive_recsys.runtime.cluster import ClusterError, ClusterTimeoutError

REPO = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


#: Seconds a process of these tests may run before it counts as hung: a guard only (its
#: start-up, interpreter and imports, takes seconds to a minute on a busy machine).
HANG_S = 300.0


def irs_cli(*args: str, cwd: Path, timeout: float = HANG_S) -> subprocess.CompletedProcess:
    """``irs ARGS`` as a real process; a hang past ``timeout`` fails the test."""
    try:
        return subprocess.run([sys.executable, "-m", "interactive_recsys.cli", *args],
                              cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"irs {' '.join(args)} still ran after {timeout} s")


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def not_dask():
    """A local HTTP server (a service that is not Dask); yields its tcp:// address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                             "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"tcp://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """``data/part.parquet`` and ``wf/`` (a saved workflow)."""
    (tmp_path / "data").mkdir()
    df = pd.DataFrame({"cat": [f"v{i % 5}" for i in range(50)], "x": range(50)})
    df.to_parquet(tmp_path / "data" / "part.parquet")
    wf = irs.Workflow((["cat"] >> ops.Categorify()) + ["x"])
    wf.fit(df)
    wf.save(str(tmp_path / "wf"))
    return tmp_path


def _run_args(ws: Path, *extra: str) -> list[str]:
    return ["run", "--workflow", str(ws / "wf"), "--input", str(ws / "data"), "--output",
            str(ws / "o"), *extra]


# ---- hang 1: a service that is not Dask, an address that is not one -------------------------
def test_connect_to_a_service_that_is_not_dask_ends_within_its_timeout(not_dask):
    # connect() itself is timed, not the interpreter's start and imports: with timeout=3 it
    # ends in seconds, not at distributed's 30 s default or never
    script = ("import time\nimport interactive_recsys as irs\nstarted = time.monotonic()\n"
              f"try:\n    irs.connect({not_dask!r}, timeout=3)\n"
              "except irs.cluster.ClusterTimeoutError as exc:\n    print('ERROR', exc)\n"
              "print('SECONDS', time.monotonic() - started)\n")
    try:
        done = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True,
                              text=True, timeout=HANG_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"connect() to an HTTP server still hung after {HANG_S:.0f} s")
    assert done.returncode == 0, done.stderr
    seconds = float(done.stdout.rsplit("SECONDS", 1)[1])
    assert seconds < 20, done.stdout
    assert "ERROR No Dask scheduler answered at" in done.stdout
    assert "never answered the Dask handshake" in done.stdout and not_dask in done.stdout


@pytest.mark.parametrize("address", ["not-an-address", "http://127.0.0.1:8787", 8786])
def test_connect_to_something_that_is_not_an_address(address):
    with pytest.raises(ClusterError, match=r"is not a Dask scheduler address.*tcp://"):
        irs.connect(address, timeout=1)


def test_cli_scheduler_that_is_not_dask(not_dask, workspace):
    before = listing(workspace)
    done = irs_cli(*_run_args(workspace, "--scheduler", not_dask), cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert f"No Dask scheduler answered at '{not_dask}'" in done.stderr
    assert "Traceback" not in done.stderr and listing(workspace) == before


@pytest.mark.parametrize("address", ["not-an-address", "http://127.0.0.1:8787"])
def test_cli_scheduler_that_is_not_an_address(address, workspace):
    before = listing(workspace)
    done = irs_cli(*_run_args(workspace, "--scheduler", address), cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert f"{address!r} is not a Dask scheduler address" in done.stderr
    assert "Traceback" not in done.stderr and listing(workspace) == before


# ---- hangs 2 and 4: no workers ------------------------------------------------------------
@pytest.mark.parametrize("workers", ["-1", "0", "two"])
def test_cli_workers_below_one_are_refused(workers, workspace):
    before = listing(workspace)
    done = irs_cli(*_run_args(workspace, "--workers", workers), cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert re.search(rf"argument --workers: must be an integer >= 1, got '{workers}'",
                     done.stderr), done.stderr
    assert listing(workspace) == before  # no .o.tmp-* folder


@pytest.mark.parametrize("n_workers", [0, -1, 1.5, True])
def test_start_cluster_without_workers_is_refused(n_workers):
    with pytest.raises(ParameterError, match=rf"'n_workers' parameter .* >= 1 .*{n_workers!r}"):
        irs.start_cluster(n_workers, gpu=False, dashboard=False)


# ---- hang 3: a memory limit too small for one partition --------------------------------------
@pytest.mark.parametrize(("extra", "named"), [
    (["--memory-limit", "1KB"], r"partitions: they are 16\.00 MiB each.*at least 256\.00 MiB"),
    (["--memory-limit", "300MB", "--part-size", "64MB"],
     r"they are 61\.04 MiB each.*Pass a memory limit of 458MB or more"),
    (["--memory-limit", "banana"], r"'memory_limit' parameter \(--memory-limit\) must be a "
                                   r"size like '2GB'.*Got 'banana'")])
def test_cli_memory_limit_too_small_or_unreadable_is_refused_up_front(extra, named, workspace):
    before = listing(workspace)
    done = irs_cli(*_run_args(workspace, *extra), cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert re.search(named, done.stderr), done.stderr
    assert "Traceback" not in done.stderr and listing(workspace) == before


def test_a_memory_limit_that_holds_the_partitions_is_accepted():
    from interactive_recsys.runtime.cluster import check_memory_limit

    check_memory_limit("300MB")  # 16 MiB default partitions: 256 MiB needed
    check_memory_limit("1GB", part_size=128 * 2**20)
    with pytest.raises(ParameterError, match="128.00 MiB each"):
        check_memory_limit("600MB", part_size=128 * 2**20)
    with pytest.raises(ParameterError, match=r"cannot hold the partitions.*269MB or more"):
        irs.start_cluster(1, memory_limit="1KB", gpu=False, dashboard=False)


# ---- 4: irs demo --rows -1 ---------------------------------------------------------------------
@pytest.mark.parametrize("rows", ["-1", "0"])
def test_cli_demo_without_rows_leaves_nothing(rows, tmp_path):
    done = irs_cli("demo", "--rows", rows, "--quiet", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"argument --rows: must be an integer >= 1, got '{rows}'" in done.stderr
    assert "Traceback" not in done.stderr and listing(tmp_path) == []


def test_connect_timeout_must_be_positive():
    with pytest.raises(ParameterError, match=r"'timeout' parameter of connect .* Got -1"):
        irs.connect("tcp://127.0.0.1:9", timeout=-1)
    with pytest.raises(ClusterTimeoutError):
        irs.connect("tcp://127.0.0.1:9", timeout=0.5)
