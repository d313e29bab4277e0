"""Declared operator parameters: one table drives validation, save/load, repr and forms.

Examples
--------
>>> p = Param(0.0, kind="number", doc="Lower bound.")
>>> p.validate("Clip", "min_value", 1)
1
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ParameterError

REQUIRED = object()

_KIND_TEXT = {
    "number": "a finite number",
    "int": "an integer",
    "bool": "a boolean",
    "str": "a string",
    "scalar": "a number, a string or a boolean",
    "numbers": "a list of finite numbers",
    "strs": "a list of strings",
    "mapping": "a mapping of strings to strings",
    "callable_or_expr": "a callable or an expression string",
    "any": "a JSON value",
}

#: The Python type shown for each kind in signatures and docstrings.
_KIND_TYPE: dict[str, Any] = {
    "number": float,
    "int": int,
    "bool": bool,
    "str": str,
    "scalar": float | str | bool,
    "numbers": list[float],
    "strs": list[str],
    "mapping": dict[str, str],
    "callable_or_expr": Callable[..., Any] | str,
    "any": Any,
}


def _is_number(v: Any) -> bool:
    """A finite real number (inf and NaN cannot be saved as JSON nor meant as bounds)."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


_KIND_CHECK: dict[str, Callable[[Any], bool]] = {
    "number": _is_number,
    "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "scalar": lambda v: isinstance(v, str | bool) or _is_number(v),
    "numbers": lambda v: isinstance(v, Sequence) and not isinstance(v, str)
    and all(_is_number(x) for x in v),
    "strs": lambda v: isinstance(v, Sequence) and not isinstance(v, str)
    and all(isinstance(x, str) for x in v),
    "mapping": lambda v: isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(x, str) for k, x in v.items()),
    "callable_or_expr": lambda v: callable(v) or isinstance(v, str),
    "any": lambda v: True,
}


@dataclass(frozen=True)
class Param:
    """One keyword parameter of an operator.

    Parameters
    ----------
    default : the default value, or ``REQUIRED``.
    kind : one of ``number``, ``int``, ``bool``, ``str``, ``scalar``, ``numbers``, ``strs``,
        ``mapping``, ``callable_or_expr``, ``any``.
    choices : allowed values, when the parameter is an enumeration.
    low, high : inclusive bounds for numbers.
    nullable : whether ``None`` is allowed.
    doc : one line shown in reprs, docs and the pipeline builder's form.
    """

    default: Any = REQUIRED
    kind: str = "any"
    choices: tuple | None = None
    low: float | None = None
    high: float | None = None
    nullable: bool = False
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def describe(self) -> str:
        """The constraint in words, as used in error messages."""
        if self.choices is not None:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        else:
            text = _KIND_TEXT[self.kind]
            if self.low is not None and self.high is not None:
                text += f" in [{self.low}, {self.high}]"
            elif self.low is not None:
                text += f" >= {self.low}"
            elif self.high is not None:
                text += f" <= {self.high}"
        return text + (" or None" if self.nullable else "")

    @property
    def annotation(self) -> Any:
        """The Python type of the parameter (shown by ``inspect.signature`` and ``help``)."""
        base = (Literal.__getitem__(tuple(self.choices)) if self.choices is not None
                else _KIND_TYPE.get(self.kind, Any))
        return base | None if self.nullable and base is not Any else base

    def numpydoc(self, name: str) -> str:
        """The parameter's entry in a numpydoc ``Parameters`` section."""
        head = f"{name} : {self.describe()}"
        if not self.required:
            head += f", default {self.default!r}"
        return f"{head}\n    {self.doc}" if self.doc else head

    def validate(self, owner: str, name: str, value: Any) -> Any:
        """Return ``value`` (lists become lists) or raise :class:`ParameterError`."""
        if value is None and self.nullable:
            return None
        ok = value is not None and (
            value in self.choices if self.choices is not None else _KIND_CHECK[self.kind](value))
        if ok and self.choices is None and _is_number(value):
            ok = (self.low is None or value >= self.low) and (self.high is None
                                                               or value <= self.high)
        if not ok:
            raise ParameterError(f"The {name!r} parameter of {owner} must be {self.describe()}. "
                                 f"Got {value!r} instead.")
        if self.kind in ("numbers", "strs"):
            return list(value)
        return value
