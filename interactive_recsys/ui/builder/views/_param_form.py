"""The operator form of the pipeline builder: fields generated from an operator's declared
:class:`~interactive_recsys.params.Param` table, read back into parameter values.

>>> form = ParamForm()
>>> form.show("Clip", {"min_value": 0})
>>> form.fields["min_value"].value, form.values()
('0', {'min_value': 0})
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from interactive_recsys.ops import OPERATORS
from interactive_recsys.params import Param
from interactive_recsys.ui.builder._param_text import param_from_text, param_to_text

#: Values a text field shows and reads back as they are; any other object (a side table, a
#: given vocabulary) is read back as the object itself while its text is unchanged.
_PLAIN = (str, int, float, bool, list, tuple, dict, type(None))

#: Categories of the operator palette, in this order (others follow, sorted).
CATEGORY_ORDER = ("categorical", "transform", "statistics", "columns", "rows")


def css_name(text: str) -> str:
    """A CSS class fragment for a column or parameter name.

    >>> css_name("user id")
    'user_id'
    """
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def _same_value(a: Any, b: Any) -> bool:
    """Equal values of the same kind (``1 == True`` is not a match; lists match tuples)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return type(a) is type(b) and a == b


class ParamForm(w.VBox):
    """Fields generated from an operator's declared ``Param`` table."""

    def __init__(self) -> None:
        super().__init__()
        self.add_class("irs-builder-params")
        self.op: str | None = None
        self.fields: dict[str, w.Widget] = {}
        #: each text field's value as shown: read back as it was while its text is unchanged
        self._shown: dict[str, tuple[str, Any]] = {}
        self._listeners: list[Callable[[], None]] = []

    def on_edit(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever the user changes a field (as they type)."""
        self._listeners.append(callback)

    def _edited(self, _: Any = None) -> None:
        for callback in list(self._listeners):
            callback()

    def show(self, op: str | None, values: dict[str, Any] | None = None) -> None:
        old = self.children
        self.op, self.fields, self._shown = op, {}, {}
        self._show(op, values)
        for widget in old:  # the replaced fields: no model left behind in the kernel/page
            close_tree(widget)

    def _show(self, op: str | None, values: dict[str, Any] | None) -> None:
        if op is None:
            self.children = [w.HTML("<i>Choose an operator from the palette.</i>")]
            return
        cls = OPERATORS[op]
        values = values or {}
        rows: list[w.Widget] = [w.HTML(f"<b>{op}</b> — {html.escape(cls.summary)}")]
        for name, spec in cls.params.items():
            value = values.get(name, spec.default)
            field = self._field(name, spec, value)
            if isinstance(field, w.Text) and not isinstance(value, _PLAIN):
                self._shown[name] = (field.value, value)  # an object shown as text
            field.add_class(f"irs-param-{css_name(name)}")
            field.observe(self._edited, "value")
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
        # a value that is no text to edit (a vocabulary given by content hash): read-only
        return w.Text(value=param_to_text(spec, value), description=name, style=style,
                      continuous_update=True,
                      disabled=bool(getattr(value, "read_only_in_form", False)),
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
            elif self._shown.get(name, (None,))[0] == field.value:
                value = self._shown[name][1]  # unchanged: the value itself, not its text
            else:
                value = param_from_text(spec, field.value)
            if value is spec.default or (not spec.required and _same_value(value, spec.default)):
                continue
            out[name] = value
        return out


def palette_rows(on_click: Callable[[str], None]) -> tuple[list[w.HBox], dict[str, w.Button]]:
    """The operator palette: one row of buttons per category; a click calls
    ``on_click(name)``. Returns the rows and the buttons by operator name."""
    groups: dict[str, list[str]] = {}
    for name, cls in OPERATORS.items():
        groups.setdefault(cls.category, []).append(name)
    order = [c for c in CATEGORY_ORDER if c in groups] + sorted(set(groups) -
                                                                set(CATEGORY_ORDER))
    rows, buttons = [], {}
    for category in order:
        row = []
        for name in sorted(groups[category]):
            button = w.Button(description=name, tooltip=OPERATORS[name].summary,
                              layout=w.Layout(width="auto", flex="0 0 auto"))
            button.add_class("irs-op")
            button.add_class(f"irs-op-{name}")
            button.on_click(lambda _, n=name: on_click(n))
            buttons[name] = button
            row.append(button)
        label = w.HTML(f"<small>{category}</small>", layout=w.Layout(width="80px"))
        rows.append(w.HBox([label, *row], layout=w.Layout(flex_flow="row wrap")))
    return rows, buttons


def close_tree(widget: w.Widget) -> None:
    """Close ``widget``, its children and their layout and style models."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        if isinstance(part, w.Widget):
            part.close()
    widget.close()
