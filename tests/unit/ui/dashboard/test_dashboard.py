"""Dashboard widget without a browser (ipywidgets' dummy comm), on the session cluster."""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Iterator

import dask.dataframe as dd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.runtime.monitor import Monitor
from interactive_recsys.ui.dashboard._dashboard import ROLLOVER, Dashboard
from tests.conftest import make_criteo_frame


@pytest.fixture
def dash(client: object) -> Iterator[Dashboard]:
    """A dashboard over a monitor that samples only when a test says so."""
    monitor = Monitor(client, start=False)
    board = Dashboard(monitor)
    yield board
    board.dispose()
    monitor.close()


def _fit(tmp_path: object, parts: int = 4) -> irs.Workflow:
    path = os.path.join(str(tmp_path), "in")
    dd.from_pandas(make_criteo_frame(1000), npartitions=parts).to_parquet(path)
    node = (["C1"] >> ops.Categorify() >> ops.Normalize()) + (["F1"] >> ops.FillMissing(0))
    return irs.Workflow(node, artifacts_dir=os.path.join(str(tmp_path), "a")).fit(
        irs.Dataset(path))


def test_sources_follow_the_monitor_samples(dash: Dashboard, tmp_path: object) -> None:
    names = {s.name for s in dash.sources.values()}
    assert names == {"irs-memory", "irs-spill", "irs-utilization", "irs-tasks"}
    assert dash.sources["memory"].data["worker"] == []
    sample = dash.monitor.sample()
    memory = dash.sources["memory"].data
    workers = sorted(sample["workers"].values(), key=lambda w: str(w["name"]))
    assert memory["worker"] == [f"worker {w['name']}" for w in workers]
    assert memory["managed"] == [w["managed"] for w in workers]
    assert memory["unmanaged"] == [w["unmanaged"] for w in workers]
    assert memory["limit"] == [1_000_000_000] * 2
    assert list(dash.figures["memory"].y_range.factors) == memory["worker"]
    assert len(dash.sources["spill"].data["time"]) == 1

    _fit(tmp_path)
    dash.monitor.sample()
    tasks = dash.sources["tasks"].data
    assert len(tasks["start"]) > 8  # this fit's tasks (the stream is read incrementally)
    assert {"categorify", "normalize", "fit"} <= set(tasks["group"])
    assert all(a <= b for a, b in zip(tasks["start"], tasks["stop"], strict=True))
    colours = {}
    for group, colour in zip(tasks["group"], tasks["color"], strict=True):
        assert colours.setdefault(group, colour) == colour  # one colour per operator
    assert len(set(colours.values())) == len(colours)
    assert set(tasks["worker"]) <= set(memory["worker"])
    spill = dash.sources["spill"].data
    assert len(spill["time"]) == 2 and spill["time"][0] < spill["time"][1]
    assert spill["disk"] == [0, 0]
    assert "gpu" not in dash.figures and "device" not in spill  # no GPU: absent, not zero
    assert all(0 <= c <= 100 * os.cpu_count() for c in dash.sources["utilization"].data["cpu"]
               if not math.isnan(c))


