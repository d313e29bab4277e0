"""Preview: a workflow's output on the first rows of a dataset, before any full run.

:class:`PreviewModel` (plain Python) reads only the first ``n_rows`` rows (the first
partition, or as many as needed), fits a *copy* of the workflow on them when the workflow is
not fitted (the user's workflow is never changed), transforms them, and summarises every
output column. :class:`Preview` is its widget: the rows page by page, an input/output
toggle (or both side by side), the column summary and a message area for errors.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> df = pd.DataFrame({"c": ["a", "b", "a", None], "x": [1.0, None, 3.0, 4.0]})
>>> wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing(0)))
>>> model = PreviewModel(wf, df, n_rows=3).run()
>>> model.output["c"].tolist(), wf.fitted        # fitted on a copy: wf stays unfitted
([3, 4, 3], False)
>>> model.summary.loc["x", ["nulls", "min", "max"]].tolist()   # FillMissing(0) on 3 rows
[0.0, 0.0, 3.0]
"""

from __future__ import annotations

import html
import shutil
import tempfile
import time
import weakref
from typing import Any

import dask
import ipywidgets as widgets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend._arrow import element_values
from interactive_recsys.errors import ParameterError
from interactive_recsys.io._dataset import Dataset, as_dataset
from interactive_recsys.ops._categorify import Categorify
from interactive_recsys.params import Param, validate_params
from interactive_recsys.schema import Tags, dtype_name
from interactive_recsys.stats._lookup_loss import LookupLoss
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX
from interactive_recsys.ui._sample_text import computed_on
from interactive_recsys.ui._table_html import (
    Column,
    Html,
    data_table_html,
    histogram_svg,
    table_html,
    top_values_svg,
)
from interactive_recsys.workflow._graph import OpNode, SelectNode
from interactive_recsys.workflow._workflow import Workflow

VIEWS = ("output", "input", "input | output")
#: A box that scrolls sideways by itself (a wide table never widens the page).
SCROLL_OPEN = (
    '<div class="irs-preview-scroll" '
    'style="overflow-x:auto;max-width:100%;min-width:0;flex:1 1 auto">'
)
#: Cells padded so that adjacent numbers never run together (JupyterLab's default is 1 px).
CELL_STYLE = (
    ".irs-preview-scroll th, .irs-preview-scroll td { padding: 3px 10px; white-space: nowrap; }"
)
#: The HTML widget's content box is a flex item: without this it grows to the table's width.
SCROLL_STYLE = (
    f"<style>.irs-preview-rows .widget-html-content {{ min-width: 0; }} {CELL_STYLE}</style>"
)


def input_columns(workflow: Workflow, schema: Any) -> list[str]:
    """The dataset columns the workflow reads, in first-use order."""
    names: list[str] = []
    for node in workflow.nodes:
        if isinstance(node, SelectNode):
            names += [n for n in node.columns(schema) if n not in names]
    return names


def first_vocab_indices(workflow: Workflow) -> dict[str, int]:
    """Output column -> first vocabulary index, for columns encoded by Categorify (ids in
    ``2 .. first - 1`` are out-of-vocabulary)."""
    out: dict[str, int] = {}
    for step in workflow.fitted_steps(Categorify):
        out.update(
            dict.fromkeys(step.op.output_names(list(step.groups)), step.op.first_vocab_index)
        )
    return out


#: The summary's id columns, each named with what it is a share of.
NULL_IDS, OOV_IDS = "null ids % of lookups", "OOV % of non-null lookups"

#: How the Preview's column summary is shown: label, unit and one line each (the header's
#: tooltip and the legend under the table). The id shares are the ones of
#: :func:`column_summary`: every lookup is one value (one list element for list columns).
SUMMARY_COLUMNS = (
    Column("column", "column", help="an output column of the workflow"),
    Column("dtype", "dtype", help="its type in the output (list<...>: a list of values per row)"),
    Column("rows", "rows", unit="count", numeric=True, help="rows of the output sample"),
    Column("nulls", "nulls", unit="rows", numeric=True, help="rows whose value is missing"),
    Column(
        "null %",
        "null",
        unit="% of rows",
        numeric=True,
        decimals=2,
        help="rows whose value is missing, per 100 rows of the sample",
    ),
    Column(
        "min",
        "min",
        unit="value",
        numeric=True,
        help="the smallest value (list elements included; numbers only)",
    ),
    Column(
        "max",
        "max",
        unit="value",
        numeric=True,
        help="the largest value (list elements included; numbers only)",
    ),
    Column(
        NULL_IDS,
        "null ids",
        unit="% of lookups",
        numeric=True,
        decimals=2,
        help=f"encoded columns: lookups of the reserved null id {NULL_INDEX} (a missing "
        "value), per 100 lookups (a lookup: a value, or a list element)",
    ),
    Column(
        OOV_IDS,
        "OOV",
        unit="% of non-null lookups",
        numeric=True,
        decimals=2,
        help=f"encoded columns: lookups of an out-of-vocabulary id ({FIRST_FREE_INDEX} to "
        "the first vocabulary id - 1: a value the vocabulary does not hold), per 100 "
        "non-null lookups: the lookups lost, as in the Build and Embeddings tabs",
    ),
    Column(
        "distribution",
        "distribution",
        unit="of the sample",
        help="numbers: a histogram in 10 equal-width bins; categorical columns and "
        "text: the counts of the 5 most frequent values (hover a bar: range or value, "
        "count)",
    ),
)


