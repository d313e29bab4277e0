"""Progress a user can read: one time left for the whole Run, then rows/s per phase and per
operator (the model function), the dashboard header that says the same time left and
"running" between two phases of a job, "finished" only after its last one, and the
builder's status line during a real Run."""

from __future__ import annotations

import re
import threading
import time

import dask
import numpy as np
import pandas as pd

from interactive_recsys.runtime._eta import RunPlan, set_plan
from interactive_recsys.runtime.jobs import Phase
from interactive_recsys.ui._run_progress import (
    header_text,
    job_alive,
    operator_texts,
    phase_text,
    progress_lines,
    rate,
    run_text,
)
from interactive_recsys.ui.builder import PipelineBuilder
from interactive_recsys.ui.builder.views._run import run_progress_html
from interactive_recsys.ui.dashboard._header import job_state, status_html


def _phase(name, status, done, total, started, stopped=None, job="", operators=()):
    return {"name": name, "job": job, "status": status, "done": done, "total": total,
            "fraction": 1.0 if status == "finished" else done / total, "started": started,
            "stopped": stopped, "operators": list(operators)}


def test_no_time_left_from_the_first_few_tasks_of_a_phase():
    # 3 of 1,200 tasks after 1 s (the cheap reads of a few partitions): a time left drawn
    # from them would be about 6 min for a run of seconds; the Run waits for 2% of them
    early = [_phase("fit 1/1", "running", 3, 1200, 100.0)]
    assert run_text(early, 1_200_000, 101.0) == \
        "estimating the time left... (phase 1 of 1: fit 1/1)"
    assert phase_text(early[0], 1_200_000, 101.0) == \
        "fit 1/1: about 3.0k of 1.2M rows (0%), 3.0k rows/s"
    # 240 of 1,200 after 2 s: 240k rows, 120k rows/s, 960k rows left: 8 s
    later = [_phase("fit 1/1", "running", 240, 1200, 100.0)]
    assert run_text(later, 1_200_000, 102.0) == "about 8 s left (phase 1 of 1: fit 1/1)"
    assert phase_text(later[0], 1_200_000, 102.0) == \
        "fit 1/1: about 240.0k of 1.2M rows (20%), 120.0k rows/s"


def test_rate_maps_tasks_to_rows_and_gives_the_time_left():
    # 24 of 96 tasks in 12 s on 4,000,000 rows: 1M rows, 83,333 rows/s, 3M rows left
    r = rate(24, 96, 12.0, rows=4_000_000)
    assert r.done == 1_000_000 and r.unit == "rows" and r.estimated
    assert abs(r.per_second - 1_000_000 / 12) < 1e-6
    assert abs(r.left - 3_000_000 / (1_000_000 / 12)) < 1e-6  # 36 s
    text = phase_text(_phase("fit 1/2", "running", 24, 96, 100.0), 4_000_000, 112.0)
    assert text == "fit 1/2: about 1.0M of 4.0M rows (25%), 83.3k rows/s"


def test_rows_are_the_partitions_passed_not_the_tasks_done():
    # 32 partitions: all 32 read, 4 passed through their partial statistics, 60 of 100
    # Categorify tasks (picks and reductions) done: 96 of 164 tasks (59%), but 4/32 = 12.5%
    # of the rows, after 2 s: 250k of 2M rows, 125k rows/s, 14 s left
    ops = [{"group": "read-parquet", "label": "read parquet", "done": 32, "total": 32},
           {"group": "fit", "label": "partial statistics", "done": 4, "total": 32},
           {"group": "categorify", "label": "Categorify", "done": 60, "total": 100}]
    fit = _phase("fit 1/1", "running", 96, 164, 0.0, operators=ops)
    assert phase_text(fit, 2_000_000, 2.0) == \
        "fit 1/1: about 250.0k of 2.0M rows (12%), 125.0k rows/s"
    assert run_text([fit], 2_000_000, 2.0) == "about 14 s left (phase 1 of 1: fit 1/1)"


def test_without_a_row_count_progress_is_in_tasks_and_not_called_an_estimate():
    text = phase_text(_phase("write", "running", 10, 40, 0.0), None, 5.0)
    assert text == "write: 10 of 40 tasks (25%), 2 tasks/s"


def test_no_rate_before_the_first_tasks_or_half_a_second():
    assert phase_text(_phase("fit 1/1", "running", 0, 8, 0.0), 800, 3.0) == \
        "fit 1/1: about 0 of 800 rows (0%), measuring the rate..."
    assert "measuring" in phase_text(_phase("fit 1/1", "running", 4, 8, 0.0), 800, 0.2)


