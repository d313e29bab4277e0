"""The Embeddings tab's tables: the report's numbers, right-aligned under headers with units,
each column explained under the table, and per embedding table the lookups of its hottest
values, equal to pandas' value counts of the data."""

from __future__ import annotations

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys.stats._embedding_report import OOV_PCT, EmbeddingReport
from interactive_recsys.ui.embeddings._summary import TOP_IDS, report_html
from tests.html_tables import legend_lines, read_tables


def _frame(rows: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    c1 = (rng.zipf(1.4, rows) % 400).astype(str).astype(object)
    c1[rng.random(rows) < 0.1] = None
    return pd.DataFrame(
        {"C1": pd.array(c1, dtype="string"), "C2": rng.choice(["x", "y", "z"], rows)}
    )


def test_tables_read_as_tables_and_explain_null_and_oov() -> None:
    report = EmbeddingReport(_frame(), freq_threshold=3)
    page = report_html(report)
    tables = read_tables(page)
    main, plan = tables
    assert "irs-embedding-table" in main.classes and "irs-memory-plan-table" in plan.classes
    units = main.head[1]
    oov = main.column("OOV")
    assert units[oov].text == "% of non-null lookups"
    assert units[main.column("null")].text == "% of lookups"
    legend = legend_lines(page)
    assert any(line.startswith("null (% of lookups): lookups of the null row 1") for line in legend)
    assert any(
        line.startswith("OOV (% of non-null lookups): ") and "lookups lost" in line
        for line in legend
    )
    rows = {row[0].text: row for row in main.body}
    assert set(rows) == {"C1", "C2"}
    # the same numbers as the report's own rows, right-aligned in tabular figures
    by_name = {r["table"]: r for r in report.rows()}
    assert rows["C1"][oov].text == by_name["C1"][OOV_PCT]
    assert rows["C1"][main.column("cardinality")].text == by_name["C1"]["cardinality"]
    for cell in rows["C1"][1 : oov + 1]:
        assert "text-align:right" in cell.style and "tabular-nums" in cell.style
    assert "text-align:left" in rows["C1"][0].style
    # the memory plan's numbers too
    assert "text-align:right" in plan.body[0][plan.column("max per GPU")].style


def test_hottest_values_equal_pandas_value_counts() -> None:
    frame = _frame()
    report = EmbeddingReport(frame)
    (main, _) = read_tables(report_html(report))
    rows = {row[0].text: row for row in main.body}
    column = main.column(f"top {TOP_IDS} values")
    for name in ("C1", "C2"):
        bars = rows[name][column].bars
        expected = frame[name].value_counts().head(TOP_IDS)  # nulls left out
        assert [int(b["data-count"]) for b in bars] == expected.tolist(), name


def test_the_view_uses_the_readable_table_and_keeps_it_after_an_edit() -> None:
    view = irs.ui.EmbeddingView(EmbeddingReport(_frame()))
    try:
        assert "null (% of lookups): lookups of the null row 1" in " ".join(
            legend_lines(view.summary.value)
        )
        view.report.set_dim("C1", 64)
        view.update()
        (main, _) = read_tables(view.summary.value)
        row = {r[0].text: r for r in main.body}["C1"]
        assert row[main.column("dim")].text == "64*"
    finally:
        view.close()
