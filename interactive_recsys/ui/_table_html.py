"""Tables people can read, for the widgets' HTML: the Preview and the Embeddings tabs.

:func:`table_html` draws rows under a two-line header: each column's name, and under it, in
a cell of its own, its unit ("% of lookups", "rows"). Numbers are right-aligned in tabular
figures, so that digits line up; cells are padded, so that neighbouring columns never run
together; each header carries its one-line explanation as a tooltip (``title``), and the
same lines are printed under the table, one per column (:func:`legend_html`). Every value is
HTML-escaped, except the :class:`Html` pieces this module draws itself.

:func:`histogram_svg` and :func:`top_values_svg` draw a column's distribution as a small
inline SVG (no JavaScript, no plotting library): the counts of a histogram of the values
(numeric columns), or of the most frequent values (categorical ones), as in skrub's
``TableReport``. Each bar keeps its exact count (``data-count``) and names it in a tooltip
(an SVG ``<title>``).

Colours come from JupyterLab's CSS variables (``--jp-ui-font-color1``,
``--jp-border-color2``, ``--jp-brand-color1``...) and the background is left transparent, so
a table reads the same in the light and the dark theme.

>>> cols = [Column("name", "column", help="the output column"),
...         Column("nulls", "nulls", unit="rows", help="rows with no value", numeric=True)]
>>> page = table_html(cols, [{"name": "<b>C1</b>", "nulls": 1234}])
>>> "&lt;b&gt;C1&lt;/b&gt;" in page, "text-align:right" in page, ">rows</th>" in page
(True, True, True)
>>> "nulls</b> (rows): rows with no value" in page
True
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


class Html(str):
    """Text that is HTML already (drawn by this module): inserted as it is, not escaped."""

    __slots__ = ()


@dataclass(frozen=True)
class Column:
    """One column of a :func:`table_html` table.

    Parameters
    ----------
    key : the key of the column's values in each row.
    label : the header text.
    unit : what the numbers count or are a share of ("rows", "% of lookups"), shown
        under the label, in its own cell.
    help : one line that explains the column: the header's tooltip and its legend line.
    numeric : right-aligned, in tabular figures.
    decimals : numbers shown with this many decimals (e.g. 2 for percentages, so that the
        column's decimal points line up); default: :func:`cell_text`.
    """

    key: str
    label: str
    unit: str = ""
    help: str = ""
    numeric: bool = False
    decimals: int | None = None


#: The style of a numeric and of a text cell, inline: it holds wherever the HTML is shown,
#: also where a ``<style>`` element is dropped (``irs report`` keeps inline styles only).
NUMERIC_STYLE = "text-align:right;font-variant-numeric:tabular-nums;padding:3px 10px"
TEXT_STYLE = "text-align:left;padding:3px 10px"
#: Shown for a missing value.
MISSING = "–"

#: Theme-aware CSS of every table this module draws (JupyterLab's variables, no background).
TABLE_CSS = """<style>
.irs-table { border-collapse: collapse; color: var(--jp-ui-font-color1); background: none;
  font-size: var(--jp-ui-font-size1, 13px); margin: 4px 0; }
.irs-table th, .irs-table td { padding: 3px 10px; white-space: nowrap; line-height: 1.4;
  border-bottom: 1px solid var(--jp-border-color2, #e0e0e0); vertical-align: middle; }
.irs-table thead th { font-weight: 600; border-bottom: none; vertical-align: bottom; }
.irs-table thead tr.irs-table-units th { font-weight: normal; font-size: 90%;
  color: var(--jp-ui-font-color2); border-bottom: 1px solid var(--jp-border-color1, #bdbdbd); }
.irs-table th[title] { cursor: help; }
.irs-table .irs-missing { color: var(--jp-ui-font-color2); }
.irs-table-legend { color: var(--jp-ui-font-color2); font-size: 90%; margin: 2px 0 8px 0;
  padding-left: 1.2em; line-height: 1.4; }
.irs-table-legend li { margin: 0; line-height: 1.4; }
.irs-spark { display: block; }
.irs-spark rect { fill: var(--jp-brand-color1, #1976d2); }
.irs-spark rect:hover { fill: var(--jp-brand-color0, #0d47a1); }
.irs-spark line { stroke: var(--jp-border-color1, #bdbdbd); stroke-width: 1; }
</style>"""


def cell_text(value: Any, decimals: int | None = None) -> str:
    """A value as shown in a cell: integers with thousands separators, floats with four
    significant digits (or ``decimals`` decimals), None/NaN as :data:`MISSING`.

    >>> [cell_text(v) for v in (2_015_388, 12.5, 0.3333333, 123456.78, None, float("nan"))]
    ['2,015,388', '12.5', '0.3333', '123,457', '–', '–']
    >>> cell_text(23.0, decimals=2), cell_text(1234, decimals=2)
    ('23.00', '1,234.00')
    """
    if value is None or value is pd.NA:
        return MISSING
    if (
        decimals is not None
        and isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool | np.bool_)
        and math.isfinite(value)
    ):
        return f"{value:,.{decimals}f}"
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isnan(x):
            return MISSING
        if math.isinf(x):
            return str(x)
        if x == int(x) and abs(x) < 1e15:
            return f"{int(x):,}"
        if abs(x) >= 1e4:
            return f"{x:,.0f}" if abs(x) < 1e15 else f"{x:.4g}"
        return f"{x:.4g}"
    return str(value)


def _cell(tag: str, value: Any, numeric: bool, attrs: str = "", decimals: int | None = None) -> str:
    style = NUMERIC_STYLE if numeric else TEXT_STYLE
    cls = ' class="irs-num"' if numeric else ""
    if isinstance(value, Html):
        body = str(value)
    else:
        text = cell_text(value, decimals)
        body = f'<span class="irs-missing">{text}</span>' if text == MISSING else html.escape(text)
    return f'<{tag}{cls} style="{style}"{attrs}>{body}</{tag}>'


def header_title(column: Column) -> str:
    """The header's tooltip: label, unit and explanation in one line."""
    unit = f" ({column.unit})" if column.unit else ""
    return f"{column.label}{unit}: {column.help}" if column.help else f"{column.label}{unit}"


def legend_html(columns: Sequence[Column]) -> str:
    """One line per explained column: its label, its unit and what it means."""
    lines = "".join(
        f"<li><b>{html.escape(c.label)}</b>"
        + (f" ({html.escape(c.unit)})" if c.unit else "")
        + f": {html.escape(c.help)}</li>"
        for c in columns
        if c.help
    )
    return f'<ul class="irs-table-legend">{lines}</ul>' if lines else ""


def table_html(
    columns: Sequence[Column],
    rows: Iterable[Mapping[str, Any]],
    *,
    css_class: str = "",
    legend: bool = True,
) -> str:
    """A table of ``rows`` (mappings keyed by each column's ``key``; a missing key reads as
    :data:`MISSING`), with the header, units, alignment and legend described in the module
    docstring; ``css_class`` is added to the ``<table>``'s classes."""
    columns = list(columns)
    names = "".join(
        _cell(
            "th",
            c.label,
            c.numeric,
            f' scope="col" title="{html.escape(header_title(c))}"' if c.help else ' scope="col"',
        )
        for c in columns
    )
    head = f"<tr>{names}</tr>"
    if any(c.unit for c in columns):
        units = "".join(_cell("th", c.unit, c.numeric) for c in columns)
        head += f'<tr class="irs-table-units">{units}</tr>'
    body = "".join(
        "<tr>"
        + "".join(_cell("td", row.get(c.key), c.numeric, decimals=c.decimals) for c in columns)
        + "</tr>"
        for row in rows
    )
    classes = " ".join(["irs-table", *css_class.split()])
    table = (
        f'<table class="{html.escape(classes)}"><thead>{head}</thead><tbody>{body}</tbody></table>'
    )
    return TABLE_CSS + table + (legend_html(columns) if legend else "")


# ---- data rows ----------------------------------------------------------------------------
#: Shown for a null cell of the data.
NULL_TEXT = "null"
#: List elements shown in a cell of a list column (the rest is "...").
LIST_ITEMS = 20


def value_text(value: Any) -> str:
    """A data value as read in a grid: integers as they are (ids are read, not summed),
    floats with six decimals, so that a column's decimal points line up (an exponent for the
    very small and the very large), lists in brackets, nulls as ``null``.

    >>> [value_text(v) for v in (2015388, -0.12345678, 123456.789, 2.5e-07, None, [1, 2])]
    ['2015388', '-0.123457', '123456.789000', '2.5000e-07', 'null', '[1, 2]']
    """
    if isinstance(value, np.ndarray | list | tuple):
        items = [value_text(v) for v in list(value[:LIST_ITEMS])]
        more = ", ..." if len(value) > LIST_ITEMS else ""
        return "[" + ", ".join(items) + more + "]"
    if value is None or value is pd.NA or value is pd.NaT:
        return NULL_TEXT
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isnan(x):
            return NULL_TEXT
        if math.isinf(x):
            return str(x)
        if x != 0 and not 1e-4 <= abs(x) < 1e15:
            return f"{x:.4e}"
        return f"{x:.6f}"
    return str(value)


def _is_number_column(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(
        series.dtype
    )


def data_table_html(
    frame: pd.DataFrame, css_class: str = "", index: bool = False, max_cols: int = 60
) -> str:
    """Rows of ``frame`` as a grid: the column names in ``<thead>``, numeric columns
    right-aligned in tabular figures, values by :func:`value_text`, the index (``index``)
    as each row's ``<th>``; past ``max_cols`` columns, the first and last halves with a
    "..." column between them.

    >>> page = data_table_html(pd.DataFrame({"id": [7], "name": ["<x>"]}))
    >>> 'class="irs-num" style="text-align:right' in page, "&lt;x&gt;" in page
    (True, True)
    """
    names = list(frame.columns)
    if len(names) > max_cols:
        half = max_cols // 2
        names = [*names[:half], None, *names[-half:]]
    numeric = {n: _is_number_column(frame[n]) for n in names if n is not None}

    def cell(tag: str, name: Any, text: str) -> str:
        if name is None:
            return f"<{tag}>...</{tag}>"
        return _cell(tag, Html(html.escape(text)), numeric[name])

    corner = "<th></th>" if index else ""
    head = corner + "".join(cell("th", n, "" if n is None else str(n)) for n in names)
    columns = {n: frame[n].tolist() for n in names if n is not None}
    body = []
    for i, label in enumerate(frame.index):
        first = f"<th>{html.escape(str(label))}</th>" if index else ""
        body.append(
            "<tr>"
            + first
            + "".join(cell("td", n, "" if n is None else value_text(columns[n][i])) for n in names)
            + "</tr>"
        )
    classes = " ".join(["irs-table", "irs-data-table", *css_class.split()])
    return (
        f'{TABLE_CSS}<table class="{html.escape(classes)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


# ---- distributions ---------------------------------------------------------------------------
#: Size of a distribution's SVG, in CSS pixels.
SPARK_WIDTH, SPARK_HEIGHT = 84, 24


def bars_svg(counts: Sequence[int], titles: Sequence[str], label: str, kind: str = "bars") -> Html:
    """Vertical bars of heights proportional to ``counts`` (the tallest fills the height),
    each with its exact count (``data-count``) and its tooltip (``titles``); ``label``
    names the whole for screen readers and as its tooltip.

    >>> svg = bars_svg([1, 4], ["a: 1", "b: 4"], "two values")
    >>> svg.count("<rect"), 'data-count="4"' in svg, 'height="24.00"' in svg
    (2, True, True)
    """
    n = len(counts)
    top = max(counts, default=0)
    width = SPARK_WIDTH / max(n, 1)
    gap = 1.0 if width > 3 else 0.0
    rects = []
    for i, (count, title) in enumerate(zip(counts, titles, strict=True)):
        h = SPARK_HEIGHT * count / top if top else 0.0
        rects.append(
            f'<rect x="{i * width:.2f}" y="{SPARK_HEIGHT - h:.2f}" '
            f'width="{max(width - gap, 0.5):.2f}" height="{h:.2f}" '
            f'data-count="{int(count)}"><title>{html.escape(title)}</title></rect>'
        )
    base = (
        f'<line x1="0" y1="{SPARK_HEIGHT - 0.5}" x2="{SPARK_WIDTH}" '
        f'y2="{SPARK_HEIGHT - 0.5}"></line>'
    )
    return Html(
        f'<svg class="irs-spark irs-spark-{html.escape(kind)}" role="img" '
        f'width="{SPARK_WIDTH}" height="{SPARK_HEIGHT}" '
        f'viewBox="0 0 {SPARK_WIDTH} {SPARK_HEIGHT}" '
        f'aria-label="{html.escape(label)}"><title>{html.escape(label)}</title>'
        f"{base}{''.join(rects)}</svg>"
    )


def histogram_svg(values: Any, bins: int = 10) -> Html | None:
    """The histogram of the finite ``values`` in ``bins`` equal-width bins (``numpy.histogram``)
    as bars; None when there is no finite value.

    >>> svg = histogram_svg([0.0, 0.1, 0.9, 1.0], bins=2)
    >>> [int(c) for c in __import__("re").findall(r'data-count="(\\d+)"', svg)]
    [2, 2]
    """
    x = np.asarray(values, dtype="float64")
    x = x[np.isfinite(x)]
    if not len(x):
        return None
    counts, edges = np.histogram(x, bins=bins)
    titles = [
        f"{cell_text(lo)} to {cell_text(hi)}: {int(c):,} values"
        for c, lo, hi in zip(counts, edges[:-1], edges[1:], strict=True)
    ]
    label = (
        f"histogram of {len(x):,} values from {cell_text(edges[0])} to "
        f"{cell_text(edges[-1])} ({bins} bins)"
    )
    return bars_svg(counts.tolist(), titles, label, kind="hist")


def top_values_svg(values: Any, top: int = 5) -> Html | None:
    """The counts of the ``top`` most frequent non-null ``values`` (most frequent first, ties
    in order of first appearance) as bars; None when there is no value.

    >>> svg = top_values_svg(["a", "b", "b", None])
    >>> [int(c) for c in __import__("re").findall(r'data-count="(\\d+)"', svg)]
    [2, 1]
    """
    counts = pd.Series(values, dtype="object").dropna().value_counts(sort=True).head(top)
    if not len(counts):
        return None
    total = int(pd.Series(values, dtype="object").notna().sum())
    titles = [f"{cell_text(v)}: {int(c):,} ({c / total:.1%})" for v, c in counts.items()]
    label = f"the {len(counts)} most frequent of {total:,} values: " + ", ".join(
        cell_text(v) for v in counts.index
    )
    return bars_svg(counts.tolist(), titles, label, kind="top")


__all__ = [
    "Column",
    "Html",
    "bars_svg",
    "cell_text",
    "data_table_html",
    "histogram_svg",
    "legend_html",
    "table_html",
    "top_values_svg",
    "value_text",
]
