"""The dashboard follows a job to its end: one clock across fit, transform and write, every
phase in the task stream and in Progress (also for a dashboard made after the job started),
"whole run", and a header that says "finished". Model level: ``update()`` via real samples
of the session cluster, assertions on the sources, the range and the widgets."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import dask.dataframe as dd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.runtime.monitor import Monitor
from interactive_recsys.ui.dashboard._dashboard import Dashboard
from interactive_recsys.ui.dashboard._figures import WINDOW_S
from tests.conftest import make_criteo_frame


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


def _clock(dash: Dashboard) -> float:
    return dash.monitor.samples[-1]["time"] - dash.monitor.t0


def test_one_clock_every_phase_to_the_end_and_finished(dash, data, tmp_path, client):
    dash.monitor.sample()
    assert "finished" not in dash.status.value
    job = _job(data, str(tmp_path / "out"), client).start()
    job.result(120)
    for _ in range(120):  # the samples after the job (up to 30 s on a loaded machine)
        dash.monitor.sample()
        if "write_part" in dash.sources["tasks"].data["group"] \
                and "finished" in dash.status.value:
            break
        time.sleep(0.25)
    tasks = dash.sources["tasks"].data
    groups = set(tasks["group"])
    assert {"fit", "categorify", "write_part"} <= groups  # fit, transform and write
    now = _clock(dash)
    # the time axis ends at the clock, or at the last task of the write phase when it ended
    # after the sample that reported it was taken
    assert dash.x_range.end == pytest.approx(max(now, max(tasks["stop"]), 1.0))
    assert dash.x_range.start == max(0.0, dash.x_range.end - WINDOW_S)
    # Progress lists every phase of the job, all done; the header says so
    names = [p["name"] for p in dash.monitor.progress() if p["job"] == "dash-run"]
    assert any(n.startswith("fit") for n in names) and "write" in names
    assert all(p["fraction"] == 1.0 for p in dash.monitor.progress() if p["job"] == "dash-run")
    view_text = dash.progress_view.summary()
    assert "write" in view_text and "fit" in view_text
    assert "finished" in dash.status.value and "irs-dashboard-finished" in dash.status.value
    # a phase end stored the figures whole; later samples still move the axis on
    before = dash.x_range.end
    time.sleep(max(0.0, 1.05 - _clock(dash)))  # the axis spans at least the first second
    dash.monitor.sample()
    assert dash.x_range.end > before


def test_whole_run_and_back_to_the_window_without_errors(dash):
    dash.monitor.sample()
    dash._set_range(150.0)  # a clock past the window, as a long run has
    assert (dash.x_range.start, dash.x_range.end) == (150.0 - WINDOW_S, 150.0)
    dash.window_button.value = True  # the "whole run" button
    assert dash.x_range.start == 0.0 and dash.x_range.end == pytest.approx(
        max(_clock(dash), 1.0))
    dash._set_range(150.0)
    assert (dash.x_range.start, dash.x_range.end) == (0.0, 150.0)
    dash.window_button.value = False
    dash._set_range(150.0)
    assert dash.x_range.start == 150.0 - WINDOW_S
    assert dash.log_area.outputs == ()  # no error in the Log box


def test_a_dashboard_made_after_the_job_started_shows_all_of_it(data, tmp_path, client):
    job = _job(data, str(tmp_path / "out"), client).start()
    job.result(120)  # the tab is opened after the job: everything happened before
    board = Dashboard(client, interval_ms=200, since=job.started)
    try:
        board.monitor.sample()
        names = [p["name"] for p in board.monitor.progress() if p["job"] == "dash-run"]
        assert any(n.startswith("fit") for n in names) and "write" in names
        groups = set(board.sources["tasks"].data["group"])
        assert {"fit", "write_part"} <= groups  # the history from the job's start
        starts = board.sources["tasks"].data["start"]
        assert min(starts) >= -0.5  # one clock that starts at the job's start
        assert "finished" in board.status.value
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
