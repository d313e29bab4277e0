"""Nothing lost on a kernel restart: the builder's autosave and restore offer, and the offer
to remove a stopped Run's temporary output (a dead local writer, an expired remote lease),
never touching a live writer's."""

from __future__ import annotations

import html
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time

import fsspec
import numpy as np
import pandas as pd
import psutil
import pytest

from interactive_recsys.store import _lease
from interactive_recsys.ui.builder import PipelineBuilder
from interactive_recsys.ui.builder._autosave import (
    Autosaver,
    autosave_path,
    pipeline_record,
    read_autosave,
    write_autosave,
)
from interactive_recsys.ui.builder._branches import Branch, Step
from interactive_recsys.ui.builder._orphans import find_orphans, remove_orphans


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"C1": [f"a{v}" for v in rng.integers(0, 9, 50)],
                         "C2": [f"b{v}" for v in rng.integers(0, 4, 50)],
                         "I1": rng.normal(size=50)})


def _build(builder: PipelineBuilder) -> None:
    """Two branches by clicking: C1, C2 >> Categorify(freq_threshold=2); I1 >> FillMissing
    >> Normalize."""
    builder.select_columns(["C1", "C2"])
    builder.choose_operator("Categorify", {"freq_threshold": 2})
    builder.add_button.click()
    builder.buttons["new-branch"].click()
    builder.select_columns(["I1"])
    for op in ("FillMissing", "Normalize"):
        builder.choose_operator(op)
        builder.add_button.click()
    assert sum(len(b.steps) for b in builder.model.branches) == 3, builder.message


def test_autosave_round_trip_restores_the_same_workflow(tmp_path):
    path = tmp_path / ".features.irs-pipeline.json"
    first = PipelineBuilder(_frame(), autosave=path)
    assert first.restore_row.layout.display == "none"  # nothing saved yet: no offer
    _build(first)
    first.autosaver.flush()
    record = json.loads(path.read_text())
    assert [b["steps"] for b in record["branches"]] == [
        [{"op": "Categorify", "params": {"freq_threshold": 2}}],
        [{"op": "FillMissing", "params": {}}, {"op": "Normalize", "params": {}}]]

    second = PipelineBuilder(_frame(), autosave=path)  # a new builder: the offer, not silent
    assert second.restore_row.layout.display is None
    saved_at = time.strftime("%H:%M", time.localtime(record["saved"]))
    assert second.restore_button.description == \
        f"Restore the pipeline saved at {saved_at} (3 steps)"
    assert second.model.branches == [Branch()]  # nothing restored before the click
    second.restore_button.click()
    assert second.model.export_code() == first.model.export_code()
    assert second.model.to_workflow().to_config()["nodes"] == \
        first.model.to_workflow().to_config()["nodes"]
    assert second.restore_row.layout.display == "none"
    second.buttons["undo"].click()  # undoable
    assert second.model.branches == [Branch()]


def test_restore_without_a_dataset_opens_the_autosaved_one(tmp_path):
    data = tmp_path / "clicks.parquet"
    _frame().to_parquet(data)
    path = tmp_path / ".nb.irs-pipeline.json"
    first = PipelineBuilder(str(data), autosave=path)
    _build(first)
    first.autosaver.flush()
    empty = PipelineBuilder(None, autosave=path)
    empty.restore_button.click()
    assert empty.model is not None and empty.model.source == str(data)
    assert empty.model.export_code() == first.model.export_code()


def test_edits_are_debounced_into_one_write_of_the_last_state(tmp_path):
    path = tmp_path / "a.json"
    saver = Autosaver(path, delay=0.3)
    for k in range(5):
        saver.schedule(pipeline_record([Branch(["C1"], steps=[Step("Categorify",
                                                                   {"freq_threshold": k})])]))
    assert not path.exists()  # within the delay: not written yet
    deadline = time.monotonic() + 10
    while saver.writes == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.4)
    assert saver.writes == 1
    assert read_autosave(path).branches[0].steps == [Step("Categorify", {"freq_threshold": 4})]


