"""PipelineBuilder: build a workflow by clicking, on top of :class:`.BuilderModel`.

The view only draws the model and forwards clicks. It observes the model per field (see
:class:`~.builder_events.Change`): a change of the steps (``"branches"``) redraws the step
list, the graph and the predicted schema; a change of the selection only moves the
highlight in the step list and the graph and loads the step's form. A click in the step
list or the graph selects in the model unless it shows the model's selection already --
the one guard against feedback loops (the view never unhooks its own observers).

Every error (an invalid parameter, an operator on incompatible columns, an empty selection,
a missing dataset path) is shown in the widget's message area, never only in the console.

This module lays the widgets out, opens the dataset, ticks columns and draws the model; the
palette, form, step buttons and Suggest are in :mod:`._step_actions`, and Preview, Run,
Save, Load and Export code in :mod:`._actions` (mixins of :class:`PipelineBuilder`).

>>> import pandas as pd
>>> builder = PipelineBuilder(pd.DataFrame({"c": ["x", "y"], "n": [1.0, 2.0]}))
>>> builder.select_columns(["c"]); builder.choose_operator("Normalize")
>>> builder.add_button.click()   # strings to Normalize: refused, with the reason shown
>>> print(builder.message)  # doctest: +ELLIPSIS
In step ['c'] >> Normalize(): Normalize needs numeric columns, but column 'c' has dtype ...
>>> builder.choose_operator("Categorify"); builder.add_button.click()
>>> builder.model.branches[0].steps
[Step(op='Categorify', params={})]
"""

from __future__ import annotations

import html
import os
import traceback
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from interactive_recsys.errors import DatasetError, IRSError
from interactive_recsys.ui.builder._actions import RunActions
from interactive_recsys.ui.builder._column_actions import ColumnActions
from interactive_recsys.ui.builder._column_list import (
    ColumnChoice,
    ColumnList,
    role_chips,
)
from interactive_recsys.ui.builder._dag import DagView, model_graph, op_id, parse_op_id
from interactive_recsys.ui.builder._events import Change
from interactive_recsys.ui.builder._feedback import STYLE, Feedback
from interactive_recsys.ui.builder._masked_text import MaskedText
from interactive_recsys.ui.builder._model import BuilderModel
from interactive_recsys.ui.builder._model_run import PreviewResult
from interactive_recsys.ui.builder._param_form import ParamForm
from interactive_recsys.ui.builder._recovery import RecoveryActions
from interactive_recsys.ui.builder._run_notice import RunNotice
from interactive_recsys.ui.builder._run_watch import RunWatch
from interactive_recsys.ui.builder._step_actions import StepActions
from interactive_recsys.ui.builder.suggest import SuggestCard

#: Part of the error for raw Criteo TSV opened as CSV (:func:`~interactive_recsys.io.
#: _csv_input.check_csv_header`): the builder then offers "Open as Criteo".
RAW_CRITEO_HINT = "irs.datasets.read_criteo(path)"

#: Feedback areas, each next to its controls.
AREAS = ("dataset", "columns", "suggest", "palette", "steps", "run")


