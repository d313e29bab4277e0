"""The Embeddings tab's tables: one row per embedding table and the memory plan, readable.

The numbers are the report's (:meth:`~interactive_recsys.stats.EmbeddingReport.rows`, the
same text as its ``repr`` and ``to_html``); this module only lays them out with
:func:`~interactive_recsys.ui._table_html.table_html`: units under the headers, numbers
right-aligned, a line per column under the table, and per table the lookups of its hottest
values as small bars.

>>> import pandas as pd
>>> from interactive_recsys.stats._embedding_report import EmbeddingReport
>>> page = report_html(EmbeddingReport(pd.DataFrame({"c": list("aaab")})))
>>> "irs-embedding-table" in page and "% of non-null lookups" in page
True
"""

from __future__ import annotations

import html

import numpy as np
from dask.utils import format_bytes

from interactive_recsys.stats._embedding_report import (
    DIMS_RULE,
    NULL_PCT,
    OOV_PCT,
    EmbeddingReport,
)
from interactive_recsys.stats._memory_plan import OPTIMIZER_STATE
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX
from interactive_recsys.ui._table_html import Column, Html, bars_svg, table_html

#: Bars per table: the lookups of its hottest values.
TOP_IDS = 10

#: The columns of the per-table row, keyed as in :meth:`EmbeddingReport.rows`.
TABLE_COLUMNS = (
    Column(
        "table",
        "table",
        help="an embedding table: one per vocabulary (columns that share a vocabulary share it)",
    ),
    Column(
        "cardinality",
        "cardinality",
        unit="rows",
        numeric=True,
        help=f"rows of the table: {FIRST_FREE_INDEX} reserved (padding, null) + "
        "out-of-vocabulary rows + the vocabulary",
    ),
    Column(
        "dim",
        "dim",
        unit="values per row",
        numeric=True,
        help="the embedding dimension, by the rule above (* = set by hand)",
    ),
    Column(
        NULL_PCT,
        "null",
        unit="% of lookups",
        numeric=True,
        help=f"lookups of the null row {NULL_INDEX} (a missing value), per 100 lookups (a "
        "lookup: a value, or a list element)",
    ),
    Column(
        OOV_PCT,
        "OOV",
        unit="% of non-null lookups",
        numeric=True,
        help="lookups of an out-of-vocabulary row (a value the vocabulary does not hold), "
        "per 100 non-null lookups: the lookups lost, as in the Build tab",
    ),
    Column(
        "rows for 90% / 99%",
        "cache for 90% / 99%",
        unit="rows",
        numeric=True,
        help="the fewest hottest rows that serve 90% / 99% of the lookups: the rows a GPU "
        "cache needs for that hit rate",
    ),
    Column(
        "bytes",
        "memory",
        unit="weights + optimizer",
        numeric=True,
        help="the table's bytes with the plan's weight type and optimizer state",
    ),
    Column(
        "lists",
        "list length",
        unit="mean / p50 / p99 / max",
        numeric=True,
        help="multi-hot columns: values per row, and the padding waste of padded vs jagged storage",
    ),
    Column(
        "new rows (version)",
        "new rows",
        unit="(vocabulary version)",
        numeric=True,
        help="rows the last Workflow.update appended, and the vocabulary's version",
    ),
    Column(
        "hottest",
        f"top {TOP_IDS} values",
        unit="lookups",
        help=f"the lookups of the {TOP_IDS} most looked-up values, hottest first (hover a "
        "bar for its count): a steep fall means a small cache serves most lookups",
    ),
)

PLAN_COLUMNS = (
    Column(
        "mode",
        "placement",
        help="table-wise: whole tables, largest first onto the least-loaded GPU; row-wise: "
        "every table split over all GPUs",
    ),
    Column(
        "max", "max per GPU", unit="bytes", numeric=True, help="the bytes of the most loaded GPU"
    ),
    Column("fits", "fits", help="whether every GPU stays within its capacity"),
    Column("unplaced", "unplaced", help="tables that fit on no GPU"),
)


def hottest_svg(report: EmbeddingReport, name: str) -> Html | None:
    """Bars of the lookups of table ``name``'s :data:`TOP_IDS` hottest values (None when
    its lookups were not counted)."""
    frequency = report.tables[name].frequency
    if frequency is None or not frequency.n_ids:
        return None
    ranks = np.arange(1, min(TOP_IDS, frequency.n_ids) + 1)
    counts = [int(c) for c in frequency.frequency_at_rank(ranks)]
    total = frequency.total
    titles = [
        f"rank {r}: {c:,} lookups ({c / total:.1%})"
        for r, c in zip(ranks.tolist(), counts, strict=True)
    ]
    label = (
        f"lookups of the {len(counts)} hottest of {frequency.n_ids:,} values of {name}, "
        f"hottest first"
    )
    return bars_svg(counts, titles, label, kind="top")


def report_html(report: EmbeddingReport) -> str:
    """The report's tables as the Embeddings tab shows them (the same class names as
    :meth:`EmbeddingReport.to_html`)."""
    rows = report.rows()
    keys = set(rows[0]) if rows else set()
    if not any(r.get("lists") for r in rows):
        keys.discard("lists")
    for row, name in zip(rows, report.tables, strict=True):
        row["hottest"] = hottest_svg(report, name)
        keys.add("hottest")
    columns = [c for c in TABLE_COLUMNS if c.key in keys]
    plan = report.plan()
    plan_rows = [
        {
            "mode": p.mode,
            "max": format_bytes(p.max_bytes),
            "fits": "yes" if p.fits else "no",
            "unplaced": ", ".join(p.unplaced),
        }
        for p in (plan.table_wise, plan.row_wise)
    ]
    flag = (
        f"<p class='irs-too-large'>Too large for one GPU: "
        f"{html.escape(', '.join(plan.too_large))}</p>"
        if plan.too_large
        else ""
    )
    return (
        f"<div class='irs-embedding-report'><b>{html.escape(report.header())}</b>"
        f"<p>{html.escape(DIMS_RULE)}; * = overridden</p>"
        f"{table_html(columns, rows, css_class='irs-embedding-table')}"
        f"<p class='irs-memory-plan'>{plan.dtype}, optimizer {plan.optimizer} "
        f"(+{OPTIMIZER_STATE[plan.optimizer]}x state): total "
        f"{format_bytes(plan.total_bytes)} on {plan.num_gpus} GPU(s) of "
        f"{format_bytes(plan.gpu_memory)}</p>"
        f"{table_html(PLAN_COLUMNS, plan_rows, css_class='irs-memory-plan-table')}"
        f"{flag}</div>"
    )


__all__ = ["PLAN_COLUMNS", "TABLE_COLUMNS", "TOP_IDS", "hottest_svg", "report_html"]