def test_finished_failed_and_operator_lines():
    done = _phase("fit 1/1", "finished", 8, 8, 0.0, stopped=4.0)
    assert phase_text(done, 2_000_000, 9.0) == "fit 1/1: 2.0M rows in 4.0 s, 500.0k rows/s"
    failed = _phase("write", "error", 3, 8, 4.0, stopped=6.5)
    assert phase_text(failed, 2_000_000, 9.0) == "write: error after 2.5 s"
    ops = [{"label": "read parquet", "done": 4, "total": 4},
           {"label": "Categorify", "done": 3, "total": 12},
           {"label": "write parquet", "done": 0, "total": 4}]
    running = _phase("transform", "running", 7, 20, 10.0, operators=ops)
    # only the operator under way; 3/12 of 1M rows in 5 s: 50k rows/s (no time left)
    assert operator_texts(running, 1_000_000, 15.0) == ["Categorify 25%, 50.0k rows/s"]
    lines = progress_lines([done, running], 1_000_000, 15.0)
    # the whole Run first: 7 of 20 tasks in 5 s, 13 to go: about 9 s
    assert lines[0] == "Run: about 9 s left (transform)"
    assert lines[1].startswith("transform: about 350.0k of 1.0M rows (35%)")
    assert lines[2] == "now: Categorify 25%, 50.0k rows/s"
    assert lines[3] == "done: fit 1/1 (1.0M rows in 4.0 s, 250.0k rows/s)"


def test_real_phase_objects_give_the_same_numbers():
    keys = frozenset(f"categorify-0-partial-{i}-ab12cd34" for i in range(4))
    phase = Phase("fit 1/1", total=4, keys=keys, started=50.0)
    phase.observe(["categorify-0-partial-0-ab12cd34", "categorify-0-partial-1-ab12cd34"])
    assert phase_text(phase.to_dict(), 1000, 54.0) == \
        "fit 1/1: about 500 of 1.0k rows (50%), 125 rows/s"
    assert run_text([phase.to_dict()], 1000, 54.0) == "about 4 s left (phase 1 of 1: fit 1/1)"


def _write_half_done(job=""):
    """fit 1/1 took 4 s for 8M rows; write began at 104 and has passed 16 of its 32
    partitions at 106."""
    fit = _phase("fit 1/1", "finished", 10, 10, 100.0, stopped=104.0, job=job)
    write = _phase("write", "running", 40, 80, 104.0, job=job, operators=[
        {"group": "read-transform", "label": "read + transform", "done": 24, "total": 32},
        {"group": "write_part", "label": "write parquet", "done": 16, "total": 32}])
    return [fit, write]


def test_time_left_during_the_write_is_the_rest_of_the_write_only():
    # 16 of 32 partitions in 2 s: 2 s more, and nothing else is left
    lines = progress_lines(_write_half_done(), 8_000_000, 106.0, RunPlan(writes=True))
    assert lines[0] == "Run: about 2 s left (phase 2 of 2: write)"
    assert lines[1] == "write: about 4.0M of 8.0M rows (50%), 2.0M rows/s"


def test_time_left_in_fit_1_of_2_holds_fit_2_and_the_write():
    """fit 1/2 has passed 8 of its 32 partitions in 3 s: 9 s more, 12 s in all; fit 2/2 is
    expected to take as long (12 s); the write reads columns a and b (400 bytes) where
    fit 1/2 read a (100 bytes) in 12 s, and writes as much again: 2 x 48 s. Whole Run:
    9 + 12 + 96 = 117 s."""
    fit = _phase("fit 1/2", "running", 20, 90, 0.0, operators=[
        {"group": "fit", "label": "partial statistics", "done": 8, "total": 32}])
    fit["reads"] = ["a"]
    plan = RunPlan(writes=True, write_reads=("a", "b"), column_bytes={"a": 100, "b": 300})
    assert run_text([fit], 8_000_000, 3.0, plan) == \
        "about 1 min 57 s left (phase 1 of 3: fit 1/2; next: fit 2/2, write)"
    # the previous Run's write of the same data took 2 s per million rows: 16 s
    paced = RunPlan(writes=True, write_reads=("a", "b"), column_bytes={"a": 100, "b": 300},
                    write_seconds_per_row=2e-6)
    assert run_text([fit], 8_000_000, 3.0, paced).startswith("about 37 s left")
    # without an output: fit 2/2 only
    assert run_text([fit], 8_000_000, 3.0, RunPlan()) == \
        "about 21 s left (phase 1 of 2: fit 1/2; next: fit 2/2)"


