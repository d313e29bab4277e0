"""A live view of a Dask cluster in the notebook: a thin widget over :class:`~.Monitor`.

The figures are small components (:mod:`._figures`: host memory per worker against the
limit, GPU memory per device with capacity and limit when the cluster has GPUs, spilled
bytes, CPU/GPU utilization, the task stream coloured by operator), shown together in one
:class:`~interactive_recsys.ui._bokeh_widget.BokehWidget`; the progress of each phase, per
operator, is a row of ipywidgets (:mod:`._progress`); the header line is written by
:mod:`._header`. Controls: pause/resume, "whole run" (the time axes show the last 60 s by
default), close, and a link to Dask's own dashboard when the cluster has one. Errors raised
in callbacks are shown in the log area.

**Live wherever displayed.** The plots start streaming when a browser view of the dashboard
is drawn: an invisible :func:`~._visibility.visibility_signal` widget tells the kernel, which
sends the figures whole, then streams; for a cell's output, a Studio tab, a reloaded page.
(Displayed as a cell's result, it also goes live :data:`LIVE_AFTER_S` seconds later, in case
the kernel is busy.)

**Cheaper than the job.** Only changes are sent (:mod:`._deltas`), at most every
:data:`DRAW_S`; nothing while no view can be seen (:mod:`._visibility`), then one catch-up.

**Final state kept.** At each phase end (with a live view, at the job's end) and on close,
the figures are stored whole in the widget's state (a saved notebook, ``irs report``).
:meth:`Dashboard.close` freezes the last picture in place; re-running the cell that made a
dashboard disposes of the old one (no widget or thread left behind; :mod:`._notebook`).

>>> import interactive_recsys as irs
>>> client = irs.start_cluster(1, memory_limit="1GB", dashboard=False, gpu=False)
>>> dash = irs.ui.Dashboard(client, interval_ms=200)
>>> dash
Dashboard(1 worker, no GPU, every 200 ms)
>>> dash.close(); "<i>closed</i>" in dash.status.value
True
>>> dash.dispose(); client.cluster.close(); client.close()
"""

from __future__ import annotations

import html
import os
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets
from bokeh.layouts import column, row

from interactive_recsys.redact import redact_text
from interactive_recsys.runtime.monitor import Monitor
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.ui._bokeh_widget import BokehWidget
from interactive_recsys.ui._theme import theme_watch
from interactive_recsys.ui.dashboard._figures import (
    ROLLOVER,
    TASK_ROLLOVER,
    WINDOW_S,
    Frame,
    GpuMemoryFigure,
    MemoryFigure,
    SpillFigure,
    TaskStreamFigure,
    UtilizationFigure,
    time_range,
)
from interactive_recsys.ui.dashboard._frames import make_frame
from interactive_recsys.ui.dashboard._header import (
    cluster_summary,
    page_html,
    run_start,
    running,
    status_html,
)
from interactive_recsys.ui.dashboard._notebook import (
    BOKEHJS,
    client_dashboard_link,
    hook_cells,
    load_bokehjs,
    made_in_cell,
)
from interactive_recsys.ui.dashboard._progress import ProgressView
from interactive_recsys.ui.dashboard._run_log import RunLog
from interactive_recsys.ui.dashboard._visibility import visibility_signal

__all__ = ["BOKEHJS", "LIVE_AFTER_S", "ROLLOVER", "TASK_ROLLOVER", "Dashboard"]

#: Seconds after the dashboard is displayed as a cell's result before it goes live anyway.
LIVE_AFTER_S = 2.0
#: A live view is drawn at most once per this many seconds (the samples between are drawn
#: together): the browser's rendering, not the data, is what costs.
DRAW_S = 4.0
#: While nothing changes (an idle cluster), a live view's time axes move on (and the lines
#: reach now) once per this many seconds.
IDLE_AXIS_S = 10.0


