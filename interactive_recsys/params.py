"""The one parameter system: declared :class:`Param` constraints drive validation, save/load,
repr and forms, for operators, models and plain functions alike (as scikit-learn's
``_parameter_constraints`` and ``validate_params``).

* Operators and models declare ``Param`` class attributes (:func:`declared_params` collects
  them);
* functions declare a table with the :func:`validate_params` decorator;
* checks that no table can say (one parameter against the data, or two together) raise
  :func:`param_error`, so every "The 'x' parameter ..." message comes from this module.

Examples
--------
>>> p = Param(0.0, kind="number", doc="Lower bound.")
>>> p.validate("Clip", "min_value", 1)
1
>>> @validate_params({"k": Param(kind="int", low=1)}, owner="top")
... def top(items, k=10):
...     return items[:k]
>>> top([3, 2, 1], k=2)
[3, 2]
>>> try:
...     top([3, 2, 1], k=0)
... except ParameterError as exc:
...     print(exc)
The 'k' parameter of top must be an integer >= 1. Got 0 instead.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from interactive_recsys.errors import ParameterError

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


Closed = Literal["both", "left", "right", "neither"]
_CLOSED = ("both", "left", "right", "neither")

#: A kind in a range with an open bound ("a number in (0, 1)", "an integer in (0, 5]"), and
#: its noun after "positive" or "negative".
_OPEN_TEXT = {"number": ("a number", "number"), "int": ("an integer", "integer")}


def _range_text(kind: str, low: float | None, high: float | None, closed: str) -> str:
    """A kind and its bounds in words: ``a finite number in [0, 1]``, ``an integer >= 1``, and
    with an open bound ``a number in (0, 1)``, ``a number in [0, 1)``, ``a positive number``.

    >>> _range_text("number", 0, 1, "neither"), _range_text("number", 0, 1, "left")
    ('a number in (0, 1)', 'a number in [0, 1)')
    >>> _range_text("number", 0, None, "neither"), _range_text("int", 0, None, "right")
    ('a positive number', 'a positive integer')
    >>> _range_text("number", None, 1, "neither"), _range_text("int", 0, 5, "right")
    ('a finite number < 1', 'an integer in (0, 5]')
    >>> _range_text("int", 1, 9, "both")
    'an integer in [1, 9]'
    """
    text = _KIND_TEXT[kind]
    open_text, noun = _OPEN_TEXT.get(kind, (text, "value"))
    low_open, high_open = closed in ("right", "neither"), closed in ("left", "neither")
    if low is not None and high is not None:
        if low_open or high_open:
            text = open_text
        return (f"{text} in {'(' if low_open else '['}{low}, {high}"
                f"{')' if high_open else ']'}")
    if low is not None:
        if low_open and low == 0:
            return f"a positive {noun}"
        return f"{text} {'>' if low_open else '>='} {low}"
    if high is not None:
        if high_open and high == 0:
            return f"a negative {noun}"
        return f"{text} {'<' if high_open else '<='} {high}"
    return text


@dataclass(frozen=True)
class Param:
    """One keyword parameter of an operator, a model or a function.

    Parameters
    ----------
    default : the default value, or ``REQUIRED``.
    kind : one of ``number``, ``int``, ``bool``, ``str``, ``scalar``, ``numbers``, ``strs``,
        ``mapping``, ``callable_or_expr``, ``any``.
    choices : allowed values, when the parameter is an enumeration.
    low, high : bounds for numbers (inclusive unless ``closed`` says otherwise).
    closed : which bounds are inclusive, as scikit-learn's ``Interval``: ``"both"``,
        ``"left"`` (``low`` only), ``"right"`` (``high`` only) or ``"neither"``.
    nullable : whether ``None`` is allowed.
    doc : one line shown in reprs, docs and the pipeline builder's form.
    must : the constraint in words, when :meth:`describe`'s wording does not fit.
    check : a further test of a (non-None) value that no bound can say, e.g. ``bool`` for a
        non-empty string.
    show_type : whether error messages name the type of the value given.
    columns : whether the value names input columns (``kind`` ``str`` or ``strs``): an
        operator then also takes a workflow step or a selection there (NVTabular's
        ``JoinGroupby(cont_cols=node)``), whose output columns the workflow fills in.
    """

    default: Any = REQUIRED
    kind: str = "any"
    choices: tuple | None = None
    low: float | None = None
    high: float | None = None
    closed: Closed = "both"
    nullable: bool = False
    doc: str = ""
    must: str | None = None
    check: Callable[[Any], bool] | None = field(default=None, compare=False)
    show_type: bool = False
    columns: bool = False

    def __post_init__(self) -> None:
        if self.closed not in _CLOSED:
            raise ValueError(f"Param(closed={self.closed!r}): closed must be one of {_CLOSED}.")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def in_bounds(self, value: float) -> bool:
        """Whether the number ``value`` is within ``low`` and ``high`` (see ``closed``).

        >>> p = Param(kind="number", low=0, high=1, closed="left")
        >>> p.in_bounds(0), p.in_bounds(0.5), p.in_bounds(1)
        (True, True, False)
        """
        low_open, high_open = self.closed in ("right", "neither"), self.closed in ("left",
                                                                                "neither")
        above = self.low is None or (value > self.low if low_open else value >= self.low)
        below = self.high is None or (value < self.high if high_open else value <= self.high)
        return above and below

    def describe(self) -> str:
        """The constraint in words, as used in error messages."""
        if self.must is not None:
            return self.must
        if self.choices is not None:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        else:
            text = _range_text(self.kind, self.low, self.high, self.closed)
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

    def validate(self, owner: str | None, name: str, value: Any) -> Any:
        """Return ``value`` (lists become lists) or raise
        :class:`~interactive_recsys.ParameterError`.

        ``owner`` (the operator, model or function) is named in the message when given.
        """
        if value is None and self.nullable:
            return None
        ok = value is not None and (
            value in self.choices if self.choices is not None else _KIND_CHECK[self.kind](value))
        if ok and self.choices is None and _is_number(value):
            ok = self.in_bounds(value)
        if ok and self.check is not None:
            ok = bool(self.check(value))
        if not ok:
            got = f"{value!r} ({type(value).__name__})" if self.show_type else repr(value)
            raise param_error(name, owner, f"must be {self.describe()}. Got {got} instead.")
        if self.kind in ("numbers", "strs"):
            return list(value)
        return value


def param_error(name: str | Sequence[str], owner: str | None, text: str, *,
                error: type[Exception] = ParameterError) -> Exception:
    """The error for parameter ``name`` (or several together) of ``owner``: the one template
    "The 'name' parameter[ of owner] <text>" shared by every parameter message.

    >>> print(param_error("k", "top", "must be > 0. Got -1 instead."))
    The 'k' parameter of top must be > 0. Got -1 instead.
    >>> print(param_error(("a", "b"), None, "must not both be set."))
    The 'a' and 'b' parameters must not both be set.
    """
    if isinstance(name, str):
        subject = f"The {name!r} parameter"
    else:
        subject = "The " + " and ".join(repr(n) for n in name) + " parameters"
    return error(f"{subject}{f' of {owner}' if owner else ''} {text}")


def declared_params(cls: type, inherited: dict[str, Param] | None = None) -> dict[str, Param]:
    """The :class:`Param` class attributes of ``cls`` after ``inherited``, removed from the
    class (the instance holds the values); for ``__init_subclass__`` of operators and models.
    """
    declared = dict(inherited or {})
    for name, value in list(vars(cls).items()):
        if isinstance(value, Param):
            declared[name] = value
            delattr(cls, name)
    return declared


def validate_values(owner: str | None, specs: dict[str, Param],
                    values: dict[str, Any]) -> dict[str, Any]:
    """Every parameter of ``specs``: its value from ``values`` validated, else its default.

    Raises :class:`~interactive_recsys.ParameterError` naming an unknown or missing parameter.
    """
    unknown = sorted(set(values) - set(specs))
    if unknown:
        raise ParameterError(f"{owner} has no parameter {unknown[0]!r}; its parameters are: "
                             f"{', '.join(specs) or 'none'}.")
    out = {}
    for name, spec in specs.items():
        if name in values:
            out[name] = spec.validate(owner, name, values[name])
        elif spec.required:
            raise ParameterError(f"{owner} needs the {name!r} parameter ({spec.describe()}): "
                                 f"{spec.doc}")
        else:
            out[name] = spec.default
    return out


F = TypeVar("F", bound=Callable[..., Any])


def validate_params(constraints: dict[str, Param], *, owner: str | None = None
                    ) -> Callable[[F], F]:
    """Decorate a function so its arguments named in ``constraints`` are validated on each
    call (as scikit-learn's ``validate_params``); ``owner`` is named in the messages.

    A validated argument is passed on as :meth:`Param.validate` returns it (lists as lists).
    The function keeps its signature and docstring.
    """
    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        missing = sorted(set(constraints) - set(signature.parameters))
        if missing:
            raise TypeError(f"validate_params: {func.__qualname__} has no argument(s) {missing}.")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, spec in constraints.items():
                bound.arguments[name] = spec.validate(owner, name, bound.arguments[name])
            return func(*bound.args, **bound.kwargs)

        wrapper.__validate_params__ = constraints  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