def test_between_two_phases_the_next_ones_are_still_counted():
    # fit 1/2 ended after 4 s, fit 2/2 not begun: 4 s for it, and the write (the same
    # bytes read, and as many written: 2 x 4 s) after it
    fit = _phase("fit 1/2", "finished", 10, 10, 0.0, stopped=4.0)
    fit["reads"] = ["a", "b"]
    plan = RunPlan(writes=True, write_reads=("a", "b"), column_bytes={"a": 100, "b": 300})
    assert run_text([fit], 1000, 4.5, plan) == \
        "about 12 s left (phase 1 of 3: fit 1/2 done; next: fit 2/2, write)"


class _Monitor:
    client, samples, gpu_status, interval_ms = None, [], "no GPU", 500

    def __init__(self, phases, started=0.0):
        self.phases, self.started = phases, started

    def progress(self):
        return self.phases


def test_header_says_running_between_phases_while_the_job_lives_then_finished():
    fit = _phase("fit 1/1", "finished", 4, 4, 10.0, stopped=12.0, job="hdr-run")
    set_plan("hdr-run", RunPlan(writes=True))  # as the Studio tells it when Run starts
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="irs-job-hdr-run", daemon=True)
    thread.start()
    try:
        assert job_alive("hdr-run")
        state = job_state(_Monitor([fit]), rows=1000, now=13.0)
        assert "finished" not in state and "running" in state
        # the write to come, as long as the fit (2 s): the Run is not over
        assert "about 2 s left (phase 1 of 2: fit 1/1 done; next: write)" in state
        write = _phase("write", "running", 2, 8, 13.0, job="hdr-run")
        state = job_state(_Monitor([fit, write]), rows=1000, now=15.0)
        assert state.endswith("running</b> · about 6 s left (phase 2 of 2: write)")
    finally:
        release.set()
        thread.join(5)
    write = _phase("write", "finished", 8, 8, 13.0, stopped=16.0, job="hdr-run")
    assert not job_alive("hdr-run")
    # the job's own time, from its first phase's start (10.0) to its last phase's end (16.0)
    assert "finished</b> in 6.0 s" in job_state(_Monitor([fit, write]), rows=1000)
    # ended before this dashboard started: not its news
    assert job_state(_Monitor([fit, write], started=100.0), rows=1000) == ""


def test_finished_in_the_latest_run_s_own_time_not_since_the_dashboard_started():
    """A dashboard started at 0 watches run 1 (10 s to 50 s) then run 2 (200 s to 314.5 s):
    the header gives run 2's 114.5 s, not 314.5 s; a failure gives its own time too."""
    first = _phase("write", "finished", 4, 4, 10.0, stopped=50.0, job="r1")
    fit = _phase("fit 1/1", "finished", 4, 4, 200.0, stopped=260.0, job="r2")
    write = _phase("write", "finished", 8, 8, 260.0, stopped=314.5, job="r2")
    assert job_state(_Monitor([first, fit, write])).endswith("finished</b> in 114.5 s")
    failed = _phase("write", "error", 3, 8, 260.0, stopped=261.0, job="r3")
    fit3 = _phase("fit 1/1", "finished", 4, 4, 250.0, stopped=260.0, job="r3")
    assert job_state(_Monitor([first, fit3, failed])).endswith(
        "error in write</b> after 11.0 s")


def test_two_runs_of_one_job_name_are_told_apart_by_their_run_id():
    """Every Studio Run is job ``builder-run``: after Run 2 the header gives Run 2's own
    time (its phases carry its job's ``run_id``), not the time since Run 1 began; here Run 1
    fitted without an output and Run 2 refinished a threshold edit (no name repeats)."""
    from interactive_recsys.runtime.jobs import BOARD, Job, compute

    jobs = [Job(lambda: compute(dask.delayed(sum)([1, 2]), phase="write"),
                name="same-name", track_local=True).start() for _ in range(2)]
    for job in jobs:
        job.result(60)
    assert jobs[0].run_id < jobs[1].run_id
    recorded = [p.to_dict() for p in BOARD.phases() if p.job == "same-name"]
    assert [p["run"] for p in recorded] == [jobs[0].run_id, jobs[1].run_id]
    run1 = dict(_phase("fit 1/1", "finished", 4, 4, 10.0, stopped=40.0, job="builder-run"),
                run=7)
    run2 = dict(_phase("refinish", "finished", 2, 2, 200.0, stopped=200.5, job="builder-run"),
                run=8)
    assert job_state(_Monitor([run1, run2])).endswith("finished</b> in 0.5 s")


