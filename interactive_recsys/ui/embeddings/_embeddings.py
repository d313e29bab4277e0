"""EmbeddingView: the live view of an :class:`~interactive_recsys.stats.EmbeddingReport`.

A table of every embedding table, log-log rank/frequency curves, coverage curves (share of
lookups served by the hottest ``k`` rows), per-GPU memory of both placements (table-wise
and row-wise) against the GPU's capacity, and controls that re-plan live: number of GPUs,
GiB per GPU, weight dtype, optimizer, and a per-table dimension override. The widget only
draws: every number comes from the report (data first, then rendered).

Plots are Bokeh figures in ``jupyter_bokeh.BokehModel`` widgets; BokehJS is loaded inline (no
CDN) by :func:`load_bokeh`, once per kernel. Each data source has a ``name``
(``irs-embedding-frequency``, ``irs-embedding-coverage``, ``irs-embedding-plan``) so
browser tests can find it in ``window.Bokeh.documents``.

The curves (which never change) and the memory plan (which follows the controls) are two
widgets. A settings change replaces the plan's widget by a new one holding the new figure
whole, rather than patching the old one: a ``BokehModel``'s saved state (``render_bundle``:
what a saved notebook, nbviewer and ``irs report`` draw) is only the document it was created
with, and patches never reach it. Re-sending ``render_bundle`` to the same widget is no way
out: jupyter_bokeh 4.1 then clears the browser's document while the previous draw is still
awaiting, and BokehJS fails with "configuration is missing". A new widget gets a new
document in the browser, so the page and the saved state both show the current plan.
"""

from __future__ import annotations

import html
import math
from typing import Any

import ipywidgets as widgets
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, FactorRange, HoverTool, Range1d, Span
from bokeh.palettes import Category10_10, Category20_20, turbo
from bokeh.plotting import figure

from interactive_recsys.stats._embedding_report import EmbeddingReport, report_of
from interactive_recsys.stats._memory_plan import DTYPE_BYTES, OPTIMIZER_STATE
from interactive_recsys.ui._bokehjs import load_bokehjs
from interactive_recsys.ui.embeddings._summary import report_html

GIB = 2**30


def load_bokeh() -> bool:
    """Put BokehJS on the notebook page (inline resources, no CDN, one copy), once per
    kernel (``interactive_recsys.ui._bokehjs.load_bokehjs``).

    Returns whether it was loaded now; it does nothing outside a Jupyter kernel or when
    Bokeh's notebook output is already on (by this function, the dashboard, or the user).
    """
    return load_bokehjs()


def table_colours(n: int) -> list[str]:
    """``n`` distinct colours, one per embedding table (never repeated: 26 Criteo tables
    get 26 colours).

    >>> len(set(table_colours(26))), table_colours(2) == list(Category10_10[:2])
    (26, True)
    """
    if n <= 10:
        return list(Category10_10[:n])
    if n <= 20:
        return list(Category20_20[:n])
    return list(turbo(n))


#: Tables named in the curves' legend (the widest ones); the rest share one grey "others".
LEGEND_TOP = 8
OTHERS_COLOUR = "#b8b8b8"


def curve_data(report: EmbeddingReport, key: str, x: str, y: str) -> dict[str, list]:
    """Multi-line data of one curve per table that has counts (``key`` of
    :meth:`~EmbeddingReport.table_dict`: ``"rank_frequency"`` or ``"coverage"``).

    The :data:`LEGEND_TOP` tables with the largest cardinality get their own colour and
    legend entry (``legend``); the others are drawn in grey under one ``others (N)`` entry
    (each still named by its hover, ``name``)."""
    data: dict[str, list] = {"xs": [], "ys": [], "name": [], "color": [], "legend": []}
    widest = sorted(report.tables, key=lambda n: -report.tables[n].cardinality)
    top = widest[:LEGEND_TOP] if len(widest) > LEGEND_TOP + 1 else widest
    colours = dict(zip(top, table_colours(len(top)), strict=True))
    others = f"others ({len(widest) - len(top)} tables)"
    for name in report.tables:
        d = report.table_dict(name)
        if key not in d:
            continue
        data["xs"].append(d[key][x])
        data["ys"].append(d[key][y])
        data["name"].append(name)
        data["color"].append(colours.get(name, OTHERS_COLOUR))
        data["legend"].append(name if name in colours else others)
    return data


