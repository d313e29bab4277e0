"""Checking a fitted state read from a saved workflow against the shape its operator writes.

A shape is a small spec: ``"number?"`` (finite number or null), ``"number>=0?"`` (the
same, not negative: a standard deviation), ``"int"`` (whole
number >= 0), ``"splits"`` (1 to ``MAX_SPLITS``), ``"str"``, ``"any"``, ``("map", shape)``
(object of any keys), ``("list", shape)``, or a dict ``{key: shape}`` (an object with at
least these keys).

>>> check_shape({"means": {"x": 1.5}, "stds": {"x": "a"}},
...             {"means": ("map", "number?"), "stds": ("map", "number?")})
Traceback (most recent call last):
...
ValueError: stds['x'] must be a number or null, got str
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from interactive_recsys.tables._reduce import MAX_SPLITS

#: A statistics table written under the artifacts (Categorify, JoinGroupby, TargetEncoding).
TABLE = {"path": "str", "splits": "splits", "size": "int"}


def _kind(value: Any) -> str:
    return type(value).__name__


def _all_fit(values: list[Any], shape: Any) -> bool:
    """Whether every element of ``values`` fits a scalar ``shape``, checked without a Python
    call per element (False: look element by element for the first that does not fit)."""
    if shape == "any":
        return True
    types = set(map(type, values))  # gathered in C
    if shape == "str":
        return types <= {str}
    if shape == "int":
        return types <= {int} and (not values or min(values) >= 0)
    if shape in ("number?", "number>=0?"):
        if not types <= {int, float, type(None)}:
            return False
        numbers = [v for v in values if v is not None] if type(None) in types else values
        if not numbers:
            return True
        try:
            array = np.asarray(numbers, dtype=np.float64)
        except OverflowError:  # an integer past float64: the element walk names it
            return False
        return bool(np.isfinite(array).all()) and (shape == "number?" or bool(
            (array >= 0).all()))
    return False


def check_shape(value: Any, shape: Any, where: str = "") -> None:
    """Raise ``ValueError`` naming the first entry of ``value`` that does not fit ``shape``."""
    here = where or "the state"
    if shape == "any":
        return
    if shape in ("number?", "number>=0?"):
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(f"{here} must be a number or null, got {_kind(value)}")
        if shape == "number>=0?" and value < 0:
            raise ValueError(f"{here} must be >= 0 or null (a spread), got {value!r}")
        return
    if shape in ("int", "splits"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (
                shape == "splits" and not 1 <= value <= MAX_SPLITS):
            limits = f"in [1, {MAX_SPLITS}]" if shape == "splits" else ">= 0"
            raise ValueError(f"{here} must be a whole number {limits}, got {value!r:.40}")
        return
    if shape == "str":
        if not isinstance(value, str):
            raise ValueError(f"{here} must be a string, got {_kind(value)}")
        return
    if isinstance(shape, tuple):
        kind, inner = shape
        if kind == "map":
            if not isinstance(value, dict):
                raise ValueError(f"{here} must be an object, got {_kind(value)}")
            for k, v in value.items():
                check_shape(v, inner, f"{where}[{k!r}]")
        else:
            if not isinstance(value, list):
                raise ValueError(f"{here} must be a list, got {_kind(value)}")
            if _all_fit(value, inner):  # one pass in C for a long list of scalars
                return
            for i, v in enumerate(value):
                check_shape(v, inner, f"{where}[{i}]")
        return
    if not isinstance(value, dict):
        raise ValueError(f"{here} must be an object, got {_kind(value)}")
    for key, inner in shape.items():
        if key not in value:
            raise ValueError(f"{here} has no {key!r}")
        check_shape(value[key], inner, f"{where}.{key}" if where else key)
