"""Outputs never harm their input: destinations that hold or sit inside the input are
refused (CLI, to_parquet, the Studio's Run); writers racing to one path leave one whole
output; an overwrite over a file leaves no old copy.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli
from interactive_recsys.errors import DatasetError
from interactive_recsys.io import _writer as writer
from tests.helpers import HANG_S, digest_tree, tagged_frame

REPO = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """``data/part.parquet`` (input), ``wf/`` (a saved workflow), ``notes.txt``."""
    (tmp_path / "data").mkdir()
    tagged_frame().to_parquet(tmp_path / "data" / "part.parquet")
    wf = irs.Workflow((["cat"] >> ops.Categorify()) + ["x", "tag"])
    wf.fit(irs.Dataset(str(tmp_path / "data")))
    wf.save(str(tmp_path / "wf"))
    (tmp_path / "notes.txt").write_text("unrelated")
    return tmp_path


# ---- 1. output-path guards -------------------------------------------------------------------
GUARDED = {  # destination -> what the message must name
    "cwd": (".", "the current directory"),
    "input folder": ("data", "the input"),
    "above the input": ("sub_of_ws", "the input"),
    "workflow folder": ("wf", "the workflow folder"),
    "home": ("HOME", "the home directory"),
    "root": ("/", "the filesystem root"),
}


def _destination(key: str, ws: Path) -> str:
    return {"sub_of_ws": str(ws), "HOME": str(ws), "/": "/"}.get(key, key)


@pytest.mark.parametrize("case", list(GUARDED))
def test_cli_refuses_destinations_that_hold_the_input_or_more(case, workspace, monkeypatch,
                                                              capsys):
    key, named = GUARDED[case]
    monkeypatch.chdir(workspace if case == "cwd" else "/")
    if case == "home":
        monkeypatch.setenv("HOME", str(workspace))
        monkeypatch.chdir("/")
    dest = _destination(key, workspace)
    if case in ("input folder", "workflow folder"):
        dest = str(workspace / key)
    before = digest_tree(workspace)
    code = cli.main(["run", "--workflow", str(workspace / "wf"), "--input",
                     str(workspace / "data"), "--output", dest, "--overwrite", "--local"])
    assert code == 2
    err = capsys.readouterr().err
    assert "Refusing to write to" in err and named in err and repr(dest) in err
    assert digest_tree(workspace) == before


@pytest.mark.parametrize("transformed", [False, True], ids=["dataset", "transformed"])
@pytest.mark.parametrize("where", ["input folder", "above the input"])
def test_to_parquet_refuses_to_overwrite_its_own_input(transformed, where, workspace):
    ds = irs.Dataset(str(workspace / "data"))
    if transformed:
        ds = irs.Workflow.load(str(workspace / "wf")).transform(ds)
    dest = workspace / "data" if where == "input folder" else workspace
    before = digest_tree(workspace)
    with pytest.raises(DatasetError, match=r"Refusing to write to .*(is|contains) the input"):
        ds.to_parquet(dest, overwrite=True)
    assert digest_tree(workspace) == before


# Issue 23: an output inside a folder read as input would be read back as input.
def _inside_input_messages(workspace: Path) -> str:
    return rf"Refusing to write to .*inside the input folder '{re.escape(str(workspace / 'data'))}'"


@pytest.mark.parametrize("transformed", [False, True], ids=["dataset", "transformed"])
def test_to_parquet_refuses_an_output_inside_the_input_folder(transformed, workspace):
    ds = irs.Dataset(str(workspace / "data"))
    if transformed:
        ds = irs.Workflow.load(str(workspace / "wf")).transform(ds)
    before = digest_tree(workspace)
    with pytest.raises(DatasetError, match=_inside_input_messages(workspace)) as exc:
        ds.to_parquet(workspace / "data" / "out" / "deeper")
    assert "data-processed" in str(exc.value)  # the fix: a sibling of the input folder
    assert digest_tree(workspace) == before
    assert len(irs.Dataset(str(workspace / "data")).compute()) == len(tagged_frame())  # still reads


def test_an_output_beside_an_input_file_is_still_allowed(workspace):
    written = irs.Dataset(str(workspace / "data" / "part.parquet")).to_parquet(
        workspace / "data" / "out")
    assert written["num_rows"] == len(tagged_frame())


def test_cli_refuses_an_output_inside_the_input_folder(workspace):
    before = digest_tree(workspace)
    done = subprocess.run([sys.executable, "-m", "interactive_recsys.cli", "run", "--local",
                           "--workflow", str(workspace / "wf"), "--input",
                           str(workspace / "data"), "--output", str(workspace / "data" / "o")],
                          env=ENV, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 2, done.stderr
    assert re.search(_inside_input_messages(workspace), done.stderr), done.stderr
    assert "Traceback" not in done.stderr
    assert digest_tree(workspace) == before


def test_studio_run_refuses_an_output_inside_the_input_folder(workspace):
    from interactive_recsys.ui.builder.model._model import BuilderModel

    model = BuilderModel(str(workspace / "data"))
    model.add_step(["cat"], "Categorify")
    before = digest_tree(workspace)
    try:  # refused up front, or by the job's write: either way nothing is written
        job = model.run(str(workspace / "data" / "out"))
        error = job.exception()
    except DatasetError as exc:
        error = exc
    assert isinstance(error, DatasetError), error
    assert re.search(_inside_input_messages(workspace), str(error)), error
    assert digest_tree(workspace) == before


# ---- 1b. racing writers, overwrite over a file -----------------------------------------------
def test_threads_racing_to_one_new_path_one_wins_whole(tmp_path, monkeypatch):
    original = writer._write_part

    def slow(*args, **kwargs):  # every writer passes the existence check before one finishes
        time.sleep(0.3)
        return original(*args, **kwargs)

    monkeypatch.setattr(writer, "_write_part", slow)
    out, results = tmp_path / "out", {}

    def write(tag: int) -> None:
        try:
            irs.Dataset(tagged_frame(40, tag)).to_parquet(out)
            results[tag] = "ok"
        except DatasetError as exc:
            results[tag] = str(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [t for t, r in results.items() if r == "ok"]
    assert len(winners) == 1, results
    for tag, message in results.items():
        if tag != winners[0]:
            assert str(out) in message and ("another writer" in message
                                            or "already exists" in message)
    written = pq.read_table(out).to_pandas()
    pd.testing.assert_frame_equal(written.reset_index(drop=True), tagged_frame(40, winners[0]),
                                  check_dtype=False)
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temporaries left


def test_two_cli_processes_racing_one_wins_whole(workspace):
    for tag in (1, 2):
        (workspace / f"in{tag}").mkdir()
        tagged_frame(5000, tag).to_parquet(workspace / f"in{tag}" / "p.parquet")
    out = workspace / "out"
    procs = [subprocess.Popen([sys.executable, "-m", "interactive_recsys.cli", "run", "--local",
                               "--workflow", str(workspace / "wf"), "--input",
                               str(workspace / f"in{tag}"), "--output", str(out)],
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for tag in (1, 2)]
    results = [(p.wait(timeout=180), p.stderr.read()) for p in procs]
    codes = [code for code, _ in results]
    assert sorted(codes) == [0, 2], results
    loser_err = results[codes.index(2)][1]
    assert "irs: error:" in loser_err and str(out) in loser_err
    winner = (1, 2)[codes.index(0)]
    expected = irs.Workflow.load(str(workspace / "wf")).transform(tagged_frame(5000, winner))
    pd.testing.assert_frame_equal(pq.read_table(out).to_pandas(), expected, check_dtype=False)
    assert not [p for p in os.listdir(workspace) if p.startswith(".out.")]


def test_overwrite_over_a_file_leaves_no_old_copy(tmp_path):
    (tmp_path / "out").write_text("an old file")
    irs.Dataset(tagged_frame()).to_parquet(tmp_path / "out", overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert pq.read_table(tmp_path / "out").num_rows == 60