def plan_data(report: EmbeddingReport) -> dict[str, list]:
    """One bar per GPU and placement: GiB used, and whether it exceeds the capacity."""
    plan = report.plan()
    data: dict[str, list] = {"x": [], "gib": [], "mode": [], "color": [], "tables": []}
    for placement in (plan.table_wise, plan.row_wise):
        for g, nbytes in enumerate(placement.gpu_bytes):
            data["x"].append((f"GPU {g}", placement.mode))
            data["gib"].append(nbytes / GIB)
            data["mode"].append(placement.mode)
            data["color"].append(
                "#d62728"
                if nbytes > plan.gpu_memory
                else ("#1f77b4" if placement.mode == "table-wise" else "#2ca02c")
            )
            tables = placement.gpu_tables[g] if placement.mode == "table-wise" else ["all"]
            data["tables"].append(", ".join(tables))
    return data


#: The memory plan's frame (the plot area inside the axes) in CSS pixels, and its x axis:
#: the font size (px) and angle (radians) of the placement labels under the bars.
PLAN_FRAME_WIDTH, PLAN_FRAME_HEIGHT = 780, 160
PLAN_LABEL_PX, PLAN_LABEL_ANGLE = 11, 0.8
#: A generous width of one character of the axis labels, in font sizes.
CHAR_EM = 0.65


def label_overhang(
    text: str, font_px: float = PLAN_LABEL_PX, angle: float = PLAN_LABEL_ANGLE
) -> float:
    """How far left of its tick (px) an x-axis label rotated by ``angle`` reaches: Bokeh
    anchors a label rotated up to the right by its right end, centred on its tick.

    >>> round(label_overhang("table-wise"), 1)
    53.8
    """
    width = len(text) * CHAR_EM * font_px
    return width * math.cos(angle) + font_px / 2 * math.sin(angle)


def plan_x_range(factors: list[tuple[str, str]], group_padding: float = 1.4) -> FactorRange:
    """The plan's x range (GPU, placement), padded on each side so that the first bar's
    rotated label ("table-wise") stays inside the frame: the first bar's centre, ``0.5 + p``
    units from the frame's left edge at ``W / (n + 2p)`` px per unit, must be at least the
    label's overhang ``h``, so ``p >= (h n - W / 2) / (W - 2 h)``."""
    groups = len(dict.fromkeys(f[0] for f in factors))
    units = len(factors) + max(groups - 1, 0) * group_padding
    overhang = max((label_overhang(f[1]) for f in factors[:1]), default=0.0)
    width = PLAN_FRAME_WIDTH
    pad = max(0.0, (overhang * units - width / 2) / (width - 2 * overhang))
    return FactorRange(
        *factors, group_padding=group_padding, range_padding=pad, range_padding_units="absolute"
    )


