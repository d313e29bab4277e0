"""What the dashboard sends the browser: deltas, nothing when idle, nothing while hidden and
one catch-up when shown again. The figures are put in a Bokeh ``Document`` whose change
events are counted (what jupyter_bokeh would send); the dashboard's visibility comes from
the messages its browser side sends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bokeh.document import Document
from bokeh.document.events import ColumnDataChangedEvent, ColumnsPatchedEvent, ColumnsStreamedEvent

from interactive_recsys.runtime.monitor import Monitor
from interactive_recsys.ui.dashboard._dashboard import Dashboard
from interactive_recsys.ui.dashboard._figures import (
    Frame,
    MemoryFigure,
    SpillFigure,
    UtilizationFigure,
    time_range,
)

MIB = 2**20


def _worker(managed: float = 100 * MIB, unmanaged: float = 50 * MIB, spilled: float = 0,
            cpu: float = 3.0) -> dict:
    return {"managed": managed, "unmanaged": unmanaged, "spilled": spilled,
            "limit": 2**30, "cpu": cpu}


def _events(*roots) -> list:
    doc = Document()
    for root in roots:
        doc.add_root(root)
    seen: list = []
    doc.on_change(lambda event: seen.append(event))
    return seen


def test_an_idle_cluster_sends_no_data_and_a_change_sends_only_its_cells() -> None:
    memory, spill = MemoryFigure(), SpillFigure(time_range())
    util = UtilizationFigure(spill.root.x_range)
    events = _events(memory.root, spill.root, util.root)

    def frame(t: float, **w) -> Frame:
        return Frame(time=t, workers=[("worker 0", _worker()), ("worker 1", _worker(**w))],
                     tasks=[])

    for fig in (memory, spill, util):
        fig.update(frame(0.0))
    events.clear()
    # idle: a few KiB of memory and 1 point of CPU move between heartbeats: nothing is sent
    for t in range(1, 11):
        for fig in (memory, spill):
            fig.update(frame(float(t), unmanaged=50 * MIB + 4096 * t))
        util.update(frame(float(t), cpu=3.0 + (t % 2)))
    data_events = [e for e in events if isinstance(
        e, (ColumnsPatchedEvent, ColumnsStreamedEvent, ColumnDataChangedEvent))]
    assert data_events == []
    assert memory.source.data["unmanaged"] == [50 * MIB, 50 * MIB]
    # worker 1 grows by 200 MiB: one patch, of its own cells only (no whole table)
    assert memory.update(frame(11.0, managed=300 * MIB)) == "patch"
    [patch] = [e for e in events if isinstance(e, ColumnsPatchedEvent)]
    assert set(patch.patches) == {"managed", "process_text"}
    assert [i for i, _ in patch.patches["managed"]] == [1]
    assert not [e for e in events if isinstance(e, ColumnDataChangedEvent)]


def test_a_step_streams_the_end_of_the_flat_stretch_then_the_new_value() -> None:
    spill = SpillFigure(time_range())
    events = _events(spill.root)
    for t, disk in [(0, 0), (1, 0), (2, 0), (3, 8 * MIB), (4, 8 * MIB)]:
        spill.update(Frame(time=float(t), workers=[("w", _worker(spilled=disk))], tasks=[]))
    streams = [e for e in events if isinstance(e, ColumnsStreamedEvent)]
    # the first point, then (2, 0) and (3, 8 MiB) together in one stream; (1, 0), (4, ...) held
    assert [s.data["time"] for s in streams] == [[0.0], [2.0, 3.0]]
    assert spill.source.data["disk"] == [0, 0, 8 * MIB]
    assert spill.series.flush() == 1 and spill.source.data["time"][-1] == 4.0


def test_nothing_spilled_draws_no_orange_sliver() -> None:
    memory = MemoryFigure()
    glyphs = [r.glyph for r in memory.root.renderers if hasattr(r.glyph, "left")]
    assert len(glyphs) == 3  # managed, unmanaged, spilled
    assert all(g.line_color is None for g in glyphs)  # a zero-width bar has no outline
    assert [g.fill_color for g in glyphs] == ["#1f77b4", "#aec7e8", "#ff7f0e"]
    spill = SpillFigure(time_range())  # and no orange line along zero in the spill figure
    spill.update(Frame(time=1.0, workers=[("w", _worker())], tasks=[]))
    assert [line.visible for line in spill.lines] == [False]
    spill.update(Frame(time=2.0, workers=[("w", _worker(spilled=MIB))], tasks=[]))
    assert [line.visible for line in spill.lines] == [True]


@pytest.fixture
def dash(client: object) -> Iterator[Dashboard]:
    monitor = Monitor(client, start=False)
    board = Dashboard(monitor)
    board._live = True  # as after a browser view was drawn
    yield board
    board.dispose()
    monitor.close()


def _visibility(dash: Dashboard, visible: bool, view: str = "v1") -> None:
    dash.signal._on_msg(dash.signal, {"event": "visibility", "view": view,
                                      "visible": visible}, [])


def test_hidden_sends_nothing_and_shown_catches_up_in_one_update(dash: Dashboard) -> None:
    dash.monitor.sample()
    doc = dash.layout_bokeh.document
    events: list = []
    doc.on_change(lambda event: events.append(event))
    _visibility(dash, False)
    assert dash.hidden
    samples = [dash.monitor.sample() for _ in range(4)]
    assert events == []  # hidden: not one change for the browser
    assert len(dash._pending) == 4
    fake = {"key": "x-1", "group": "categorify", "worker": next(iter(samples[1]["workers"])),
            "start": samples[1]["time"], "stop": samples[1]["time"] + 0.5, "action": "compute"}
    dash._pending_tasks.append(fake)
    _visibility(dash, True)  # shown again: everything missed, once
    assert not dash.hidden and not dash._pending
    streams = [e for e in events if isinstance(e, ColumnsStreamedEvent)]
    assert sum(e.model is dash.sources["tasks"] for e in streams) == 1
    assert dash.sources["tasks"].data["key"] == ["x-1"]
    # the axes end at the last sample, or at the drawn task's end when later (on a quick
    # machine the 4 samples take less than the task's 0.5 s), and at least 1 s after the start
    t0 = dash.monitor.t0
    assert dash.x_range.end == pytest.approx(
        max(samples[-1]["time"] - t0, fake["stop"] - t0, 1.0))


def test_a_phase_that_ends_is_drawn_at_once_not_a_draw_interval_later(dash: Dashboard) -> None:
    """A live view draws at most once per DRAW_S, except the sample after a phase ended:
    its progress row says finished at once, with the header (where the Studio says so)."""
    import dask

    from interactive_recsys.runtime import jobs

    dash.monitor.sample()
    assert len(dash._pending) == 0 and dash._updated > 0
    dash.monitor.sample()  # nothing new, within DRAW_S: kept for the next draw
    assert len(dash._pending) == 1
    jobs.compute(dask.delayed(sum)([1, 2]), phase="write")
    dash.monitor.sample()  # a phase ended since: drawn now, with what was kept
    assert len(dash._pending) == 0
    assert dash.progress_view.rows[-1].label.value.startswith("1/1 tasks, finished")
    assert "finished</b> in" in dash.status.value
    dash.monitor.sample()  # no news again: back to one draw per DRAW_S
    assert len(dash._pending) == 1


def test_visible_while_any_view_is(dash: Dashboard) -> None:
    _visibility(dash, False, "a")
    _visibility(dash, True, "b")
    assert not dash.hidden
    dash.signal._on_msg(dash.signal, {"event": "removed", "view": "b"}, [])
    assert dash.hidden
    dash.monitor.sample()
    assert len(dash._pending) == 1
    dash.close()  # the final picture has it all, even hidden
    assert not dash._pending and len(dash.sources["spill"].data["time"]) >= 1


def test_whole_run_starts_where_the_latest_run_began(dash: Dashboard, monkeypatch) -> None:
    started = dash.monitor.started
    phases = [{"job": "old", "started": started - 50.0},
              {"job": "j2", "started": started + 20.0}, {"job": "j2", "started": started + 30.0}]
    monkeypatch.setattr(dash.monitor, "progress", lambda: phases)
    dash.show_whole_run(True)
    dash._set_range(95.0)
    assert dash.x_range.start == pytest.approx(20.0) and dash.x_range.end == 95.0
    dash.show_whole_run(False)
    dash._set_range(95.0)
    assert dash.x_range.start == pytest.approx(35.0)


def test_the_gpu_memory_figure_sends_only_what_moved() -> None:
    from interactive_recsys.ui.dashboard._figures import GpuMemoryFigure

    gib = 2**30

    def frame(t: float, used1: float) -> Frame:
        return Frame(time=t, workers=[], tasks=[], gpus=[
            {"device": f"worker {i}:gpu0", "used": used, "total": 80 * gib,
             "limit": 64 * gib, "utilization": 30}
            for i, used in enumerate([10 * gib, used1])])

    gpu = GpuMemoryFigure()
    events = _events(gpu.root)
    assert gpu.update(frame(0.0, 20 * gib)) == [30, 30]
    events.clear()
    # 1 MiB of allocator jitter on an 84 GiB axis: nothing is sent, the old bar stays
    for t in range(1, 6):
        gpu.update(frame(float(t), 20 * gib + t * MIB))
    assert [e for e in events if isinstance(
        e, (ColumnsPatchedEvent, ColumnsStreamedEvent, ColumnDataChangedEvent))] == []
    assert gpu.source.data["used"] == [10 * gib, 20 * gib]
    # device 1 grows by 8 GiB: one patch of its one cell, the axis unchanged
    gpu.update(frame(6.0, 28 * gib))
    [patch] = [e for e in events if isinstance(e, ColumnsPatchedEvent)]
    assert patch.patches == {"used": [(1, 28 * gib)]}
    assert not [e for e in events if isinstance(e, ColumnDataChangedEvent)]
    assert gpu.root.x_range.end == pytest.approx(1.05 * 80 * gib)
