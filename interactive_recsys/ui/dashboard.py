"""A live view of a Dask cluster in the notebook: a thin widget over :class:`Monitor`.

Bokeh figures (inside one :class:`~.bokeh_widget.BokehWidget`) show host memory per worker
(managed / unmanaged / spilled to disk, with the limit), GPU memory per device with the
device limit (only when the cluster has GPUs), spilled bytes over time, CPU (and GPU)
utilization and the task stream coloured by operator; ipywidgets show a progress bar per
workflow phase, pause/resume and close buttons, and a log of errors raised in callbacks.
Every Bokeh data source has a ``name`` (``irs-memory``, ``irs-tasks``...). Time series
are streamed (``ColumnDataSource.stream``); current-state bars are replaced whole.

BokehJS must be on the notebook page: the Dashboard loads it (inline, see :data:`BOKEHJS`)
unless ``bokeh.io.output_notebook`` was called before.

>>> import interactive_recsys as irs
>>> client = irs.start_cluster(1, memory_limit="1GB", dashboard=False, gpu=False)
>>> dash = irs.ui.Dashboard(client, interval_ms=200)
>>> dash
Dashboard(1 worker, no GPU, every 200 ms)
>>> dash.close(); client.cluster.close(); client.close()
"""

from __future__ import annotations

import html
import os
import tempfile
import threading
import time
import traceback
from typing import Any

import ipywidgets as widgets
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, FactorRange, NumeralTickFormatter
from bokeh.palettes import Category10_10, Category20_20
from bokeh.plotting import figure
from bokeh.resources import Resources

from ..monitor import Monitor
from .bokeh_widget import BokehWidget

#: BokehJS for the notebook page: inline (works offline), core only (plots need no more).
BOKEHJS = Resources(mode="inline", components=["bokeh"])
#: Seconds after the dashboard is displayed before its plots are sent whole and then
#: streamed: the browser's view must exist before the first patch.
LIVE_AFTER_S = 2.0
#: Points kept in each streamed time series, and task rectangles kept in the Gantt chart.
ROLLOVER = 2000
TASK_ROLLOVER = 5000
_MEMORY_COLOURS = ("#1f77b4", "#aec7e8", "#ff7f0e")  # managed, unmanaged, spilled


