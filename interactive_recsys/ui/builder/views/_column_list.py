"""The builder's column list: which columns are shown (filter box) and ticked (clicks,
shift-click ranges, role chips), as a plain-Python model and a thin scrolling view.

:class:`ColumnChoice` holds the state and every rule; :class:`ColumnList` (an ``anywidget``
drawn by ``widgets/column_list.js``) shows one fixed-height row per column — name, dtype,
role, null % and distinct count — in a scrolling box, and sends each click (with the Shift
key) back to the model.

>>> from interactive_recsys.ui.builder._column_profile import profile_table
>>> import pyarrow as pa
>>> choice = ColumnChoice(profile_table(pa.table({"a": [1], "b": ["x"], "c": ["y"]})))
>>> choice.click("a"); choice.click("c", shift=True); choice.summary()
'3 of 3 selected'
>>> choice.pattern = "b"; choice.shown
['b']
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from typing import Any

import anywidget
import ipywidgets as w
import traitlets

from interactive_recsys.errors import ParameterError
from interactive_recsys.ui._assets import widget_asset
from interactive_recsys.ui.builder._column_profile import ROLES, ColumnProfile


class ColumnChoice:
    """Shown and selected columns of a profile (plain Python, no widgets).

    ``pattern``: comma-separated terms; a term with ``*``, ``?`` or ``[`` is a glob on the
    name, any other term matches names containing it (case-insensitive) or a role.
    """

    def __init__(self, profile: Sequence[ColumnProfile]) -> None:
        self.profile = list(profile)
        self.names = [p.name for p in self.profile]
        self.roles = {p.name: p.role for p in self.profile}
        self.pattern = ""
        self._selected: set[str] = set()
        self.anchor: str | None = None
        self._listeners: list[Callable[[], None]] = []

    def observe(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every change of the selection."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        for callback in list(self._listeners):
            callback()

    @property
    def selected(self) -> list[str]:
        """Ticked columns, in dataset order."""
        return [n for n in self.names if n in self._selected]

    def _matches(self, name: str) -> bool:
        terms = [t.strip() for t in self.pattern.split(",") if t.strip()]
        if not terms:
            return True
        for term in terms:
            if any(ch in term for ch in "*?["):
                if fnmatch.fnmatchcase(name, term):
                    return True
            elif term.lower() in name.lower() or term.lower() == self.roles[name]:
                return True
        return False

    @property
    def shown(self) -> list[str]:
        """Columns passing the filter, in dataset order."""
        return [n for n in self.names if self._matches(n)]

    def select(self, names: Sequence[str]) -> None:
        """Tick exactly ``names``."""
        unknown = [n for n in names if n not in self.roles]
        if unknown:
            raise ParameterError(f"Column {unknown[0]!r} is not in the dataset; columns are "
                                 f"{self.names}.")
        self._selected = set(names)
        self.anchor = None
        self._changed()

    def click(self, name: str, shift: bool = False) -> None:
        """Toggle ``name``; with ``shift``, give every shown column between the last clicked
        one and ``name`` the new state of ``name`` (as in a mail client's list)."""
        if name not in self.roles:
            raise ParameterError(f"Column {name!r} is not in the dataset.")
        state = name not in self._selected
        shown = self.shown
        if shift and self.anchor in shown and name in shown:
            i, j = sorted((shown.index(self.anchor), shown.index(name)))
            span = shown[i:j + 1]
        else:
            span = [name]
        if state:
            self._selected.update(span)
        else:
            self._selected.difference_update(span)
        self.anchor = name
        self._changed()

    def select_role(self, role: str) -> list[str]:
        """Tick exactly the columns of ``role``; returns them."""
        if role not in ROLES:
            raise ParameterError(f"Unknown role {role!r}; roles are {list(ROLES)}.")
        names = [n for n in self.names if self.roles[n] == role]
        self.select(names)
        return names

    def select_shown(self) -> list[str]:
        """Tick exactly the shown columns; returns them."""
        names = self.shown
        self.select(names)
        return names

    def role_counts(self) -> dict[str, int]:
        """Columns per role, for the role chips (roles without columns left out)."""
        counts = {role: sum(1 for r in self.roles.values() if r == role) for role in ROLES}
        return {role: n for role, n in counts.items() if n}

    def summary(self) -> str:
        """``"12 of 40 selected"`` (and how many the filter shows, when it hides some)."""
        text = f"{len(self._selected)} of {len(self.names)} selected"
        shown = len(self.shown)
        return text if shown == len(self.names) else f"{text} · {shown} shown"


def profile_rows(profile: Sequence[ColumnProfile]) -> list[dict[str, Any]]:
    """What each row of the list shows: the distinct count exact (``"12,517 exact"``) or
    marked as the sample's estimate (``"~84,255 est."``; the row's title says it whole)."""
    return [{"name": p.name, "dtype": p.dtype, "role": p.role,
             "null": f"{p.null_fraction:.1%}", "distinct": p.distinct_short,
             "title": p.describe()} for p in profile]


class ColumnList(anywidget.AnyWidget):
    """Scrolling list of fixed-height column rows drawn from a :class:`ColumnChoice`.

    ``rows``: name, dtype, role, null %, distinct per column; ``shown`` and ``selected``:
    names. A click in the browser sends ``{"event": "click", "name", "shift"}``; the model
    decides and the new ``selected`` comes back.
    """

    _esm = widget_asset("column_list.js")
    _css = widget_asset("column_list.css")
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    shown = traitlets.List(traitlets.Unicode()).tag(sync=True)
    selected = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(self, choice: ColumnChoice, on_error: Callable[[Exception], None] | None = None
                 ) -> None:
        super().__init__()
        self.choice = choice
        self.on_error = on_error
        self.rows = profile_rows(choice.profile)
        self.sync()
        choice.observe(self.sync)
        self.on_msg(self._on_message)

    def show_profile(self, profile: Sequence[ColumnProfile]) -> None:
        """Redraw the rows from ``profile`` (the same columns, e.g. with exact distinct
        counts in place of the sample's estimates)."""
        self.rows = profile_rows(profile)

    def sync(self) -> None:
        """Send the model's shown and selected columns to the browser."""
        with self.hold_sync():
            self.shown = self.choice.shown
            self.selected = self.choice.selected

    def _on_message(self, _: Any, content: dict[str, Any], buffers: Any) -> None:
        if content.get("event") != "click":
            return
        try:
            self.choice.click(str(content.get("name")), bool(content.get("shift")))
        except ParameterError as exc:
            if self.on_error is None:
                raise
            self.on_error(exc)

    def __repr__(self) -> str:
        return f"ColumnList({self.choice.summary()})"


def role_chips(choice: ColumnChoice, on_click: Callable[[str], None]) -> list[w.Widget]:
    """One chip (a rounded button) per role with columns: ``categorical (26)``; a click
    calls ``on_click(role)``."""
    chips: list[w.Widget] = [w.HTML("<small>Tick by role:</small>")]
    for role, count in choice.role_counts().items():
        chip = w.Button(description=f"{role} ({count})", tooltip=f"Tick the {count} {role} "
                        "columns", layout=w.Layout(width="auto", flex="0 0 auto"))
        chip.add_class("irs-chip")
        chip.add_class(f"irs-chip-{role}")
        chip.on_click(lambda _, r=role: on_click(r))
        chips.append(chip)
    return chips


def names_text(names: Sequence[Any], shown: int = 4) -> str:
    """``C1, C2, C3, ..., C26 (26 columns)`` for a long list of names.

    >>> names_text(["a", "b"]), names_text([f"C{i}" for i in range(1, 27)])
    ('a, b', 'C1, C2, C3, ..., C26 (26 columns)')
    """
    names = [n if isinstance(n, str) else "+".join(n) for n in names]
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown - 1])}, ..., {names[-1]} ({len(names)} columns)"
