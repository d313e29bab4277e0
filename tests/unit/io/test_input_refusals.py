"""Inputs refused by name before any work (issue 40, items 18 and 20): a FIFO, a socket or a
device given as input, and an input with no rows (a header-only csv, an empty parquet file)
for ``Dataset``, ``Workflow.fit``/``update``, ``irs run`` and ``irs update``.

Every CLI case runs as a real ``irs`` process under a timeout (a hang fails the test) and
checks the exit status, one line on stderr naming the input, and that nothing was written.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from tests.helpers import HANG_S
from tests.unit.runtime.test_cluster_faults import irs_cli


@pytest.fixture
def saved(tmp_path):
    """A workflow fitted on a csv with rows, saved as ``wf``; the data as ``day1.csv``."""
    df = pd.DataFrame({"c": ["a", "b", "a", "c"], "x": [1.0, 2.0, 3.0, 4.0]})
    df.to_csv(tmp_path / "day1.csv", index=False)
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    wf.fit(irs.Dataset(str(tmp_path / "day1.csv")))
    wf.save(str(tmp_path / "wf"))
    return tmp_path


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("irs: error: "), result.stderr
    return lines[0]


# ---- 20. a FIFO, a socket or a device as input ------------------------------------------------
def test_a_fifo_as_input_is_refused_by_name_before_any_read(saved):
    fifo = saved / "events.csv"
    os.mkfifo(fifo)
    # nobody ever writes the pipe: a read of it would block forever (the timeout fails it)
    for command in (["run"], ["update"]):
        out = saved / f"out-{command[0]}"
        line = _one_error_line(irs_cli(*command, "--workflow", "wf", "--input", "events.csv",
                                       "--output", str(out), "--local", cwd=saved,
                                       timeout=HANG_S))
        assert "'events.csv' is a FIFO (named pipe), not a regular file" in line
        assert "cat PIPE > data.csv" in line  # the fix
        assert not out.exists()
    for source in (str(fifo), [str(saved / "day1.csv"), str(fifo)]):
        with pytest.raises(irs.DatasetError, match="is a FIFO"):
            within(30, lambda s=source: irs.Dataset(s))


def within(seconds: float, fn):
    """``fn()`` in a thread: its result or exception, or a failed test if it blocks."""
    got: dict = {}

    def call() -> None:
        try:
            got["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            got["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still blocked after {seconds} s")
    if "error" in got:
        raise got["error"]
    return got["value"]


def test_a_socket_and_a_device_as_input_are_refused(tmp_path):
    path = tmp_path / "s.csv"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(irs.DatasetError, match="'.*s.csv' is a socket, not a regular file"):
            irs.Dataset(str(path))
    with pytest.raises(irs.DatasetError, match="'/dev/zero' is a character device"):
        irs.Dataset("/dev/zero", engine="csv")  # endless zeros: read, it would never end


def test_a_fifo_inside_a_folder_or_a_glob_is_not_read(tmp_path):
    pd.DataFrame({"a": [1, 2]}).to_csv(tmp_path / "a.csv", index=False)
    os.mkfifo(tmp_path / "b.csv")
    for source in (str(tmp_path), str(tmp_path / "*.csv")):
        assert within(60, lambda s=source: irs.Dataset(s).compute()["a"].tolist()) == [1, 2]


# ---- 18. an input with no rows ----------------------------------------------------------------
def test_update_and_run_with_a_header_only_csv_say_it_has_no_rows(saved):
    (saved / "day2.csv").write_text("c,x\n")
    for command in ("update", "run"):
        out = saved / f"out-{command}"
        line = _one_error_line(irs_cli(command, "--workflow", "wf", "--input", "day2.csv",
                                       "--output", str(out), "--local", cwd=saved))
        assert "The csv file 'day2.csv' has no rows" in line
        assert "dtype" not in line.split("no rows")[0]  # no column's type is blamed first
        assert "float64" not in line and "string here" not in line
        assert not out.exists()


def test_run_and_update_with_an_empty_parquet_file_name_it(saved):
    pq.write_table(pa.table({"c": pa.array([], pa.string()), "x": pa.array([], pa.float64())}),
                   saved / "day2.parquet")
    for command in ("update", "run"):
        out = saved / f"out-{command}"
        line = _one_error_line(irs_cli(command, "--workflow", "wf", "--input", "day2.parquet",
                                       "--output", str(out), "--local", cwd=saved))
        assert f"irs {command}: the file 'day2.parquet' has no rows" in line
        assert not out.exists()  # irs run used to write an empty output and exit 0


def test_dataset_of_header_only_csv_files_is_refused_by_name(tmp_path):
    (tmp_path / "a.csv").write_text("n,s\n")
    (tmp_path / "b.csv").write_text("")  # not even a header
    with pytest.raises(irs.DatasetError, match=r"The csv file '.*a.csv' has no rows"):
        irs.Dataset(str(tmp_path / "a.csv"))
    with pytest.raises(irs.DatasetError, match=r"The csv file '.*b.csv' has no rows"):
        irs.Dataset(str(tmp_path / "b.csv"))
    with pytest.raises(irs.DatasetError, match=r"None of the 2 csv files .* has no rows"):
        irs.Dataset(str(tmp_path))
    with pytest.raises(irs.DatasetError, match=r"dtypes= declares only \['n'\]"):
        irs.Dataset(str(tmp_path / "a.csv"), dtypes={"n": "int64"})
    # every type declared: an empty dataset of those types, as asked
    ds = irs.Dataset(str(tmp_path / "a.csv"), dtypes={"n": "int64", "s": "string"})
    assert ds.schema.dtypes == {"n": "int64", "s": "string"} and ds.num_rows == 0
    # a header-only file beside one with rows still adds nothing and changes no type
    (tmp_path / "c.csv").write_text("n,s\n1,x\n")
    both = irs.Dataset([str(tmp_path / "a.csv"), str(tmp_path / "c.csv")])
    assert both.schema.dtypes == {"n": "int64", "s": "string"} and both.num_rows == 1


def test_fit_and_update_of_an_empty_parquet_name_the_file(tmp_path):
    pq.write_table(pa.table({"x": pa.array([], pa.float64())}), tmp_path / "empty.parquet")
    pq.write_table(pa.table({"x": pa.array([1.0, 2.0])}), tmp_path / "full.parquet")
    wf = irs.Workflow(["x"] >> ops.Normalize())
    empty = irs.Dataset(str(tmp_path / "empty.parquet"))
    with pytest.raises(irs.DatasetError, match=r"the file '.*empty.parquet' has no rows"):
        wf.fit(empty)
    wf.fit(irs.Dataset(str(tmp_path / "full.parquet")))
    with pytest.raises(irs.DatasetError, match=r"update .*the file '.*empty.parquet' has no "):
        wf.update(empty)


def test_a_header_only_csv_behind_a_url_is_refused_by_name(tmp_path):
    import fsspec

    fs, path = fsspec.filesystem("memory"), f"/irs-empty-{tmp_path.name}/day2.csv"
    try:
        with fs.open(path, "w") as f:
            f.write("c,x\n")
        with pytest.raises(irs.DatasetError, match=f"'memory://{path}' has no rows"):
            irs.Dataset(f"memory://{path}")
    finally:
        fs.rm(path)
