"""Widgets in JupyterLab's dark theme: Bokeh plots told by the browser, CSS from variables."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from bokeh.themes import built_in_themes

import interactive_recsys as irs
from interactive_recsys.ui._assets import widget_asset

DARK = built_in_themes["dark_minimal"]._json["attrs"]


def _frame(rows: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({f"C{i}": rng.zipf(1.5, rows).astype(str) for i in range(1, 4)})


def _figures(view: irs.ui.EmbeddingView) -> list:
    return [*view.figures.children[0].children, view.plan_figure]


def test_embedding_plots_follow_the_theme_the_browser_reports() -> None:
    view = irs.ui.EmbeddingView(_frame())
    assert view.theme in view.children  # drawn with the plots, so it reports from the page
    light = {f.id: f.background_fill_color for f in _figures(view)}
    view.theme._on_msg(view.theme, {"event": "theme", "dark": True}, [])
    for fig in _figures(view):
        assert fig.background_fill_color == DARK["Plot"]["background_fill_color"]
        assert fig.border_fill_color == DARK["Plot"]["border_fill_color"]
        assert fig.title.text_color == DARK["Title"]["text_color"]
    sent = []
    view.plot.send = lambda content, buffers=None: sent.append(content)
    view.theme._on_msg(view.theme, {"event": "theme", "dark": False}, [])
    assert {f.id: f.background_fill_color for f in _figures(view)} == light
    # the change reaches the page as Bokeh patches on the view's comm
    assert any("background_fill_color" in str(m.get("payload", "")) for m in sent)
    view.theme._on_msg(view.theme, {"event": "other"}, [])  # ignored
    assert view.theme.dark is False
    view.close()


def test_the_dark_theme_changes_colours_not_the_layout() -> None:
    """Fonts, sizes and spacing stay those of the light theme (dark_minimal's own would
    enlarge the axis labels); a hidden legend item is veiled in the plot's dark colour."""
    from bokeh.models import Axis, Legend

    view = irs.ui.EmbeddingView(_frame())

    def looks() -> list[tuple]:
        return [(a.axis_label_text_font_size, a.axis_label_text_font_style,
                 a.major_label_text_font_size, a.axis_label_standoff)
                for f in _figures(view) for a in f.select({"type": Axis})] + [
                (g.label_text_font_size, g.spacing, g.glyph_width)
                for f in _figures(view) for g in f.select({"type": Legend})]

    light = looks()
    view.theme._on_msg(view.theme, {"event": "theme", "dark": True}, [])
    assert looks() == light and len(light) > 2
    legends = [g for f in _figures(view) for g in f.select({"type": Legend})]
    assert legends and all(g.inactive_fill_color == DARK["Plot"]["background_fill_color"]
                           and g.label_text_color == DARK["Legend"]["label_text_color"]
                           for g in legends)
    axis = next(a for f in _figures(view) for a in f.select({"type": Axis}))
    assert axis.major_label_text_color == DARK["Axis"]["major_label_text_color"]
    view.close()


def test_graph_fills_have_a_dark_variant_for_every_light_one() -> None:
    css = widget_asset("dag.css").read_text()
    light = re.search(r"^\.irs-dag \{(.*?)\}", css, re.S | re.M).group(1)
    dark = re.search(r'body\[data-jp-theme-light="false"\] \.irs-dag \{(.*?)\}', css,
                     re.S).group(1)
    names = re.findall(r"(--irs-dag-[\w-]+):", light)
    assert names and names == re.findall(r"(--irs-dag-[\w-]+):", dark)
    # node rectangles take their fills from those variables, never a fixed colour
    for rule in re.findall(r"\.irs-dag-(?:column|op|output|reused) rect \{(.*?)\}", css, re.S):
        assert re.search(r"fill: var\(--irs-dag-", rule), rule


def test_python_built_styles_use_jupyterlab_variables() -> None:
    from interactive_recsys.ui.builder.views._feedback import COLOURS, STYLE

    assert all(c.startswith("var(--jp-") for c in COLOURS.values())
    bar = re.search(r"\.irs-builder-actionbar \{(.*?)\}", STYLE, re.S).group(1)
    assert "background: var(--jp-layout-color" in bar and "#f5f7fa" in bar  # fallback only