def test_progress_per_operator_with_the_time_of_each_run(dash: Dashboard,
                                                        tmp_path: object) -> None:
    dash.monitor.sample()
    wf = _fit(tmp_path)  # one fit, then a second one of the same workflow, in the background
    job = wf.fit(irs.Dataset(os.path.join(str(tmp_path), "in")), background=True)
    job.result(timeout=60)
    dash.monitor.sample()
    assert dash.progress()["fit 1/2"] == 1.0 and dash.progress()["fit 2/2"] == 1.0
    rows = dash.progress_view.rows[-4:]  # the two runs of the two phases
    titles = [r.title.value for r in rows]
    assert [t.split(" · ")[0] for t in titles] == ["fit 1/2", "fit 2/2"] * 2
    assert all(re.fullmatch(r"fit \d/2 · \d\d:\d\d:\d\d", t) for t in titles)  # run times
    assert all(r.bar.bar_style == "success" and r.bar.value == 1.0 for r in rows), [
        (r.title.value, r.label.value) for r in rows]
    # per operator: the phase's tasks by operator, named as in the workflow, all done
    last = job.phases[0]
    ops_ = last.operators()
    labels = [o["label"] for o in ops_]
    assert "Categorify" in labels and "partial statistics" in labels
    assert sum(o["total"] for o in ops_) == last.total
    assert all(o["done"] == o["total"] for o in ops_)
    assert sum(o["seconds"] for o in ops_) > 0
    table = rows[-2].operators.value
    for o in ops_:
        assert f"{o['label']}</td>" in table and f"{o['done']}/{o['total']}" in table
    assert rows[-2].label.value.startswith(f"{last.total}/{last.total} tasks, finished, ")


def test_pause_resume_and_errors_in_the_log(dash: Dashboard) -> None:
    dash.monitor.sample()
    dash.pause_button.value = True  # what a click does
    assert dash.paused and dash.pause_button.description == "Resume"
    dash.monitor.sample()
    assert len(dash.sources["spill"].data["time"]) == 1  # paused: not drawn
    dash.pause_button.value = False
    dash.monitor.sample()
    assert not dash.paused and len(dash.sources["spill"].data["time"]) == 2

    dash._on_sample(dash.monitor, {"time": 0.0}, [])  # a broken sample: logged, not raised
    entry = dash.log_area.outputs[-1]  # after the lines of any phase ended just before
    assert "KeyError" in entry["text"] and "workers" in entry["text"]


