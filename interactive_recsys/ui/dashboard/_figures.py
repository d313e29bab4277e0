"""The Dashboard's figures, one small component each (as in distributed's dashboard).

Every component has a ``source`` (a named ``ColumnDataSource``: the data), a ``root`` (the
Bokeh figure) and ``update(frame)``, which draws one :class:`Frame` (a monitor sample, as the
dashboard sees it). Tests call ``update`` and read ``source.data``; nothing here needs a
widget or a browser.

Readability rules shared by all figures: bytes are written in one unit system (binary:
KiB, MiB, GiB), the limit included; few tick labels so they never run together; legends sit
outside the plot area; the time axes follow the last :data:`WINDOW_S` seconds unless the
dashboard shows the whole run.

>>> frame = Frame(time=3.0, workers=[("worker 0", {"managed": 2**20, "unmanaged": 2**21,
...     "spilled": 0, "limit": 2**30, "cpu": 50.0})], tasks=[])
>>> memory = MemoryFigure()
>>> memory.update(frame), memory.update(frame)     # the second sends nothing
('replace', 'none')
>>> memory.source.data["worker"], memory.source.data["limit_text"]
(['worker 0'], ['1.00 GiB'])
>>> spill = SpillFigure(time_range())
>>> spill.update(frame); spill.nothing.visible, spill.lines[0].visible
(True, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bokeh.models import (
    AdaptiveTicker,
    ColumnDataSource,
    CustomJSTickFormatter,
    FactorRange,
    HoverTool,
    Label,
    Legend,
    LegendItem,
    Range1d,
)
from bokeh.palettes import Category10_10, Category20_20
from bokeh.plotting import figure
from dask.utils import format_bytes

from interactive_recsys.runtime.jobs import operator_label
from interactive_recsys.ui.dashboard._deltas import Series, settle_rows, sync_columns

#: Seconds of history the time axes show by default (the "whole run" toggle shows all).
WINDOW_S = 60.0
#: Points kept in each streamed time series, and task rectangles kept in the task stream.
ROLLOVER = 2000
TASK_ROLLOVER = 5000
#: Percentage points of CPU/GPU utilization that are no change (an idle worker's jitter).
UTILIZATION_TOLERANCE = 2.0
#: Share of the memory axis that is no change (about a pixel): an idle worker's memory
#: moves by a few KiB between heartbeats, which no screen shows.
MEMORY_TOLERANCE = 1 / 400
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
MEMORY_COLOURS = ("#1f77b4", "#aec7e8", "#ff7f0e")  # managed, unmanaged, spilled

#: Axis labels in binary units, as ``dask.utils.format_bytes`` writes them (the limit too).
BYTES_FORMATTER_JS = """
const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
let v = Math.abs(tick), i = 0;
while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
const sign = tick < 0 ? "-" : "";
return i == 0 ? sign + v.toFixed(0) + " B" : sign + v.toFixed(v < 10 ? 1 : 0) + " " + units[i];
"""


def bytes_ticker() -> AdaptiveTicker:
    """Ticks at round binary sizes (256 MiB, 512 MiB... not 191 MiB, 381 MiB)."""
    return AdaptiveTicker(base=2, mantissas=[1], min_interval=1, desired_num_ticks=4)


def bytes_formatter() -> CustomJSTickFormatter:
    """Tick labels in binary units (``512 MiB``, ``1.5 GiB``)."""
    return CustomJSTickFormatter(code=BYTES_FORMATTER_JS)


def time_range() -> Range1d:
    """The x range shared by the time figures, set by the dashboard from the monitor's clock
    at every sample (the last :data:`WINDOW_S` seconds, or the whole run).

    A ``Range1d``, never computed in the browser: BokehJS's ``DataRange1d`` keeps the
    explicit ``start``/``end`` it was loaded with and sends its recomputed range back to
    the kernel, so after a figure was sent whole (at every phase end) each new ``end``
    from the kernel was reset to the old one -- the axes froze where a phase began."""
    return Range1d(start=0.0, end=WINDOW_S, name="irs-time-range")


def _figure(title: str, **kwargs: Any) -> Any:
    fig = figure(title=title, height=kwargs.pop("height", 230), width=kwargs.pop("width", 470),
                 tools=TOOLS, toolbar_location="right", **kwargs)
    fig.title.text_font_size = "10pt"
    fig.xaxis.ticker.desired_num_ticks = 4
    return fig


def _legend_outside(fig: Any, items: list[tuple[str, list]], place: str = "above") -> Legend:
    legend = Legend(items=[LegendItem(label=label, renderers=r) for label, r in items],
                    orientation="horizontal" if place in ("above", "below") else "vertical",
                    label_text_font_size="8pt", padding=2, spacing=8, margin=2,
                    click_policy="hide")
    fig.add_layout(legend, place)
    return legend


@dataclass
class Frame:
    """One sample as the figures draw it: seconds since the monitor started, the workers
    ``(display name, fields)`` in display order, the new task records (times in seconds
    since the start) and, on GPU clusters, the devices."""

    time: float
    workers: list[tuple[str, dict[str, Any]]]
    tasks: list[dict[str, Any]]
    gpus: list[dict[str, Any]] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.workers]


def nice_bytes(value: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 4 or 6 times a power of two that is >= ``value``: an
    axis end that changes only now and then while the data moves.

    >>> nice_bytes(300 * 2**20) / 2**20, nice_bytes(2**30) / 2**30, nice_bytes(5 * 2**30) / 2**30
    (384.0, 1.0, 6.0)
    """
    power = 2.0 ** math.floor(math.log2(max(value, 1.0)))
    return next(m * power for m in (1, 1.5, 2, 3, 4, 6, 8) if m * power >= value)


