"""Bad input on the I/O side (issue 13): each case asserts the error class, that the message
names the column / file / parameter, and that nothing outside the intended output changed
(a digest of the folders before and after).

Catalogue: output-path guards, racing writers, overwrite over a file, report sanitizing,
dataset bad inputs, writer parameters, unwritable outputs, temporaries of killed writers.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import _main as cli
from interactive_recsys.errors import DatasetError, ParameterError
from interactive_recsys.io import _writer as writer
from interactive_recsys.report._notebook_report import notebook_report
from interactive_recsys.store._outputs import OutputError, clean_stale, stale_temporaries

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def digest(*folders: Path) -> dict[str, str]:
    """Content hash of every file (and the name of every folder) under ``folders``."""
    out = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for d in dirs:
                out[os.path.join(root, d) + "/"] = ""
            for f in files:
                p = os.path.join(root, f)
                out[p] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def frame(n: int = 60, tag: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"cat": [f"v{i % 7}" for i in range(n)], "x": np.arange(n) + tag,
                         "tag": np.full(n, tag)})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """``data/part.parquet`` (input), ``wf/`` (a saved workflow), ``notes.txt``."""
    (tmp_path / "data").mkdir()
    frame().to_parquet(tmp_path / "data" / "part.parquet")
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
    before = digest(workspace)
    code = cli.main(["run", "--workflow", str(workspace / "wf"), "--input",
                     str(workspace / "data"), "--output", dest, "--overwrite", "--local"])
    assert code == 2
    err = capsys.readouterr().err
    assert "Refusing to write to" in err and named in err and repr(dest) in err
    assert digest(workspace) == before


@pytest.mark.parametrize("transformed", [False, True], ids=["dataset", "transformed"])
@pytest.mark.parametrize("where", ["input folder", "above the input"])
def test_to_parquet_refuses_to_overwrite_its_own_input(transformed, where, workspace):
    ds = irs.Dataset(str(workspace / "data"))
    if transformed:
        ds = irs.Workflow.load(str(workspace / "wf")).transform(ds)
    dest = workspace / "data" if where == "input folder" else workspace
    before = digest(workspace)
    with pytest.raises(DatasetError, match=r"Refusing to write to .*(is|contains) the input"):
        ds.to_parquet(dest, overwrite=True)
    assert digest(workspace) == before


# Issue 23: an output inside a folder read as input would be read back as input.
def _inside_input_messages(workspace: Path) -> str:
    return rf"Refusing to write to .*inside the input folder '{re.escape(str(workspace / 'data'))}'"


@pytest.mark.parametrize("transformed", [False, True], ids=["dataset", "transformed"])
def test_to_parquet_refuses_an_output_inside_the_input_folder(transformed, workspace):
    ds = irs.Dataset(str(workspace / "data"))
    if transformed:
        ds = irs.Workflow.load(str(workspace / "wf")).transform(ds)
    before = digest(workspace)
    with pytest.raises(DatasetError, match=_inside_input_messages(workspace)) as exc:
        ds.to_parquet(workspace / "data" / "out" / "deeper")
    assert "data-processed" in str(exc.value)  # the fix: a sibling of the input folder
    assert digest(workspace) == before
    assert len(irs.Dataset(str(workspace / "data")).compute()) == len(frame())  # still reads


def test_an_output_beside_an_input_file_is_still_allowed(workspace):
    written = irs.Dataset(str(workspace / "data" / "part.parquet")).to_parquet(
        workspace / "data" / "out")
    assert written["num_rows"] == len(frame())


def test_cli_refuses_an_output_inside_the_input_folder(workspace):
    before = digest(workspace)
    done = subprocess.run([sys.executable, "-m", "interactive_recsys.cli._main", "run", "--local",
                           "--workflow", str(workspace / "wf"), "--input",
                           str(workspace / "data"), "--output", str(workspace / "data" / "o")],
                          env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert re.search(_inside_input_messages(workspace), done.stderr), done.stderr
    assert "Traceback" not in done.stderr
    assert digest(workspace) == before


def test_studio_run_refuses_an_output_inside_the_input_folder(workspace):
    from interactive_recsys.ui.builder._model import BuilderModel

    model = BuilderModel(str(workspace / "data"))
    model.add_step(["cat"], "Categorify")
    before = digest(workspace)
    try:  # refused up front, or by the job's write: either way nothing is written
        job = model.run(str(workspace / "data" / "out"))
        error = job.exception()
    except DatasetError as exc:
        error = exc
    assert isinstance(error, DatasetError), error
    assert re.search(_inside_input_messages(workspace), str(error)), error
    assert digest(workspace) == before


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
            irs.Dataset(frame(40, tag)).to_parquet(out)
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
    pd.testing.assert_frame_equal(written.reset_index(drop=True), frame(40, winners[0]),
                                  check_dtype=False)
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temporaries left


def test_two_cli_processes_racing_one_wins_whole(workspace):
    for tag in (1, 2):
        (workspace / f"in{tag}").mkdir()
        frame(5000, tag).to_parquet(workspace / f"in{tag}" / "p.parquet")
    out = workspace / "out"
    procs = [subprocess.Popen([sys.executable, "-m", "interactive_recsys.cli._main", "run", "--local",
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
    expected = irs.Workflow.load(str(workspace / "wf")).transform(frame(5000, winner))
    pd.testing.assert_frame_equal(pq.read_table(out).to_pandas(), expected, check_dtype=False)
    assert not [p for p in os.listdir(workspace) if p.startswith(".out.")]


def test_overwrite_over_a_file_leaves_no_old_copy(tmp_path):
    (tmp_path / "out").write_text("an old file")
    irs.Dataset(frame()).to_parquet(tmp_path / "out", overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert pq.read_table(tmp_path / "out").num_rows == 60


# ---- 6. report sanitizing --------------------------------------------------------------------
def _report_case(case: str) -> nbformat.NotebookNode:
    v4 = nbformat.v4
    nb = v4.new_notebook()
    payload = "alert('irs_pwned')"
    out = {"markdown": None,
           "text/html": v4.new_output("display_data", {
               "text/html": f"<b>kept</b><script>{payload}</script>", "text/plain": "x"}),
           "widget onerror": v4.new_output("display_data", {
               "application/vnd.jupyter.widget-view+json": {"model_id": "h1", "version_major": 2,
                                                            "version_minor": 0},
               "text/plain": "HTML()"}),
           "image/png": v4.new_output("display_data", {
               "image/png": f'iVBORw0KGgo=" onerror="{payload}', "text/plain": "img"}),
           "javascript": v4.new_output("display_data", {
               "application/javascript": payload, "text/plain": "js"})}[case]
    nb.cells = [v4.new_markdown_cell(f"# Notes\n\n**kept**\n\n<script>{payload}</script>"
                                     if case == "markdown" else "**kept**"),
                v4.new_code_cell("x", execution_count=1, outputs=[out] if out else [
                    v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)])]
    if case == "widget onerror":
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"h1": {
            "model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls",
            "state": {"value": f'<b>kept</b><img src="x" onerror="{payload}">'}}}}}
    return nb


@pytest.mark.parametrize("case", ["markdown", "text/html", "widget onerror", "image/png",
                                  "javascript"])
def test_report_carries_no_script_from_the_notebook(case, tmp_path):
    nbformat.write(_report_case(case), tmp_path / "nb.ipynb")
    before = digest(tmp_path)
    path = notebook_report(tmp_path / "nb.ipynb")
    page = path.read_text()
    assert "irs_pwned" not in page  # the payload is gone, not merely moved
    assert "<b>kept</b>" in page or "<strong>kept</strong>" in page
    assert not re.search(r"\son[a-z]+\s*=", page.split("</style>")[-1])  # no event handlers
    after = digest(tmp_path)
    assert {k: v for k, v in after.items() if k != str(path)} == before


def test_report_draws_bokeh_show_outputs_from_their_data_only(tmp_path):
    from bokeh.embed.notebook import notebook_content
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, Div
    from bokeh.plotting import figure

    fig = figure(width=300, height=200)
    fig.line("x", "y", source=ColumnDataSource({"x": [1, 2], "y": [3, 4]}, name="shown"))
    fig.js_on_event("tap", CustomJS(code="alert('irs_pwned')"))
    script, div, _ = notebook_content(column(Div(text='<img src=x onerror="irs_pwned()">'), fig))
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("show(fig)", execution_count=1, outputs=[v4.new_output(
        "display_data", {"text/html": div, "application/javascript": script,
                         "application/vnd.bokehjs_exec.v0+json": ""},
        metadata={"application/vnd.bokehjs_exec.v0+json": {"id": "p1"}})])]
    nbformat.write(nb, tmp_path / "nb.ipynb")
    page = notebook_report(tmp_path / "nb.ipynb").read_text()
    assert "irs_pwned" not in page
    docs = re.search(r'<script[^>]* id="irs-bokeh-[0-9a-f]+-docs"[^>]*>(.*?)</script>', page,
                     re.S)
    assert docs and '"shown"' in docs[1] and "Bokeh.embed.embed_items" in page
    assert '<img src=\\"x\\">' in docs[1] and "CustomJS" not in docs[1]  # Div text cleaned


def test_report_refuses_to_replace_the_notebook(tmp_path):
    from interactive_recsys.report._notebook_report import ReportError

    nbformat.write(_report_case("text/html"), tmp_path / "nb.ipynb")
    before = digest(tmp_path)
    with pytest.raises(ReportError, match=r"nb\.ipynb.*is the notebook itself"):
        notebook_report(tmp_path / "nb.ipynb", tmp_path / "nb.ipynb")
    assert digest(tmp_path) == before


# ---- dataset bad inputs ----------------------------------------------------------------------
def _mixed(tmp: Path):
    return lambda: irs.Dataset(pd.DataFrame({"ok": [1, 2, 3], "mixed": [1, "x", 2.5]}))


def _csv_type_changes(tmp: Path):
    with open(tmp / "d.csv", "w") as f:
        f.write("late,b\n" + "1,x\n" * 120_000 + "oops,y\n")
    return lambda: irs.Dataset(str(tmp / "d.csv"), part_size="512KB").compute()


def _duplicate_parquet(tmp: Path):
    pq.write_table(pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["dup", "dup"]),
                   tmp / "d.parquet")
    return lambda: irs.Dataset(str(tmp / "d.parquet"))


def _internal_name(tmp: Path):
    pd.DataFrame({"__irs_shuffle_key__": [1, 2]}).to_parquet(tmp / "d.parquet")
    return lambda: irs.Dataset(str(tmp / "d.parquet"))


def _short_names(tmp: Path):
    (tmp / "d.csv").write_text("1,2,3\n4,5,6\n")
    return lambda: irs.Dataset(str(tmp / "d.csv"), names=["b", "c"], header=None)


def _empty_list(tmp: Path):
    return lambda: irs.Dataset([])


def _readme_only(tmp: Path):
    (tmp / "folder").mkdir()
    (tmp / "folder" / "readme.txt").write_text("Data will come here.\n")
    return lambda: irs.Dataset(str(tmp / "folder"))


DATASET_CASES = {  # name -> (builder, text the message must contain)
    "mixed-type object column": (_mixed, "'mixed'"),
    "csv type changes after the first block": (_csv_type_changes, "'late'"),
    "duplicate parquet column": (_duplicate_parquet, "['dup']"),
    "internal column name": (_internal_name, "'__irs_shuffle_key__'"),
    "csv names shorter than the fields": (_short_names, "d.csv"),
    "empty list of files": (_empty_list, "empty list"),
    "folder with only readme.txt": (_readme_only, "readme.txt"),
}


@pytest.mark.parametrize("case", list(DATASET_CASES))
def test_dataset_bad_input_is_named(case, tmp_path):
    builder, named = DATASET_CASES[case]
    call = builder(tmp_path)
    before = digest(tmp_path)
    with pytest.raises(DatasetError) as exc:
        call()
    message = str(exc.value)
    assert named in message, message
    assert re.search(r"(Rename|Rewrite|Declare|Pass|Convert|engine=|e\.g\.)", message), message
    assert digest(tmp_path) == before


def test_names_matching_the_fields_still_read(tmp_path):
    (tmp_path / "d.csv").write_text("1,2,3\n4,5,6\n")
    got = irs.Dataset(str(tmp_path / "d.csv"), names=["a", "b", "c"], header=None).compute()
    assert got["a"].tolist() == [1, 4] and got["c"].tolist() == [3, 6]


# ---- writer parameters -----------------------------------------------------------------------
@pytest.mark.parametrize(("param", "value"), [
    ("out_files_per_proc", "2"), ("out_files_per_proc", 2.5), ("out_files_per_proc", True),
    ("out_files_per_proc", 0), ("seed", "x"), ("seed", -1), ("row_group_size", -1),
    ("row_group_size", 0), ("overwrite", "yes")])
def test_writer_parameter_errors(param, value, tmp_path):
    before = digest(tmp_path)
    with pytest.raises(ParameterError, match=rf"The '{param}' parameter must be .*{re.escape(repr(value))}"):
        irs.Dataset(frame()).to_parquet(tmp_path / "out", **{param: value})
    assert digest(tmp_path) == before


# ---- unwritable outputs ----------------------------------------------------------------------
def test_output_under_a_file(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    before = digest(tmp_path)
    with pytest.raises(OutputError, match=r"file\.txt.*Nothing was written"):
        irs.Dataset(frame()).to_parquet(tmp_path / "file.txt" / "out")
    assert digest(tmp_path) == before


def test_output_in_proc():
    with pytest.raises(OutputError, match=r"'/proc/irs-out'.*Nothing was written"):
        irs.Dataset(frame()).to_parquet("/proc/irs-out")
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
                          text=True, timeout=120)
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
        irs.Dataset(frame()).to_parquet(out)
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