def test_close_freezes_the_last_picture_and_dispose_removes_it(client: object) -> None:
    others = {t for t in threading.enumerate() if t.name == "irs-monitor"}  # other tests'
    board = Dashboard(client, interval_ms=100)
    assert board.monitor.running
    assert repr(board) == "Dashboard(2 workers, no GPU, every 100 ms)"
    deadline = time.monotonic() + 10
    while len(board.monitor.samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    board.close_button.click()
    assert not board.monitor.running
    assert not [t for t in threading.enumerate() if t.name == "irs-monitor" and t not in others]
    # frozen in place: the plots stay open, with every point drawn, in the widget's state
    assert board.plots.comm is not None and board.closed
    points = len(board.sources["spill"].data["time"])
    assert points == len(board.monitor.samples) >= 3
    assert _bundle_points(board, "irs-spill") == points
    assert board.controls.children == (board.status, board.dask_link)  # no more controls
    assert board.close_button.comm is None and "closed" in board.status.value
    board.monitor.sample()  # nothing is drawn after the close
    assert len(board.sources["spill"].data["time"]) == points
    board.dispose()
    assert board.comm is None and board.plots.comm is not None  # a moment for the page
    deadline = time.monotonic() + 10
    while board.plots.comm is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert board.plots.comm is None


def _bundle_points(board: Dashboard, name: str) -> int:
    """Points of a named source in the BokehWidget's state (what a saved notebook shows)."""
    doc = next(iter(board.plots.render_bundle["docs_json"].values()))
    found = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("name") == "ColumnDataSource" and node.get("attributes", {}).get(
                    "name") == name:
                found.append(node["attributes"]["data"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    [data] = found
    entries = dict(data["entries"])
    column = entries.get("time", entries.get("start"))
    return len(column["array"]["data"]) if isinstance(column, dict) else len(column)


def test_save_html_is_standalone_and_atomic(dash: Dashboard, tmp_path: object) -> None:
    dash.monitor.sample()
    path = dash.save_html(tmp_path / "run.html")  # type: ignore[operator]
    assert os.listdir(tmp_path) == ["run.html"]  # no temporary file left
    text = open(path, encoding="utf-8").read()
    assert "irs-memory" in text and "irs-tasks" in text  # the named sources, with data
    assert "cdn.bokeh.org" not in text and "Bokeh" in text  # BokehJS inline: opens offline
    assert "worker 0" in text


def test_plots_go_live_when_a_view_is_drawn_anywhere(dash: Dashboard) -> None:
    sent: list[dict] = []
    dash.plots.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    dash.monitor.sample()
    assert sent == [] and not dash.live  # no view yet: no patch a late view could half-read
    # a view was drawn (a cell, a Studio tab, a reloaded page): the signal widget says so
    dash.signal._on_msg(dash.signal, {"event": "rendered"}, [])
    assert dash.live
    bundle = json.dumps(dash.plots.render_bundle)  # sent whole, with the data so far ...
    assert "worker 1" in bundle and "irs-memory" in bundle
    assert sent == []
    dash.monitor.sample()  # ... then streams patches
    assert sent and all(m["msg"] == "patch" for m in sent)


def test_displayed_as_a_cell_result_it_goes_live_later_anyway(dash: Dashboard) -> None:
    dash.plots.send = lambda content, buffers=None: None  # type: ignore[method-assign]
    dash._repr_mimebundle_()
    dash.monitor.sample()
    assert not dash.live
    dash._displayed_at -= 10  # type: ignore[operator]  # the view had time to appear
    dash.monitor.sample()
    assert dash.live


def test_a_phase_end_stores_the_final_picture_in_the_widget_state(
        dash: Dashboard, tmp_path: object) -> None:
    dash.monitor.sample()
    assert _bundle_points(dash, "irs-tasks") == 0
    assert not dash.live  # nobody looks: the state is still kept up to date at phase ends
    _fit(tmp_path)
    dash.monitor.sample()
    drawn = len(dash.sources["tasks"].data["start"])
    assert drawn > 8 and _bundle_points(dash, "irs-tasks") == drawn


def test_whole_run_toggle_and_the_time_window(dash: Dashboard) -> None:
    from interactive_recsys.ui.dashboard._figures import WINDOW_S

    shared = {c.root.x_range.id for n, c in dash.components.items()
              if n in ("spill", "utilization", "tasks")}
    assert shared == {dash.x_range.id}  # one time axis for the three time figures
    assert (dash.x_range.start, dash.x_range.end) == (0.0, WINDOW_S)  # set, never computed
    dash._set_range(WINDOW_S + 30)
    assert (dash.x_range.start, dash.x_range.end) == (30.0, WINDOW_S + 30)
    dash.window_button.value = True
    dash._set_range(WINDOW_S + 30)
    assert (dash.x_range.start, dash.x_range.end) == (0.0, WINDOW_S + 30)
    dash.window_button.value = False
    dash._set_range(WINDOW_S + 40)
    assert dash.x_range.start == 40.0


def test_the_time_axis_never_ends_before_a_task_already_drawn(dash: Dashboard) -> None:
    """Workers put task times on the scheduler's clock with an estimated offset (Dask's
    ``scheduler_delay``) that a busy machine gets wrong by up to half a heartbeat's round
    trip: a task may end after a later sample's time. Its bar is never cut off."""
    sample = dash.monitor.sample()
    t0, worker = dash.monitor.t0, next(iter(sample["workers"]))
    task = {"key": "('write_part-ab12', 0)", "group": "write_part", "worker": worker,
            "action": "compute", "start": t0 + 4.0, "stop": t0 + 7.0}
    dash.update({**sample, "time": t0 + 5.0}, [task])
    assert dash.x_range.end == pytest.approx(7.0)
    dash.update({**sample, "time": t0 + 6.0}, [])  # a later sample, still before its end
    assert dash.x_range.end == pytest.approx(7.0)
    dash.store_state()  # the picture stored at a phase end too
    assert dash.x_range.end == pytest.approx(7.0)
    dash.show_whole_run(True)
    assert dash.x_range.end == pytest.approx(7.0)
    dash.show_whole_run(False)
    dash.update({**sample, "time": t0 + 8.0}, [])  # past it: the axes follow the clock
    assert dash.x_range.end == pytest.approx(8.0)


def test_a_closed_client_closes_the_dashboard_and_tells_listeners() -> None:
    client = irs.start_cluster(1, memory_limit="500MB", dashboard=False, gpu=False)
    board = Dashboard(client, interval_ms=100)
    told: list[Dashboard] = []
    board.on_closed(told.append)
    board.pause()  # even paused, the closing is noticed
    try:
        client.close()
        deadline = time.monotonic() + 20
        while not told and time.monotonic() < deadline:
            time.sleep(0.05)
        assert told == [board] and board.closed and not board.monitor.running
        assert "the Dask cluster closed" in board.status.value
        assert "0 workers" not in board.status.value and "live" not in board.status.value
    finally:
        board.dispose()
        client.cluster.close()


def test_updates_create_no_new_widgets(dash: Dashboard, tmp_path: object) -> None:
    from ipywidgets.widgets.widget import _instances  # every open widget

    _fit(tmp_path)
    dash.monitor.sample()
    before = len(_instances)
    for _ in range(3):
        dash.monitor.sample()
    assert len(_instances) == before  # progress rows are made once per phase


@pytest.mark.gpu
def test_gpu_memory_figure_with_device_limits() -> None:
    client = irs.start_cluster(gpu=True, dashboard=False, device_memory_limit=0.5)
    try:
        board = Dashboard(Monitor(client, start=False))
        assert "gpu" in board.figures and "device" in board.sources["spill"].data
        board.monitor.sample()
        gpu = board.sources["gpu-memory"].data
        assert gpu["device"] and all(0 < u <= t for u, t in zip(gpu["used"], gpu["total"],
                                                                  strict=True))
        assert all(0 < limit < t for limit, t in zip(gpu["limit"], gpu["total"], strict=True))
        assert list(board.figures["gpu"].y_range.factors) == gpu["device"]
        assert "gpu" in board.sources["utilization"].data
        board.dispose()
        board.monitor.close()
    finally:
        client.close()
        client.cluster.close()


def _browser_echo(event: object) -> dict:
    """The message jupyter_bokeh's browser side sends back for a document change it applied:
    the event serialized as BokehJS does (Bokeh's serializer writes the same wire format),
    through JSON as over the comm, with ``event: "jsevent"``."""
    from bokeh.core.serialization import Serializer

    content = json.loads(json.dumps(Serializer().encode(event)))
    content["event"] = "jsevent"
    return content


def test_browser_echo_of_a_stream_or_patch_is_not_applied_twice(dash: Dashboard) -> None:
    from bokeh.document.events import ColumnsPatchedEvent, ColumnsStreamedEvent

    for _ in range(3):
        dash.monitor.sample()
    spill = dash.sources["spill"]
    before = {k: list(v) for k, v in spill.data.items()}
    assert len(before["time"]) == 3
    # the browser applied the kernel's last stream and a patch, and echoes both back
    last = {k: v[-1:] for k, v in before.items()}
    doc = spill.document
    dash.plots._sync_model(dash.plots, _browser_echo(
        ColumnsStreamedEvent(doc, spill, "data", last, ROLLOVER, None)), [])
    dash.plots._sync_model(dash.plots, _browser_echo(
        ColumnsPatchedEvent(doc, spill, "data", {"disk": [(0, 12345)]}, None)), [])
    assert {k: list(v) for k, v in spill.data.items()} == before  # kernel == browser
    # other browser changes (a zoom sets a range) still reach the kernel
    from bokeh.document.events import ModelChangedEvent

    x_range = dash.figures["spill"].x_range
    dash.plots._sync_model(dash.plots, _browser_echo(
        ModelChangedEvent(doc, x_range, "start", 7.5)), [])
    assert x_range.start == 7.5


def test_embedding_view_ignores_the_echo_too() -> None:
    """EmbeddingView replaces its plan widget whole (no stream), but shows it with the same
    widget class: an echoed stream of its source is not applied again either."""
    import pandas as pd
    from bokeh.document.events import ColumnsStreamedEvent

    from interactive_recsys.ui._bokeh_widget import BokehWidget
    from interactive_recsys.ui.embeddings._embeddings import EmbeddingView

    view = EmbeddingView(pd.DataFrame({"c": list("aaab")}))
    assert isinstance(view.plot, BokehWidget) and isinstance(view.plan_plot, BokehWidget)
    source = view.plan_source
    before = {k: list(v) for k, v in source.data.items()}
    row = {k: v[:1] for k, v in before.items()}
    view.plan_plot._sync_model(view.plan_plot, _browser_echo(
        ColumnsStreamedEvent(source.document, source, "data", row, None, None)), [])
    assert {k: list(v) for k, v in source.data.items()} == before
    view.close()


def test_bars_show_the_end_of_a_background_job_at_once(client: object,
                                                      tmp_path: object) -> None:
    """The final progress is drawn before ``job.result()`` returns, not at the next sample
    (here a minute away): the stored notebook 03 used to keep "write 62/64 tasks, running"."""
    board = Dashboard(client, interval_ms=60_000)  # samples once at start, then waits
    try:
        wf = _fit(tmp_path, parts=6)
        job = wf.transform(irs.Dataset(os.path.join(str(tmp_path), "in"))).to_parquet(
            os.path.join(str(tmp_path), "out"), background=True)
        job.result(timeout=60)
        fit = _fit(tmp_path).fit(irs.Dataset(os.path.join(str(tmp_path), "in")),
                                 background=True)
        fit.result(timeout=60)
        phases = {row.title.value.split(" · ")[0]: (row.bar, row.label) for row in
                  board.progress_view.rows}
        assert {"write", "fit 1/2", "fit 2/2"} <= set(phases)
        for name in ("write", "fit 1/2", "fit 2/2"):
            bar, label = phases[name]
            assert (bar.value, bar.bar_style) == (1.0, "success"), (name, label.value)
            total = int(label.value.split("/")[0])
            assert label.value.startswith(f"{total}/{total} tasks, finished, ")
        text = open(board.save_html(os.path.join(str(tmp_path), "r.html"), title="My run"),
                    encoding="utf-8").read()
        assert "<h2>My run</h2>" in text and time.strftime("%Y-%m-%d") in text
        assert re.search(r"write · \d\d:\d\d:\d\d: 100%", text)
        assert "write parquet</td>" in text  # progress per operator in the report
    finally:
        board.dispose()


def test_close_draws_the_final_state(client: object) -> None:
    board = Dashboard(client, interval_ms=60_000)
    seen = len(board.monitor.samples)
    deadline = time.monotonic() + 10
    while seen == 0 and time.monotonic() < deadline:  # the thread's first sample
        time.sleep(0.05)
        seen = len(board.monitor.samples)
    points = len(board.sources["spill"].data["time"])
    board.close()
    assert len(board.monitor.samples) == seen + 1  # a last sample on stop ...
    assert len(board.sources["spill"].data["time"]) == points + 1  # ... drawn
    assert "closed" in board.status.value
    board.dispose()


def test_components_draw_frames_readably() -> None:
    """Each figure component alone: source, root, update (no widget, no cluster)."""
    from interactive_recsys.ui.dashboard._figures import (
        BYTES_FORMATTER_JS,
        Frame,
        GpuMemoryFigure,
        MemoryFigure,
        SpillFigure,
        time_range,
    )

    gib = 2**30
    worker = {"managed": gib // 4, "unmanaged": gib // 8, "spilled": 0, "limit": 700 * 10**6,
              "cpu": 10.0}
    frame = Frame(time=1.0, workers=[("worker 0", worker)], tasks=[], gpus=[
        {"device": "worker 0:gpu0", "used": 2 * gib, "total": 16 * gib, "limit": 12 * gib,
         "utilization": 40}])
    memory = MemoryFigure()
    memory.update(frame)
    # one unit system: the decimal 700 MB limit is written in binary units, like the axis
    assert memory.source.data["limit_text"] == ["667.57 MiB"]
    assert "1024" in BYTES_FORMATTER_JS and "MiB" in BYTES_FORMATTER_JS
    assert memory.root.xaxis[0].ticker.desired_num_ticks <= 5 and memory.root.xaxis[0].ticker.base == 2  # labels do not run together
    assert memory.root.legend[0] in memory.root.above  # legend outside the plot area

    gpu = GpuMemoryFigure()
    assert gpu.update(frame) == [40]
    assert gpu.root.x_range.end >= 16 * gib  # the capacity is on the scale
    assert gpu.source.data["total"] == [16 * gib]

    spill = SpillFigure(time_range())
    spill.update(frame)
    assert spill.nothing.visible and not spill.root.yaxis[0].visible  # no -1..1 B axis
    assert (spill.root.y_range.start, spill.root.y_range.end) == (0, 1)
    spill.update(Frame(time=2.0, workers=[("worker 0", {**worker, "spilled": 3 * 2**20})],
                       tasks=[]))
    assert not spill.nothing.visible and spill.root.yaxis[0].visible
    assert spill.root.y_range.end == pytest.approx(1.1 * 3 * 2**20)
    spill.update(Frame(time=3.0, workers=[("worker 0", worker)], tasks=[]))
    assert spill.root.y_range.end == pytest.approx(1.1 * 3 * 2**20)  # never shrinks
    assert spill.source.data["disk"] == [0, 3 * 2**20, 0]


def test_host_memory_axis_is_the_bars_scale_and_places_the_limit() -> None:
    """200 MiB used against a 12 GiB limit: the axis runs to the bars (not the limit) and
    says the limit is off scale; once a bar reaches half the limit, the limit is on it."""
    from interactive_recsys.ui.dashboard._figures import Frame, MemoryFigure

    mib, gib = 2**20, 2**30

    def frame(*used: int, limit: int | None = 12 * gib) -> Frame:
        return Frame(time=1.0, tasks=[], workers=[
            (f"worker {i}", {"managed": u // 2, "unmanaged": u - u // 2, "spilled": 0,
                             "limit": limit, "cpu": 5.0}) for i, u in enumerate(used)])

    memory = MemoryFigure()
    memory.update(frame(150 * mib, 200 * mib))
    end = memory.root.x_range.end
    assert memory.root.x_range.start == 0
    assert 1.15 * 200 * mib <= end <= 2 * 1.15 * 200 * mib  # the largest bar, with room
    assert end < 12 * gib / 10
    assert 200 * mib / end > 0.5  # the largest bar fills over half the plot
    assert memory.root.xaxis[0].axis_label == "limit 12.00 GiB per worker: off this scale"
    memory.update(frame(150 * mib, 210 * mib))
    assert memory.root.x_range.end == end  # a little more memory: the same axis

    memory.update(frame(7 * gib, 1 * gib))  # over half the limit: the limit is on the scale
    assert 12 * gib <= memory.root.x_range.end <= 1.1 * 12 * gib
    assert memory.root.xaxis[0].axis_label == "red: limit 12.00 GiB per worker"
    memory.update(frame(14 * gib))  # past the limit: the bar and the limit both shown
    assert memory.root.x_range.end >= 14 * gib
    assert memory.source.data["limit"] == [12 * gib]

    memory.update(frame(0, 0, limit=None))  # idle, no limit: a small axis, said so
    assert memory.root.x_range.end == MemoryFigure.MIN_END
    assert memory.root.xaxis[0].axis_label == "no memory limit"