class MemoryFigure:
    """Host memory per worker: managed, unmanaged and spilled bytes, and the limit.

    The axis is the bars' own scale (:meth:`scale`): to :data:`HEADROOM` times the largest
    bar, rounded up by :func:`nice_bytes`, so that 200 MiB used shows as a bar and not as
    a sliver against a 12 GiB limit. The limit (red marks) is on the scale once a bar
    reaches :data:`LIMIT_SHOWN_AT` of it; before that the axis label says where it is.
    """

    #: The axis ends this much above the largest bar.
    HEADROOM = 1.15
    #: Share of the limit a bar must reach for the axis to run to the limit.
    LIMIT_SHOWN_AT = 0.5
    #: The shortest axis (nothing measured yet, or idle workers).
    MIN_END = 64 * 2**20

    def __init__(self) -> None:
        self.source = ColumnDataSource(
            {"worker": [], "managed": [], "unmanaged": [], "spilled": [], "limit": [],
             "limit_text": [], "process_text": []}, name="irs-memory")
        # a Range1d set here from the data, never computed in the browser (see time_range)
        self.root = _figure("Host memory per worker", y_range=FactorRange(),
                            x_range=Range1d(0, self.MIN_END), name="irs-memory-figure")
        # fill only: with an outline, a zero-width bar (nothing spilled) drew an orange sliver
        bars = self.root.hbar_stack(["managed", "unmanaged", "spilled"], y="worker",
                                    height=0.7, fill_color=list(MEMORY_COLOURS),
                                    line_color=None, source=self.source)
        limit = self.root.scatter(x="limit", y="worker", marker="dash", angle=1.5708, size=30,
                                  line_color="red", line_width=2, source=self.source)
        self.root.xaxis.formatter = bytes_formatter()
        self.root.xaxis.ticker = bytes_ticker()
        self.root.xaxis.axis_label_text_font_size = "8pt"
        self.root.xaxis.axis_label_text_font_style = "normal"
        self.root.add_tools(HoverTool(renderers=[*bars, limit], tooltips=[
            ("worker", "@worker"), ("memory", "@process_text"), ("limit", "@limit_text")]))
        _legend_outside(self.root, [("managed", [bars[0]]), ("unmanaged", [bars[1]]),
                                    ("spilled", [bars[2]]), ("limit", [limit])])

    @classmethod
    def scale(cls, totals: list[float], limits: list[float]) -> tuple[float, str]:
        """The axis end and label for bars of ``totals`` bytes and workers' ``limits``
        (NaN: none).

        >>> end, label = MemoryFigure.scale([200 * 2**20], [12 * 2**30])
        >>> end / 2**20, label
        (256.0, 'limit 12.00 GiB per worker: off this scale')
        >>> end, label = MemoryFigure.scale([7 * 2**30], [12 * 2**30])
        >>> round(end / 2**30, 2), label
        (12.6, 'red: limit 12.00 GiB per worker')
        """
        top = max(totals, default=0.0)
        known = [v for v in limits if v == v and v > 0]
        limit = max(known, default=0.0)
        text = format_bytes(limit) if len(set(known)) <= 1 else \
            f"{format_bytes(min(known))} to {format_bytes(limit)}"
        if limit and top >= cls.LIMIT_SHOWN_AT * limit:
            return 1.05 * max(top, limit), f"red: limit {text} per worker"
        end = nice_bytes(max(cls.HEADROOM * top, cls.MIN_END))
        if not limit:
            return end, "no memory limit"
        return end, f"limit {text} per worker: off this scale"

    def update(self, frame: Frame) -> str:
        """Draw the workers' memory, sending the changed cells only (nothing when no bar
        moved by more than :data:`MEMORY_TOLERANCE` of the axis). Returns what was sent:
        ``"none"``, ``"patch"`` or ``"replace"`` (see :func:`._deltas.sync_columns`)."""
        ws = [w for _, w in frame.workers]
        if list(self.root.y_range.factors) != frame.names:
            self.root.y_range.factors = frame.names
        end, label = self.scale([w["managed"] + w["unmanaged"] + w["spilled"] for w in ws],
                                [w["limit"] or float("nan") for w in ws])
        data = {
            "worker": frame.names, "managed": [w["managed"] for w in ws],
            "unmanaged": [w["unmanaged"] for w in ws], "spilled": [w["spilled"] for w in ws],
            "limit": [w["limit"] or float("nan") for w in ws],
            "limit_text": [format_bytes(w["limit"]) if w["limit"] else "none" for w in ws],
            "process_text": [format_bytes(w["managed"] + w["unmanaged"]) for w in ws]}
        grain = MEMORY_TOLERANCE * end
        data = settle_rows(self.source.data, data, "worker",
                           {"managed": grain, "unmanaged": grain, "spilled": grain})
        sent = sync_columns(self.source, data)
        if self.root.x_range.end != end:
            self.root.x_range.end = end
        if self.root.xaxis[0].axis_label != label:
            self.root.xaxis.axis_label = label
        return sent