def _load_bokehjs() -> None:
    """Put BokehJS on the notebook page once (inline: works offline)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    from bokeh.io import output_notebook
    from bokeh.io.state import curstate

    if not curstate().notebook:
        output_notebook(resources=BOKEHJS, hide_banner=True)


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


class Dashboard(widgets.VBox):
    """Live cluster dashboard (ipywidgets + Bokeh) over a :class:`Monitor`.

    Parameters
    ----------
    source : a ``distributed.Client`` (a Monitor is started and owned by the dashboard),
        a :class:`Monitor` (shared; the dashboard only subscribes), or ``None`` for the
        active client.
    interval_ms : sampling period of an owned monitor.
    """

    def __init__(self, source: Any = None, *, interval_ms: int = 500) -> None:
        if isinstance(source, Monitor):
            self.monitor, self._owns_monitor = source, False
        else:
            self.monitor = Monitor(source, interval_ms=interval_ms, start=False)
            self._owns_monitor = True
        _load_bokehjs()
        self._lock = threading.RLock()
        self._paused = False
        self._closed = False
        self._colours: dict[str, str] = {}
        self._bars: dict[tuple[str, float], tuple[widgets.FloatProgress, widgets.Label]] = {}
        self._rows: dict[tuple[str, float], widgets.HBox] = {}
        self._errors_shown = 0
        self.sources: dict[str, ColumnDataSource] = {}
        self.figures: dict[str, Any] = {}
        self.layout_bokeh = self._build_figures()
        self.plots = BokehWidget(self.layout_bokeh)
        # No patches until a view surely exists (see _go_live): a view created between the
        # parts of one PATCH-DOC message would misread every later patch.
        self.layout_bokeh.document.remove_on_change(self.plots)
        self._displayed_at: float | None = None
        self._live = False
        self.status = widgets.HTML(self._status_html())
        self.pause_button = widgets.ToggleButton(value=False, description="Pause",
                                                 icon="pause", tooltip="Pause/resume updates")
        self.close_button = widgets.Button(description="Close", icon="times",
                                           tooltip="Stop sampling and close the dashboard")
        self.pause_button.observe(self._guard(self._on_pause), names="value")
        self.close_button.on_click(self._guard(lambda _: self.close()))
        self.progress_box = widgets.VBox([])
        self.log_area = widgets.Output(layout=widgets.Layout(max_height="120px", overflow="auto",
                                                        border="1px solid #ddd"))
        super().__init__([widgets.HBox([self.status, self.pause_button, self.close_button]),
                          self.plots, widgets.HTML("<b>Progress</b>"), self.progress_box,
                          widgets.HTML("<b>Log</b>"), self.log_area])
        self.monitor.subscribe(self._on_sample)
        if self._owns_monitor:
            self.monitor.start()

    # ---- figures --------------------------------------------------------------------------
    def _source(self, name: str, data: dict[str, list]) -> ColumnDataSource:
        self.sources[name] = ColumnDataSource(data=data, name=f"irs-{name}")
        return self.sources[name]

    def _build_figures(self) -> Any:
        tools = "pan,wheel_zoom,box_zoom,reset,save,hover"
        memory = figure(title="Host memory per worker", height=220, width=460, tools=tools,
                        y_range=FactorRange(), name="irs-memory-figure")
        src = self._source("memory", {"worker": [], "managed": [], "unmanaged": [],
                                      "spilled": [], "limit": []})
        memory.hbar_stack(["managed", "unmanaged", "spilled"], y="worker", height=0.7,
                          color=list(_MEMORY_COLOURS), source=src,
                          legend_label=["managed", "unmanaged", "spilled to disk"])
        memory.scatter(x="limit", y="worker", marker="dash", angle=1.5708, size=30,
                       line_color="red", line_width=2, source=src, legend_label="limit")
        memory.xaxis.formatter = NumeralTickFormatter(format="0.0 b")
        memory.legend.location = "bottom_right"
        memory.legend.label_text_font_size = "8pt"

        spill = figure(title="Spilled bytes", height=220, width=460, tools=tools,
                       x_axis_label="seconds", name="irs-spill-figure")
        series = {"time": [], "disk": []}
        if self.monitor.has_gpu:
            series["device"] = []
        src = self._source("spill", series)
        spill.line("time", "disk", source=src, legend_label="host -> disk", color="#ff7f0e")
        if self.monitor.has_gpu:
            spill.line("time", "device", source=src, legend_label="GPU -> host (cuDF)",
                       color="#2ca02c")
        spill.yaxis.formatter = NumeralTickFormatter(format="0.0 b")
        spill.legend.location = "top_left"

        util = figure(title="Utilization (%)", height=220, width=460, tools=tools,
                      x_axis_label="seconds", y_range=(0, 105), name="irs-utilization-figure")
        series = {"time": [], "cpu": []}
        if self.monitor.has_gpu:
            series["gpu"] = []
        src = self._source("utilization", series)
        util.line("time", "cpu", source=src, legend_label="CPU (mean of workers)",
                  color="#1f77b4")
        if self.monitor.has_gpu:
            util.line("time", "gpu", source=src, legend_label="GPU (mean)", color="#2ca02c")
        util.legend.location = "top_left"

        tasks = figure(title="Task stream (coloured by operator / phase)", height=240,
                       width=930, tools=tools, x_axis_label="seconds",
                       y_range=FactorRange(), name="irs-tasks-figure")
        src = self._source("tasks", {"worker": [], "start": [], "stop": [], "group": [],
                                     "action": [], "color": []})
        tasks.hbar(y="worker", left="start", right="stop", height=0.8, color="color",
                   source=src, legend_field="group")
        tasks.legend.location = "top_left"
        tasks.legend.label_text_font_size = "8pt"
        self.figures.update(memory=memory, spill=spill, utilization=util, tasks=tasks)
        top = [memory]
        if self.monitor.has_gpu:
            gpu = figure(title="GPU memory per device", height=220, width=460, tools=tools,
                         y_range=FactorRange(), name="irs-gpu-figure")
            src = self._source("gpu-memory", {"device": [], "used": [], "total": [],
                                              "limit": []})
            gpu.hbar(y="device", right="total", height=0.7, color="#eeeeee", source=src,
                     legend_label="total")
            gpu.hbar(y="device", right="used", height=0.7, color="#2ca02c", source=src,
                     legend_label="used")
            gpu.scatter(x="limit", y="device", marker="dash", angle=1.5708, size=30,
                        line_color="red", line_width=2, source=src, legend_label="limit")
            gpu.xaxis.formatter = NumeralTickFormatter(format="0.0 b")
            self.figures["gpu"] = gpu
            top.append(gpu)
        else:
            top.append(spill)
        rows = [row(*top), row(util, spill) if self.monitor.has_gpu else row(util), tasks]
        return column(*rows, name="irs-dashboard")

    # ---- updates --------------------------------------------------------------------------
    def _colour(self, group: str) -> str:
        if group not in self._colours:
            palette = Category10_10 if len(self._colours) < 10 else Category20_20
            self._colours[group] = palette[len(self._colours) % len(palette)]
        return self._colours[group]

    def _on_sample(self, monitor: Monitor, sample: dict[str, Any], tasks: list[dict]) -> None:
        if self._paused or self._closed:
            return
        try:
            self.update(sample, tasks)
        except Exception:
            self._log(f"dashboard update failed:\n{traceback.format_exc()}")

    def update(self, sample: dict[str, Any] | None = None,
               tasks: list[dict[str, Any]] | None = None) -> None:
        """Draw one monitor sample and its new task records (the latest sample if None)."""
        if sample is None:
            if not self.monitor.samples:
                return
            sample = self.monitor.samples[-1]
        tasks = tasks or []
        with self._lock:  # samples arrive from the monitor's thread and from job threads
            self._draw(sample, tasks)

    def _draw(self, sample: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
        t = sample["time"] - self.monitor.t0
        names = self._worker_names(sample)
        workers = sample["workers"]
        order = sorted(workers, key=lambda a: names[a])
        factors = [names[a] for a in order]
        fig = self.figures["memory"]
        if list(fig.y_range.factors) != factors:
            fig.y_range.factors = factors
            self.figures["tasks"].y_range.factors = factors
        self.sources["memory"].data = {
            "worker": factors, "managed": [workers[a]["managed"] for a in order],
            "unmanaged": [workers[a]["unmanaged"] for a in order],
            "spilled": [workers[a]["spilled"] for a in order],
            "limit": [workers[a]["limit"] or float("nan") for a in order]}
        spill = {"time": [t], "disk": [sum(w["spilled"] for w in workers.values())]}
        cpus = [w["cpu"] for w in workers.values() if w.get("cpu") is not None]
        util = {"time": [t], "cpu": [sum(cpus) / len(cpus) if cpus else float("nan")]}
        if self.monitor.has_gpu:
            spill["device"] = [sum(((w.get("cudf") or {}).get("cudf-spilled") or 0)
                                   for w in workers.values())]
            self._update_gpus(sample, names, util)
        self.sources["spill"].stream(spill, rollover=ROLLOVER)
        self.sources["utilization"].stream(util, rollover=ROLLOVER)
        if tasks:
            t0 = self.monitor.t0
            by_address = {a: names.get(a, a) for a in {r["worker"] for r in tasks}}
            self.sources["tasks"].stream({
                "worker": [by_address[r["worker"]] for r in tasks],
                "start": [r["start"] - t0 for r in tasks],
                "stop": [r["stop"] - t0 for r in tasks],
                "group": [r["group"] for r in tasks],
                "action": [r["action"] for r in tasks],
                "color": [self._colour(r["group"]) for r in tasks]},
                rollover=TASK_ROLLOVER)
        self._update_progress()
        self._show_monitor_errors()
        self.status.value = self._status_html()
        if (not self._live and self._displayed_at is not None
                and time.monotonic() - self._displayed_at > LIVE_AFTER_S):
            self.refresh()

    def _update_gpus(self, sample: dict[str, Any], names: dict[str, str],
                     util: dict[str, list]) -> None:
        devices, used, total, limit, utils = [], [], [], [], []
        for address, gpus in sorted(sample.get("gpus", {}).items()):
            for g in gpus:
                devices.append(f"{names.get(address, address)}:gpu{g['device']}")
                used.append(g["used"])
                total.append(g["total"])
                limit.append(g["limit"] if g.get("limit") else float("nan"))
                utils.append(g["utilization"])
        if not devices:  # NVML unreadable: distributed's own gpu metrics
            for address, w in sample["workers"].items():
                metric = w.get("gpu") or {}
                if "memory-used" in metric:
                    devices.append(f"{names[address]}:gpu")
                    used.append(metric["memory-used"])
                    total.append(float("nan"))
                    limit.append(float("nan"))
                    utils.append(metric.get("utilization", float("nan")))
        fig = self.figures["gpu"]
        if list(fig.y_range.factors) != devices:
            fig.y_range.factors = devices
        self.sources["gpu-memory"].data = {"device": devices, "used": used, "total": total,
                                           "limit": limit}
        util["gpu"] = [sum(utils) / len(utils) if utils else float("nan")]

    @staticmethod
    def _worker_names(sample: dict[str, Any]) -> dict[str, str]:
        return {a: f"worker {w['name']}" for a, w in sample["workers"].items()}

    def _update_progress(self) -> None:
        phases = self.monitor.progress()[-8:]
        keys = [(p["name"], p["started"]) for p in phases]
        for p, key in zip(phases, keys, strict=True):
            if key not in self._bars:
                bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0,
                                            layout=widgets.Layout(width="360px"))
                label = widgets.Label()
                self._bars[key] = (bar, label)
                self._rows[key] = widgets.HBox([widgets.Label(
                    key[0], layout=widgets.Layout(width="90px")), bar, label])
            bar, label = self._bars[key]
            bar.value = p["fraction"]
            bar.bar_style = {"finished": "success", "error": "danger",
                             "cancelled": "warning"}.get(p["status"], "info")
            label.value = (f"{p['name']}{' (' + p['job'] + ')' if p['job'] else ''}: "
                           f"{p['done']}/{p['total']} tasks, {p['status']}")
        children = tuple(self._rows[k] for k in keys)
        if self.progress_box.children != children:
            self.progress_box.children = children

    def progress(self) -> dict[str, float]:
        """Fraction of tasks done per phase name (latest run of each name), as of now."""
        return {p["name"]: p["fraction"] for p in self.monitor.progress()}

    # ---- display --------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        if self._displayed_at is None:
            self._displayed_at = time.monotonic()
        return super()._repr_mimebundle_(**kwargs)

    def refresh(self) -> None:
        """Send the plots whole (all data so far), then stream updates as patches.

        Called by itself shortly after the dashboard is displayed; call it after reloading
        the page (a reloaded page misses the patches sent before)."""
        with self._lock:
            self.plots.update_from_model(self.layout_bokeh)  # re-attaches the patch stream
            self._live = True

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
        if change["new"]:
            self.pause()
        else:
            self.resume()

    def pause(self) -> None:
        """Stop updating (and sampling, when the dashboard owns its monitor)."""
        self._paused = True
        if self._owns_monitor:
            self.monitor.pause()
        self.pause_button.value, self.pause_button.description = True, "Resume"
        self.status.value = self._status_html()

    def resume(self) -> None:
        self._paused = False
        if self._owns_monitor:
            self.monitor.resume()
        self.pause_button.value, self.pause_button.description = False, "Pause"
        self.status.value = self._status_html()

    @property
    def paused(self) -> bool:
        return self._paused

    def _log(self, text: str) -> None:
        self.log_area.append_stdout(text if text.endswith("\n") else text + "\n")

    def _show_monitor_errors(self) -> None:
        errors = list(self.monitor.errors)
        for text in errors[self._errors_shown:]:
            self._log(text)
        self._errors_shown = len(errors)

    def close(self) -> None:
        """Stop updates and the owned monitor's thread, then close the widgets.

        The widgets keep the final state: an owned monitor takes a last sample as it stops
        (drawn here), and the progress bars are redrawn from the monitor's phases."""
        if self._closed:
            return
        if self._owns_monitor:
            self.monitor.stop()  # its last sample is drawn by _on_sample
        with self._lock:
            self._closed = True
            self.monitor.unsubscribe(self._on_sample)
            if not self._paused:
                try:
                    self._update_progress()
                except Exception:
                    self._log(f"final progress update failed:\n{traceback.format_exc()}")
        self.status.value = self._status_html()
        for w in (self.plots, self.pause_button, self.close_button, self.log_area, self.status,
                  self.progress_box, *[w for line in self._rows.values()
                                       for w in (line, *line.children)]):
            w.close()
        super().close()

    # ---- output ---------------------------------------------------------------------------
    def save_html(self, path: str | os.PathLike, *, title: str = "interactive-recsys run"
                  ) -> str:
        """Write the figures with their current data as one standalone HTML file (BokehJS
        inline: opens offline), atomically. Returns the path."""
        from bokeh.embed import file_html
        from bokeh.resources import INLINE

        path = os.fspath(path)
        with self._lock:
            text = file_html(self.layout_bokeh, resources=INLINE, title=title)
        phases = "".join(f"<li>{html.escape(k[0])}: {bar.value:.0%}</li>"
                         for k, (bar, _) in self._bars.items())
        if phases:
            text = text.replace("<body>", f"<body><h3>{html.escape(title)}</h3><ul>"
                                f"{phases}</ul>", 1)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".dashboard-", suffix=".html", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return path

    def _status_html(self) -> str:
        state = ("closed" if self._closed else "paused" if self._paused else
                 "live" if self.monitor.running else "stopped")
        return (f"<b>Cluster</b> · {self._summary()} · <i>{state}</i>")

    def _summary(self) -> str:
        if self.monitor.samples:
            n = len(self.monitor.samples[-1]["workers"])
        else:
            n = len(self.monitor.client.scheduler_info(n_workers=-1)["workers"])
        return (f"{n} worker{'s' if n != 1 else ''}, {self.monitor.gpu_status}, every "
                f"{self.monitor.interval_ms} ms")

    def __repr__(self) -> str:
        return f"Dashboard({self._summary()})"
