"""Operator parameters as the text of the builder's form fields, and back."""

from __future__ import annotations

import ast
import json
from typing import Any

from interactive_recsys.params import REQUIRED, Param


def param_to_text(spec: Param, value: Any) -> str:
    """How a parameter value is shown in a text field (inverse of :func:`param_from_text`)."""
    if value is REQUIRED or value is None:
        return ""
    if spec.kind in ("numbers", "strs"):
        return ", ".join(str(v) for v in value)
    if spec.kind == "mapping":
        return ", ".join(f"{k}:{v}" for k, v in value.items())
    if callable(value):
        return getattr(value, "__name__", repr(value))
    return str(value)


def _literal(text: str) -> Any:
    """A number, True/False/None or the text itself."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, int | float | bool | list | tuple | dict) or value is None \
        else text


def param_from_text(spec: Param, text: str) -> Any:
    """Parse a form field into the value given to the operator (validated by the operator).

    An empty field means ``None`` when allowed, else the default (or a missing required
    value). Numbers are parsed; anything else is passed on as text, so the operator's own
    message explains what is wrong.

    >>> param_from_text(Param(kind="numbers"), "0, 1.5, 10")
    [0, 1.5, 10]
    >>> param_from_text(Param(None, kind="number", nullable=True), "")
    >>> param_from_text(Param(kind="mapping"), "a:b, c:d")
    {'a': 'b', 'c': 'd'}
    """
    text = text.strip()
    if text == "":
        if spec.nullable:
            return None
        if spec.kind == "str" and not spec.required:
            return ""
        return spec.default
    if spec.kind in ("str", "callable_or_expr"):
        return text
    if spec.kind in ("numbers", "strs"):
        if text.startswith("["):
            return _literal(text)
        items = [t.strip() for t in text.split(",") if t.strip()]
        return [_literal(t) for t in items] if spec.kind == "numbers" else items
    if spec.kind == "mapping":
        if text.startswith("{"):
            try:
                return json.loads(text)
            except ValueError:
                return _literal(text)
        pairs = [t.split(":", 1) for t in text.split(",") if t.strip()]
        if any(len(p) != 2 for p in pairs):
            return text
        return {k.strip(): v.strip() for k, v in pairs}
    if spec.choices is not None:
        return text if text in spec.choices else _literal(text)
    return _literal(text)
