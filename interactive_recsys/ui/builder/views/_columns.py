"""ColumnsPanel: the columns of the open dataset, which the filter shows and which are
ticked (by hand, by role, all shown, none).

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model import BuilderModel
>>> from interactive_recsys.ui.builder.views._feedback import Feedback
>>> panel = ColumnsPanel(None, Feedback(["columns"]))
>>> panel.attach(BuilderModel(pd.DataFrame({"c": ["x"], "n": [1.0]})))
>>> panel.select_columns(["n"]); panel.selected_columns
['n']
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from interactive_recsys.errors import IRSError
from interactive_recsys.ui.builder.model import BuilderModel, Change, counted_profile
from interactive_recsys.ui.builder.views._column_list import (
    ColumnChoice,
    ColumnList,
    names_text,
    role_chips,
)
from interactive_recsys.ui.builder.views._feedback import Feedback, make_button


class ColumnsPanel:
    """The role chips, the name filter with Select shown / Clear, the count and the column
    list of ``model`` (None: no dataset open yet); ``root`` is its widget."""

    def __init__(self, model: BuilderModel | None, feedback: Feedback) -> None:
        self.feedback = feedback
        self.model: BuilderModel | None = None
        self.buttons: dict[str, w.Button] = {}
        self.choice: ColumnChoice | None = None
        self.column_list: ColumnList | None = None
        self.chips = w.HBox(layout=w.Layout(flex_flow="row wrap"))
        self.chips.add_class("irs-builder-chips")
        self.name_filter = w.Text(placeholder="filter: C*, I1, I2 or a role",
                                  continuous_update=True, layout=w.Layout(width="190px"))
        self.name_filter.add_class("irs-builder-name-filter")
        self.name_filter.observe(lambda _: self._filter_columns(), "value")
        self.column_count = w.HTML()
        self.column_count.add_class("irs-builder-count")
        self.column_box = w.VBox(layout=w.Layout(width="100%"))
        self.column_box.add_class("irs-builder-columns")
        tools = w.HBox([
            self.name_filter,
            make_button(self.buttons, feedback, "Select shown", "select-shown",
                        self._select_shown, "Tick every column the filter shows",
                        area="columns"),
            make_button(self.buttons, feedback, "Clear", "clear", self._clear,
                        "Untick every column", area="columns"),
            self.column_count], layout=w.Layout(flex_flow="row wrap", align_items="center"))
        self.root = w.VBox([w.HTML("<b>Columns</b>"), w.VBox([
            self.chips, tools, feedback.areas["columns"], self.column_box])],
            layout=w.Layout(width="45%"))
        if model is not None:
            self.attach(model)

    def attach(self, model: BuilderModel) -> None:
        """Show the columns of ``model``'s dataset (none ticked), and their exact distinct
        counts once Suggest has counted them."""
        if self.model is not None:
            self.model.unobserve(self.update)
        self.model = model
        self.choice = ColumnChoice(model.profile)
        self.choice.observe(self._show_count)
        self.column_list = ColumnList(self.choice, on_error=lambda exc: self.feedback.say(
            str(exc), "error", "columns"))
        self.column_list.show_profile(counted_profile(model))
        self.column_box.children = [self.column_list]
        self.chips.children = role_chips(self.choice, lambda role: self.feedback.guard(
            lambda: self.select_role(role), "columns")())
        self._show_count()
        model.observe(self.update, "measured")

    def update(self, change: Change) -> None:
        """The columns do not change with the steps; their distinct counts become exact
        when Suggest has counted every row (``"measured"``)."""
        if change.name == "measured" and self.model is not None \
                and self.column_list is not None:
            self.column_list.show_profile(counted_profile(self.model))

    @property
    def shown_columns(self) -> list[str]:
        """Columns the filter box shows."""
        return self.choice.shown if self.choice is not None else []

    @property
    def selected_columns(self) -> list[str]:
        return self.choice.selected if self.choice is not None else []

    def _show_count(self) -> None:
        if self.choice is not None:
            self.column_count.value = f"<b>{html.escape(self.choice.summary())}</b>"

    def _filter_columns(self) -> None:
        if self.choice is None:
            return
        self.choice.pattern = self.name_filter.value
        self.column_list.sync()
        self._show_count()

    def need_choice(self) -> ColumnChoice:
        if self.choice is None:
            raise IRSError("No dataset is open: type a dataset path and click Open.")
        return self.choice

    def _select_shown(self) -> None:
        choice = self.need_choice()
        names = choice.select_shown()
        which = f"matching {choice.pattern!r}" if choice.pattern.strip() else "(all)"
        self.feedback.say(f"Select shown: ticked the {len(names)} shown columns {which}: "
                          f"{names_text(names)}.", "success", "columns")

    def _clear(self) -> None:
        self.need_choice().select([])
        self.feedback.say("Unticked every column.", "success", "columns")

    def select_role(self, role: str) -> list[str]:
        """Tick exactly the columns of ``role`` (what a role chip does)."""
        names = self.need_choice().select_role(role)
        self.feedback.say(f"Ticked the {len(names)} {role} columns: {names_text(names)}.",
                          "success", "columns")
        return names

    def select_columns(self, names: list[Any]) -> None:
        """Tick exactly ``names`` in the column list."""
        self.need_choice().select(names)