class GpuMemoryFigure:
    """GPU memory per device: used against the capacity, and the device limit; the axis
    always reaches the capacity."""

    def __init__(self) -> None:
        self.source = ColumnDataSource({"device": [], "used": [], "total": [], "limit": []},
                                       name="irs-gpu-memory")
        self.root = _figure("GPU memory per device", y_range=FactorRange(),
                            x_range=Range1d(0, 1), name="irs-gpu-figure")
        total = self.root.hbar(y="device", right="total", height=0.7, color="#eeeeee",
                               source=self.source)
        used = self.root.hbar(y="device", right="used", height=0.7, color="#2ca02c",
                              source=self.source)
        limit = self.root.scatter(x="limit", y="device", marker="dash", angle=1.5708, size=30,
                                  line_color="red", line_width=2, source=self.source)
        self.root.xaxis.formatter = bytes_formatter()
        self.root.xaxis.ticker = bytes_ticker()
        _legend_outside(self.root, [("capacity", [total]), ("used", [used]),
                                    ("limit", [limit])])

    def update(self, frame: Frame) -> list[float]:
        """Draw the devices, sending the changed cells only (nothing when no bar moved by
        more than :data:`MEMORY_TOLERANCE` of the axis), as :meth:`MemoryFigure.update`
        does; returns their utilization (%) for the utilization figure."""
        gpus = frame.gpus
        devices = [g["device"] for g in gpus]
        if list(self.root.y_range.factors) != devices:
            self.root.y_range.factors = devices
        values = [v for g in gpus for v in (g["used"], g["total"], g["limit"]) if v == v]
        end = 1.05 * max(values, default=1.0)
        data = {"device": devices, "used": [g["used"] for g in gpus],
                "total": [g["total"] for g in gpus], "limit": [g["limit"] for g in gpus]}
        grain = MEMORY_TOLERANCE * end
        sync_columns(self.source, settle_rows(self.source.data, data, "device",
                                              {"used": grain, "total": grain, "limit": grain}))
        if self.root.x_range.end != end:
            self.root.x_range.end = end
        return [g["utilization"] for g in gpus]