class PipelineBuilder(ColumnActions, StepActions, RunActions, RecoveryActions, w.VBox):
    """Build a workflow by clicking: columns, Suggest, operator palette, form, DAG view.

    Parameters
    ----------
    dataset : a Dataset, a DataFrame or a path (a path that does not exist is reported in
        the widget, where another path can be typed).
    preview_rows : rows of the sample used by "Preview".
    output : where "Run" writes the transformed data (default: ``<input>-processed`` next
        to a dataset read from files, nothing for one in memory); editable in the widget.
    autosave : where the pipeline is saved after every edit, as JSON: None (default: in a
        Jupyter kernel ``.<notebook>.irs-pipeline.json`` in its working directory, off
        elsewhere), True, False or a file path. A builder finding such a file offers to
        restore it (see ``_recovery``).
    """

    def __init__(self, dataset: Any = None, *, preview_rows: int = 1000,
                 output: str | os.PathLike | None = None, sample_rows: int = 10_000,
                 autosave: bool | str | os.PathLike | None = None) -> None:
        super().__init__()
        self.add_class("irs-builder")
        self.model: BuilderModel | None = None
        self.choice: ColumnChoice | None = None
        self.preview_rows, self.output, self.sample_rows = preview_rows, output, sample_rows
        self.client: Any = None  # Run's Dask client (None: the active one); set by the Studio
        self.last_preview: PreviewResult | None = None
        self.job: Any = None  # the last run (a jobs.Job)
        self._preview_listeners: list[Callable[[PreviewResult], None]] = []
        self._run_listeners: list[Callable[[Any], None]] = []
        self._before_run_listeners: list[Callable[[], None]] = []
        self._operator: str | None = None
        self._pending: str | None = None  # an operator added once its form is valid
        self.feedback = Feedback(AREAS)
        self._autosave_option = autosave
        self._build_widgets()
        if dataset is not None:
            self.path_text.value = os.fspath(dataset) if isinstance(dataset, str | os.PathLike) \
                else ""
            self._guard(lambda: self.open_dataset(dataset), "dataset")()
        self._guard(self.offer_restore, "dataset")()

    # ---- widgets --------------------------------------------------------------------------
    def _button(self, text: str, css: str, action: Callable[[], Any], tip: str = "",
                style: str = "", area: str = "steps") -> w.Button:
        button = w.Button(description=text, tooltip=tip or text, button_style=style,
                          layout=w.Layout(width="auto", flex="0 0 auto"))
        button.add_class(f"irs-btn-{css}")
        button.on_click(lambda _: self._guard(action, area)())
        self.buttons[css] = button
        return button

    def _build_widgets(self) -> None:
        """Make the widgets and lay them out: the dataset row, the action bar (Run and its
        messages), the columns beside the editor, then the graph, the predicted schema, the
        preview, the workflow file row and the exported code."""
        #: the action buttons by name: open, suggest, add, update, remove, up, down, undo,
        #: new-branch, pass-through, preview, run, cancel, save, load, export, select-shown,
        #: clear
        self.buttons: dict[str, w.Button] = {}
        area = self.feedback.areas
        self.path_text = MaskedText(description="Dataset",
                                    placeholder="path of parquet/csv files",
                                    layout=w.Layout(width="50%"))
        self.path_text.add_class("irs-builder-path")
        open_button = self._button(
            "Open", "open", lambda: self.open_dataset(self.path_text.real_value), area="dataset")
        #: shown when the path holds raw Criteo TSV: opens it with read_criteo instead
        self.criteo_button = self._button(
            "Open as Criteo", "open-criteo", lambda: self.open_criteo(self.path_text.real_value),
            "Read raw Criteo TSV (label, I1..I13, C1..C26; no header) with "
            "irs.datasets.read_criteo", area="dataset")
        self.criteo_button.layout.display = "none"
        self.info = w.HTML()
        columns_panel = self._columns_panel()
        editor = self._editor()
        self.dag = DagView()
        self.dag.add_class("irs-builder-dag")
        self.dag.observe(self._on_dag_click, "selected")
        run_row, file_row = self._run_row(), self._file_row()
        recovery = self._build_recovery(self._autosave_option)
        self._build_outputs()
        #: ends the spinner with a message when the kernel stops during a Run (browser side)
        self.run_watch = RunWatch()
        # Run, its output path and its messages on top: in view above any graph's height
        #: tells the browser a Run ended (a notification when the page is hidden)
        self.run_notice = RunNotice()
        action_bar = w.VBox([run_row, area["run"], self.status, self.run_notice,
                             self.run_watch])
        action_bar.add_class("irs-builder-actionbar")
        self.children = [
            w.HTML(STYLE, layout=w.Layout(display="none")), self.oov_alert, recovery,
            w.HBox([self.path_text, open_button, self.criteo_button, area["dataset"]]),
            self.info,
            action_bar,
            w.HBox([w.VBox([w.HTML("<b>Columns</b>"), columns_panel],
                           layout=w.Layout(width="45%")), editor],
                   layout=w.Layout(justify_content="space-between")),
            self.dag, self.schema_html, self.preview_view, self.preview_html, file_row,
            self.code]

    def _columns_panel(self) -> w.VBox:
        """The role chips, the name filter with Select shown / Clear, and the column list."""
        self.chips = w.HBox(layout=w.Layout(flex_flow="row wrap"))
        self.chips.add_class("irs-builder-chips")
        self.name_filter = w.Text(placeholder="filter: C*, I1, I2 or a role",
                                  continuous_update=True, layout=w.Layout(width="190px"))
        self.name_filter.add_class("irs-builder-name-filter")
        self.name_filter.observe(lambda _: self._filter_columns(), "value")
        self.column_count = w.HTML()
        self.column_count.add_class("irs-builder-count")
        self.column_list: ColumnList | None = None
        self.column_box = w.VBox(layout=w.Layout(width="100%"))
        self.column_box.add_class("irs-builder-columns")
        return w.VBox([
            self.chips,
            w.HBox([self.name_filter,
                    self._button("Select shown", "select-shown", self._select_shown,
                                 "Tick every column the filter shows", area="columns"),
                    self._button("Clear", "clear", self._clear, "Untick every column",
                                 area="columns"),
                    self.column_count], layout=w.Layout(flex_flow="row wrap",
                                                        align_items="center")),
            self.feedback.areas["columns"], self.column_box])

    def _editor(self) -> w.VBox:
        """Suggest and its card, the operator palette, the parameter form, the step buttons
        and the step list."""
        area = self.feedback.areas
        self.suggest_button = self._button(
            "Suggest a pipeline", "suggest", self._suggest, "Propose steps for every column "
            "from the column profile (editable, undoable)", "warning", area="suggest")
        self.suggest_button.layout.align_self = "flex-start"
        self.suggest_card = SuggestCard()
        self.palette = w.VBox()
        self.palette.add_class("irs-builder-palette")
        self.op_buttons: dict[str, w.Button] = {}
        self.form = ParamForm()
        self.form.show(None)
        self.form.on_edit(lambda: self._guard(self._live_edit, "palette")())
        self.add_button = self._button("Add", "add", self._add, "Add the form's operator as a "
                                       "step on the ticked columns", "primary")
        step_buttons = w.HBox([
            self.add_button,
            self._button("Update", "update", self._update, "Apply the form and the ticked "
                         "columns to the selected step"),
            self._button("Remove", "remove", self._remove, "Remove the selected step or "
                         "pass-through branch"),
            self._button("Up", "up", lambda: self._move(-1)),
            self._button("Down", "down", lambda: self._move(+1)),
            self._button("Undo", "undo", self._undo),
            self._button("New branch", "new-branch", self._new_branch,
                         "Start a new branch (joined with +)"),
            self._button("Pass through", "pass-through", self._pass_through,
                         "Output the ticked columns unchanged (a branch without steps)"),
        ], layout=w.Layout(flex_flow="row wrap"))
        self.steps = w.Select(options=[], rows=7, layout=w.Layout(width="100%"))
        self.steps.add_class("irs-builder-steps")
        self.steps.observe(self._on_step_list, "value")
        return w.VBox([
            self.suggest_button, self.suggest_card, area["suggest"],
            w.HTML("<b>Operators</b> <small>(a click adds the operator to the ticked columns;"
                   " edit its parameters below, applied as you type)</small>"),
            self.palette, area["palette"], self.form, step_buttons, area["steps"],
            w.HTML("<b>Steps</b>"), self.steps], layout=w.Layout(width="54%"))

    def _run_row(self) -> w.HBox:
        """The output path, "replace if it exists", Preview, Run and Cancel."""
        self.output_text = MaskedText(description="Output", placeholder="directory to write "
                                      "(empty: fit only)", layout=w.Layout(width="46%"))
        self.output_text.add_class("irs-builder-output")
        self.overwrite = w.Checkbox(value=False, description="replace if it exists",
                                    indent=False, layout=w.Layout(width="auto"))
        self.overwrite.add_class("irs-builder-overwrite")
        self.run_button = self._button("Run", "run", self._run, "Fit the full dataset and "
                                       "write the output, in the background", "success",
                                       area="run")
        return w.HBox([
            self.output_text, self.overwrite,
            self._button("Preview", "preview", self._preview, "Fit and transform a sample",
                         "info", area="run"),
            self.run_button,
            self._button("Cancel", "cancel", self._cancel, "Cancel the run in progress",
                         area="run")], layout=w.Layout(flex_flow="row wrap",
                                                       align_items="center"))

    def _file_row(self) -> w.HBox:
        """The workflow directory with Save, Load and Export code."""
        self.file_text = w.Text(description="Workflow", placeholder="directory to save/load",
                                layout=w.Layout(width="40%"))
        self.file_text.add_class("irs-builder-file")
        return w.HBox([
            self.file_text,
            self._button("Save", "save", self._save, area="run"),
            self._button("Load", "load", self._load, area="run"),
            self._button("Export code", "export", self._export, area="run")],
            layout=w.Layout(flex_flow="row wrap"))

    def _build_outputs(self) -> None:
        """What shows results: the run status, the lookups-lost alert, the predicted schema,
        the preview with its output/input toggle, and the exported code."""
        self.status = w.HTML()
        self.status.add_class("irs-builder-status")
        #: after a Run, the columns that lost more lookups than their budget, in red, with
        #: the fix (empty otherwise)
        self.oov_alert = w.HTML()
        self.oov_alert.add_class("irs-builder-oov-alert")
        self.schema_html = w.HTML(layout=w.Layout(width="100%"))
        self.schema_html.add_class("irs-builder-schema")
        self.preview_view = w.ToggleButtons(options=["output", "input"], value="output",
                                            style={"button_width": "auto"},
                                            layout=w.Layout(display="none"))
        self.preview_view.add_class("irs-builder-preview-toggle")
        self.preview_view.observe(lambda _: self._show_preview(), "value")
        self.preview_html = w.HTML(layout=w.Layout(width="100%"))
        self.preview_html.add_class("irs-builder-preview")
        self.code = w.Textarea(layout=w.Layout(width="100%", height="160px",
                                               display="none"))
        self.code.add_class("irs-builder-code")

    # ---- messages -------------------------------------------------------------------------
    @property
    def message(self) -> str:
        """The last message shown (in any area)."""
        return self.feedback.last[0]

    @property
    def level(self) -> str:
        return self.feedback.last[1]

    def say(self, text: str, level: str = "info", area: str = "steps",
            details: str = "") -> None:
        """Show ``text`` next to the controls of ``area`` (one of ``AREAS``); other
        areas are cleared. ``level``: info, success, error or busy."""
        self.feedback.say(text, level, area, details)

    def _guard(self, action: Callable[[], Any], area: str = "steps") -> Callable[[], Any]:
        """Run a callback; errors go next to its control, never to the console only."""
        def run() -> Any:
            try:
                return action()
            except (IRSError, ValueError, FileNotFoundError, FileExistsError, KeyError) as exc:
                self.say(str(exc).strip("'\""), "error", area)
            except Exception as exc:  # unexpected: show it, with the traceback
                self.say(f"Unexpected error: {type(exc).__name__}: {exc}", "error", area,
                         traceback.format_exc())
            return None
        return run

    # ---- dataset and columns --------------------------------------------------------------
    def open_dataset(self, dataset: Any) -> None:
        """Open a dataset (path, Dataset or DataFrame) and profile its columns."""
        if isinstance(dataset, str) and not dataset.strip():
            raise IRSError("Type the path of a parquet or csv dataset, then click Open.")
        self.criteo_button.layout.display = "none"
        try:
            model = BuilderModel(dataset, sample_rows=self.sample_rows)
        except DatasetError as exc:  # raw Criteo TSV: offer to open it the way it needs
            if RAW_CRITEO_HINT in str(exc):
                self.criteo_button.layout.display = None
                raise DatasetError(f"{exc} Or click Open as Criteo.") from exc
            raise
        self._attach(model)
        self.say(f"Opened {model.dataset!r}.", "success", "dataset")

    def open_criteo(self, path: str | os.PathLike) -> None:
        """Open raw Criteo TSV files (one file, a glob such as ``day_*``, or a folder's
        pattern) with :func:`~interactive_recsys.datasets.read_criteo`: the "Open as Criteo"
        button shown when Open finds raw Criteo data."""
        from interactive_recsys.datasets import read_criteo  # lazy: only for raw Criteo

        if isinstance(path, str) and not path.strip():
            raise IRSError("Type the path of the raw Criteo files, then click Open as Criteo.")
        source = os.path.expanduser(os.fspath(path).strip())
        self.open_dataset(read_criteo(source))
        if self.model is not None:  # exported code opens it as it was opened here
            self.model.source, self.model.source_reader = source, "irs.datasets.read_criteo"

    def _attach(self, model: BuilderModel) -> None:
        if self.model is not None:  # another dataset opened: the old model is not drawn
            self.model.unobserve(self._on_branches)
            self.model.unobserve(self._on_selection)
        self.model = model
        self.suggest_card.show([], True)  # an earlier dataset's suggestion: not this one's
        model.observe(self._on_branches, "branches")
        model.observe(self._on_selection, "selection")
        profile = model.profile
        self.info.value = (f"<span class='irs-builder-info'>{html.escape(repr(model.dataset))}"
                           f"; column profile from {profile[0].sample_rows if profile else 0:,}"
                           " sampled rows</span>")
        self.choice = ColumnChoice(profile)
        self.choice.observe(self._show_count)
        self.column_list = ColumnList(self.choice, on_error=lambda exc: self.say(
            str(exc), "error", "columns"))
        self.column_box.children = [self.column_list]
        self.chips.children = role_chips(self.choice, lambda role: self._guard(
            lambda: self.select_role(role), "columns")())
        output = self.output if self.output is not None else model.default_output()
        self.output_text.value = os.fspath(output) if output is not None else ""
        self._build_palette()
        self._show_count()
        self._show_branches()
        self._watch_model(model)
        self._guard(self.check_orphans, "run")()

    def _need_model(self) -> BuilderModel:
        if self.model is None:
            raise IRSError("No dataset is open: type a dataset path and click Open.")
        return self.model

    # ---- drawing the model, and clicks on the step list and the graph -----------------------
    def _on_branches(self, change: Change) -> None:
        self._show_branches()
        # the card's numbers describe the suggested steps only
        self.suggest_card.set_stale(not self.model.suggest_current)

    def _on_selection(self, change: Change) -> None:
        self._show_selection()

    def _show_branches(self) -> None:
        """Redraw what shows the steps: the step list's items, the graph and the predicted
        schema; then the selection on them (new items, or the undone step's parameters)."""
        model = self.model
        with self.steps.hold_sync():
            self.steps.index = None  # else new options select the first one (a "click")
            self.steps.options = model.items()
            self.dag.set_graph(*model_graph(model))
            self._show_schema()
            self._show_selection()

    def _show_selection(self) -> None:
        """Mark the model's selection in the step list and the graph; load it into the form.
        The click handlers below ignore these changes: they equal the model's selection."""
        model = self.model
        item = model.selected_item
        self.steps.value = item if item in dict(self.steps.options).values() else None
        self.dag.selected = "" if model.selected is None else op_id(*model.selected)
        self._load_selected_into_form()

    def _on_step_list(self, change: dict[str, Any]) -> None:
        if change["new"] is not None and self.model is not None \
                and change["new"] != self.model.selected_item:
            self._guard(lambda: self.model.select(*change["new"]))()

    def _on_dag_click(self, change: dict[str, Any]) -> None:
        picked = parse_op_id(change["new"] or "")
        if picked is not None and self.model is not None and picked != self.model.selected:
            self._guard(lambda: self.model.select(*picked))()

    def _load_selected_into_form(self) -> None:
        model = self.model
        item = model.selected_item if model is not None else None
        if item is None:
            return
        k, j = item
        branch = model.branches[k]
        if j >= 0:
            step = branch.steps[j]
            if self.form.op != step.op or self.form.values() != step.params:
                self.choose_operator(step.op, step.params)  # not while it is being typed in
        columns = [c for c in branch.columns if isinstance(c, str)]
        if self.choice is not None and self.choice.selected != columns:
            self.select_columns(columns)

    def _show_schema(self) -> None:
        model = self.model
        if not any(b.columns or b.tags for b in model.branches):
            self.schema_html.value = ""
            return
        schema = model.output_schema()
        cells = ", ".join(f"<code>{html.escape(n)}</code>: {c.dtype}" for n, c in schema.items())
        self.schema_html.value = (f"<small><b>Predicted output</b> ({len(schema)} columns, "
                                  f"before any fit): {cells}</small>")

    # ---- hooks for the Studio -------------------------------------------------------------
    def on_preview(self, callback: Callable[[PreviewResult], None]) -> None:
        self._preview_listeners.append(callback)

    def on_run(self, callback: Callable[[Any], None]) -> None:
        """``callback(job)`` when a run has ended (called from a helper thread)."""
        self._run_listeners.append(callback)

    def before_run(self, callback: Callable[[], None]) -> None:
        """``callback()`` when Run is clicked, after the output checks, before the job."""
        self._before_run_listeners.append(callback)

    @classmethod
    def from_workflow(cls, workflow: Any, dataset: Any, **kwargs: Any) -> PipelineBuilder:
        """A builder showing the branches of an existing ``workflow``."""
        builder = cls(None, **kwargs)
        model = BuilderModel.from_workflow(workflow, dataset, sample_rows=builder.sample_rows)
        builder._attach(model)
        builder.say("Opened the workflow in the builder.", "success", "dataset")
        return builder

    def __repr__(self) -> str:
        if self.model is None:
            return f"PipelineBuilder(no dataset; {self.message})"
        steps = sum(len(b.steps) for b in self.model.branches)
        return (f"PipelineBuilder({self.model.dataset!r}, {len(self.model.branches)} "
                f"branch(es), {steps} step(s))")