def test_the_header_wraps_rather_than_clips():
    line = status_html("live", _Monitor([]))
    assert "white-space:normal" in line and "nowrap" not in line and "ellipsis" not in line


def test_header_line_holds_the_time_left_and_a_failure_wins_over_a_live_thread():
    write = _phase("write", "running", 5, 10, time.time() - 10, job="other")
    line = status_html("live", _Monitor([write]), rows=2_000_000)
    assert "about 10 s left (phase 1 of 1: write)" in line and "finished" not in line
    failed = _phase("write", "error", 3, 10, 1.0, stopped=2.0, job="failing")
    assert "error in write" in job_state(_Monitor([failed]))
    assert header_text([], None, 0.0) == "starting, estimating the time left..."


def _states():
    """A Run (fit 1/2, fit 2/2, write) at many moments: each phase's partitions passed
    over time, with the clock between and inside the phases."""
    for k in range(0, 33, 4):
        for now in (0.2, 1.0, 3.0, 7.5, 12.0, 20.0, 31.0):
            fit1 = _phase("fit 1/2", "finished", 30, 30, 0.0, stopped=4.0, job="eta-run")
            fit1["reads"] = ["a", "b"]
            fit2 = _phase("fit 2/2", "running", k, 40, 4.0, job="eta-run", operators=[
                {"group": "fit", "label": "partial statistics", "done": k, "total": 32}])
            fit2["reads"] = ["b"]
            write = _phase("write", "running", k, 64, 10.0, job="eta-run", operators=[
                {"group": "write_part", "label": "write parquet", "done": k, "total": 32}])
            yield [fit1] if now < 4 else [fit1, fit2] if now < 10 else \
                [fit1, {**fit2, "status": "finished", "stopped": 10.0}, write], 4.0 + now


def test_the_header_and_the_studio_line_give_one_and_the_same_time_left():
    """The Studio's status line (first line) and the dashboard header, for the same phases
    and clock: the same words, so the same number; the header finds the Run's plan by its
    job's name (told by the Studio when Run starts), and leaves out the previous Run's
    phases (the same job name) that its board still holds."""
    plan = RunPlan(writes=True, write_reads=("a", "b"), column_bytes={"a": 300, "b": 100})
    set_plan("eta-run", plan)
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="irs-job-eta-run", daemon=True)
    thread.start()
    try:
        # the previous Run, of the same job name, is still on the dashboard's board
        before = [_phase("fit 1/1", "finished", 9, 9, -60.0, stopped=-40.0, job="eta-run"),
                  _phase("write", "finished", 9, 9, -40.0, stopped=-1.0, job="eta-run")]
        for phases, now in _states():
            studio = progress_lines(phases, 8_000_000, now, plan)[0]
            header = job_state(_Monitor(before + phases), rows=8_000_000, now=now)
            assert studio.startswith("Run: ")
            assert header.endswith(f"running</b> · {studio.removeprefix('Run: ')}"), \
                (studio, header)
            html_line = run_progress_html(phases, 8_000_000, now, plan)
            assert f"<b>Running</b> · {studio.removeprefix('Run: ')}</div>" in html_line
    finally:
        release.set()
        thread.join(5)


def test_no_screen_says_two_times_left():
    """The Studio's status line (every line of it) and the dashboard header (its visible
    words; its tooltip repeats them) each hold at most one "left", at every moment of a Run."""
    plan = RunPlan(writes=True, write_reads=("a", "b"), column_bytes={"a": 300, "b": 100})
    set_plan("eta-run", plan)
    seen = 0
    for phases, now in _states():
        header = re.sub(r'title="[^"]*"', "", status_html("live", _Monitor(phases), 8_000_000))
        for text in (run_progress_html(phases, 8_000_000, now, plan), header):
            lefts = len(re.findall(r"\bleft\b", text))
            assert lefts <= 1, text
            seen += lefts
    assert seen > 0


def _builder() -> PipelineBuilder:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"n": rng.normal(size=4000), "c": rng.integers(0, 9, 4000)})
    builder = PipelineBuilder(frame)
    builder.select_columns(["n"])
    builder.choose_operator("Normalize")
    builder.add_button.click()
    builder.output_text.value = ""
    return builder