class SpillFigure:
    """Bytes spilled over time (host to disk; GPU to host with cuDF spilling): the axis
    starts at 0 and, while nothing spilled, says so instead of drawing an empty scale."""

    def __init__(self, x_range: Range1d, gpu: bool = False) -> None:
        data: dict[str, list] = {"time": [], "disk": []}
        if gpu:
            data["device"] = []
        self.gpu = gpu
        self.source = ColumnDataSource(data, name="irs-spill")
        self.root = _figure("Spilled bytes", x_range=x_range, y_range=Range1d(0, 1),
                            x_axis_label="seconds", name="irs-spill-figure")
        items = [("host → disk", [self.root.line("time", "disk", source=self.source,
                                                   color="#ff7f0e", line_width=2)])]
        if gpu:
            items.append(("GPU → host (cuDF)", [self.root.line(
                "time", "device", source=self.source, color="#2ca02c", line_width=2)]))
        self.root.yaxis.formatter = bytes_formatter()
        self.root.yaxis.ticker = bytes_ticker()
        _legend_outside(self.root, items)
        self.nothing = Label(x=10, y=90, x_units="screen", y_units="screen",
                             text="nothing spilled", text_color="#666666",
                             text_font_size="11pt")
        self.root.add_layout(self.nothing)
        self.root.yaxis.visible = False
        self.lines = [r for _, rs in items for r in rs]
        for line in self.lines:  # no orange line along zero while nothing spilled
            line.visible = False
        self.peak = 0.0
        self.series = Series(self.source, ROLLOVER)

    def point(self, frame: Frame) -> dict[str, float]:
        ws = [w for _, w in frame.workers]
        point = {"time": frame.time, "disk": sum(w["spilled"] for w in ws)}
        if self.gpu:
            point["device"] = sum(((w.get("cudf") or {}).get("cudf-spilled") or 0) for w in ws)
        return point

    def update(self, frame: Frame) -> None:
        self.extend([frame])

    def extend(self, frames: list[Frame], send: bool = True) -> int:
        """Draw ``frames`` (oldest first): the points that change the lines, in one stream
        (``send=False``: kept for the series' next ``send``/``flush``); returns how many."""
        points = [self.point(f) for f in frames]
        if not points:
            return 0
        sent = self.series.extend(points) if send else self.series.queue(points)
        peak = max(max(v for p in points for k, v in p.items() if k != "time"), self.peak)
        if peak > self.peak:  # the scale grows with the data, never shrinks under a line
            self.peak = peak
            self.root.y_range.end = 1.1 * peak
            self.nothing.visible = False
            self.root.yaxis.visible = True
            for line in self.lines:
                line.visible = True
        return sent


