"""``irs criteo s3://in s3://out`` (issue 54) against moto's S3 server: the day files are
listed and read from the bucket by the tasks of a 2-worker cluster, the output is published
with the commit protocol, a run killed at any point resumes, and the bytes are those of a
local run of the same files."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from interactive_recsys.cli._main import main
from interactive_recsys.datasets import criteo_to_torchrec
from interactive_recsys.datasets._criteo_input import criteo_input_files, parse_days
from interactive_recsys.datasets._criteo_remote import mirror_folder
from interactive_recsys.datasets._criteo_resume import PAUSE_ENV
from interactive_recsys.errors import DatasetError
from tests.unit.datasets.test_criteo_resume import OPTIONS, ROOT, _write_days

pytest.importorskip("s3fs")
SECRET = "s3cr3t-criteo-value"


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("s3days") / "in"
    _write_days(folder)
    return folder


@pytest.fixture
def options(s3) -> dict:
    return s3.options(secret=SECRET)


@pytest.fixture
def remote_days(days, bucket, options) -> str:
    import s3fs

    fs = s3fs.S3FileSystem(**options)
    for p in sorted(days.iterdir()):
        fs.put_file(str(p), f"{bucket}/raw/{p.name}")
    return f"s3://{bucket}/raw"


@pytest.fixture(autouse=True)
def own_tmpdir(tmp_path, monkeypatch) -> Path:
    """This process's temporary folder (where the mirror lies) is the test's own."""
    client_tmp = tmp_path / "client-tmp"
    client_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(client_tmp))
    return client_tmp


def _local_digests(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())
            if p.suffix == ".npy"}


def _remote_digests(url: str, options: dict) -> dict[str, str]:
    import s3fs

    fs = s3fs.S3FileSystem(**options)
    fs.invalidate_cache()
    return {p.rsplit("/", 1)[1]: hashlib.sha256(fs.cat_file(p)).hexdigest()
            for p in sorted(fs.ls(url[5:], detail=False)) if p.endswith(".npy")}


@pytest.fixture(scope="module")
def reference(days, tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("s3reference") / "out"
    criteo_to_torchrec(days, out, frequency_threshold=2, progress=False)
    return _local_digests(out)


def test_the_day_files_are_listed_on_the_bucket_and_days_picks_them(remote_days, options):
    files = criteo_input_files(remote_days, parse_days("0,2"), options)
    assert files == [(f"{remote_days}/day_0", "day_0"), (f"{remote_days}/day_2.gz", "day_2")]
    with pytest.raises(DatasetError, match="has no day_5 file"):
        criteo_input_files(remote_days, parse_days("5"), options)
    with pytest.raises(DatasetError, match="does not exist or is empty"):
        criteo_input_files(remote_days + "-missing", None, options)


def test_a_2_worker_cluster_reads_the_bucket_and_publishes_the_local_run_bytes(
        remote_days, options, reference, tmp_path, own_tmpdir):
    distributed = pytest.importorskip("distributed")
    workers_tmp = tmp_path / "workers-tmp"  # the workers' own temporary folder, not ours
    workers_tmp.mkdir()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="1GB",
                                  env={"TMPDIR": str(workers_tmp)}) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        out = remote_days.rsplit("/", 1)[0] + "/out"
        summary = criteo_to_torchrec(remote_days, out, client=client, storage_options=options,
                                     **OPTIONS)
        # the parse tasks ran in the workers: their pids are not this process's
        pids = client.run(os.getpid)
        worker_tmps = set(client.run(tempfile.gettempdir).values())
    assert os.getpid() not in pids.values()
    assert worker_tmps == {str(workers_tmp)} != {tempfile.gettempdir()}
    assert summary["units"]["parse"] == {"kept": 0, "done": 9}  # 4 + 4 ranges + 1 gz day
    assert summary["output"] == out and summary["cluster"] == "2 workers"
    assert _remote_digests(out, options) == reference
    import s3fs

    fs = s3fs.S3FileSystem(**options)
    names = sorted(p.rsplit("/", 1)[1] for p in fs.ls(out[5:], detail=False))
    assert "_SUCCESS" in names and "_summary.json" in names and "_temporary" not in names
    assert not os.path.exists(os.path.dirname(mirror_folder(out)))  # the mirror is gone
    assert list(workers_tmp.iterdir()) == []  # the workers' range files were removed


def _killed_at(point: str, command: list[str], client_tmp: Path) -> None:
    paused = client_tmp.parent / f"paused-{point.replace(':', '-')}"
    env = dict(os.environ, **{PAUSE_ENV: point, PAUSE_ENV + "D": str(paused)},
               TMPDIR=str(client_tmp),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(command, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240  # a hang guard, not a timing check
    while not paused.exists():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {point}: {proc.communicate()[1].decode()[-2000:]}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the run never reached {point}")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    out, err = proc.communicate()
    assert SECRET.encode() not in out + err


@pytest.mark.parametrize("point", ["parse:day_1.0", "map:day_0.0", "upload"])
def test_a_killed_run_to_the_bucket_resumes_to_the_local_run_bytes(
        point, remote_days, options, reference, own_tmpdir, capsys):
    out = remote_days.rsplit("/", 1)[0] + "/out"
    args = ["criteo", remote_days, out, "--storage-options", json.dumps(options),
            "--frequency-threshold", "2", "--quiet"]
    # killed with its 2 workers (the parse pauses inside a worker process)
    _killed_at(point, [sys.executable, "-m", "interactive_recsys.cli", *args, "--workers", "2",
                       "--memory-limit", "1GB"], own_tmpdir)
    import s3fs

    fs = s3fs.S3FileSystem(**options)
    assert not fs.exists(f"{out[5:]}/_SUCCESS")  # nothing published yet
    markers = [p.name for p in own_tmpdir.glob("irs-criteo-mirror/*/.out.tmp-*/_staging/units/"
                                                "*.json")]
    parsed = sum(n.startswith("parse.") for n in markers)
    assert main([*args, "--local"]) == 0
    text = capsys.readouterr()
    assert SECRET not in text.out + text.err
    assert _remote_digests(out, options) == reference
    if point == "upload":  # the whole mirror was converted: only the upload is done again
        assert "resumed a killed run: kept publish 1/1 units of work" in text.out
    elif point == "map:day_0.0":  # every unit before the map was recorded and kept
        assert "resumed a killed run: kept parse 3/3, join 3/3, dense 3/3, fit 26/26" in text.out
    elif parsed:  # the ranges the killed run's workers had sent back and it recorded
        assert f"resumed a killed run: kept parse {parsed}/3" in text.out
    assert not os.path.exists(os.path.dirname(mirror_folder(out)))
    with pytest.raises(DatasetError, match="already exists"):
        criteo_to_torchrec(remote_days, out, storage_options=options, progress=False)
    assert main([*args, "--overwrite", "--plan"]) == 2  # --plan reads local files only
    assert "--plan reads local day files" in capsys.readouterr().err


def test_day_files_on_the_bucket_to_a_local_folder(remote_days, options, reference, tmp_path):
    summary = criteo_to_torchrec(remote_days, tmp_path / "out", storage_options=options,
                                 **OPTIONS)
    assert summary["made_from"]["inputs"][0]["path"] == remote_days + "/day_0"
    assert _local_digests(tmp_path / "out") == reference


def test_a_parse_task_reads_its_range_from_the_bucket_and_sends_264_bytes_a_row(
        remote_days, options, days):
    from interactive_recsys.datasets import _criteo_torchrec as ct
    from interactive_recsys.datasets._criteo_remote import parse_remote_range
    from interactive_recsys.datasets._criteo_tsv import line_ranges

    ranges = line_ranges(days / "day_0", 96 << 10)
    (start, stop) = ranges[1]
    sent = parse_remote_range(remote_days + "/day_0", options, "day_0", 1, (start, stop),
                              16 << 10, 0, ct._parse_range, ct._parse_files)
    rows = (days / "day_0").read_bytes()[start:stop].count(b"\n")
    assert sent["result"]["rows"] == rows > 0
    arrays = {k: v for k, v in sent["files"].items() if not k.startswith("day_0.1_ids")}
    assert sorted(arrays) == ["day_0.1_dense_raw.npy", "day_0.1_labels.npy",
                              "day_0.1_sparse.npy"]
    header = 128  # numpy's .npy header of these arrays
    assert sum(len(v) for v in arrays.values()) == rows * (4 + 26 * 8 + 13 * 4) + 3 * header
