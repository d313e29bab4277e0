"""Safe column expressions: ``"rating >= 4"``, ``"x * 2 + 1"``, ``"log1p(clicks)"``.

An expression is parsed with :mod:`ast` and only arithmetic, comparisons, boolean
logic, column names, constants and a few whitelisted functions are allowed, so a
saved workflow that holds expressions never runs arbitrary code when loaded.

>>> import pandas as pd
>>> evaluate("a + b > 2", {"a": pd.Series([1, 2]), "b": pd.Series([1, 1])}).tolist()
[False, True]
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ParameterError

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCTIONS = {
    "abs": lambda s: s.abs(),
    "log1p": lambda s: np.log1p(s.astype("float64")),
    "sqrt": lambda s: np.sqrt(s.astype("float64")),
    "isnull": lambda s: s.isna(),
    "notnull": lambda s: s.notna(),
    "fillna": lambda s, v: s.fillna(v),
}


def parse(expr: str) -> ast.Expression:
    """Parse and check an expression; raise :class:`ParameterError` naming what is not allowed."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ParameterError(f"Cannot parse the expression {expr!r}: {exc.msg}.") from None
    for node in ast.walk(tree):
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Name,
                   ast.Constant, ast.Load, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
                   ast.Invert, ast.Call, *_BINARY, *_COMPARE)
        if not isinstance(node, allowed):
            raise ParameterError(f"The expression {expr!r} uses {type(node).__name__}, which is "
                                 "not allowed; use column names, numbers, strings, arithmetic, "
                                 f"comparisons, and/or/not and the functions {sorted(_FUNCTIONS)}.")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCTIONS):
            raise ParameterError(f"The expression {expr!r} calls an unknown function; allowed "
                                 f"functions are {sorted(_FUNCTIONS)}.")
    return tree


def names_in(expr: str) -> set[str]:
    """Column names an expression reads."""
    return {n.id for n in ast.walk(parse(expr)) if isinstance(n, ast.Name)
            and n.id not in _FUNCTIONS}


def evaluate(expr: str, columns: Mapping[str, Any]) -> Any:
    """Evaluate ``expr`` with column names bound to Series (pandas or cuDF)."""
    return _eval(parse(expr).body, columns, expr)


def _eval(node: ast.AST, cols: Mapping[str, Any], expr: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in cols:
            raise ParameterError(f"The expression {expr!r} reads column {node.id!r}, which is not "
                                 f"among its input columns {sorted(cols)}.")
        return cols[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, cols, expr), _eval(node.right, cols, expr))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, cols, expr)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return value
        return ~value
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, cols, expr) for v in node.values]
        combine = operator.and_ if isinstance(node.op, ast.And) else operator.or_
        out = values[0]
        for v in values[1:]:
            out = combine(out, v)
        return out
    if isinstance(node, ast.Compare):
        left = _eval(node.left, cols, expr)
        result = None
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, cols, expr)
            part = _COMPARE[type(op)](left, right)
            result = part if result is None else result & part
            left = right
        return result
    if isinstance(node, ast.Call):
        args = [_eval(a, cols, expr) for a in node.args]
        return _FUNCTIONS[node.func.id](*args)  # type: ignore[attr-defined]
    raise ParameterError(f"Unsupported syntax in {expr!r}.")  # pragma: no cover - parse() checks