class UtilizationFigure:
    """CPU utilization (mean of the workers) and, on GPU clusters, GPU utilization."""

    def __init__(self, x_range: Range1d, gpu: bool = False) -> None:
        data: dict[str, list] = {"time": [], "cpu": []}
        if gpu:
            data["gpu"] = []
        self.gpu = gpu
        self.source = ColumnDataSource(data, name="irs-utilization")
        self.root = _figure("Utilization (%)", x_range=x_range, y_range=Range1d(0, 105),
                            x_axis_label="seconds", name="irs-utilization-figure")
        items = [("CPU (mean of workers)", [self.root.line(
            "time", "cpu", source=self.source, color="#1f77b4", line_width=2)])]
        if gpu:
            items.append(("GPU (mean)", [self.root.line("time", "gpu", source=self.source,
                                                        color="#2ca02c", line_width=2)]))
        _legend_outside(self.root, items)
        self.series = Series(self.source, ROLLOVER, {"cpu": UTILIZATION_TOLERANCE,
                                                     "gpu": UTILIZATION_TOLERANCE})

    def point(self, frame: Frame, gpu_utilization: list[float] | None = None
              ) -> dict[str, float]:
        cpus = [w["cpu"] for _, w in frame.workers if w.get("cpu") is not None]
        point = {"time": frame.time, "cpu": sum(cpus) / len(cpus) if cpus else float("nan")}
        if self.gpu:
            values = ([g["utilization"] for g in frame.gpus] if gpu_utilization is None
                      else gpu_utilization)
            point["gpu"] = sum(values) / len(values) if values else float("nan")
        return point

    def update(self, frame: Frame, gpu_utilization: list[float] | None = None) -> None:
        self.series.extend([self.point(frame, gpu_utilization)])

    def extend(self, frames: list[Frame], send: bool = True) -> int:
        """Draw ``frames`` (oldest first): the points that change the lines, in one stream
        (``send=False``: kept for the series' next ``send``/``flush``); returns how many."""
        points = [self.point(f) for f in frames]
        return self.series.extend(points) if send else self.series.queue(points)


class TaskStreamFigure:
    """Tasks per worker over time, coloured by operator (the legend lists the operators
    outside the plot, on the right; hover names the task)."""

    def __init__(self, x_range: Range1d) -> None:
        self.source = ColumnDataSource({"worker": [], "start": [], "stop": [], "group": [],
                                        "action": [], "color": [], "key": [],
                                        "duration": [], "operator": []}, name="irs-tasks")
        self.root = _figure("Task stream (coloured by operator)", width=960, height=250,
                            x_range=x_range, y_range=FactorRange(), x_axis_label="seconds",
                            name="irs-tasks-figure")
        bars = self.root.hbar(y="worker", left="start", right="stop", height=0.8,
                              color="color", source=self.source, legend_field="operator")
        self.root.add_tools(HoverTool(renderers=[bars], tooltips=[
            ("operator", "@operator"), ("task", "@key"), ("action", "@action"),
            ("seconds", "@duration{0.000}")]))
        legend = self.root.legend[0]
        legend.label_text_font_size = "8pt"
        self.root.add_layout(legend, "right")
        self.colours: dict[str, str] = {}
        #: The latest end of a task drawn (seconds). It can be after a later sample's time:
        #: a worker puts its task times on the scheduler's clock with its estimate of their
        #: offset (distributed's ``scheduler_delay``, from heartbeats), which is off by up to
        #: half a heartbeat's round trip, seconds on a busy machine. The time axes never end
        #: before it, so no bar already drawn is cut off.
        self.end = 0.0

    def colour(self, group: str) -> str:
        """One colour per operator, stable for the dashboard's life."""
        if group not in self.colours:
            palette = Category10_10 if len(self.colours) < 10 else Category20_20
            self.colours[group] = palette[len(self.colours) % len(palette)]
        return self.colours[group]

    def update(self, frame: Frame) -> None:
        if list(self.root.y_range.factors) != frame.names:
            self.root.y_range.factors = frame.names
        tasks = frame.tasks
        if not tasks:
            return
        self.end = max([self.end, *(r["stop"] for r in tasks)])
        self.source.stream({
            "worker": [r["worker"] for r in tasks], "start": [r["start"] for r in tasks],
            "stop": [r["stop"] for r in tasks], "group": [r["group"] for r in tasks],
            "action": [r["action"] for r in tasks],
            "color": [self.colour(r["group"]) for r in tasks],
            "key": [r["key"] for r in tasks],
            "duration": [r["stop"] - r["start"] for r in tasks],
            "operator": [operator_label(r["group"]) for r in tasks]}, rollover=TASK_ROLLOVER)