class EmbeddingView(widgets.VBox):
    """Widget over an :class:`~interactive_recsys.stats.EmbeddingReport` (or a workflow/dataset to
    report on).

    >>> import pandas as pd
    >>> view = EmbeddingView(pd.DataFrame({"c": list("aaab")}))
    >>> view.num_gpus.value = 4
    >>> len(view.plan_source.data["gib"])          # 4 GPUs x 2 placements
    8
    """

    def __init__(self, report: Any) -> None:
        self.report = report_of(report)
        load_bokeh()
        settings = self.report.settings
        # applied as typed, like the dropdowns (not only after Enter)
        self.num_gpus = widgets.BoundedIntText(
            value=settings["num_gpus"],
            min=1,
            max=100_000,
            description="GPUs",
            continuous_update=True,
        )
        self.gpu_gib = widgets.BoundedFloatText(
            value=round(self.report.plan().gpu_memory / GIB, 3),
            min=0.001,
            max=1e6,
            description="GiB per GPU",
            continuous_update=True,
        )
        self.dtype = widgets.Dropdown(
            options=list(DTYPE_BYTES), value=self.report.plan().dtype, description="weights"
        )
        self.optimizer = widgets.Dropdown(
            options=list(OPTIMIZER_STATE),
            value=self.report.plan().optimizer,
            description="optimizer",
        )
        names = list(self.report.tables)
        self.table = widgets.Dropdown(
            options=names, value=names[0] if names else None, description="table"
        )
        self.dim = widgets.BoundedIntText(min=1, max=1_000_000, description="dim")
        self.set_dim_button = widgets.Button(description="set dim")
        self.reset_dim_button = widgets.Button(description="use rule")
        self.message = widgets.HTML(layout=widgets.Layout(display="none"))
        self.message.add_class("irs-embedding-error")
        self.summary = widgets.HTML().add_class("irs-embedding-view-report")

        for control in (self.num_gpus, self.gpu_gib, self.dtype, self.optimizer):
            control.observe(self._on_settings, names="value")
        self.table.observe(lambda _: self._show_dim(), names="value")
        self.set_dim_button.on_click(lambda _: self._set_dim(self.dim.value))
        self.reset_dim_button.on_click(lambda _: self._set_dim(None))

        self.frequency_source = ColumnDataSource(
            curve_data(self.report, "rank_frequency", "rank", "frequency"),
            name="irs-embedding-frequency",
        )
        self.coverage_source = ColumnDataSource(
            curve_data(self.report, "coverage", "ids", "share"), name="irs-embedding-coverage"
        )
        self.figures = self._figures()
        from interactive_recsys.ui._bokeh_widget import (  # lazy: jupyter_bokeh, only when drawn
            BokehWidget,
        )

        self.plot = BokehWidget(self.figures)
        self.plot.add_class("irs-embedding-plots")
        self.plan_plot = self._plan_widget()
        from interactive_recsys.ui._theme import theme_watch  # lazy: anywidget, only when drawn

        self.theme = theme_watch(self.figures, self.plan_figure)
        super().__init__(
            [
                self.message,
                widgets.HBox([self.num_gpus, self.gpu_gib, self.dtype, self.optimizer]),
                widgets.HBox([self.table, self.dim, self.set_dim_button, self.reset_dim_button]),
                self.summary,
                self.plot,
                self.plan_plot,
                self.theme,
            ]
        )
        self.add_class("irs-embedding-view")
        self._show_dim()
        self.summary.value = report_html(self.report)

    # ---- drawing ----------------------------------------------------------------------------
    def _figures(self) -> Any:
        freq = figure(
            title="Lookups per id by rank (log-log)",
            x_axis_type="log",
            y_axis_type="log",
            x_axis_label="rank",
            y_axis_label="lookups",
            width=400,
            height=340,
            tools="pan,wheel_zoom,reset,save",
        )
        lines = freq.multi_line(
            "xs",
            "ys",
            color="color",
            source=self.frequency_source,
            line_width=2,
            hover_line_width=4,
            hover_line_color="color",
        )
        freq.add_tools(
            HoverTool(
                renderers=[lines],
                line_policy="nearest",
                tooltips=[
                    ("table", "@name"),
                    ("rank", "$data_x{0,0}"),
                    ("lookups", "$data_y{0,0}"),
                ],
            )
        )
        cov = figure(
            title="Share of lookups served by the hottest k rows",
            x_axis_type="log",
            x_axis_label="k rows (cache size)",
            y_axis_label="share of lookups",
            y_range=(0, 1.02),
            width=400,
            height=340,
            tools="pan,wheel_zoom,reset,save",
        )
        curves = cov.multi_line(
            "xs",
            "ys",
            color="color",
            source=self.coverage_source,
            line_width=2,
            hover_line_width=4,
            hover_line_color="color",
            legend_field="legend",
        )
        cov.add_tools(
            HoverTool(
                renderers=[curves],
                line_policy="nearest",
                tooltips=[
                    ("table", "@name"),
                    ("k rows", "$data_x{0,0}"),
                    ("share", "$data_y{0.0%}"),
                ],
            )
        )
        # one legend for both plots (a table has the same colour in each), outside the plot
        legend = cov.legend[0]
        legend.label_text_font_size = "7pt"
        legend.glyph_height = legend.glyph_width = 10
        legend.spacing, legend.padding, legend.margin = 0, 2, 2
        legend.ncols = 1
        legend.click_policy = "hide"
        cov.add_layout(legend, "right")
        return column(row(freq, cov))

    def _plan_widget(self) -> Any:
        """A new widget with the memory plan of the current settings (figure, source and
        capacity line made anew: see the module docstring)."""
        from interactive_recsys.ui._bokeh_widget import (  # lazy: jupyter_bokeh, only when drawn
            BokehWidget,
        )

        self.plan_source = ColumnDataSource(plan_data(self.report), name="irs-embedding-plan")
        self.capacity = Span(
            location=self.report.plan().gpu_memory / GIB,
            dimension="width",
            line_color="#d62728",
            line_dash="dashed",
        )
        bottom, top = self._plan_scale()
        plan = figure(
            title=self._plan_title(),
            x_range=plan_x_range(self.plan_source.data["x"]),
            y_range=Range1d(bottom, top),
            y_axis_type="log",
            frame_width=PLAN_FRAME_WIDTH,
            frame_height=PLAN_FRAME_HEIGHT,
            tools="save",
            y_axis_label="GiB (log scale)",
        )
        plan.vbar(
            x="x", top="gib", bottom=bottom, width=0.8, color="color", source=self.plan_source
        )
        plan.add_layout(self.capacity)
        plan.add_tools(
            HoverTool(tooltips=[("GPU", "@x"), ("GiB", "@gib{0.000}"), ("tables", "@tables")])
        )
        plan.xaxis.major_label_orientation = PLAN_LABEL_ANGLE
        plan.xaxis.major_label_text_font_size = f"{PLAN_LABEL_PX}px"
        self.plan_figure = plan
        widget = BokehWidget(plan)
        widget.add_class("irs-embedding-plan-plot")
        return widget

    def _plan_scale(self) -> tuple[float, float]:
        """The GiB axis, logarithmic: from a tenth of the smallest bar to above the tallest
        bar and the capacity line, so MiB-sized bars show next to a 16 GiB capacity."""
        capacity = self.report.plan().gpu_memory / GIB
        bars = [g for g in self.plan_source.data["gib"] if g > 0]
        bottom = min([*bars, capacity]) / 10
        return bottom, 2 * max([capacity, *bars])

    def _plan_title(self) -> str:
        plan = self.report.plan()
        return (
            f"Memory per GPU (GiB), {plan.dtype} + {plan.optimizer}: table-wise (blue) vs "
            f"row-wise (green); red = over the {plan.gpu_memory / GIB:.3g} GiB capacity "
            "(dashed)"
        )

    def update(self) -> None:
        """Redraw everything that depends on dims and plan settings: the summary, and the
        plan in a new widget that replaces the old one (closed a few seconds later, once
        the page sent what its view still had to say: no "No such comm" warnings)."""
        self.summary.value = report_html(self.report)
        old, self.plan_plot = self.plan_plot, self._plan_widget()
        self.children = tuple(self.plan_plot if child is old else child for child in self.children)
        self._retired = [(w, t) for w, t in getattr(self, "_retired", []) if t.is_alive()]
        self._retired.append((old, old.close_later()))

    def close(self) -> None:
        """Close the view and every widget it made."""
        for widget, timer in getattr(self, "_retired", []):
            timer.cancel()
            widget.close()
        for name in ("plot", "plan_plot"):  # absent when __init__ failed half-way
            if getattr(self, name, None) is not None:
                getattr(self, name).close()
        super().close()

    def _show_error(self, text: str | None) -> None:
        self.message.value = f"<pre>{html.escape(text)}</pre>" if text else ""
        self.message.layout.display = "" if text else "none"

    # ---- controls ---------------------------------------------------------------------------
    def _on_settings(self, _: Any = None) -> None:
        try:
            self.report.configure(
                num_gpus=int(self.num_gpus.value),
                gpu_memory=max(1, int(self.gpu_gib.value * GIB)),
                dtype=self.dtype.value,
                optimizer=self.optimizer.value,
            )
        except Exception as exc:  # shown in the widget, not lost in the console
            self._show_error(f"{type(exc).__name__}: {exc}")
            return
        self._show_error(None)
        self.update()

    def _show_dim(self) -> None:
        if self.table.value is not None:
            self.dim.value = self.report.dim(self.table.value)

    def _set_dim(self, dim: int | None) -> None:
        try:
            self.report.set_dim(self.table.value, dim)
        except Exception as exc:
            self._show_error(f"{type(exc).__name__}: {exc}")
            return
        self._show_error(None)
        self._show_dim()
        self.update()

    def __repr__(self) -> str:
        return repr(self.report)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle
