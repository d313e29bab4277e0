"""PipelineBuilder: build a workflow by clicking, on top of :class:`.BuilderModel`.

The view only draws the model and forwards clicks; every error (an invalid parameter,
an operator on incompatible columns, an empty selection, a missing dataset path) is
shown in the widget's message area, never only in the console.

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

import fnmatch
import html
import os
import re
import traceback
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ..errors import IRSError
from ..ops import OPERATORS
from ..ops.params import Param
from .builder_model import BuilderModel, PreviewResult, job_text
from .column_profile import ROLES
from .dag import DagView, parse_op_id
from .param_text import param_from_text, param_to_text

#: Categories of the operator palette, in this order (others follow, sorted).
CATEGORY_ORDER = ("categorical", "transform", "statistics", "columns", "rows")


def css_name(text: str) -> str:
    """A CSS class fragment for a column or parameter name.

    >>> css_name("user id")
    'user_id'
    """
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def frame_html(frame: Any, title: str, css: str, rows: int = 10) -> str:
    table = frame.head(rows).to_html(index=False, na_rep="null", classes=css, border=0)
    return (f'<div class="irs-preview-side"><b>{html.escape(title)}</b> '
            f"({len(frame)} rows, first {min(rows, len(frame))} shown){table}</div>")


def _same_value(a: Any, b: Any) -> bool:
    """Equal values of the same kind (``1 == True`` is not a match; lists match tuples)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return type(a) is type(b) and a == b


class ParamForm(w.VBox):
    """Fields generated from an operator's declared :class:`~..ops.params.Param` table."""

    def __init__(self) -> None:
        super().__init__()
        self.add_class("irs-builder-params")
        self.op: str | None = None
        self.fields: dict[str, w.Widget] = {}

    def show(self, op: str | None, values: dict[str, Any] | None = None) -> None:
        self.op, self.fields = op, {}
        if op is None:
            self.children = [w.HTML("<i>Choose an operator from the palette.</i>")]
            return
        cls = OPERATORS[op]
        values = values or {}
        rows: list[w.Widget] = [w.HTML(f"<b>{op}</b> — {html.escape(cls.summary)}")]
        for name, spec in cls.params.items():
            field = self._field(name, spec, values.get(name, spec.default))
            field.add_class(f"irs-param-{css_name(name)}")
            self.fields[name] = field
            doc = f"{spec.describe()}" + (f"; {spec.doc}" if spec.doc else "")
            rows.append(w.HBox([field, w.HTML(f"<small>{html.escape(doc)}</small>",
                                              layout=w.Layout(flex="1 1 auto"))]))
        if not cls.params:
            rows.append(w.HTML("<i>No parameters.</i>"))
        self.children = rows

    @staticmethod
    def _field(name: str, spec: Param, value: Any) -> w.Widget:
        style = {"description_width": "110px"}
        if spec.kind == "bool" and not spec.nullable:
            return w.Checkbox(value=bool(value), description=name, indent=True, style=style)
        if spec.choices is not None:
            options = ([("None", "")] if spec.nullable else []) + \
                [(str(c), str(c)) for c in spec.choices]
            shown = "" if value is None else str(value)
            return w.Dropdown(options=options, value=shown if shown in dict(options).values()
                              else options[0][1], description=name, style=style)
        return w.Text(value=param_to_text(spec, value), description=name, style=style,
                      placeholder=("required: " if spec.required else "") + spec.describe())

    def values(self) -> dict[str, Any]:
        """Parameter values read from the fields (defaults left out, validated later)."""
        if self.op is None:
            return {}
        specs = OPERATORS[self.op].params
        out = {}
        for name, field in self.fields.items():
            spec = specs[name]
            if isinstance(field, w.Checkbox):
                value = field.value
            elif isinstance(field, w.Dropdown):
                value = param_from_text(spec, field.value)
            else:
                value = param_from_text(spec, field.value)
            if value is spec.default or (not spec.required and _same_value(value, spec.default)):
                continue
            out[name] = value
        return out


class PipelineBuilder(w.VBox):
    """Build a workflow by clicking: columns, operator palette, parameter form, DAG view.

    Parameters
    ----------
    dataset : a Dataset, a DataFrame or a path (a path that does not exist is reported in
        the widget, where another path can be typed).
    preview_rows : rows of the sample used by "Preview".
    output : where "Run" writes the transformed data (``None``: fit only).
    """

    def __init__(self, dataset: Any = None, *, preview_rows: int = 1000,
                 output: str | os.PathLike | None = None, sample_rows: int = 10_000) -> None:
        super().__init__()
        self.add_class("irs-builder")
        self.model: BuilderModel | None = None
        self.preview_rows, self.output, self.sample_rows = preview_rows, output, sample_rows
        self.client: Any = None  # Run's Dask client (None: the active one); set by the Studio
        self.last_preview: PreviewResult | None = None
        self.job: Any = None  # the last run (a jobs.Job)
        self.message, self.level = "", "info"
        self._preview_listeners: list[Callable[[PreviewResult], None]] = []
        self._run_listeners: list[Callable[[Any], None]] = []
        self._operator: str | None = None
        self._build_widgets()
        if dataset is not None:
            self.path_text.value = os.fspath(dataset) if isinstance(dataset, str | os.PathLike) \
                else ""
            self._guard(lambda: self.open_dataset(dataset))()

    # ---- widgets --------------------------------------------------------------------------
    def _button(self, text: str, css: str, action: Callable[[], Any], tip: str = "",
                style: str = "") -> w.Button:
        button = w.Button(description=text, tooltip=tip or text, button_style=style,
                          layout=w.Layout(width="auto", flex="0 0 auto"))
        button.add_class(f"irs-btn-{css}")
        button.on_click(lambda _: self._guard(action)())
        self.buttons[css] = button
        return button

    def _build_widgets(self) -> None:
        #: the action buttons by name: open, add, update, remove, up, down, undo, new-branch,
        #: preview, run, save, load, export, select-shown, clear
        self.buttons: dict[str, w.Button] = {}
        self.path_text = w.Text(description="Dataset", placeholder="path of parquet/csv files",
                                layout=w.Layout(width="60%"))
        self.path_text.add_class("irs-builder-path")
        open_button = self._button("Open", "open", lambda: self.open_dataset(self.path_text.value))
        self.info = w.HTML()
        self.role_filter = w.Dropdown(options=["all", *ROLES], value="all", description="Role",
                                      layout=w.Layout(width="170px"),
                                      style={"description_width": "40px"})
        self.role_filter.add_class("irs-builder-role")
        self.role_filter.observe(lambda _: self._filter_columns(), "value")
        self.name_filter = w.Text(placeholder="names, e.g. C* or I1, I2",
                                  layout=w.Layout(width="170px"))
        self.name_filter.add_class("irs-builder-name-filter")
        self.name_filter.observe(lambda _: self._filter_columns(), "value")
        self.column_rows: dict[str, w.HBox] = {}
        self.checkboxes: dict[str, w.Checkbox] = {}
        self.column_box = w.VBox(layout=w.Layout(max_height="320px", overflow="auto"))
        self.column_box.add_class("irs-builder-columns")
        columns_panel = w.VBox([
            w.HBox([self.role_filter, self.name_filter,
                    self._button("Select shown", "select-shown", self._select_shown),
                    self._button("Clear", "clear", lambda: self.select_columns([]))],
                   layout=w.Layout(flex_flow="row wrap")),
            self.column_box])

        self.palette = w.VBox()
        self.palette.add_class("irs-builder-palette")
        self.op_buttons: dict[str, w.Button] = {}
        self.form = ParamForm()
        self.form.show(None)
        self.add_button = self._button("Add", "add", self._add, "Add the step", "primary")
        step_buttons = w.HBox([
            self.add_button,
            self._button("Update", "update", self._update, "Apply the form to the selected step"),
            self._button("Remove", "remove", self._remove),
            self._button("Up", "up", lambda: self._move(-1)),
            self._button("Down", "down", lambda: self._move(+1)),
            self._button("Undo", "undo", self._undo),
            self._button("New branch", "new-branch", self._new_branch,
                         "Start a new branch (joined with +)"),
            self._button("Pass through", "pass-through", self._pass_through,
                         "Output the selected columns unchanged (a branch without steps)"),
        ], layout=w.Layout(flex_flow="row wrap"))
        self.steps = w.Select(options=[], rows=6, description="Steps",
                              layout=w.Layout(width="100%"))
        self.steps.add_class("irs-builder-steps")
        self.steps.observe(self._on_step_list, "value")
        self.dag = DagView()
        self.dag.add_class("irs-builder-dag")
        self.dag.observe(self._on_dag_click, "selected")

        self.file_text = w.Text(description="Workflow", placeholder="directory to save/load",
                                layout=w.Layout(width="50%"))
        self.file_text.add_class("irs-builder-file")
        actions = w.HBox([
            self._button("Preview", "preview", self._preview, "Fit and transform a sample",
                         "info"),
            self._button("Run", "run", self._run, "Fit (and write) the full dataset in the "
                         "background", "success"),
            self._button("Cancel", "cancel", self._cancel, "Cancel the run in progress"),
            self._button("Save", "save", self._save),
            self._button("Load", "load", self._load),
            self._button("Export code", "export", self._export),
            self.file_text], layout=w.Layout(flex_flow="row wrap"))
        self.messages = w.HTML()
        self.messages.add_class("irs-builder-messages")
        self.status = w.HTML()
        self.status.add_class("irs-builder-status")
        self.schema_html = w.HTML()
        self.schema_html.add_class("irs-builder-schema")
        self.preview_html = w.HTML()
        self.preview_html.add_class("irs-builder-preview")
        self.code = w.Textarea(layout=w.Layout(width="100%", height="160px",
                                               display="none"))
        self.code.add_class("irs-builder-code")
        editor = w.VBox([w.HTML("<b>Operators</b>"), self.palette, self.form, step_buttons,
                         self.steps], layout=w.Layout(width="55%"))
        self.children = [
            w.HBox([self.path_text, open_button]), self.info, self.messages,
            w.HBox([w.VBox([w.HTML("<b>Columns</b>"), columns_panel],
                           layout=w.Layout(width="45%")), editor]),
            self.dag, self.schema_html, actions, self.status, self.preview_html, self.code]

    # ---- messages -------------------------------------------------------------------------
    def say(self, text: str, level: str = "info", details: str = "") -> None:
        """Show ``text`` in the message area (``level``: info, success, error)."""
        self.message, self.level = text, level
        colour = {"error": "#b00020", "success": "#1b5e20"}.get(level, "inherit")
        extra = (f"<details><summary>details</summary><pre>{html.escape(details)}</pre>"
                 "</details>") if details else ""
        self.messages.value = (f'<div class="irs-msg irs-msg-{level}" style="color:{colour}">'
                               f"{html.escape(text)}</div>{extra}")

    def _guard(self, action: Callable[[], Any]) -> Callable[[], Any]:
        """Run a callback; errors go to the message area, never to the console only."""
        def run() -> Any:
            try:
                return action()
            except (IRSError, ValueError, FileNotFoundError, FileExistsError, KeyError) as exc:
                self.say(str(exc).strip("'\""), "error")
            except Exception as exc:  # unexpected: show it, with the traceback
                self.say(f"Unexpected error: {type(exc).__name__}: {exc}", "error",
                         traceback.format_exc())
            return None
        return run

    # ---- dataset and columns --------------------------------------------------------------
    def open_dataset(self, dataset: Any) -> None:
        """Open a dataset (path, Dataset or DataFrame) and profile its columns."""
        if isinstance(dataset, str) and not dataset.strip():
            raise IRSError("Type the path of a parquet or csv dataset, then click Open.")
        model = BuilderModel(dataset, sample_rows=self.sample_rows)
        self._attach(model)
        self.say(f"Opened {model.dataset!r}.", "success")

    def _attach(self, model: BuilderModel) -> None:
        self.model = model
        model.observe(self._refresh)
        profile = model.profile
        self.info.value = (f"<span class='irs-builder-info'>{html.escape(repr(model.dataset))}"
                           f"; column profile from {profile[0].sample_rows if profile else 0:,}"
                           " sampled rows</span>")
        header = w.HTML("<small><b>column · dtype · role · null % · distinct</b></small>")
        self.checkboxes, self.column_rows = {}, {}
        rows = [header]
        for p in profile:
            box = w.Checkbox(value=False, description=p.name, indent=False,
                             layout=w.Layout(width="150px"))
            detail = w.HTML(f"<code>{p.dtype}</code> · {p.role} · {p.null_fraction:.1%} · "
                            f"{html.escape(p.distinct_text)}")
            row = w.HBox([box, detail])
            row.add_class("irs-col")
            row.add_class(f"irs-col-{css_name(p.name)}")
            row.add_class(f"irs-role-{p.role}")
            self.checkboxes[p.name], self.column_rows[p.name] = box, row
            rows.append(row)
        self.column_box.children = rows
        self._build_palette()
        self._refresh()

    @property
    def shown_columns(self) -> list[str]:
        """Columns passing the role filter and the name filter (globs, comma-separated)."""
        if self.model is None:
            return []
        role = self.role_filter.value
        patterns = [p.strip() for p in self.name_filter.value.split(",") if p.strip()]
        return [p.name for p in self.model.profile if (role == "all" or p.role == role)
                and (not patterns or any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns))]

    def _filter_columns(self) -> None:
        shown = set(self.shown_columns)
        for name, row in self.column_rows.items():
            row.layout.display = None if name in shown else "none"

    def _select_shown(self) -> None:
        self._need_model()
        self.select_columns(self.shown_columns)

    def select_columns(self, names: list[Any]) -> None:
        """Tick exactly ``names`` in the column table."""
        unknown = [n for n in names if n not in self.checkboxes]
        if unknown:
            raise IRSError(f"Column {unknown[0]!r} is not in the dataset; columns are "
                           f"{list(self.checkboxes)}.")
        for name, box in self.checkboxes.items():
            box.value = name in names

    @property
    def selected_columns(self) -> list[str]:
        return [n for n, box in self.checkboxes.items() if box.value]

    # ---- palette and form -----------------------------------------------------------------
    def _build_palette(self) -> None:
        groups: dict[str, list[str]] = {}
        for name, cls in OPERATORS.items():
            groups.setdefault(cls.category, []).append(name)
        order = [c for c in CATEGORY_ORDER if c in groups] + sorted(set(groups) -
                                                                    set(CATEGORY_ORDER))
        rows, self.op_buttons = [], {}
        for category in order:
            buttons = []
            for name in sorted(groups[category]):
                button = w.Button(description=name, tooltip=OPERATORS[name].summary,
                                  layout=w.Layout(width="auto", flex="0 0 auto"))
                button.add_class("irs-op")
                button.add_class(f"irs-op-{name}")
                button.on_click(lambda _, n=name: self._guard(
                    lambda: self.choose_operator(n))())
                self.op_buttons[name] = button
                buttons.append(button)
            label = w.HTML(f"<small>{category}</small>", layout=w.Layout(width="80px"))
            rows.append(w.HBox([label, *buttons], layout=w.Layout(flex_flow="row wrap")))
        self.palette.children = rows

    def choose_operator(self, name: str, values: dict[str, Any] | None = None) -> None:
        """Pick an operator: highlight it and show its parameter form."""
        if name not in OPERATORS:
            raise IRSError(f"Unknown operator {name!r}; choose one of {sorted(OPERATORS)}.")
        self._operator = name
        for op, button in self.op_buttons.items():
            button.button_style = "info" if op == name else ""
        self.form.show(name, values)

    @property
    def operator(self) -> str | None:
        return self._operator

    # ---- step actions ---------------------------------------------------------------------
    def _need_model(self) -> BuilderModel:
        if self.model is None:
            raise IRSError("No dataset is open: type a dataset path and click Open.")
        return self.model

    def _need_operator(self) -> str:
        if self._operator is None:
            raise IRSError("No operator is chosen: click one in the palette first.")
        return self._operator

    def _add(self) -> None:
        model = self._need_model()
        columns = self.selected_columns
        op = self._need_operator()
        before = len(model.branches)
        k, j = model.add_step(columns, op, self.form.values())
        started = " in a new branch" if len(model.branches) > before else ""
        self.say(f"Added {op} on {columns} as step {j + 1} of branch {k + 1}{started}.",
                 "success")

    def _selected_step(self) -> tuple[int, int]:
        model = self._need_model()
        if model.selected is None:
            raise IRSError("No step is selected: click a step in the graph or the step list.")
        return model.selected

    def _update(self) -> None:
        k, j = self._selected_step()
        op = self._need_operator()
        columns = self.selected_columns
        self.model.update_step(k, j, op=op, params=self.form.values(), columns=columns)
        self.say(f"Updated step {j + 1} of branch {k + 1}: {op}.", "success")

    def _remove(self) -> None:
        k, j = self._selected_step()
        self.model.remove_step(k, j)
        self.say(f"Removed step {j + 1} of branch {k + 1}.", "success")

    def _move(self, offset: int) -> None:
        k, j = self._selected_step()
        self.model.move_step(k, j, offset)
        self.say(f"Moved step {j + 1} of branch {k + 1} {'up' if offset < 0 else 'down'}.",
                 "success")

    def _undo(self) -> None:
        self._need_model().undo()
        self.say("Undid the last change.", "success")

    def _new_branch(self) -> None:
        k = self._need_model().new_branch()
        self.select_columns([])
        self.say(f"Branch {k + 1} started: select its columns and add steps.", "success")

    def _pass_through(self) -> None:
        model, columns = self._need_model(), self.selected_columns
        if not columns:
            raise IRSError("No columns are selected: tick the columns to pass through first.")
        k = model.new_branch(columns)
        self.say(f"Branch {k + 1} passes {columns} through unchanged.", "success")

    # ---- selection (step list and DAG clicks) ---------------------------------------------
    def _on_step_list(self, change: dict[str, Any]) -> None:
        if change["new"] is not None and self.model is not None \
                and change["new"] != self.model.selected:
            self._guard(lambda: self.model.select(*change["new"]))()

    def _on_dag_click(self, change: dict[str, Any]) -> None:
        picked = parse_op_id(change["new"] or "")
        if picked is not None and self.model is not None and picked != self.model.selected:
            self._guard(lambda: self.model.select(*picked))()

    def _load_selected_into_form(self) -> None:
        model = self.model
        if model is None or model.selected is None:
            return
        k, j = model.selected
        branch = model.branches[k]
        step = branch.steps[j]
        self.choose_operator(step.op, step.params)
        self.select_columns([c for c in branch.columns if isinstance(c, str)])

    def _refresh(self) -> None:
        """Redraw the step list, the DAG and the predicted schema from the model."""
        model = self.model
        if model is None:
            return
        options = []
        for k, branch in enumerate(model.branches):
            for j, step in enumerate(branch.steps):
                params = ", ".join(f"{a}={b!r}" for a, b in step.params.items())
                options.append((f"branch {k + 1} · step {j + 1}: {branch.selector()!r} >> "
                                f"{step.op}({params})", (k, j)))
        self.steps.unobserve(self._on_step_list, "value")
        self.steps.options = options
        self.steps.value = model.selected if model.selected in dict(options).values() else None
        self.steps.observe(self._on_step_list, "value")
        self.dag.unobserve(self._on_dag_click, "selected")
        self.dag.show_model(model)
        if model.selected is None:
            self.dag.selected = ""
        self.dag.observe(self._on_dag_click, "selected")
        self._load_selected_into_form()
        self._show_schema()

    def _show_schema(self) -> None:
        model = self.model
        if not any(b.columns or b.tags for b in model.branches):
            self.schema_html.value = ""
            return
        schema = model.output_schema()
        cells = ", ".join(f"<code>{html.escape(n)}</code>: {c.dtype}" for n, c in schema.items())
        self.schema_html.value = (f"<small><b>Predicted output</b> ({len(schema)} columns, "
                                  f"before any fit): {cells}</small>")

    # ---- preview, run, save, load, export -------------------------------------------------
    def _preview(self) -> None:
        result = self._need_model().preview(self.preview_rows)
        self.last_preview = result
        self.preview_html.value = (
            '<div class="irs-preview" style="display:flex;gap:16px;overflow:auto">'
            + frame_html(result.input, "Input", "irs-preview-input")
            + frame_html(result.output, "Output", "irs-preview-output") + "</div>")
        self.say(f"Preview: fitted and transformed {len(result.input)} sample rows in "
                 f"{result.seconds:.2f} s.", "success")
        for callback in list(self._preview_listeners):
            callback(result)

    def _run(self) -> None:
        model = self._need_model()

        def done(job: Any) -> None:
            text = job_text(job)
            self.status.value = f'<span class="irs-run-{job.status}">{html.escape(text)}</span>'
            self.say(text, "success" if job.status == "finished" else "error")
            for callback in list(self._run_listeners):
                callback(job)

        if model.running:
            raise IRSError("A run is in progress: wait for it to end, or click Cancel.")
        self.status.value = '<span class="irs-run-running">Run started...</span>'
        from ..jobs import active_client

        client = self.client or active_client()
        where = ("on the Dask cluster (see the Cluster tab)" if client is not None
                 else "in this process (no Dask cluster is active)")
        self.say(f"Run started in the background {where}.", "info")
        self.job = model.run(self.output, on_done=done, client=client)

    def _cancel(self) -> None:
        if self.job is None or not self.job.cancel():
            raise IRSError("No run is in progress.")
        self.say("Cancelling the run: its Dask tasks stop and it writes no output.", "info")

    def _path(self) -> str:
        path = self.file_text.value.strip()
        if not path:
            raise IRSError("Type a directory in the Workflow field first (e.g. my_workflow/).")
        return path

    def _save(self) -> None:
        path = self._need_model().save(self._path(), overwrite=True)
        fitted = " (fitted, with vocabularies)" if self.model.fitted_workflow else ""
        self.say(f"Saved the workflow{fitted} to {path!r}.", "success")

    def _load(self) -> None:
        path = self._path()
        if not os.path.isdir(path):
            raise IRSError(f"Workflow directory {path!r} does not exist; check the path "
                           f"(the current directory is {os.getcwd()!r}).")
        self._need_model().load(path)
        self.say(f"Loaded the workflow from {path!r}.", "success")

    def _export(self) -> None:
        self.code.value = self._need_model().export_code()
        self.code.layout.display = None
        self.say("Exported code below: running it builds the identical workflow.", "success")

    # ---- hooks for the Studio -------------------------------------------------------------
    def on_preview(self, callback: Callable[[PreviewResult], None]) -> None:
        self._preview_listeners.append(callback)

    def on_run(self, callback: Callable[[Any], None]) -> None:
        """``callback(job)`` when a run has ended (called from a helper thread)."""
        self._run_listeners.append(callback)

    @classmethod
    def from_workflow(cls, workflow: Any, dataset: Any, **kwargs: Any) -> PipelineBuilder:
        """A builder showing the branches of an existing ``workflow``."""
        builder = cls(None, **kwargs)
        model = BuilderModel.from_workflow(workflow, dataset, sample_rows=builder.sample_rows)
        builder._attach(model)
        builder.say("Opened the workflow in the builder.", "success")
        return builder

    def __repr__(self) -> str:
        if self.model is None:
            return f"PipelineBuilder(no dataset; {self.message})"
        steps = sum(len(b.steps) for b in self.model.branches)
        return (f"PipelineBuilder({self.model.dataset!r}, {len(self.model.branches)} "
                f"branch(es), {steps} step(s))")