def column_summary(frame: pd.DataFrame, categorical: dict[str, int | None]) -> pd.DataFrame:
    """Per column: dtype, nulls, min/max of the (flattened) values and, for encoded
    categorical columns (``categorical`` maps them to their first vocabulary index, or
    ``None`` when there is no out-of-vocabulary range), the share of null ids among every
    lookup and of out-of-vocabulary ids among the non-null lookups (``NULL_IDS``,
    ``OOV_IDS``: the share the Build and Embeddings tabs show, from
    :class:`~interactive_recsys.stats.LookupLoss`)."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    rows = []
    for name in table.column_names:
        col = table[name]
        values = element_values(col)
        row: dict[str, Any] = {
            "column": name,
            "dtype": dtype_name(col.type),
            "rows": len(col),
            "nulls": col.null_count,
            "null %": 100 * col.null_count / len(col) if len(col) else 0.0,
            "min": None,
            "max": None,
            NULL_IDS: None,
            OOV_IDS: None,
        }
        kind = values.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            lo, hi = pc.min_max(values).values()
            row["min"], row["max"] = lo.as_py(), hi.as_py()
        if name in categorical and len(values):
            ids = values.to_numpy(zero_copy_only=False)
            row[NULL_IDS] = 100 * float(np.mean(ids == NULL_INDEX))
            first = categorical[name]
            if first is not None:
                lost = int(np.sum((ids >= FIRST_FREE_INDEX) & (ids < first)))
                looked_up = int(np.sum((ids != NULL_INDEX) & (ids != 0)))
                row[OOV_IDS] = 100 * LookupLoss(name, lost, looked_up).share
        rows.append(row)
    return pd.DataFrame(rows).set_index("column")


#: Arrow types whose values a top-values distribution counts (hashable, one value per cell).
_COUNTABLE = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_boolean,
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_temporal,
    pa.types.is_decimal,
)


def column_distribution(col: pa.ChunkedArray, categorical: bool) -> Html | None:
    """A column's distribution as a small SVG (list elements flattened): the histogram of a
    numeric column, the most frequent values of a categorical column (encoded ids
    included) or of a text one; None for a column with no value or of another type."""
    values = element_values(col).drop_null()
    kind = values.type
    if not len(values):
        return None
    if not categorical and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return histogram_svg(values.to_numpy())
    if any(test(kind) for test in _COUNTABLE):
        return top_values_svg(values.to_pandas())
    return None


def summary_html(
    frame: pd.DataFrame, summary: pd.DataFrame, categorical: dict[str, int | None]
) -> str:
    """The column summary as a readable table (:data:`SUMMARY_COLUMNS`) with each output
    column's distribution in the sample ``frame``."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    rows = []
    for name, row in summary.iterrows():
        values = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
        values["column"] = name
        values["distribution"] = column_distribution(table[name], name in categorical)
        rows.append(values)
    return table_html(SUMMARY_COLUMNS, rows, css_class="irs-preview-summary-table")


