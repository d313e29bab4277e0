"""StepsPanel: Suggest and its card, the operator palette, the parameter form, the step
buttons, the step list, and the graph with the predicted schema that draw the same steps.

Each action changes the model; the panel redraws from the model's change events
(:meth:`StepsPanel.update`): a change of the steps (``"branches"``) redraws the step list,
the graph and the predicted schema; a change of the selection only moves the highlight in
the step list and the graph and loads the step's form. A click in the step list or the
graph selects in the model unless it shows the model's selection already -- the one guard
against feedback loops (the panel never unhooks its own observers).

>>> StepsPanel.choose_operator.__doc__.split(":")[0]
'Pick an operator'
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from interactive_recsys.errors import IRSError
from interactive_recsys.ops import OPERATORS
from interactive_recsys.ui.builder._branches import make_operator
from interactive_recsys.ui.builder.model import (
    BuilderModel,
    Change,
    RunController,
    SuggestController,
)
from interactive_recsys.ui.builder.suggest import profile_defaults
from interactive_recsys.ui.builder.views._column_list import names_text
from interactive_recsys.ui.builder.views._columns import ColumnsPanel
from interactive_recsys.ui.builder.views._dag import DagView, model_graph, op_id, parse_op_id
from interactive_recsys.ui.builder.views._feedback import Feedback, make_button
from interactive_recsys.ui.builder.views._param_form import ParamForm, palette_rows
from interactive_recsys.ui.builder.views._suggest_card import SuggestCard
from interactive_recsys.ui.builder.views._suggest_status import SuggestStatus


class StepsPanel:
    """The editor of ``model``'s steps (None: no dataset open yet): ``root`` (Suggest,
    palette, form, step buttons, step list), and ``dag`` and ``schema_html``,
    placed below by the builder. ``columns`` gives the ticked columns; ``runs`` the Dask
    client of Suggest and the end of a Run (the graph then marks reused steps);
    ``suggests`` runs Suggest in the background (None: a controller of its own)."""

    def __init__(self, model: BuilderModel | None, feedback: Feedback, columns: ColumnsPanel,
                 runs: RunController, suggests: SuggestController | None = None) -> None:
        self.model: BuilderModel | None = None
        self.feedback, self.columns, self.runs = feedback, columns, runs
        self.suggests = suggests if suggests is not None else SuggestController()
        self.buttons: dict[str, w.Button] = {}
        self._operator: str | None = None
        self._pending: str | None = None  # an operator added once its form is valid
        self.dag = DagView()
        self.dag.add_class("irs-builder-dag")
        self.dag.observe(self._on_dag_click, "selected")
        self.schema_html = w.HTML(layout=w.Layout(width="100%"))
        self.schema_html.add_class("irs-builder-schema")
        self.root = self._editor()
        runs.observe(self.update, "ended")
        if model is not None:
            self.attach(model)

    def _step_buttons(self) -> w.HBox:
        def button(text: str, css: str, action: Any, tip: str = "", style: str = "") -> w.Button:
            return make_button(self.buttons, self.feedback, text, css, action, tip, style)
        self.add_button = button("Add", "add", self._add, "Add the form's operator as a step "
                                 "on the ticked columns", "primary")
        return w.HBox([
            self.add_button,
            button("Update", "update", self._update, "Apply the form and the ticked columns "
                   "to the selected step"),
            button("Remove", "remove", self._remove, "Remove the selected step or "
                   "pass-through branch"),
            button("Up", "up", lambda: self._move(-1)),
            button("Down", "down", lambda: self._move(+1)),
            button("Undo", "undo", self._undo),
            button("New branch", "new-branch", self._new_branch,
                   "Start a new branch (joined with +)"),
            button("Pass through", "pass-through", self._pass_through,
                   "Output the ticked columns unchanged (a branch without steps)"),
        ], layout=w.Layout(flex_flow="row wrap"))

    def _editor(self) -> w.VBox:
        """Suggest and its card, the operator palette, the parameter form, the step buttons
        and the step list."""
        area = self.feedback.areas
        self.suggest_button = make_button(
            self.buttons, self.feedback, "Suggest a pipeline", "suggest", self._suggest,
            "Propose steps for every column from the column profile (editable, undoable)",
            "warning", area="suggest")
        self.suggest_card = SuggestCard()
        #: Cancel beside the button and the status line while Suggest counts
        self.suggest_status = SuggestStatus(self.suggest_button, self.suggest_card,
                                            self.feedback, self.suggests, self.buttons)
        self.palette = w.VBox()
        self.palette.add_class("irs-builder-palette")
        self.op_buttons: dict[str, w.Button] = {}
        self.form = ParamForm()
        self.form.show(None)
        self.form.on_edit(lambda: self.feedback.guard(self._live_edit, "palette")())
        step_buttons = self._step_buttons()
        self.steps = w.Select(options=[], rows=7, layout=w.Layout(width="100%"))
        self.steps.add_class("irs-builder-steps")
        self.steps.observe(self._on_step_list, "value")
        return w.VBox([
            self.suggest_status.row, self.suggest_status.status, self.suggest_card,
            area["suggest"],
            w.HTML("<b>Operators</b> <small>(a click adds the operator to the ticked columns;"
                   " edit its parameters below, applied as you type)</small>"),
            self.palette, area["palette"], self.form, step_buttons, area["steps"],
            w.HTML("<b>Steps</b>"), self.steps], layout=w.Layout(width="54%"))

    def attach(self, model: BuilderModel) -> None:
        """Draw ``model`` (another dataset opened: the old model is not drawn any more)."""
        if self.model is not None:
            self.model.unobserve(self.update)
        self.model = model
        self.suggests.attach(model)  # a Suggest counting the earlier dataset is cancelled
        self.suggest_card.show([], True)  # an earlier dataset's suggestion: not this one's
        model.observe(self.update, ("branches", "selection", "measured"))
        self._build_palette()
        self._show_branches()

    def say(self, text: str, level: str = "info", area: str = "steps") -> None:
        self.feedback.say(text, level, area)

    def need_model(self) -> BuilderModel:
        if self.model is None:
            raise IRSError("No dataset is open: type a dataset path and click Open.")
        return self.model

    # ---- drawing the model, and clicks on the step list and the graph -----------------------
    def update(self, change: Change) -> None:
        """Redraw what ``change`` (of the model, or the end of a Run) changed."""
        if change.name == "branches":
            self._show_branches()
            # the card's numbers describe the suggested steps only
            self.suggest_card.set_stale(not self.model.suggest_current)
        elif change.name == "selection":
            self._show_selection()
        elif change.name == "measured" or (change.name == "ended" and self.model is not None
                                           and change.new.job.status == "finished"):
            self.dag.set_graph(*model_graph(self.model))  # exact counts; reused / computed

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
            self.feedback.guard(lambda: self.model.select(*change["new"]))()

    def _on_dag_click(self, change: dict[str, Any]) -> None:
        picked = parse_op_id(change["new"] or "")
        if picked is not None and self.model is not None and picked != self.model.selected:
            self.feedback.guard(lambda: self.model.select(*picked))()

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
        if self.columns.choice is not None and self.columns.selected_columns != columns:
            self.columns.select_columns(columns)

    def _show_schema(self) -> None:
        model = self.model
        if not any(b.columns or b.tags for b in model.branches):
            self.schema_html.value = ""
            return
        schema = model.output_schema()
        cells = ", ".join(f"<code>{html.escape(n)}</code>: {c.dtype}" for n, c in schema.items())
        self.schema_html.value = (f"<small><b>Predicted output</b> ({len(schema)} columns, "
                                  f"before any fit): {cells}</small>")

    # ---- palette and form -----------------------------------------------------------------
    def _build_palette(self) -> None:
        self.palette.children, self.op_buttons = palette_rows(
            lambda n: self.feedback.guard(lambda: self.palette_click(n), "palette")())

    def choose_operator(self, name: str, values: dict[str, Any] | None = None) -> None:
        """Pick an operator: highlight it and show its parameter form (nothing is added)."""
        if name not in OPERATORS:
            raise IRSError(f"Unknown operator {name!r}; choose one of {sorted(OPERATORS)}.")
        self._operator = name
        for op, button in self.op_buttons.items():
            button.button_style = "info" if op == name else ""
        self.form.show(name, values)

    def palette_click(self, name: str) -> None:
        """What a click on an operator does: with ticked columns, add it as a step at once
        (its form then edits that step, as you type). When its defaults are not a valid
        operator (``Clip`` needs a bound), show its form: the step is added as soon as the
        form holds valid parameters (or with Add)."""
        model = self.need_model()
        columns = self.columns.selected_columns
        self._pending = None
        params = profile_defaults(name, columns, model.profile)
        try:
            make_operator(name, params)
        except IRSError as exc:
            self.choose_operator(name)
            self._pending = name if columns else None
            then = "it is added as soon as the form is valid" if columns else \
                "tick the columns, then click Add"
            self.say(f"{name}: {exc} Fill in the form below: {then}.", "info", "palette")
            return
        if not columns:
            self.choose_operator(name)
            self.say(f"{name}: tick the columns, then click Add.", "info", "palette")
            return
        before = len(model.branches)
        try:
            k, j = model.add_step(columns, name, params)  # the refresh shows its form
        except Exception:
            self.choose_operator(name)
            raise
        started = " in a new branch" if len(model.branches) > before else ""
        self.say(f"Added {name} on {names_text(columns)} as step {j + 1} of branch {k + 1}"
                 f"{started}; its parameters are below.", "success", "palette")

    @property
    def operator(self) -> str | None:
        return self._operator

    def _live_edit(self) -> None:
        """A form field changed: add the pending operator once its parameters are valid, or
        apply the form to the selected step when the form shows it."""
        model = self.model
        if model is None or self.form.op is None:
            return
        if self._pending == self.form.op:
            columns, params = self.columns.selected_columns, self.form.values()
            make_operator(self._pending, params)  # not valid yet: the reason is shown
            # still pending until the step is added: a target typed letter by letter ("l",
            # "la", ... "label") fails until it names a column, then adds the step
            k, j = model.add_step(columns, self.form.op, params)
            self._pending = None
            self._say_step(f"Added {model.branches[k].steps[j].operator()!r} on "
                           f"{names_text(columns)} as step {j + 1} of branch {k + 1}.",
                           self.form.op, params, "palette")
            return
        if model.selected is None:
            return
        k, j = model.selected
        step = model.branches[k].steps[j]
        params = self.form.values()
        if step.op != self.form.op or params == step.params:
            return
        model.update_step(k, j, params=params)
        new = model.branches[k].steps[j].operator()
        self._say_step(f"Step {j + 1} of branch {k + 1} is now {new!r}.", self.form.op, params,
                       "palette")

    def _say_step(self, text: str, op: str, params: dict[str, Any], area: str = "steps") -> None:
        """A step was added or changed: say so, with a warning (in red) when its parameters
        cannot work on this dataset (a ``freq_threshold`` above the row count)."""
        note = self.model.threshold_note(op, params) if self.model is not None else None
        if note:
            self.say(f"{text} Warning: {note}", "error", area)
        else:
            self.say(text, "success", area)

    # ---- step actions ---------------------------------------------------------------------
    def _need_operator(self) -> str:
        if self._operator is None:
            raise IRSError("No operator is chosen: click one in the palette first.")
        return self._operator

    def _add(self) -> None:
        self._pending = None
        model = self.need_model()
        columns = self.columns.selected_columns
        op = self._need_operator()
        before = len(model.branches)
        params = self.form.values()
        k, j = model.add_step(columns, op, params)
        started = " in a new branch" if len(model.branches) > before else ""
        self._say_step(f"Added {op} on {names_text(columns)} as step {j + 1} of branch {k + 1}"
                       f"{started}.", op, params)

    def _selected_step(self) -> tuple[int, int]:
        model = self.need_model()
        if model.selected is None:
            raise IRSError("No step is selected: click a step in the graph or the step list.")
        return model.selected

    def _update(self) -> None:
        k, j = self._selected_step()
        op = self._need_operator()
        columns = self.columns.selected_columns
        params = self.form.values()
        self.model.update_step(k, j, op=op, params=params, columns=columns)
        self._say_step(f"Updated step {j + 1} of branch {k + 1}: {op}.", op, params)

    def _remove(self) -> None:
        what = self.need_model().remove_selected()
        self.say(f"Removed {what}.", "success")

    def _move(self, offset: int) -> None:
        k, j = self._selected_step()
        self.model.move_step(k, j, offset)
        self.say(f"Moved step {j + 1} of branch {k + 1} {'up' if offset < 0 else 'down'}.",
                 "success")

    def _undo(self) -> None:
        self.need_model().undo()
        self.say("Undid the last change.", "success")

    def _new_branch(self) -> None:
        k = self.need_model().new_branch()
        if self.columns.choice is not None:
            self.columns.select_columns([])
        self.say(f"Branch {k + 1} started: select its columns and add steps.", "success")

    def _pass_through(self) -> None:
        model, columns = self.need_model(), self.columns.selected_columns
        if not columns:
            raise IRSError("No columns are selected: tick the columns to pass through first.")
        k = model.new_branch(columns)
        self.say(f"Branch {k + 1} passes {names_text(columns)} through unchanged.",
                          "success")

    # ---- Suggest --------------------------------------------------------------------------
    def _suggest(self) -> None:
        """Start Suggest in the background (:class:`~..model.SuggestController`): the
        first one counts every row; the card and the steps change at its end."""
        self.need_model()
        card, client = self.suggest_card, self.runs.client
        if getattr(client, "status", "running") != "running":
            client = None  # a closed cluster: the active one, else this process
        self.suggests.start(card.max_loss, card.memory_budget, client=client)
