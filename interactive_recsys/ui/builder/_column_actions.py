"""The Columns panel's actions of the :class:`~.PipelineBuilder`: which columns the filter
shows and which are ticked (by hand, by role, all shown, none).

A mixin: the builder holds ``choice`` (a :class:`~._column_list.ColumnChoice`, or ``None``
before a dataset is open), ``name_filter``, ``column_list`` and ``column_count``.

>>> ColumnActions.select_columns.__doc__
'Tick exactly ``names`` in the column list.'
"""

from __future__ import annotations

import html
from typing import Any

from interactive_recsys.ui.builder._column_list import ColumnChoice, names_text


class ColumnActions:
    """Filter and tick the columns of the open dataset."""

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

    def _need_choice(self) -> ColumnChoice:
        self._need_model()
        return self.choice

    def _select_shown(self) -> None:
        choice = self._need_choice()
        names = choice.select_shown()
        which = f"matching {choice.pattern!r}" if choice.pattern.strip() else "(all)"
        self.say(f"Select shown: ticked the {len(names)} shown columns {which}: "
                 f"{names_text(names)}.", "success", "columns")

    def _clear(self) -> None:
        self._need_choice().select([])
        self.say("Unticked every column.", "success", "columns")

    def select_role(self, role: str) -> list[str]:
        """Tick exactly the columns of ``role`` (what a role chip does)."""
        names = self._need_choice().select_role(role)
        self.say(f"Ticked the {len(names)} {role} columns: {names_text(names)}.", "success",
                 "columns")
        return names

    def select_columns(self, names: list[Any]) -> None:
        """Tick exactly ``names`` in the column list."""
        self._need_choice().select(names)
