"""One distinct count per column on the Build tab: the sample's estimate, marked as one, until
Suggest has counted every row; then the exact count, in the column list and the graph alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from interactive_recsys.ui.builder._builder import PipelineBuilder

ROWS, SAMPLE = 6000, 500


@pytest.fixture
def frame() -> pd.DataFrame:
    """A mid-size vocabulary that stops growing past the sample (the estimate overshoots
    it), nulls in it, and a continuous column (never counted: estimated throughout)."""
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 400, ROWS).astype(str).astype(object)
    codes[rng.random(ROWS) < 0.05] = None
    return pd.DataFrame({"C7": pd.array(codes, dtype="string"),
                         "I1": rng.normal(size=ROWS)})


def _row(builder: PipelineBuilder, name: str) -> dict:
    return next(r for r in builder.column_list.rows if r["name"] == name)


def _tooltip(builder: PipelineBuilder, name: str) -> str:
    return next(n["tooltip"] for n in builder.dag.nodes if n["id"] == f"col:{name}")


def test_exact_counts_replace_the_estimates_once_suggest_counted(tmp_path, frame):
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)  # one file: the row count is known, the estimate extrapolates
    builder = PipelineBuilder(str(path), sample_rows=SAMPLE)
    exact = frame["C7"].nunique()  # independent: pandas over every row, nulls left out
    builder.select_columns(["C7"])
    builder.model.add_step(["C7"], "Categorify")  # the graph now has C7's input node

    # before Suggest: the estimate, marked as one, in the list and in the graph
    estimate = {p.name: p.distinct for p in builder.model.profile}["C7"]
    assert estimate != exact  # the data shows the difference the marks are about
    assert _row(builder, "C7")["distinct"] == f"~{estimate:,} est."
    assert f"~{estimate:,} (sample estimate)" in _row(builder, "C7")["title"]
    assert f"distinct ~{estimate:,} (sample estimate)" in _tooltip(builder, "C7")

    builder.suggest_button.click()  # counts every row of the categorical columns
    builder.model.wait_suggest(60)  # ... in the background
    assert builder.model.measured["C7"].distinct == exact
    row, tip = _row(builder, "C7"), _tooltip(builder, "C7")
    assert row["distinct"] == f"{exact:,} exact"
    assert f"distinct {exact:,} exact" in row["title"] and f"distinct {exact:,} exact" in tip
    for text in (row["distinct"], row["title"], tip):
        assert "estimate" not in text and "~" not in text and f"{estimate:,}" not in text
    # a column Suggest does not count keeps its estimate, still marked
    assert _row(builder, "I1")["distinct"].endswith(" est.")
    assert "(sample estimate)" in _row(builder, "I1")["title"]


def test_a_columns_panel_attached_after_suggest_shows_exact_counts(tmp_path, frame):
    from interactive_recsys.ui.builder.model import BuilderModel
    from interactive_recsys.ui.builder.views._columns import ColumnsPanel
    from interactive_recsys.ui.builder.views._feedback import Feedback

    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    model = BuilderModel(str(path), sample_rows=SAMPLE)
    model.suggest()
    panel = ColumnsPanel(model, Feedback(["columns"]))
    row = next(r for r in panel.column_list.rows if r["name"] == "C7")
    assert row["distinct"] == f"{frame['C7'].nunique():,} exact"
