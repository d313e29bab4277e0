"""The widgets' tables read as tables: numbers right-aligned in tabular figures, a unit under
each header in its own cell, each column explained (tooltip and legend line), hostile values
escaped, and per column bars that equal numpy's histogram and pandas' value counts."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from interactive_recsys.ui._table_html import (
    SPARK_HEIGHT,
    Column,
    data_table_html,
    histogram_svg,
    table_html,
    top_values_svg,
)
from tests.html_tables import legend_lines, read, read_tables

COLUMNS = [
    Column("name", "column", help="the output column"),
    Column("nulls", "nulls", unit="rows", numeric=True, help="rows with no value"),
    Column(
        "oov",
        "OOV",
        unit="% of non-null lookups",
        numeric=True,
        decimals=2,
        help="lookups sent out of vocabulary",
    ),
]
ROWS = [
    {"name": "C1", "nulls": 1234567, "oov": 22.4567},
    {"name": "C2", "nulls": 0, "oov": None},
    {"name": "C3", "nulls": 5, "oov": 23.0},
]


def _heights(svg: str) -> tuple[list[int], list[float]]:
    (table,) = read_tables(f"<table><tr><td>{svg}</td></tr></table>")
    bars = table.rows[0][0].bars
    return [int(b["data-count"]) for b in bars], [float(b["height"]) for b in bars]


def test_numbers_are_right_aligned_in_tabular_figures_and_text_left() -> None:
    (table,) = read_tables(table_html(COLUMNS, ROWS))
    assert table.head_rows == 2 and len(table.body) == 3
    for row in table.rows:
        name, nulls, oov = row
        assert "text-align:left" in name.style
        for cell in (nulls, oov):
            assert "text-align:right" in cell.style and "tabular-nums" in cell.style
    assert [c.text for c in table.body[0]] == ["C1", "1,234,567", "22.46"]
    assert table.body[1][2].text == "–"  # a missing value, not "None" or "nan"
    assert table.body[2][2].text == "23.00"  # fixed decimals: the decimal points line up


def test_each_header_has_its_unit_in_its_own_cell_a_tooltip_and_a_legend_line() -> None:
    page = table_html(COLUMNS, ROWS)
    (table,) = read_tables(page)
    names, units = table.head
    assert [c.text for c in names] == ["column", "nulls", "OOV"]  # one header per cell
    assert [c.text for c in units] == ["", "rows", "% of non-null lookups"]
    for cell, column in zip(names, COLUMNS, strict=True):
        assert column.help in cell.attrs["title"]
    assert legend_lines(page) == [
        "column: the output column",
        "nulls (rows): rows with no value",
        "OOV (% of non-null lookups): lookups sent out of vocabulary",
    ]
    assert "OOV (% of non-null lookups)" in legend_lines(table_html(COLUMNS, ROWS))[2]
    assert legend_lines(table_html(COLUMNS, ROWS, legend=False)) == []


def test_hostile_values_are_escaped() -> None:
    hostile = '<script>alert("x")</script>'
    columns = [
        Column("a", '<img src=x onerror="alert(1)">', unit="<b>", help='say "hi" <i>'),
        Column("b", "b"),
    ]
    page = table_html(columns, [{"a": hostile, "b": "&amp;"}])
    reader = read(page)
    assert not {"script", "img", "i"} & set(reader.tags)
    (table,) = reader.tables
    assert table.body[0][0].text == hostile and table.body[0][1].text == "&amp;"
    assert table.rows[0][0].text == '<img src=x onerror="alert(1)">'
    assert table.rows[0][0].attrs["title"].endswith('say "hi" <i>')
    svg = top_values_svg([hostile, hostile, "b"])
    assert "<script" not in svg
    counts, _ = _heights(svg)
    assert counts == [2, 1]
    page = data_table_html(pd.DataFrame({hostile: [hostile]}))
    assert "script" not in read(page).tags and read_tables(page)[0].body[0][0].text == hostile


def test_histogram_bars_are_numpy_histogram_counts() -> None:
    x = np.random.default_rng(7).normal(3, 2, 1000)
    x[:5] = np.nan  # left out, as numpy would have to be told
    expected, _ = np.histogram(x[5:], bins=10)
    counts, heights = _heights(histogram_svg(x))
    assert counts == expected.tolist()
    assert heights == pytest.approx(SPARK_HEIGHT * expected / expected.max(), abs=0.006)
    titles = re.findall(r"<title>([^<]*)</title></rect>", histogram_svg(x))
    assert titles[0].endswith(f": {expected[0]:,} values")
    assert histogram_svg([np.nan, np.inf]) is None


def test_top_values_bars_are_pandas_value_counts() -> None:
    rng = np.random.default_rng(1)
    values = pd.Series(
        rng.choice(list("abcdefgh"), 500, p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05, 0.05])
    )
    values[:7] = None
    expected = values.value_counts().head(5)
    svg = top_values_svg(values)
    counts, heights = _heights(svg)
    assert counts == expected.tolist()
    assert heights[0] == SPARK_HEIGHT and heights == pytest.approx(
        SPARK_HEIGHT * expected.to_numpy() / expected.max(), abs=0.006
    )
    titles = re.findall(r"<title>([^<]*)</title></rect>", svg)
    assert [t.split(":")[0] for t in titles] == expected.index.tolist()
    assert top_values_svg([None, None]) is None


def test_data_rows_align_numbers_right_and_show_nulls() -> None:
    frame = pd.DataFrame(
        {
            "id": pd.array([2015399, None], dtype="Int64"),
            "x": [0.123456789, np.nan],
            "name": ["a", None],
            "flag": [True, False],
            "tags": [np.array([1, 2]), np.array([3])],
        }
    )
    (table,) = read_tables(data_table_html(frame, "irs-preview-output", index=True))
    assert "irs-preview-output" in table.classes
    assert [c.text for c in table.rows[0]] == ["", "id", "x", "name", "flag", "tags"]
    first, second = table.body
    assert [c.text for c in first] == ["0", "2015399", "0.123457", "a", "True", "[1, 2]"]
    assert [c.text for c in second[1:4]] == ["null", "null", "null"]
    right = [("text-align:right" in c.style) for c in first[1:]]
    assert right == [True, True, False, False, False]
