"""The dashboard follows a job to its end: one clock across fit, transform and write, every
phase in the task stream and in Progress (also for a dashboard made after the job started),
"whole run", and a header that says "finished". Model level: ``update()`` via real samples
of the session cluster, assertions on the sources, the range and the widgets."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator

import dask.dataframe as dd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.runtime.monitor import Monitor
from interactive_recsys.ui.dashboard._dashboard import Dashboard
from interactive_recsys.ui.dashboard._figures import WINDOW_S
from tests.conftest import make_criteo_frame
from tests.helpers import skewed_worker_clocks


@pytest.fixture
def data(tmp_path) -> str:
    path = os.path.join(str(tmp_path), "in")
    dd.from_pandas(make_criteo_frame(2000), npartitions=4).to_parquet(path)
    return path


def _job(data: str, out: str, client: object) -> Job:
    def work() -> dict:
        wf = irs.Workflow((["C1", "C2"] >> ops.Categorify()) + (["F1"] >> ops.FillMissing(0)))
        ds = irs.Dataset(data)
        wf.fit(ds)
        return wf.transform(ds).to_parquet(out)

    return Job(work, name="dash-run", client=client)


@pytest.fixture
def dash(client: object) -> Iterator[Dashboard]:
    monitor = Monitor(client, start=False)
    board = Dashboard(monitor)
    yield board
    board.dispose()
    monitor.close()


#: Seconds a test waits for what a sample will show (a guard against hangs only: on a busy
#: machine the job's thread and the workers' reports come late).
PATIENCE_S = 120.0


def _clock(dash: Dashboard) -> float:
    return dash.monitor.samples[-1]["time"] - dash.monitor.t0


def _sample_until(monitor: Monitor, ready: Callable[[], bool]) -> None:
    """Sample until ``ready()`` holds (for at most :data:`PATIENCE_S`)."""
    deadline = time.monotonic() + PATIENCE_S
    monitor.sample()
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.1)
        monitor.sample()


@pytest.mark.parametrize("skew", [0.0, 1.5], ids=["clocks", "worker-clocks-ahead"])
def test_one_clock_every_phase_to_the_end_and_finished(dash, data, tmp_path, client, skew):
    """``skew``: the workers report their tasks that many seconds late, as on a busy machine
    (the bars of the last tasks then end after the clock)."""
    dash.monitor.sample()
    assert "finished" not in dash.status.value
    with skewed_worker_clocks(client, skew):
        job = _job(data, str(tmp_path / "out"), client).start()
        job.result(120)
    # the samples after the job: its last tasks reported, its thread ended
    _sample_until(dash.monitor, lambda: "write_part" in dash.sources["tasks"].data["group"]
                  and "finished" in dash.status.value)
    tasks = dash.sources["tasks"].data
    groups = set(tasks["group"])
    assert {"fit", "categorify", "write_part"} <= groups  # fit, transform and write
    now = _clock(dash)
    # the time axis ends at the clock, or at the end of the last task drawn when a worker
    # reported it ending after this sample (its estimate of the scheduler's clock is off)
    assert dash.x_range.end == pytest.approx(max(now, max(tasks["stop"]), 1.0))
    assert dash.x_range.start == max(0.0, dash.x_range.end - WINDOW_S)
    # Progress lists every phase of the job, all done; the header says so
    names = [p["name"] for p in dash.monitor.progress() if p["job"] == "dash-run"]
    assert any(n.startswith("fit") for n in names) and "write" in names
    assert all(p["fraction"] == 1.0 for p in dash.monitor.progress() if p["job"] == "dash-run")
    view_text = dash.progress_view.summary()
    assert "write" in view_text and "fit" in view_text
    assert "finished" in dash.status.value and "irs-dashboard-finished" in dash.status.value
    # the Log tells each phase's start and end, in order, with its rows (when known) and time
    log = "".join(o["text"] for o in dash.log_area.outputs)
    ends = re.findall(r"^\d\d:\d\d:\d\d (\S+(?: \d/\d)?) finished: [\d.kM]+ (?:rows|tasks) "
                      r"in [\d.]+ s", log, flags=re.M)
    assert ends[-len(names):] == names, log
    assert all(f" {n} started\n" in log for n in names), log
    # a phase end stored the figures whole; later samples still move the axis on, once the
    # clock passes its end (at least the first second, or the last task's end)
    before = dash.x_range.end
    _sample_until(dash.monitor, lambda: _clock(dash) > before)
    assert dash.x_range.end == pytest.approx(_clock(dash)) and dash.x_range.end > before


def test_whole_run_and_back_to_the_window_without_errors(dash):
    dash.monitor.sample()
    dash._set_range(150.0)  # a clock past the window, as a long run has
    assert (dash.x_range.start, dash.x_range.end) == (150.0 - WINDOW_S, 150.0)
    dash.window_button.value = True  # the "whole run" button
    # (the end of a task drawn: an earlier test's, reported late)
    drawn = max(dash.sources["tasks"].data["stop"], default=0.0)
    assert dash.x_range.start == 0.0 and dash.x_range.end == pytest.approx(
        max(_clock(dash), drawn, 1.0))
    dash._set_range(150.0)
    assert (dash.x_range.start, dash.x_range.end) == (0.0, 150.0)
    dash.window_button.value = False
    dash._set_range(150.0)
    assert dash.x_range.start == 150.0 - WINDOW_S
    # no error in the Log box: only phase lines (each begins with its time), if any
    assert all(re.match(r"\d\d:\d\d:\d\d ", o["text"]) for o in dash.log_area.outputs)


@pytest.mark.parametrize("skew", [0.0, -1.5], ids=["clocks", "worker-clocks-behind"])
def test_a_dashboard_made_after_the_job_started_shows_all_of_it(data, tmp_path, client, skew):
    """``skew``: the workers report their tasks that many seconds early, as on a busy
    machine (the job's first tasks then seem to end before it started)."""
    with skewed_worker_clocks(client, skew):
        job = _job(data, str(tmp_path / "out"), client).start()
        job.result(120)  # the tab is opened after the job: everything happened before
    made = time.time()
    board = Dashboard(client, interval_ms=200, since=job.started)
    made_in = time.time() - made
    try:
        # the job's thread ends a moment after its result is set: then the header says so
        _sample_until(board.monitor, lambda: "finished" in board.status.value)
        assert "finished" in board.status.value
        names = [p["name"] for p in board.monitor.progress() if p["job"] == "dash-run"]
        assert any(n.startswith("fit") for n in names) and "write" in names
        groups = set(board.sources["tasks"].data["group"])
        assert {"fit", "write_part"} <= groups  # the history from the job's start
        # one clock that starts at the job's start: the first task is drawn at its start
        # after job.started (on the scheduler's clock, read when the dashboard was made:
        # a round trip that lasted at most ``made_in``), not after the dashboard's making
        first = min(t["start"] for t in board.monitor.tasks)
        drawn = min(board.sources["tasks"].data["start"])
        assert first - job.started <= drawn <= first - job.started + made_in, \
            (drawn, first - job.started, made_in)
    finally:
        board.dispose()


def test_a_job_that_ended_before_the_dashboard_is_not_its_news(data, tmp_path, client):
    _job(data, str(tmp_path / "before"), client).start().result(120)
    time.sleep(0.2)  # the job's last phase ends before the monitor starts
    monitor = Monitor(client, start=False)
    board = Dashboard(monitor)
    try:
        monitor.sample()
        assert "finished" not in board.status.value and "running" not in board.status.value
    finally:
        board.dispose()
        monitor.close()