class Dashboard(widgets.VBox):
    """Live cluster dashboard (ipywidgets + Bokeh) over a :class:`~.Monitor`.

    Parameters
    ----------
    source : a ``distributed.Client`` (a Monitor is started and owned by the dashboard),
        a :class:`~.Monitor` (shared; the dashboard only subscribes), or ``None`` for the
        active client.
    interval_ms : sampling period of an owned monitor.
    since : for an owned monitor, a ``time.time()`` from which to show the phases and tasks
        (a job that started before the dashboard was made: all of it, one clock).
    """

    #: True until ``__init__`` got far enough for :meth:`close` (the widget's ``__del__``
    #: calls it even when ``__init__`` raised, e.g. with no Dask client to watch).
    _closed = True

    def __init__(self, source: Any = None, *, interval_ms: int = 500,
                 since: float | None = None) -> None:
        if isinstance(source, Monitor):
            self.monitor, self._owns_monitor = source, False
        else:
            self.monitor = Monitor(source, interval_ms=interval_ms, start=False, since=since)
            self._owns_monitor = True
        self._whole = False
        #: the rows each phase of the watched run passes over (the dataset's row count), for
        #: the header's rows/s and time left; ``None``: progress in tasks (set by the Studio)
        self.rows: int | None = None
        load_bokehjs()
        hook_cells()
        self._lock = threading.RLock()
        self._paused = self._closed = self._disposed = self._live = False
        self._reason = ""
        self._displayed_at: float | None = None
        self._ended_phases = self._phases_ended = 0
        # the clock of the last full draw (None: draw the next fully); monotonic() of the last
        # update; the samples and task records not drawn yet (hidden, or too soon)
        self._drawn_at: float | None = None
        self._updated = 0.0
        self._pending: deque[dict[str, Any]] = deque(maxlen=ROLLOVER)
        self._pending_tasks: deque[dict[str, Any]] = deque(maxlen=TASK_ROLLOVER)
        self._errors_shown = 0
        self._closed_callbacks: list[Callable[[Dashboard], Any]] = []
        self._build_figures()
        self.plots = BokehWidget(self.layout_bokeh)
        # no patches until a view is drawn (see _go_live): a view created between the parts
        # of one PATCH-DOC message would misread every later patch
        self.layout_bokeh.document.remove_on_change(self.plots)
        self.signal = visibility_signal()  # a view drawn; whether any view can be seen
        self.signal.on_render(self._guard(self._on_render))
        self.theme = theme_watch(self.layout_bokeh)  # plots in JupyterLab's light/dark theme
        self.signal.on_change(self._guard(self._on_visibility))
        # the header: one line at any width (the status shrinks, its end clipped with "…")
        self.status = widgets.HTML(self._status_html(), layout=widgets.Layout(
            flex="1 1 auto", min_width="0", overflow="hidden"))
        self.status.add_class("irs-dashboard-status")
        button = {"layout": widgets.Layout(width="auto", flex="0 0 auto")}
        self.pause_button = widgets.ToggleButton(
            value=False, description="Pause", icon="pause", tooltip="Pause/resume", **button)
        self.window_button = widgets.ToggleButton(
            value=False, description="whole run", icon="arrows-h",
            tooltip="Time axes: the last 60 s (off) or the whole run (on)", **button)
        self.close_button = widgets.Button(
            description="Close", icon="times", tooltip="Stop sampling; keep the last picture",
            **button)
        self.pause_button.observe(self._guard(self._on_pause), names="value")
        self.window_button.observe(self._guard(lambda c: self.show_whole_run(c["new"])),
                                   names="value")
        self.close_button.on_click(self._guard(lambda _: self.close()))
        link = client_dashboard_link(self.monitor.client)
        self.dask_link = widgets.HTML(
            f'<a href="{html.escape(link)}" target="_blank" class="irs-dask-dashboard" '
            f'title="Dask\'s own dashboard" style="white-space:nowrap">Dask ↗</a>' if link else "",
            layout=widgets.Layout(flex="0 0 auto"))
        self.controls = widgets.HBox(
            [self.status, self.pause_button, self.window_button, self.close_button,
             self.dask_link, self.signal, self.theme],
            layout=widgets.Layout(flex_flow="row nowrap", align_items="center", width="100%"))
        self.controls.add_class("irs-dashboard-header")
        self.progress_view, self.run_log = ProgressView(), RunLog()
        self.log_area = widgets.Output(layout=widgets.Layout(
            max_height="120px", overflow="auto", border="1px solid var(--jp-border-color2, #ddd)"))
        super().__init__([self.controls, self.plots, widgets.HTML("<b>Progress</b>"),
                          self.progress_view, widgets.HTML("<b>Log</b> (phases and errors)"),
                          self.log_area])
        self.add_class("irs-dashboard")
        made_in_cell(self)
        self.monitor.subscribe(self._on_sample)
        self.monitor.on_closed(self._on_client_closed)
        if self._owns_monitor:
            self.monitor.start()

    # ---- figures --------------------------------------------------------------------------
    def _build_figures(self) -> None:
        gpu = self.monitor.has_gpu
        self.x_range = time_range()
        self.components: dict[str, Any] = {
            "memory": MemoryFigure(), "spill": SpillFigure(self.x_range, gpu),
            "utilization": UtilizationFigure(self.x_range, gpu),
            "tasks": TaskStreamFigure(self.x_range)}
        if gpu:
            self.components["gpu-memory"] = GpuMemoryFigure()
        c = self.components
        top = [c["memory"].root, c["gpu-memory"].root if gpu else c["spill"].root]
        middle = [c["utilization"].root] + ([c["spill"].root] if gpu else [])
        self.layout_bokeh = column(row(*top), row(*middle), c["tasks"].root,
                                   name="irs-dashboard")

    @property
    def sources(self) -> dict[str, Any]:
        """The named data sources, by component (``memory``, ``spill``, ``tasks``...)."""
        return {name: comp.source for name, comp in self.components.items()}

    @property
    def figures(self) -> dict[str, Any]:
        names = {"gpu-memory": "gpu"}
        return {names.get(n, n): comp.root for n, comp in self.components.items()}

    # ---- updates --------------------------------------------------------------------------
    def _on_sample(self, monitor: Monitor, sample: dict[str, Any], tasks: list[dict]) -> None:
        if self._paused or self._closed:
            return
        ended = sum(p["status"] != "running" for p in monitor.progress())
        with self._lock:
            self._pending.append(sample)
            self._pending_tasks.extend(tasks)
            news, self._phases_ended = ended != self._phases_ended, ended
            if self._live and (self.hidden or (
                    not news and time.monotonic() - self._updated < DRAW_S)):
                # nothing sent while nothing shows it, nor more than once per DRAW_S, but a
                # phase that ended is drawn at once: the progress rows and the header say
                # "finished" when the Studio does, not DRAW_S later
                return
        try:
            self.catch_up()
        except Exception:
            self._log(f"dashboard update failed:\n{traceback.format_exc()}")

    def frame(self, sample: dict[str, Any], tasks: list[dict[str, Any]]) -> Frame:
        """A monitor sample as the figures draw it (times relative to the monitor's start)."""
        return make_frame(sample, tasks, self.monitor.t0, self.monitor.has_gpu)

    @property
    def hidden(self) -> bool:
        """Whether every browser view reported that it cannot be seen."""
        return not self.signal.visible

    def _on_visibility(self, visible: bool) -> None:
        if visible:
            self._drawn_at = None  # shown again: the lines and axes reach now
            self.catch_up()

    def catch_up(self) -> None:
        """Draw the samples and tasks not drawn yet (taken while hidden, or since the last
        draw), in one update."""
        with self._lock:
            if not self._pending or self._disposed:
                return
            samples, tasks = list(self._pending), list(self._pending_tasks)
            self._pending.clear()
            self._pending_tasks.clear()
            self.update(samples[-1], tasks, earlier=samples[:-1])

    def update(self, sample: dict[str, Any] | None = None,
               tasks: list[dict[str, Any]] | None = None, *,
               earlier: Sequence[dict[str, Any]] = ()) -> None:
        """Draw one monitor sample and its new task records (the latest sample if None);
        ``earlier``: samples not drawn yet, before it (their points join the time series)."""
        if sample is None:
            if not self.monitor.samples:
                return
            sample = self.monitor.samples[-1]
        with self._lock:  # samples arrive from the monitor's thread and from job threads
            self._updated = time.monotonic()
            frame = self.frame(sample, tasks or [])
            frames = [self.frame(s, []) for s in earlier] + [frame]
            c = self.components
            changed = c["memory"].update(frame) != "none" or bool(frame.tasks)
            if "gpu-memory" in c:
                c["gpu-memory"].update(frame)
                changed = True
            # spilling draws at once; utilization alone waits for the axes (idle jitter)
            changed = c["spill"].extend(frames, send=False) > 0 or changed
            c["utilization"].extend(frames, send=False)
            c["tasks"].update(frame)
            phases = self.monitor.progress()
            if (changed or not self._live or self._drawn_at is None
                    or frame.time - self._drawn_at >= IDLE_AXIS_S):
                self._draw_to(frame.time, phases)
            self.progress_view.update(phases)
            for line in self.run_log.new_lines(phases, self.rows):
                self._log(line)
            self._show_monitor_errors()
            self.status.value = self._status_html()
            ended = sum(p["status"] != "running" for p in phases)
            if ended != self._ended_phases and (not self._live or not running(phases)):
                # a phase ended: its final picture in the state (a live view has it already:
                # sent whole, the browser draws it all again, so once the job ended)
                self._ended_phases = ended
                self.store_state()
            if (not self._live and self._displayed_at is not None
                    and time.monotonic() - self._displayed_at > LIVE_AFTER_S):
                self.refresh()

    def _draw_to(self, now: float, phases: list[dict[str, Any]] | None = None) -> None:
        """The lines reach ``now`` (a sample's time); the axes too (see :meth:`_set_range`)."""
        for name in ("spill", "utilization"):
            self.components[name].series.flush()
        self._set_range(now, phases)
        self._drawn_at = now

    def progress(self) -> dict[str, float]:
        """Fraction of tasks done per phase name (latest run of each name), as of now."""
        return {p["name"]: p["fraction"] for p in self.monitor.progress()}

    # ---- display, going live, stored state --------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        if self._displayed_at is None:
            self._displayed_at = time.monotonic()
        return super()._repr_mimebundle_(**kwargs)

    def _on_render(self) -> None:  # a view was drawn: send the plots whole, then stream
        if not self._closed:
            self.refresh()

    @property
    def live(self) -> bool:
        """Whether samples are streamed to the browser (a view was drawn)."""
        return self._live

    def refresh(self) -> None:
        """Send the plots whole (all data so far), then stream updates as patches.

        Called when a view is drawn; call it by hand after reloading a page if needed."""
        with self._lock:
            if self._disposed:
                return
            self.plots.update_from_model(self.layout_bokeh)  # re-attaches the patch stream
            self._live = not self._closed
            self._updated, self._drawn_at = 0.0, None  # the next sample is drawn at once
            if self._closed:
                self.layout_bokeh.document.remove_on_change(self.plots)

    def store_state(self) -> None:
        """Put the figures, with all their data, in the widget's state (what a saved notebook
        and ``irs report`` show), without changing whether patches stream."""
        with self._lock:
            if self._disposed:
                return
            if self.monitor.samples:  # the lines reach the last sample, the axes too
                self._draw_to(self.monitor.samples[-1]["time"] - self.monitor.t0)
            self.plots.update_from_model(self.layout_bokeh)
            if not self._live:
                self.layout_bokeh.document.remove_on_change(self.plots)

    # ---- controls, log --------------------------------------------------------------------
    def _guard(self, fn: Any) -> Any:
        """Wrap a widget callback so that its errors appear in the log area."""

        def wrapped(*args: Any) -> Any:
            try:
                return fn(*args)
            except Exception:
                self._log(f"callback {getattr(fn, '__name__', fn)} failed:\n"
                          f"{traceback.format_exc()}")
                return None

        return wrapped

    def _on_pause(self, change: dict[str, Any]) -> None:
        self.pause() if change["new"] else self.resume()

    def show_whole_run(self, whole: bool = True) -> None:
        """Time axes over the whole run (``True``) or the last 60 s (``False``)."""
        with self._lock:
            self._whole = bool(whole)
            if self.monitor.samples:
                self._set_range(self.monitor.samples[-1]["time"] - self.monitor.t0)
        self.window_button.value = whole

    def _set_range(self, now: float, phases: list[dict[str, Any]] | None = None) -> None:
        """The time axes end at ``now`` (seconds on the monitor's clock), or at the end of a
        task drawn when later (``TaskStreamFigure.end``), and start where the latest run
        began ("whole run"; 0 before any run) or :data:`WINDOW_S` seconds earlier."""
        end = max(float(now), self.components["tasks"].end, 1.0)
        phases = self.monitor.progress() if phases is None else phases
        start = (min(run_start(phases, self.monitor.started), end - 1.0) if self._whole
                 else max(0.0, end - WINDOW_S))
        if (self.x_range.start, self.x_range.end) != (start, end):
            self.x_range.update(start=start, end=end)

    def pause(self) -> None:
        """Stop updating (and sampling, when the dashboard owns its monitor)."""
        self._paused = True
        if self._owns_monitor:
            self.monitor.pause()
        self.pause_button.value, self.pause_button.description = True, "Resume"
        self.status.value = self._status_html()

    def resume(self) -> None:
        self._paused = False
        self._drawn_at = None
        if self._owns_monitor:
            self.monitor.resume()
        self.pause_button.value, self.pause_button.description = False, "Pause"
        self.status.value = self._status_html()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def closed(self) -> bool:
        return self._closed

    def _log(self, text: str) -> None:
        text = redact_text(text)  # tracebacks may name URLs with credentials
        self.log_area.append_stdout(text if text.endswith("\n") else text + "\n")

    def _show_monitor_errors(self) -> None:
        errors = list(self.monitor.errors)
        for text in errors[self._errors_shown:]:
            self._log(text)
        self._errors_shown = len(errors)

    # ---- closing --------------------------------------------------------------------------
    def on_closed(self, callback: Callable[[Dashboard], Any]) -> None:
        """Call ``callback(dashboard)`` once the dashboard closed (by :meth:`close` or
        because its Dask client closed)."""
        self._closed_callbacks.append(callback)

    def _on_client_closed(self, monitor: Monitor) -> None:
        self.close(reason="the Dask cluster closed")

    def close(self, reason: str = "") -> None:
        """Freeze the dashboard: sampling stops (an owned monitor takes a last sample, drawn
        here), the figures and progress keep their final state in place (also in the
        widget's state), the controls go. :meth:`dispose` removes it altogether."""
        if self._closed:
            return
        if self._owns_monitor:
            self.monitor.stop()  # its last sample is drawn by _on_sample
        with self._lock:
            if self._pending:  # the final picture has everything, even if hidden
                self.catch_up()
            self._closed, self._reason = True, reason
            self.monitor.unsubscribe(self._on_sample)
            try:
                self.progress_view.update(self.monitor.progress())
            except Exception:
                self._log(f"final progress update failed:\n{traceback.format_exc()}")
            self._live = False
            self.store_state()  # the final picture, whole, and no more patches
        self.status.value = self._status_html()
        self.controls.children = (self.status, self.dask_link)
        for w in (self.pause_button, self.window_button, self.close_button, self.signal):
            w.close()
        for callback in list(self._closed_callbacks):
            try:
                callback(self)
            except Exception:
                self._log(f"close callback failed:\n{traceback.format_exc()}")

    def dispose(self) -> None:
        """Close the dashboard and all its widgets (the picture goes too)."""
        self.close()
        with self._lock:
            if self._disposed:
                return
            self._disposed = True
        self.monitor.remove_on_closed(self._on_client_closed)
        # the plots' view, taken off the page with the dashboard, still sends its layout
        # changes for a moment: their comm closes a few seconds later (no "No such comm")
        self.plots.close_later()
        for w in (self.log_area, self.status, self.dask_link, self.controls,
                  *(c for c in self.children if c is not self.plots)):
            w.close()
        self.progress_view.close()
        super().close()

    # ---- output ---------------------------------------------------------------------------
    def save_html(self, path: str | os.PathLike, *, title: str = "interactive-recsys run"
                  ) -> str:
        """Write the figures with their current data, the progress per phase and operator,
        a title and the date as one standalone HTML file (BokehJS inline: opens offline),
        atomically. Returns the path."""
        path = os.fspath(path)
        with self._lock:
            text = page_html(self.layout_bokeh, title, self._summary(),
                             self.progress_view.summary())
        with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _state(self) -> str:
        if self._closed:
            return "closed" + (f": {self._reason}" if self._reason else "")
        if self._paused:
            return "paused"
        if self.monitor.client.status != "running":
            return "the Dask cluster closed"
        if not self.monitor.running:
            return "stopped"
        return "live" if self._live else "starting"

    def _status_html(self) -> str:
        return status_html(self._state(), self.monitor, self.rows)

    def _summary(self) -> str:
        return cluster_summary(self.monitor)

    def __repr__(self) -> str:
        return f"Dashboard({self._summary()})"
