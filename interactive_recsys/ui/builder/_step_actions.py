"""The operator palette, the parameter form and the step buttons of the pipeline builder:
add, update, remove, move, undo, new branch, pass through, and Suggest.

A mixin of :class:`~interactive_recsys.ui.builder._builder.PipelineBuilder` (which supplies
the widgets, ``model``, ``_need_model``, ``selected_columns``, ``say`` and ``_guard``); kept
apart so that each module stays small. Each action changes the model; the builder redraws
from the model's change events.
"""

from __future__ import annotations

from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.ops import OPERATORS
from interactive_recsys.ui.builder._column_list import names_text
from interactive_recsys.ui.builder._model import make_operator
from interactive_recsys.ui.builder._param_form import palette_rows
from interactive_recsys.ui.builder.suggest import explain, profile_defaults


class StepActions:
    """The palette and form (a click adds a step, the form edits it as you type), the step
    buttons and Suggest."""

    # ---- palette and form -----------------------------------------------------------------
    def _build_palette(self) -> None:
        self.palette.children, self.op_buttons = palette_rows(
            lambda n: self._guard(lambda: self.palette_click(n), "palette")())

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
        model = self._need_model()
        columns = self.selected_columns
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
            columns, params = self.selected_columns, self.form.values()
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
        model = self._need_model()
        columns = self.selected_columns
        op = self._need_operator()
        before = len(model.branches)
        params = self.form.values()
        k, j = model.add_step(columns, op, params)
        started = " in a new branch" if len(model.branches) > before else ""
        self._say_step(f"Added {op} on {names_text(columns)} as step {j + 1} of branch {k + 1}"
                       f"{started}.", op, params)

    def _selected_step(self) -> tuple[int, int]:
        model = self._need_model()
        if model.selected is None:
            raise IRSError("No step is selected: click a step in the graph or the step list.")
        return model.selected

    def _update(self) -> None:
        k, j = self._selected_step()
        op = self._need_operator()
        columns = self.selected_columns
        params = self.form.values()
        self.model.update_step(k, j, op=op, params=params, columns=columns)
        self._say_step(f"Updated step {j + 1} of branch {k + 1}: {op}.", op, params)

    def _remove(self) -> None:
        what = self._need_model().remove_selected()
        self.say(f"Removed {what}.", "success")

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
        if self.choice is not None:
            self.select_columns([])
        self.say(f"Branch {k + 1} started: select its columns and add steps.", "success")

    def _pass_through(self) -> None:
        model, columns = self._need_model(), self.selected_columns
        if not columns:
            raise IRSError("No columns are selected: tick the columns to pass through first.")
        k = model.new_branch(columns)
        self.say(f"Branch {k + 1} passes {names_text(columns)} through unchanged.", "success")

    # ---- Suggest --------------------------------------------------------------------------
    def _suggest(self) -> None:
        model = self._need_model()
        card = self.suggest_card
        if model.measured is None:  # the first Suggest counts every row (once)
            self.say("Counting every value of the categorical columns (one pass over the "
                     "data, once)...", "busy", "suggest")
        if self.client is not None:  # the Studio's cluster
            with self.client.as_current():
                branches = model.suggest(card.max_loss, card.memory_budget)
        else:
            branches = model.suggest(card.max_loss, card.memory_budget)
        card.show(model.vocab_choices, model.vocab_fits, model.vocab_shortfall)
        self.say(f"Suggested: {explain(branches)}. Click a step in the graph to edit it; "
                 "Undo reverts.", "success" if model.vocab_fits else "error", "suggest")
