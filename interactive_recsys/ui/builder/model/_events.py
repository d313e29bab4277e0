"""Per-field change events of the pipeline builder's model.

A listener subscribes to the fields it draws (``names``) and gets one :class:`Change` per
change of such a field: its name and the value before and after. Nothing is sent when a
value is set to what it already was.

Examples
--------
>>> events, seen = FieldEvents(("count",), "Counter"), []
>>> events.observe(seen.append, names="count")
>>> events.emit("count", 0, 2), events.emit("count", 2, 2)  # the second is no change
(True, False)
>>> seen
[Change(name='count', old=0, new=2)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from interactive_recsys.errors import ParameterError


@dataclass(frozen=True)
class Change:
    """One change of a model field, as passed to an observer.

    Attributes
    ----------
    name : the field that changed (for ``BuilderModel``:
        ``"branches"`` or ``"selection"``).
    old, new : its value before and after the change (never equal).
    """

    name: str
    old: Any
    new: Any


Listener = Callable[[Change], None]


class FieldEvents:
    """Listeners per field of an owner (a model holds one and forwards ``observe``): the
    owner calls :meth:`emit` after it changed a field of ``fields``; ``owner`` names it in
    errors."""

    def __init__(self, fields: Sequence[str], owner: str) -> None:
        self.fields, self.owner = tuple(fields), owner
        self._listeners: dict[str, list[Listener]] = {name: [] for name in self.fields}

    def _names(self, names: str | Sequence[str] | None) -> list[str]:
        names = list(self.fields) if names is None else [names] if isinstance(names, str) \
            else list(names)
        unknown = [n for n in names if n not in self.fields]
        if unknown:
            raise ParameterError(f"{self.owner} has no field {unknown[0]!r} to "
                                 f"observe; its fields are {list(self.fields)}.")
        return names

    def observe(self, callback: Listener, names: str | Sequence[str] | None = None) -> None:
        """Call ``callback(change)`` with a :class:`Change` after each change of a field in
        ``names`` (a name or a sequence of names; ``None``: every field)."""
        for name in self._names(names):
            if callback not in self._listeners[name]:
                self._listeners[name].append(callback)

    def unobserve(self, callback: Listener, names: str | Sequence[str] | None = None) -> None:
        """Stop calling ``callback`` for the fields in ``names`` (``None``: every field)."""
        for name in self._names(names):
            if callback in self._listeners[name]:
                self._listeners[name].remove(callback)

    def emit(self, name: str, old: Any, new: Any) -> bool:
        """Tell the observers of ``name`` that it changed; nothing when ``old == new``.
        Returns whether it changed."""
        if old == new:
            return False
        change = Change(name, old, new)
        for callback in list(self._listeners[name]):
            callback(change)
        return True
