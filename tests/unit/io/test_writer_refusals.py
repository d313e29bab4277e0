"""The parquet writer: bad parameters, unwritable outputs, a full disk, and the temporaries
of killed and live writers.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import interactive_recsys as irs
from interactive_recsys.cli import _main as cli
from interactive_recsys.errors import ParameterError
from interactive_recsys.store._outputs import OutputError, clean_stale, stale_temporaries
from tests.helpers import HANG_S, digest_tree, tagged_frame

REPO = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


# ---- writer parameters -----------------------------------------------------------------------
@pytest.mark.parametrize(("param", "value"), [
    ("out_files_per_proc", "2"), ("out_files_per_proc", 2.5), ("out_files_per_proc", True),
    ("out_files_per_proc", 0), ("seed", "x"), ("seed", -1), ("row_group_size", -1),
    ("row_group_size", 0), ("overwrite", "yes")])
def test_writer_parameter_errors(param, value, tmp_path):
    before = digest_tree(tmp_path)
    with pytest.raises(ParameterError, match=rf"The '{param}' parameter must be .*{re.escape(repr(value))}"):
        irs.Dataset(tagged_frame()).to_parquet(tmp_path / "out", **{param: value})
    assert digest_tree(tmp_path) == before


# ---- unwritable outputs ----------------------------------------------------------------------
def test_output_under_a_file(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    before = digest_tree(tmp_path)
    with pytest.raises(OutputError, match=r"file\.txt.*Nothing was written"):
        irs.Dataset(tagged_frame()).to_parquet(tmp_path / "file.txt" / "out")
    assert digest_tree(tmp_path) == before


def test_output_in_proc():
    with pytest.raises(OutputError, match=r"'/proc/irs-out'.*Nothing was written"):
        irs.Dataset(tagged_frame()).to_parquet("/proc/irs-out")
    assert not [p for p in os.listdir("/proc") if "irs-out" in p]


def test_disk_full_names_the_file_and_leaves_nothing(tmp_path):
    script = textwrap.dedent(f"""
        import resource, numpy as np, pandas as pd
        import interactive_recsys as irs
        from interactive_recsys.store._outputs import OutputError
        df = pd.DataFrame({{"x": np.random.default_rng(0).random(400_000)}})
        ds = irs.Dataset(df)  # one partition: a 3 MB file
        resource.setrlimit(resource.RLIMIT_FSIZE, (500_000, 500_000))
        try:
            ds.to_parquet({str(tmp_path / "out")!r}, row_group_size=1000)
        except OutputError as exc:
            print("ERROR", exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True,
                          text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert re.search(r"ERROR Cannot write '.*out': writing '.*\.parquet' failed \(File too "
                     r"large\)\. Nothing was written", done.stdout), done.stdout
    assert os.listdir(tmp_path) == []


# ---- temporaries of killed writers -----------------------------------------------------------
_SLOW_WRITER = """
import sys, time
import interactive_recsys as irs
from interactive_recsys.io import _writer as writer
import pandas as pd
original = writer._write_part
def slow(*args, **kwargs):
    time.sleep(0.5)
    return original(*args, **kwargs)
writer._write_part = slow
irs.Dataset(pd.DataFrame({"x": range(100)}), part_size=1).to_parquet(sys.argv[1])
"""


def _killed_write(out: Path, sig: int) -> Path:
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(out)], env=ENV, cwd=REPO)
    deadline = time.monotonic() + 60
    tmp = None
    while time.monotonic() < deadline and tmp is None:
        found = [p for p in out.parent.glob(f".{out.name}.tmp-*") if list(p.glob("part.*"))]
        tmp = found[0] if found else None
        time.sleep(0.05)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert tmp is not None and tmp.exists() and not out.exists()
    return tmp


@pytest.mark.parametrize("how", ["next write", "irs clean"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_temporaries_of_a_killed_writer_are_removed(how, sig, tmp_path, capsys):
    out = tmp_path / "out"
    (tmp_path / "keep.txt").write_text("unrelated")
    tmp = _killed_write(out, sig)
    assert stale_temporaries(out) == [str(tmp)]
    if how == "next write":
        irs.Dataset(tagged_frame()).to_parquet(out)
        assert sorted(os.listdir(tmp_path)) == ["keep.txt", "out"]
    else:
        assert cli.main(["clean", str(out)]) == 0
        assert str(tmp) in capsys.readouterr().out
        assert sorted(os.listdir(tmp_path)) == ["keep.txt"]
    assert (tmp_path / "keep.txt").read_text() == "unrelated"


def test_temporaries_of_a_live_writer_are_kept(tmp_path):
    from interactive_recsys.store._outputs import atomic_directory

    with atomic_directory(tmp_path / "out") as tmp:
        assert clean_stale(tmp_path / "out") == [] and os.path.isdir(tmp)
    assert os.listdir(tmp_path) == ["out"]


def test_a_killed_writer_not_yet_reaped_is_gone(tmp_path):
    """A killed writer whose parent has not reaped it (a zombie, as in a container without an
    init) writes nothing more: its temporaries are stale."""
    import json

    import psutil

    from interactive_recsys.store import _outputs as outputs

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        name = outputs._temp_name(str(tmp_path / "out"), "tmp")
        tmp = Path(name.replace(f"-{os.getpid()}-", f"-{proc.pid}-"))
        tmp.mkdir()
        (tmp / ".irs-owner.json").write_text(json.dumps({
            "pid": proc.pid, "host": outputs._host(),
            "started": psutil.Process(proc.pid).create_time()}))
        assert stale_temporaries(tmp_path / "out") == []  # its writer runs
        proc.kill()  # and is not waited for: a zombie until the finally
        deadline = time.monotonic() + 30
        while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert stale_temporaries(tmp_path / "out") == [str(tmp)]
    finally:
        proc.kill()
        proc.wait()