def test_the_write_is_atomic_a_reader_never_sees_a_part(tmp_path, monkeypatch):
    path = tmp_path / "a.json"
    big = [Branch([f"C{k}"], steps=[Step("Categorify", {"freq_threshold": k})])
           for k in range(1, 400)]
    write_autosave(path, pipeline_record(big[:1]))
    stop, bad = threading.Event(), []

    def read_all():
        while not stop.is_set():
            try:
                json.loads(path.read_text())
            except ValueError as exc:
                bad.append(exc)

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        for k in range(60):
            write_autosave(path, pipeline_record(big[: 1 + (k % 2) * 398]))
    finally:
        stop.set()
        reader.join()
    assert bad == []
    # a write that fails half-way leaves the old file whole and no temporary behind
    before = path.read_text()

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_autosave(path, pipeline_record(big))
    assert path.read_text() == before
    assert os.listdir(tmp_path) == ["a.json"]


@pytest.mark.parametrize("content, why", [
    ("{not json", "JSONDecodeError"),
    ('{"format": "jupyter-notebook", "cells": []}', "'jupyter-notebook'"),
    ('[1, 2]', "a list, not an object"),
    ('{"format": "interactive-recsys-pipeline-autosave", "format_version": 1, "saved": 1,'
     ' "dataset": null, "output": null,'
     ' "branches": [{"columns": ["C1"], "tags": [], "steps": [{"op": "Nope"}]}]}', "'Nope'"),
])
def test_a_broken_or_foreign_file_is_named_in_one_line_and_kept_until_an_edit(
        tmp_path, content, why):
    path = tmp_path / ".nb.irs-pipeline.json"
    path.write_text(content)
    builder = PipelineBuilder(_frame(), autosave=path)
    shown = builder.autosave_error.value
    text = html.unescape(re.sub(r"<[^>]+>", "", shown))
    assert builder.autosave_error.layout.display is None
    assert str(path) in text and why in text and "Traceback" not in text, text
    assert "\n" not in text.strip()
    assert builder.restore_row.layout.display == "none"
    builder.autosaver.flush()  # no edit yet: the file stays as it was
    assert path.read_text() == content
    builder.select_columns(["C1"])
    builder.choose_operator("Categorify")
    builder.add_button.click()
    builder.autosaver.flush()
    assert read_autosave(path).steps == 1  # the edit replaced it with a real autosave
    assert builder.autosave_error.layout.display == "none"


def test_the_default_path_is_beside_the_notebook(tmp_path, monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "sub" / "Features 1.ipynb"))
    monkeypatch.chdir(tmp_path)
    assert autosave_path() == str(tmp_path / ".Features 1.irs-pipeline.json")
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert autosave_path() == str(tmp_path / ".irs-pipeline.json")
    builder = PipelineBuilder(_frame())  # not in a kernel: no autosave unless asked
    assert builder.autosaver is None
    assert os.listdir(tmp_path) == []


# ---- hostile autosave files ------------------------------------------------------------------
def _shown(builder: PipelineBuilder) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", builder.autosave_error.value))


def _valid_record() -> dict:
    record = pipeline_record([Branch(["C1"], steps=[Step("Categorify", {"freq_threshold": 2})])],
                             dataset=None, output=None)
    assert read_autosave_text(json.dumps(record)) is not None  # the base itself is good
    return record


def read_autosave_text(text: str):
    """``read_autosave`` of ``text`` written to a temporary file."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "a.json")
        with open(path, "w") as f:
            f.write(text)
        return read_autosave(path)


def _with(change):
    """The valid record's JSON text after ``change(record)``."""
    def text() -> str:
        record = _valid_record()
        change(record)
        return json.dumps(record)
    return text


_MEASURED = {"name": "C1", "histogram": [[1, 3], [2, 1]], "lookups": 5, "nulls": 0, "rows": 5}


def _suggest(key, value):
    """The valid record with a valid ``suggest`` field whose ``key`` is ``value``."""
    good = {"max_loss": 0.01, "memory_budget": 2**34, "data": None,
            "measured": [dict(_MEASURED)]}
    return _with(lambda r: r.update(suggest={**good, key: value}))