def test_the_builder_status_line_shows_rows_per_second_during_a_run(monkeypatch):
    """A Run whose fit is a slow phase of 12 tasks (0.15 s each, the local scheduler's tasks
    counted): the status line shows the Run's time left, then rows done of 4,000 and rows/s
    while it runs (or, between the phase's end and the run's, that phase done with its 4,000 rows); at
    the end the final text, and the "run ended" event goes to the browser."""
    import dask

    import interactive_recsys.ui.builder.model._controller as controller
    from interactive_recsys.runtime import jobs
    from interactive_recsys.workflow._workflow import Workflow

    def slow_fit(self, dataset, reuse=None):
        parts = [dask.delayed(time.sleep)(0.15) for _ in range(12)]
        with dask.config.set(scheduler="sync"):
            jobs.compute(*parts, phase="fit 1/1")
        return self

    monkeypatch.setattr(Workflow, "fit", slow_fit)
    monkeypatch.setattr(controller, "PROGRESS_SECONDS", 0.1)
    builder = _builder()
    seen: list[str] = []
    builder.status.observe(lambda change: seen.append(change["new"]), "value")
    builder.buttons["run"].click()
    job = builder.model.wait_run(120)
    assert job.status == "finished", builder.status.value
    running = [t for t in seen if "irs-run-progress" in t]
    assert running, seen
    assert any("rows/s" in t and "left" in t for t in running), running
    for text in running:  # the whole Run first, then the phase under way, or (on a slow
        first, second = text.split("</div>")[:2]  # machine) the phase just ended
        assert re.search(r"<b>Running</b> · (about [\d hmins]+ left|less than a second "
                         r"left|estimating the time left\.\.\.|finishing) \(phase 1 of 1: "
                         r"fit 1/1", first), text
        assert re.search(r"fit 1/1: (about )?[\d.k]+ of 4\.0k rows", second) or \
            "done: fit 1/1 (4.0k rows in" in second, text
    assert "Run finished" in builder.status.value  # the ticker never wrote after the end
    assert seen[-1] == builder.status.value
    ended = builder.run_notice.ended
    assert (ended["n"], ended["status"], ended["title"]) == (1, "finished", "✓ Run finished")
    assert ended["body"].startswith("Run finished in")


def test_a_failed_run_sends_its_error_as_the_run_ended_event(monkeypatch):
    from interactive_recsys.workflow._workflow import Workflow

    def failing_fit(self, dataset, reuse=None):
        raise ValueError("column 'n' broke")

    monkeypatch.setattr(Workflow, "fit", failing_fit)
    builder = _builder()
    builder.buttons["run"].click()
    assert builder.model.wait_run(60).status == "error"
    ended = builder.run_notice.ended
    assert (ended["n"], ended["status"], ended["title"]) == (1, "error", "✗ Run error")
    assert "column 'n' broke" in ended["body"]
    assert run_progress_html([], 10, 0.0) == ""


def test_job_alive_sees_a_real_job_until_its_function_returns():
    """The header's "still running between phases" rests on a Job's thread name: a real
    Job is seen while its function runs and not after (guards a rename in runtime.jobs)."""
    from interactive_recsys.runtime.jobs import Job

    release = threading.Event()
    job = Job(lambda: release.wait(30), name="alive-check").start()
    try:
        assert job_alive("alive-check") and not job.done()
    finally:
        release.set()
    job.result(30)
    for _ in range(50):
        if not job_alive("alive-check"):
            break
        time.sleep(0.05)
    assert not job_alive("alive-check")


def test_a_phase_that_reads_no_data_is_not_counted_in_rows():
    """A refit's ``refinish`` (vocabularies from the saved counts) passes over no rows: its
    line says so instead of "2.0M rows" at a rate no data was read at."""
    refinish = {"name": "refinish", "status": "finished", "done": 4, "total": 4,
                "fraction": 1.0, "started": 0.0, "stopped": 0.5, "operators": []}
    running = dict(refinish, status="running", done=1, stopped=None)
    lines = progress_lines([refinish], rows=2_000_000, now=1.0)
    assert lines[-1] == ("done: refinish (vocabularies cut again from the saved counts, "
                         "no data read, in 0.5 s)")
    assert "rows" not in " ".join(lines[1:])
    assert phase_text(running, rows=2_000_000, now=0.3).endswith("no data read, 1 of 4 tasks")