class PreviewModel:
    """The data behind :class:`Preview` (see the module docstring).

    Parameters
    ----------
    workflow : the workflow to preview (left unchanged).
    dataset : a Dataset, path or DataFrame; only its first ``n_rows`` rows are read.
    n_rows : sample size.
    page_size : rows per page.
    """

    @validate_params(
        {"n_rows": Param(kind="int", low=1), "page_size": Param(kind="int", low=1)}, owner="Preview"
    )
    def __init__(
        self, workflow: Workflow, dataset: Any, n_rows: int = 1000, page_size: int = 10
    ) -> None:
        if not isinstance(workflow, Workflow):
            raise ParameterError(
                f"Preview needs an interactive_recsys.Workflow; got a {type(workflow).__name__}."
            )
        self.workflow, self.dataset = workflow, dataset
        self.n_rows, self.page_size = int(n_rows), int(page_size)
        self.input: pd.DataFrame | None = None
        self.output: pd.DataFrame | None = None
        self.summary: pd.DataFrame | None = None
        #: encoded categorical output columns -> first vocabulary id (None: no OOV range)
        self.categorical: dict[str, int | None] = {}
        self.fitted: Workflow | None = None
        self.fitted_on_sample = False
        #: the dataset's row count when known without reading it (``None`` when unknown)
        self.total_rows: int | None = None
        self.seconds: float | None = None
        self._tmp: str | None = None
        #: the copy fitted on the last sample: the next fit of a copy reuses its unchanged steps
        self._copy: Workflow | None = None

    def run(self) -> PreviewModel:
        """Read the sample, fit a copy if needed, transform, summarise (a failed run leaves
        no result of an earlier one behind)."""
        started = time.perf_counter()
        self.input = self.output = self.summary = self.fitted = None
        self.categorical = {}
        ds = as_dataset(self.dataset)
        self.total_rows = ds.known_num_rows
        columns = input_columns(self.workflow, ds.schema) or ds.schema.names
        with dask.config.set(scheduler="sync"):  # a small in-process job, off the cluster
            sample = ds.head(self.n_rows, columns)
            tags = {c: ds.schema[c].tags for c in columns if ds.schema[c].tags}
            data = Dataset(sample, backend=ds.backend.name, tags=tags)
            if self.workflow.fitted:
                fitted, on_sample = self.workflow, False
            else:
                tmp = tempfile.mkdtemp(prefix="irs-preview-")
                weakref.finalize(self, shutil.rmtree, tmp, True)
                fitted = Workflow(self.workflow.output_node, artifacts_dir=tmp)
                fitted.fit(data, reuse=self._copy)  # before the last copy's folder goes
                self._cleanup()
                self._tmp, self._copy, on_sample = tmp, fitted, True
            output = ds.backend.to_pandas(fitted.transform(data).compute(dtype_backend="pyarrow"))
        self.input = sample
        self.output, self.fitted, self.fitted_on_sample = output, fitted, on_sample
        schema = fitted.output_schema
        firsts = first_vocab_indices(fitted)
        categorical = {
            c.name: firsts.get(c.name)
            for c in schema.values()
            if Tags.CATEGORICAL.value in c.tags and c.cardinality is not None
        }
        self.summary = column_summary(output, categorical)
        self.categorical = categorical
        self.seconds = time.perf_counter() - started
        return self

    def _cleanup(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def rows_align(self) -> bool:
        """Whether output row i comes from input row i (no operator drops rows)."""
        return not any(isinstance(n, OpNode) and n.op.changes_rows for n in self.workflow.nodes)

    @property
    def n_pages(self) -> int:
        frames = [f for f in (self.input, self.output) if f is not None]
        longest = max((len(f) for f in frames), default=0)
        return max(1, -(-longest // self.page_size))

    def page(self, index: int, which: str = "output") -> pd.DataFrame:
        """Rows of page ``index`` (0-based) of ``"input"`` or ``"output"``."""
        frame = self.output if which == "output" else self.input
        if frame is None:
            raise ParameterError("Nothing to show yet: call run() first.")
        start = index * self.page_size
        return frame.iloc[start : start + self.page_size]

    def describe(self) -> str:
        """One line: what was read and how the workflow was fitted."""
        if self.output is None:
            return "Preview: not run yet"
        how = (
            "workflow fitted on the sample" if self.fitted_on_sample else "workflow already fitted"
        )
        return (
            f"Preview: {len(self.input):,} input rows -> {len(self.output):,} output rows "
            f"x {self.output.shape[1]} columns ({how}; {self.seconds:.2f} s); "
            f"{computed_on(len(self.input), self.total_rows)}"
        )


def frame_html(frame: pd.DataFrame, title: str, css: str, rows: int = 10) -> str:
    """The first ``rows`` rows of ``frame`` in a box that scrolls sideways by itself."""
    table = data_table_html(frame.head(rows), css)
    return (
        f'<div class="irs-preview-side"><b>{html.escape(title)}</b> '
        f"({len(frame)} rows x {frame.shape[1]} columns, first {min(rows, len(frame))} "
        f"shown){SCROLL_OPEN}{table}</div></div>"
    )


def _table_html(frame: pd.DataFrame, css: str) -> str:
    """A page of rows; a wide table scrolls sideways inside its own box."""
    table = data_table_html(frame, f"irs-preview-table {css}", index=True)
    return f"{SCROLL_OPEN}{table}</div>"


class Preview(widgets.VBox):
    """Widget: processed sample rows with paging, an input/output toggle and a summary.

    Parameters
    ----------
    workflow, dataset, n_rows, page_size : as :class:`PreviewModel`.

    Errors while reading or fitting are shown in the widget's message area
    (``.error`` holds the text) instead of being raised.
    """

    def __init__(
        self, workflow: Workflow, dataset: Any, n_rows: int = 1000, page_size: int = 10
    ) -> None:
        self.model = PreviewModel(workflow, dataset, n_rows=n_rows, page_size=page_size)
        self.error: str | None = None
        self.page_index = 0
        self.header = widgets.HTML().add_class("irs-preview-header")
        self.message = widgets.HTML(layout=widgets.Layout(display="none"))
        self.message.add_class("irs-preview-error")
        self.view = widgets.ToggleButtons(
            options=VIEWS, value="output", description="show", style={"button_width": "auto"}
        )
        self.view.add_class("irs-preview-toggle")
        self.prev_button = widgets.Button(description="< prev").add_class("irs-preview-prev")
        self.next_button = widgets.Button(description="next >").add_class("irs-preview-next")
        self.refresh_button = widgets.Button(description="refresh", icon="refresh")
        self.refresh_button.add_class("irs-preview-refresh")
        self.page_label = widgets.Label().add_class("irs-preview-page")
        self.rows = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.rows.add_class("irs-preview-rows")
        self.summary = widgets.HTML().add_class("irs-preview-summary")
        self.view.observe(lambda _: self._render(), names="value")
        self.prev_button.on_click(lambda _: self.show_page(self.page_index - 1))
        self.next_button.on_click(lambda _: self.show_page(self.page_index + 1))
        self.refresh_button.on_click(lambda _: self.refresh())
        controls = widgets.HBox(
            [self.view, self.prev_button, self.page_label, self.next_button, self.refresh_button]
        )
        super().__init__([self.header, self.message, controls, self.rows, self.summary])
        self.add_class("irs-preview")
        self.refresh()

    def refresh(self, workflow: Workflow | None = None, dataset: Any = None) -> None:
        """Run again (optionally on another workflow or dataset, e.g. after an edit)."""
        if workflow is not None:
            self.model.workflow = workflow
        if dataset is not None:
            self.model.dataset = dataset
        try:
            self.model.run()
            self.error = None
        except Exception as exc:  # shown in the widget, not lost in the console
            self.error = f"{type(exc).__name__}: {exc}"
        self.page_index = 0
        self._render()

    def show_page(self, index: int) -> None:
        """Show page ``index`` (clamped to the existing pages)."""
        self.page_index = min(max(0, index), self.model.n_pages - 1)
        self._render()

    def _render(self) -> None:
        m = self.model
        self.message.value = (
            f"<pre style='color:var(--jp-error-color1, #b00020);"
            f"white-space:pre-wrap'>"
            f"{html.escape(self.error)}</pre>"
            if self.error
            else ""
        )
        self.message.layout.display = "" if self.error else "none"
        if self.error or m.output is None:
            self.header.value = "<b>Preview failed</b>" if self.error else ""
            self.rows.value, self.summary.value, self.page_label.value = "", "", ""
            return
        self.header.value = f"<b>{html.escape(m.describe())}</b>"
        self.page_label.value = f"page {self.page_index + 1} / {m.n_pages}"
        self.prev_button.disabled = self.page_index == 0
        self.next_button.disabled = self.page_index >= m.n_pages - 1
        view = self.view.value
        if view == "input | output":
            note = (
                ""
                if m.rows_align
                else (
                    "<p>Rows are filtered by the workflow: output "
                    "rows do not line up with input rows.</p>"
                )
            )
            left = _table_html(m.page(self.page_index, "input"), "irs-preview-input")
            right = _table_html(m.page(self.page_index, "output"), "irs-preview-output")
            self.rows.value = (
                f"{SCROLL_STYLE}{note}<div style='display:flex;gap:2em;"
                "max-width:100%'>"
                f"<div style='flex:1;min-width:0'><b>input</b>{left}</div>"
                f"<div style='flex:1;min-width:0'><b>output</b>{right}</div>"
                "</div>"
            )
        else:
            self.rows.value = SCROLL_STYLE + _table_html(
                m.page(self.page_index, view), f"irs-preview-{view}"
            )
        self.summary.value = "<b>Output columns</b>" + summary_html(
            m.output, m.summary, m.categorical
        )

    def __repr__(self) -> str:
        m = self.model
        if self.error:
            return f"Preview failed: {self.error}"
        if m.output is None:
            return m.describe()
        page = m.page(self.page_index, "output")
        return (
            f"{m.describe()}\npage {self.page_index + 1} / {m.n_pages} of the output:\n"
            f"{page.to_string(max_cols=12)}"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = repr(self)
        return bundle