def _measured(key, value):
    return _suggest("measured", [{**_MEASURED, key: value}])


def _branch0(key, value):
    return _with(lambda r: r["branches"][0].__setitem__(key, value))


HOSTILE = {
    "saved 1e300": (_with(lambda r: r.update(saved=1e300)), "'saved' is 1e+300"),
    "saved negative": (_with(lambda r: r.update(saved=-5)), "'saved' is -5"),
    "saved a huge integer": (_with(lambda r: r.update(saved=10**400)), "'saved' is 1000"),
    "saved a string": (_with(lambda r: r.update(saved="yesterday")), "'saved' is 'yesterday'"),
    "saved true": (_with(lambda r: r.update(saved=True)), "'saved' is True"),
    "saved NaN": (lambda: json.dumps({**_valid_record(), "saved": float("nan")}),
                  "'saved' is nan; an autosave holds finite numbers only"),
    "saved Infinity": (lambda: json.dumps({**_valid_record(), "saved": float("inf")}),
                       "'saved' is inf"),
    "a NaN parameter": (_branch0("steps", [{"op": "Categorify",
                                             "params": {"freq_threshold": float("nan")}}]),
                        "branches[0].steps[0].params.freq_threshold is nan"),
    "columns not strings": (_branch0("columns", [1, 2]),
                            "branches[0].columns[0] is a number (1), not a string"),
    "a column group with a number": (_branch0("columns", [["C1", 2]]),
                                      "branches[0].columns[0][1] is a number"),
    "an empty column group": (_branch0("columns", [[]]), "branches[0].columns[0] is an empty"),
    "columns a string": (_branch0("columns", "C1"), "branches[0].columns is a string ('C1')"),
    "columns nested junk": (_branch0("columns", [{"a": [[{}]]}]),
                            "branches[0].columns[0] is an object"),
    "tags not strings": (_branch0("tags", [None]), "branches[0].tags[0] is null"),
    "a step not an object": (_branch0("steps", [[1]]), "branches[0].steps[0] is not an operator"),
    "a step with junk params": (_branch0("steps", [{"op": "Categorify",
                                                    "params": {"freq_threshold": {"a": [[]]}}}]),
                                "branches[0].steps[0]: "),
    "an unknown operator parameter": (_branch0("steps", [{"op": "Categorify",
                                                          "params": {"nope": 1}}]),
                                      "branches[0].steps[0]: "),
    "a branch not an object": (_with(lambda r: r.update(branches=[7])),
                               "branches[0] is a number (7), not an object"),
    "branches an object": (_with(lambda r: r.update(branches={})),
                           "'branches' is an object ({}), not a list"),
    "a branch without steps": (_with(lambda r: r["branches"][0].pop("steps")),
                               "branches[0] has no 'steps' field"),
    "no saved": (_with(lambda r: r.pop("saved")), "the record has no 'saved' field"),
    "no branches": (_with(lambda r: r.pop("branches")), "the record has no 'branches' field"),
    "an unknown field": (_with(lambda r: r.update(extra=1)), "unknown field(s) ['extra']"),
    "dataset a number": (_with(lambda r: r.update(dataset=5)), "'dataset' is a number (5)"),
    "output a list": (_with(lambda r: r.update(output=["x"])), "'output' is a list"),
    "dataset with a NUL": (_with(lambda r: r.update(dataset="a\x00b")), "'dataset' is not a path"),
    "redacted unknown": (_with(lambda r: r.update(redacted=["password"])),
                         "'redacted'[0] is 'password'"),
    "version true": (_with(lambda r: r.update(format_version=True)), "format version True"),
    "version 4": (_with(lambda r: r.update(format_version=4)), "format version 4"),
    "run a string": (_with(lambda r: r.update(run="out")), "'run' is a string ('out')"),
    "run without a workflow": (_with(lambda r: r.update(run={"output": "o"})),
                               "'run' has no 'workflow' field"),
    "run workflow a number": (_with(lambda r: r.update(run={"output": "o", "workflow": 7})),
                              "run.workflow is a number (7), not a string"),
    "no suggest": (_with(lambda r: r.pop("suggest")), "the record has no 'suggest' field"),
    "suggest a list": (_with(lambda r: r.update(suggest=[1])), "'suggest' is a list"),
    "suggest max_loss 2": (_suggest("max_loss", 2), "suggest.max_loss is 2, not a share"),
    "suggest budget a string": (_suggest("memory_budget", "16GiB"),
                                "suggest.memory_budget is '16GiB', not a count"),
    "suggest data junk": (_suggest("data", [["f", -1, 0]]), "suggest.data[0][1] is -1"),
    "suggest too many files": (_suggest("data", [["f", 1, 1]] * 100_001),
                               "suggest.data lists more than 100,000 files"),
    "a measured count negative": (_measured("lookups", -3),
                                  "suggest.measured[0].lookups is -3, not a count"),
    "a measured count huge": (_measured("rows", 2**70), "suggest.measured[0].rows is 1180"),
    "a measured name a number": (_measured("name", 5), "suggest.measured[0].name is a number"),
    "a histogram pair junk": (_measured("histogram", [[1, 2, 3]]),
                              "suggest.measured[0].histogram[0] is not [count, values]"),
    "a histogram count zero": (_measured("histogram", [[0, 2]]),
                               "suggest.measured[0].histogram[0][0] is 0, not a count (1"),
    "an oversized histogram": (_measured("histogram", [[1, 1]] * 200_001),
                               "suggest.measured holds more than 200,000 value counts"),
    "too many measured columns": (_suggest("measured", [_MEASURED] * 10_001),
                                  "suggest.measured holds more than 10,000 columns"),
    "a measured column's unknown field": (_measured("extra", 1),
                                          "suggest.measured[0] has the unknown field(s)"),
    "options not an object": (_with(lambda r: r.update(options=None)),
                              "'options' is null (None), not an object"),
    "overwrite a string": (_with(lambda r: r.update(options={"overwrite": "yes"})),
                           "options.overwrite is 'yes', not a boolean"),
    "not JSON": (lambda: "{not json", "JSONDecodeError"),
    "not UTF-8": (lambda: b"\xff\xfe{".decode("latin-1"), "UnicodeDecodeError"),
    "deeply nested": (lambda: "[" * 100_000 + "]" * 100_000, "RecursionError"),
    "not a dict: a list": (lambda: "[1, 2]", "it holds a list, not an object"),
    "not a dict: a number": (lambda: "42", "it holds a number, not an object"),
    "not a dict: null": (lambda: "null", "it holds null, not an object"),
    "empty": (lambda: "", "JSONDecodeError"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_autosave_is_named_with_its_field_and_can_be_discarded(tmp_path, case):
    make, why = HOSTILE[case]
    path = tmp_path / ".nb.irs-pipeline.json"
    path.write_bytes(make().encode("latin-1" if case == "not UTF-8" else "utf-8"))
    builder = PipelineBuilder(_frame(), autosave=path)  # opens, whatever the file holds
    assert builder.model is not None and builder.model.schema.names == ["C1", "C2", "I1"]
    text = _shown(builder)
    assert builder.autosave_error.layout.display is None
    assert str(path) in text and why in text, text
    assert "Traceback" not in text and "\n" not in text.strip()
    assert builder.restore_row.layout.display == "none"
    assert builder.autosave_discard.layout.display is None
    builder.autosave_discard.click()
    assert not path.exists()
    assert builder.autosave_error.layout.display == "none"
    assert builder.autosave_discard.layout.display == "none"
    assert builder.level == "success" and "Discarded the autosave file" in builder.message


def test_an_autosave_of_the_previous_format_version_is_still_offered(tmp_path):
    path = tmp_path / ".nb.irs-pipeline.json"
    record = _valid_record()
    for key in ("redacted", "run", "suggest", "options"):
        del record[key]
    record["format_version"] = 1
    path.write_text(json.dumps(record))
    builder = PipelineBuilder(_frame(), autosave=path)
    assert builder.autosave_error.layout.display == "none", _shown(builder)
    builder.restore_button.click()
    assert builder.model.branches == [Branch(["C1"], steps=[Step("Categorify",
                                                                  {"freq_threshold": 2})])]


def test_a_fifo_autosave_path_is_refused_at_once_and_never_replaced(tmp_path):
    path = tmp_path / ".nb.irs-pipeline.json"
    os.mkfifo(path)
    made: list = []
    thread = threading.Thread(target=lambda: made.append(
        PipelineBuilder(_frame(), autosave=path)), daemon=True)
    thread.start()
    thread.join(60)
    try:
        assert not thread.is_alive(), "the builder blocked on the FIFO"
    finally:
        if thread.is_alive():  # let a reader blocked in open() go, so nothing hangs
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
            thread.join(10)
    builder = made[0]
    text = _shown(builder)
    assert str(path) in text and "is a FIFO (named pipe), not a regular file" in text, text
    assert "pass autosave= another file" in text
    assert builder.autosave_discard.layout.display == "none"  # not deleted from here
    assert builder.model is not None
    builder.select_columns(["C1"])
    builder.choose_operator("Categorify")
    builder.add_button.click()
    builder.autosaver.flush()  # the write is refused too: the FIFO stays a FIFO
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert "is a FIFO" in builder.autosaver.error
    assert os.listdir(tmp_path) == [path.name]  # no temporary left


def test_a_folder_autosave_path_is_named(tmp_path):
    path = tmp_path / ".nb.irs-pipeline.json"
    path.mkdir()
    builder = PipelineBuilder(_frame(), autosave=path)
    assert "is a folder, not a regular file" in _shown(builder)
    assert builder.autosave_discard.layout.display == "none"


# ---- orphaned temporary output ---------------------------------------------------------------
def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "host"


def _temporary(parent, base: str, pid: int, started: float, rand: str, nbytes: int) -> str:
    """A writer's temporary as store._outputs makes it: ``.BASE.tmp-HOST-PID-RAND`` with
    its owner file and one data file of ``nbytes``."""
    entry = parent / f".{base}.tmp-{_host()}-{pid}-{rand}"
    entry.mkdir()
    (entry / ".irs-owner.json").write_text(json.dumps({"pid": pid, "host": _host(),
                                                       "started": started}))
    (entry / "part.0.parquet").write_bytes(b"x" * nbytes)
    return str(entry)


def test_a_dead_writers_temporary_is_offered_and_a_live_ones_left_alone(tmp_path):
    data = tmp_path / "clicks.parquet"
    _frame().to_parquet(data)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a writer whose process ended (a restarted kernel)
    dead = _temporary(tmp_path, "out", gone.pid, 1.0, "0a1b2c3d", 3 << 20)
    owner_file = len(json.dumps({"pid": gone.pid, "host": _host(), "started": 1.0}))
    me = psutil.Process()
    live = _temporary(tmp_path, "out", me.pid, me.create_time(), "0f0f0f0f", 1000)
    output = str(tmp_path / "out")
    assert [o.path for o in find_orphans(output)] == [dead]
    assert find_orphans(output)[0].nbytes == (3 << 20) + owner_file

    builder = PipelineBuilder(str(data), output=output, autosave=False)
    assert builder.orphan_row.layout.display is None
    assert builder.orphan_button.description == "Remove the temporary output (3.0 MiB)"
    note = html.unescape(builder.orphan_note.value)
    assert output in note and os.path.basename(dead) in note
    builder.orphan_button.click()
    assert not os.path.exists(dead) and os.path.exists(live)
    assert builder.orphan_row.layout.display == "none"
    assert builder.level == "success" and "3.0 MiB freed" in builder.message
    # another output path: nothing of it to offer
    builder.output_text.value = str(tmp_path / "elsewhere")
    assert builder.orphan_row.layout.display == "none"


def _staging(fs, root: str, write_id: str, renewed: float, nbytes: int) -> None:
    fs.pipe_file(f"{root}/_temporary/{write_id}/part.0.parquet", b"x" * nbytes)
    fs.pipe_file(_lease.lease_path(root, write_id), json.dumps({
        "write_id": write_id, "renewed": renewed, "lease_seconds": _lease.LEASE_SECONDS,
        "host": "elsewhere", "pid": 1}).encode())


def test_an_expired_lease_is_offered_and_a_fresh_one_left_alone():
    fs = fsspec.filesystem("memory")
    root = "/irs-orphans-test/out"
    url = f"memory://{root}"
    now = time.time()
    old_id = time.strftime("%Y%m%d%H%M%S", time.gmtime(now - 3 * 3600)) + "-0a1b2c3d"
    live_id = time.strftime("%Y%m%d%H%M%S", time.gmtime(now - 2 * 3600)) + "-0f0f0f0f"
    try:
        _staging(fs, root, old_id, now - 2 * _lease.LEASE_SECONDS, 5000)  # expired: dead
        _staging(fs, root, live_id, now - 5, 7000)  # renewed 5 s ago: its writer runs
        found = find_orphans(url)
        assert sorted(o.path for o in found) == sorted([
            f"memory://{root}/_temporary/{old_id}",
            f"memory://{root}/_temporary/{old_id}.lease"])
        assert sum(o.nbytes for o in found) >= 5000
        assert fs.exists(f"{root}/_temporary/{old_id}/part.0.parquet")  # a look only
        remove_orphans(url)
        assert not fs.exists(f"{root}/_temporary/{old_id}")
        assert fs.exists(f"{root}/_temporary/{live_id}/part.0.parquet")
        assert fs.exists(_lease.lease_path(root, live_id))
        assert find_orphans(url) == []
    finally:
        fs.rm("/irs-orphans-test", recursive=True)


def test_the_run_watch_is_on_from_run_until_the_run_has_ended(tmp_path):
    data = tmp_path / "clicks.parquet"
    _frame().to_parquet(data)
    builder = PipelineBuilder(str(data), output=str(tmp_path / "out"), autosave=False)
    builder.select_columns(["C1"])
    builder.choose_operator("Categorify")
    builder.add_button.click()
    seen = []
    builder.run_watch.observe(lambda change: seen.append(change["new"]), "running")
    builder.run_button.click()
    assert builder.model.wait_run(120).status == "finished", builder.message
    assert seen == [True, False] and builder.run_watch.running is False
    builder.run_button.click()  # refused (the output exists): never shown as running
    assert builder.level == "error" and "already exists" in builder.message
    assert seen == [True, False]


def test_a_pipeline_that_does_not_fit_the_dataset_is_refused_with_the_column(tmp_path):
    path = tmp_path / ".nb.irs-pipeline.json"
    first = PipelineBuilder(_frame(), autosave=path)
    _build(first)
    first.autosaver.flush()
    other = PipelineBuilder(_frame().drop(columns=["C2"]), autosave=path)
    other.restore_button.click()
    assert other.level == "error" and "'C2'" in other.message, other.message
    assert other.model.branches == [Branch()]  # nothing half restored
    assert other.restore_row.layout.display is None  # the offer stays


def test_a_record_with_suggest_run_and_options_is_read_back():
    record = json.loads(_suggest("max_loss", 0.02)())
    record["run"] = {"output": "out", "workflow": "out.workflow"}
    record["options"] = {"overwrite": True}
    saved = read_autosave_text(json.dumps(record))
    assert saved.suggest["max_loss"] == 0.02 and saved.suggest["measured"] == [_MEASURED]
    assert saved.run == record["run"] and saved.options == {"overwrite": True}


def test_an_autosave_of_format_version_2_is_still_offered(tmp_path):
    path = tmp_path / ".nb.irs-pipeline.json"
    record = _valid_record()
    for key in ("run", "suggest", "options"):
        del record[key]
    record["format_version"] = 2
    path.write_text(json.dumps(record))
    builder = PipelineBuilder(_frame(), autosave=path)
    assert builder.autosave_error.layout.display == "none", _shown(builder)
    builder.restore_button.click()
    assert builder.model.branches[0].steps == [Step("Categorify", {"freq_threshold": 2})]
