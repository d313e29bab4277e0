"""Embedding statistics: table sizes, lookup frequencies, cache coverage, dims and memory.

Data first (:meth:`EmbeddingReport.to_dict`), then rendered (text ``repr``, HTML for
notebooks, :class:`interactive_recsys.ui.EmbeddingView` for the live widget).

For every embedding table (one per Categorify vocabulary, or per categorical column of a
dataset): cardinality (2 reserved rows + out-of-vocabulary rows + vocabulary), the
rank/frequency distribution of lookups, the coverage curve (share of lookups served by the
``k`` hottest rows: the hit rate of a GPU cache of ``k`` rows), the null rate (of all
lookups) and the out-of-vocabulary share (of the non-null lookups, the Build tab's "lookups
lost"; ``to_dict`` also keeps ``oov_rate``, of all lookups), list-length statistics and
padding waste for multi-hot columns, the recommended embedding dimension (:data:`DIMS_RULE`,
overridable per table) and a memory plan on GPUs (:class:`~interactive_recsys.stats.MemoryPlan`).

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"c": ["a", "a", "a", "b", None], "d": ["x"] * 5})
>>> report = irs.stats.EmbeddingReport(df)
>>> report.tables["c"].cardinality          # pad, null, OOV + {a, b}
5
>>> report.dim("c"), report.set_dim("c", 8).dim("c")
(16, 8)
>>> report.to_dict()["tables"]["c"]["null_rate"]
0.2
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from dask.utils import format_bytes

from interactive_recsys.embedding import embedding_dim
from interactive_recsys.errors import ParameterError
from interactive_recsys.io._dataset import as_dataset
from interactive_recsys.stats._memory_plan import OPTIMIZER_STATE, EmbeddingTable, MemoryPlan
from interactive_recsys.stats._table_stats import (
    TableStats,
    add_list_lengths,
    dataset_tables,
    workflow_tables,
)
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.workflow._workflow import Workflow

DIMS_RULE = "dim = min(512, max(16, round(1.6 * cardinality ** 0.56)))  (NVTabular's rule)"
#: shares of lookups reported as "ids needed to serve this share"
COVERAGE_SHARES = (0.5, 0.9, 0.99)
PLAN_SETTINGS = ("num_gpus", "gpu_memory", "dtype", "optimizer")
#: The table's rate columns, each named with what it is a share of: nulls among every lookup,
#: out-of-vocabulary lookups among the non-null ones (as the Build tab and ``irs run
#: --oov-budget`` count them: :attr:`~interactive_recsys.stats.LookupLoss.share`).
NULL_PCT, OOV_PCT = "null % of lookups", "OOV % of non-null lookups"


class EmbeddingReport:
    """Statistics of the embedding tables of a fitted workflow or of a dataset.

    Parameters
    ----------
    source : a fitted :class:`~interactive_recsys.Workflow` (its vocabularies hold the
        counts), or data: a :class:`~interactive_recsys.Dataset`, a path, or a DataFrame
        (values counted with Dask, as ``Categorify`` would).
    dataset : with a workflow, data whose list columns are measured (list lengths are not
        kept in the fitted state).
    columns : only these tables/columns (default: every categorical one).
    dims : per-table embedding dimensions overriding :data:`DIMS_RULE`.
    freq_threshold, max_size, num_buckets : with data, the ``Categorify`` settings whose
        vocabulary is described (ignored with a workflow: its own settings apply).
    num_gpus, gpu_memory, dtype, optimizer : the memory plan's settings (see
        :class:`~interactive_recsys.stats.MemoryPlan`); change them with :meth:`configure`.
    max_points : points per curve in ``to_dict`` (log-spaced; curves are downsampled).
    """

    def __init__(self, source: Any, *, dataset: Any = None, columns: Iterable[str] | None = None,
                 dims: Mapping[str, int] | None = None, freq_threshold: int = 0,
                 max_size: int | None = None, num_buckets: int | None = None,
                 num_gpus: int = 1, gpu_memory: int | str = "16GiB", dtype: str = "fp32",
                 optimizer: str = "sgd", max_points: int = 200) -> None:
        columns = list(columns) if columns is not None else None
        if isinstance(source, Workflow):
            tables = workflow_tables(source)
            if columns is not None:
                tables = [t for t in tables if t.name in columns
                          or any(c in columns for c in t.columns)]
            if dataset is not None:
                add_list_lengths(tables, as_dataset(dataset))
            self.source = "workflow"
        else:
            tables = dataset_tables(as_dataset(source), columns, freq_threshold=freq_threshold,
                                    max_size=max_size, num_buckets=num_buckets)
            self.source = "dataset"
        self.tables: dict[str, TableStats] = {t.name: t for t in tables}
        self.max_points = max_points
        self.dims: dict[str, int] = {}
        for name, dim in (dims or {}).items():
            self.set_dim(name, dim)
        self.settings: dict[str, Any] = {}
        self.configure(num_gpus=num_gpus, gpu_memory=gpu_memory, dtype=dtype,
                       optimizer=optimizer)

    # ---- dimensions -------------------------------------------------------------------------
    def _table(self, name: str) -> TableStats:
        if name not in self.tables:
            raise ParameterError(f"No embedding table named {name!r}; the tables are "
                                 f"{list(self.tables)}.")
        return self.tables[name]

    def recommended_dim(self, name: str) -> int:
        """:data:`DIMS_RULE` applied to the table's cardinality."""
        return embedding_dim(self._table(name).cardinality)

    def dim(self, name: str) -> int:
        """The table's dimension: the override if set, else the recommended one."""
        return self.dims.get(name) or self.recommended_dim(name)

    def set_dim(self, name: str, dim: int | None) -> EmbeddingReport:
        """Override the dimension of table ``name`` (``None``: back to the rule)."""
        self._table(name)
        if dim is None:
            self.dims.pop(name, None)
            return self
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ParameterError(f"The dimension of table {name!r} must be an integer >= 1. "
                                 f"Got {dim!r} instead.")
        self.dims[name] = dim
        return self

    # ---- memory plan ------------------------------------------------------------------------
    def configure(self, **settings: Any) -> EmbeddingReport:
        """Change the memory plan's settings (``num_gpus``, ``gpu_memory``, ``dtype``,
        ``optimizer``); invalid values raise and leave the settings unchanged."""
        unknown = sorted(set(settings) - set(PLAN_SETTINGS))
        if unknown:
            raise ParameterError(f"Unknown memory plan settings {unknown}; the settings are "
                                 f"{list(PLAN_SETTINGS)}.")
        new = {**self.settings, **settings}
        self.plan(**new)  # validates
        self.settings = new
        return self

    def embedding_tables(self) -> list[EmbeddingTable]:
        return [EmbeddingTable(name, t.cardinality, self.dim(name))
                for name, t in self.tables.items()]

    def plan(self, **settings: Any) -> MemoryPlan:
        """The memory plan with the report's settings, or with the ones given here."""
        return MemoryPlan(self.embedding_tables(), **{**self.settings, **settings})

    # ---- data -------------------------------------------------------------------------------
    def table_dict(self, name: str) -> dict[str, Any]:
        t = self._table(name)
        lookups = t.lookup_histogram()
        out: dict[str, Any] = {
            "columns": list(t.columns), "source": t.source, "cardinality": t.cardinality,
            "reserved": 2, "oov_buckets": t.oov_buckets, "vocab_size": t.vocab_size,
            "lookups": t.lookups, "null_count": t.null_count, "oov_count": t.oov_count,
            "null_rate": t.null_rate, "oov_rate": t.oov_rate, "oov_share": t.oov_share,
            "recommended_dim": self.recommended_dim(name), "dim": self.dim(name),
            "dim_overridden": name in self.dims, "index_dtype": t.index_dtype,
            "notes": list(t.notes), "vocabulary_version": t.vocabulary_version,
            "new_rows": list(t.new_rows) if t.new_rows is not None else None,
        }
        if t.frequency is not None:
            out["rank_frequency"] = t.frequency.rank_frequency(self.max_points)
            out["coverage"] = lookups.coverage_curve(self.max_points)
            out["ids_for_share"] = {str(s): lookups.ids_for_share(s) for s in COVERAGE_SHARES}
        out["list_lengths"] = t.lengths.to_dict() if t.lengths is not None else None
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-able data (curves downsampled to ``max_points``)."""
        return {"source": self.source, "dims_rule": DIMS_RULE,
                "tables": {name: self.table_dict(name) for name in self.tables},
                "plan": self.plan().to_dict()}

    def to_json(self, path: str | os.PathLike | None = None, indent: int | None = 2) -> str:
        """The report as JSON text; also written (atomically) to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            with atomic_file(path) as tmp, open(tmp, "w") as f:
                f.write(text)
        return text

    # ---- rendering --------------------------------------------------------------------------
    def rows(self) -> list[dict[str, str]]:
        """One row of display strings per table (shared by the text, HTML and widget views)."""
        plan = self.plan()
        updated = any(t.new_rows is not None for t in self.tables.values())
        out = []
        for name, t in self.tables.items():
            d = self.table_dict(name)
            ids = d.get("ids_for_share", {})
            out.append({
                "table": name, "cardinality": f"{t.cardinality:,}",
                "dim": f"{self.dim(name)}" + ("*" if name in self.dims else ""),
                NULL_PCT: _pct(t.null_rate), OOV_PCT: _pct(t.oov_share),
                "rows for 90% / 99%": (f"{ids['0.9']:,} / {ids['0.99']:,}" if ids else "-"),
                "bytes": format_bytes(plan.table_bytes[name]),
                "lists": (f"{t.lengths.mean:.2f} / {t.lengths.quantile(0.5)} / "
                          f"{t.lengths.quantile(0.99)} / {t.lengths.max}, "
                          f"waste {t.lengths.padding_waste:.0%}") if t.lengths else "",
            })
            if updated:  # after Workflow.update: the rows the last update appended
                first, stop = t.new_rows or (t.cardinality, t.cardinality)
                out[-1]["new rows (version)"] = f"+{stop - first:,} (v{t.vocabulary_version})"
        return out

    def header(self) -> str:
        what = "a fitted workflow's vocabularies" if self.source == "workflow" else "the data"
        return f"EmbeddingReport: {len(self.tables)} embedding tables from {what}"

    def __repr__(self) -> str:
        rows = self.rows()
        if not rows:
            return self.header()
        keys = [k for k in rows[0] if k != "lists" or any(r["lists"] for r in rows)]
        widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in keys}
        lines = [self.header(), f"{DIMS_RULE}; * = overridden",
                 "  ".join(k.ljust(widths[k]) for k in keys).rstrip()]
        lines += ["  ".join(r[k].ljust(widths[k]) for k in keys).rstrip() for r in rows]
        if any(r["lists"] for r in rows):
            lines.append("lists: mean / p50 / p99 / max length, padding waste (padded to "
                         "max length vs jagged)")
        return "\n".join(lines + self.plan().summary_lines())

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_html(self) -> str:
        rows = self.rows()
        keys = [k for k in (rows[0] if rows else {}) if k != "lists"
                or any(r["lists"] for r in rows)]
        head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(r[k])}</td>" for k in keys)
                       + "</tr>" for r in rows)
        plan = self.plan()
        plan_rows = "".join(
            f"<tr><td>{p.mode}</td><td>{format_bytes(p.max_bytes)}</td>"
            f"<td>{'yes' if p.fits else 'no'}</td><td>{html.escape(', '.join(p.unplaced))}</td>"
            f"</tr>" for p in (plan.table_wise, plan.row_wise))
        flag = (f"<p class='irs-too-large'>Too large for one GPU: "
                f"{html.escape(', '.join(plan.too_large))}</p>" if plan.too_large else "")
        return (f"<div class='irs-embedding-report'><b>{html.escape(self.header())}</b>"
                f"<p>{html.escape(DIMS_RULE)}; * = overridden</p>"
                f"<table class='irs-embedding-table'><tr>{head}</tr>{body}</table>"
                f"<p class='irs-memory-plan'>{plan.dtype}, optimizer {plan.optimizer} "
                f"(+{OPTIMIZER_STATE[plan.optimizer]}x state): total "
                f"{format_bytes(plan.total_bytes)} on {plan.num_gpus} GPU(s) of "
                f"{format_bytes(plan.gpu_memory)}</p>"
                f"<table class='irs-memory-plan-table'><tr><th>placement</th>"
                f"<th>max per GPU</th><th>fits</th><th>unplaced</th></tr>{plan_rows}</table>"
                f"{flag}</div>")


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.2f}"


def report_of(source: Any) -> EmbeddingReport:
    """``source`` if it is a report, else a report of it (workflow or data)."""
    return source if isinstance(source, EmbeddingReport) else EmbeddingReport(source)


__all__ = ["COVERAGE_SHARES", "DIMS_RULE", "EmbeddingReport", "report_of"]
