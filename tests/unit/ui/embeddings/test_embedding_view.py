"""EmbeddingView's plots at Criteo's width: 26 tables told apart, capacity on the scale."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.stats._embedding_report import EmbeddingReport


def _frame(tables: int = 26, rows: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({f"C{i}": rng.zipf(1.5, rows).astype(str) for i in range(1, tables + 1)})


def test_26_tables_the_widest_named_the_rest_as_others_and_hover() -> None:
    from interactive_recsys.ui.embeddings._embeddings import LEGEND_TOP, OTHERS_COLOUR

    view = irs.ui.EmbeddingView(_frame())
    data = view.coverage_source.data
    assert data["name"] == [f"C{i}" for i in range(1, 27)]  # every table drawn
    cards = {n: view.report.tables[n].cardinality for n in data["name"]}
    widest = sorted(cards, key=lambda n: -cards[n])[:LEGEND_TOP]
    named = [n for n, label in zip(data["name"], data["legend"], strict=True) if label == n]
    assert sorted(named) == sorted(widest)  # the widest tables have their own entry
    assert set(data["legend"]) - set(named) == {"others (18 tables)"}
    colours = dict(zip(data["name"], data["color"], strict=True))
    assert len({colours[n] for n in widest}) == LEGEND_TOP  # told apart
    assert {colours[n] for n in cards if n not in widest} == {OTHERS_COLOUR}
    assert view.frequency_source.data["color"] == data["color"]  # same colour in both plots
    freq, cov = view.figures.children[0].children
    [legend] = cov.legend
    assert legend in cov.right  # outside the plot area, not over the curves
    assert legend.click_policy == "hide"
    assert [item.label.field for item in legend.items] == ["legend"]  # 9 entries, grouped
    for fig in (freq, cov):
        hovers = [t for t in fig.tools if type(t).__name__ == "HoverTool"]
        assert hovers and ("table", "@name") in hovers[0].tooltips  # each line still named
    view.close()


def test_gpu_memory_axis_includes_the_capacity_line() -> None:
    view = irs.ui.EmbeddingView(EmbeddingReport(_frame(3)))
    capacity = view.report.plan().gpu_memory / 2**30
    assert view.num_gpus.continuous_update and view.gpu_gib.continuous_update  # as typed
    bars = view.plan_source.data["gib"]
    assert max(bars) < capacity / 1000  # small tables: bars far below
    y = view.plan_figure.y_range
    assert view.plan_figure.y_scale.__class__.__name__ == "LogScale"
    assert y.end >= capacity  # the capacity line is still in view
    # and every bar spans at least a decade of the log axis: visible, not a line at 0
    assert all(g / y.start >= 10 for g in bars if g > 0), (bars, y.start)
    view.gpu_gib.value = 0.00001  # now the bars are far above the capacity
    y = view.plan_figure.y_range
    assert y.end >= max(view.plan_source.data["gib"]) and y.start <= 0.00001
    view.close()


@pytest.mark.parametrize("gpus", [1, 2, 8, 16])
def test_the_first_placement_label_stays_inside_the_plot(gpus: int) -> None:
    """ "table-wise" under the first bar, rotated, reaches left of its bar: the frame's left
    edge leaves it room (else it is cut, "ble-wise"). The geometry is recomputed here from the
    figure model: the frame's width, the factor range's padding (Bokeh's FactorRange: bars
    1 unit wide, ``group_padding`` between GPUs, ``range_padding`` on each side), and the
    label's font size and angle, at 0.6 em per character (DejaVu Sans's lowercase letters
    average 0.51 em in "table-wise")."""
    import math

    view = irs.ui.EmbeddingView(EmbeddingReport(_frame(3), num_gpus=gpus))
    fig = view.plan_figure
    x = fig.x_range
    assert x.factors[0] == ("GPU 0", "table-wise")
    frame_width = fig.frame_width or fig.width  # the plot's width bounds its frame's
    units = len(x.factors) + (gpus - 1) * x.group_padding
    pad = x.range_padding if x.range_padding_units == "absolute" else units * x.range_padding / 2
    px_per_unit = frame_width / (units + 2 * pad)
    first_centre = (pad + 0.5) * px_per_unit  # px right of the frame's left edge
    font = float(fig.xaxis[0].major_label_text_font_size.removesuffix("px"))
    angle = fig.xaxis[0].major_label_orientation
    overhang = len("table-wise") * 0.6 * font * math.cos(angle) + font / 2 * math.sin(angle)
    assert first_centre >= overhang, (first_centre, overhang)
    # the bars keep most of the width: the padding is no more than the label needs
    assert pad * px_per_unit <= 1.5 * overhang
    view.close()


def test_saved_widget_state_follows_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a saved notebook keeps (each widget's state, as the kernel sends it) shows the
    plan of the current settings: a new plan widget per change, the old one closed once
    the page had time to send its view's last changes (no "No such comm" warnings)."""
    import json
    import time

    import ipywidgets as w

    from interactive_recsys.ui import _bokeh_widget as bokeh_widget

    monkeypatch.setattr(bokeh_widget, "CLOSE_DELAY_S", 0.3)
    view = irs.ui.EmbeddingView(EmbeddingReport(_frame(3), num_gpus=2))
    first = view.plan_plot
    view.num_gpus.value = 5
    second = view.plan_plot
    view.dtype.value = "fp16"
    assert first not in view.children and second not in view.children  # replaced
    assert first.comm is not None  # still open: the page's last messages find it
    deadline = time.monotonic() + 10
    while (first.comm, second.comm) != (None, None) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.comm is None and second.comm is None  # closed, a moment later
    assert view.plan_plot in view.children
    state = w.Widget.get_manager_state(widgets=[view.plan_plot])["state"]
    bundle = json.loads(state[view.plan_plot.model_id]["state"]["render_bundle"])
    text = json.dumps(bundle)
    expected = {f"GPU {g}" for g in range(5)}  # 5 GPUs x 2 placements
    assert {x for x in expected if f'"{x}"' in text} == expected and '"GPU 5"' not in text
    assert "(GiB), fp16 + " in text and "fp32 + " not in text
    view.close()
    assert view.plot.comm is None and view.plan_plot.comm is None
