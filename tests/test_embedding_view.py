"""EmbeddingView's plots at Criteo's width: 26 tables told apart, capacity on the scale."""

from __future__ import annotations

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys.stats.embedding_report import EmbeddingReport


def _frame(tables: int = 26, rows: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({f"C{i}": rng.zipf(1.5, rows).astype(str) for i in range(1, tables + 1)})


def test_26_tables_get_26_colours_a_legend_and_hover() -> None:
    view = irs.ui.EmbeddingView(_frame())
    names = view.coverage_source.data["name"]
    assert names == [f"C{i}" for i in range(1, 27)]
    colours = view.coverage_source.data["color"]
    assert len(set(colours)) == 26  # none repeated (Category10 repeated every 10th)
    assert view.frequency_source.data["color"] == colours  # same colour in both plots
    freq, cov = view.figures.children[0].children
    [legend] = cov.legend
    assert legend in cov.right  # outside the plot area, not over the curves
    assert legend.ncols == 2 and legend.click_policy == "hide"
    assert [item.label.field for item in legend.items] == ["name"]  # one entry per table
    for fig in (freq, cov):
        hovers = [t for t in fig.tools if type(t).__name__ == "HoverTool"]
        assert hovers and ("table", "@name") in hovers[0].tooltips
    view.close()


def test_gpu_memory_axis_includes_the_capacity_line() -> None:
    view = irs.ui.EmbeddingView(EmbeddingReport(_frame(3)))
    capacity = view.report.plan().gpu_memory / 2**30
    assert max(view.plan_source.data["gib"]) < capacity  # small tables: bars far below
    assert view.plan_figure.y_range.end >= capacity  # the capacity line is still in view
    view.gpu_gib.value = 0.00001  # now the bars are far above the capacity
    assert view.plan_figure.y_range.end >= max(view.plan_source.data["gib"])
    view.close()

