"""Safe column expressions: ``"rating >= 4"``, ``"x * 2 + 1"``, ``"log1p(clicks)"``;
column names that are not identifiers in backticks, as in pandas' ``query``: ```a.b` > 1``.

An expression is parsed with :mod:`ast` and only arithmetic, comparisons, boolean
logic, column names, constants and a few whitelisted functions are allowed, so a
saved workflow that holds expressions never runs arbitrary code when loaded.

>>> import pandas as pd
>>> evaluate("a + b > 2", {"a": pd.Series([1, 2]), "b": pd.Series([1, 1])}).tolist()
[False, True]
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from interactive_recsys.errors import ParameterError

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


#: Bounds that keep parsing and evaluating an expression fast and small.
MAX_LENGTH = 10_000  # characters of the expression
MAX_DEPTH = 50  # nesting of the syntax tree
MAX_INT = 2**64  # magnitude of an integer constant (also of a constant sub-expression)
MAX_STRING = 10_000  # characters of a string constant (also of a repeated string)
_NOT_CONSTANT = object()


def _refuse(expr: str, what: str) -> ParameterError:
    shown = expr if len(expr) <= 80 else expr[:60] + "..." + expr[-12:]
    return ParameterError(f"The expression {shown!r} {what}.")


def _depth(tree: ast.AST) -> int:
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _fold(node: ast.AST, expr: str) -> Any:
    """The value of a constant-only sub-expression (checked against the bounds), or
    ``_NOT_CONSTANT``; refuses constants, powers and repetitions too large to compute."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise _refuse(expr, f"holds the integer constant {str(value)[:20]}..., larger than "
                                f"2**64; use a smaller number")
        if isinstance(value, str | bytes) and len(value) > MAX_STRING:
            raise _refuse(expr, f"holds a string constant of {len(value):,} characters (at most "
                                f"{MAX_STRING:,})")
        return value
    values = [_fold(child, expr) for child in ast.iter_child_nodes(node)
              if isinstance(child, ast.expr)]
    if isinstance(node, ast.BinOp):
        left, right = values
        if isinstance(node.op, ast.Mult) and (isinstance(left, str | bytes)
                                              or isinstance(right, str | bytes)):
            count = right if isinstance(left, str | bytes) else left
            text = left if isinstance(left, str | bytes) else right
            if count is _NOT_CONSTANT or not isinstance(count, int) or \
                    len(text) * max(count, 0) > MAX_STRING:
                times = "by a column" if count is _NOT_CONSTANT else f"{count!r} times"
                raise _refuse(expr, f"repeats a string {times}; repetition is limited to "
                                    f"{MAX_STRING:,} characters")
        if isinstance(node.op, ast.Pow) and isinstance(right, int | float) \
                and not isinstance(right, bool):
            if abs(right) > 1024:
                raise _refuse(expr, f"raises to the power {right!r}; exponents are limited to "
                                    "[-1024, 1024]")
            if isinstance(left, int) and not isinstance(left, bool) and abs(left) > 1 \
                    and right * math.log2(abs(left)) > 64:
                raise _refuse(expr, f"computes {left!r} ** {right!r}, a number larger than "
                                    "2**64")
    if isinstance(node, ast.BinOp | ast.UnaryOp) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        try:  # fold numbers: each step stays within the bounds checked above
            value = _eval(node, {}, expr)
        except (ArithmeticError, ValueError, TypeError):
            return _NOT_CONSTANT  # e.g. 1 / 0: left to the data's own rules
        if isinstance(value, int) and abs(value) > MAX_INT:
            raise _refuse(expr, "computes an integer larger than 2**64")
        return value
    return _NOT_CONSTANT


def _backticks(expr: str) -> tuple[str, dict[str, str]]:
    """``expr`` with each backticked column name (```a.b` > 1``, as in pandas' ``query``)
    replaced by a placeholder identifier, and the placeholders' column names.

    >>> _backticks("`a.b` > 1 and `c d` == 'x`y'")
    ("__irs_bt0__ > 1 and __irs_bt1__ == 'x`y'", {'__irs_bt0__': 'a.b', '__irs_bt1__': 'c d'})
    """
    out, names, quote, i = [], {}, None, 0
    while i < len(expr):
        ch = expr[i]
        if quote is not None:  # inside a string constant: copied as is
            out.append(ch)
            if ch == "\\" and i + 1 < len(expr):
                out.append(expr[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "`":
            end = expr.find("`", i + 1)
            if end < 0:
                raise _refuse(expr, "has a ` without its closing `")
            if end == i + 1:
                raise _refuse(expr, "has an empty column name ``")
            placeholder = f"__irs_bt{len(names)}__"
            names[placeholder] = expr[i + 1:end]
            out.append(placeholder)
            i = end
        else:
            out.append(ch)
        i += 1
    return "".join(out), names


def parse(expr: str) -> ast.Expression:
    """Parse and check an expression; raise :class:`ParameterError` naming what is not allowed.

    Constants, powers, string repetition, length and nesting are bounded (``MAX_*``), so a
    saved expression can neither hang nor exhaust memory:

    >>> try:
    ...     parse("9 ** 9 ** 9")
    ... except ParameterError as exc:
    ...     print(str(exc)[:58])
    The expression '9 ** 9 ** 9' raises to the power 387420489
    """
    if not isinstance(expr, str):
        raise ParameterError(f"An expression must be a string; got {type(expr).__name__}.")
    if len(expr) > MAX_LENGTH:
        raise _refuse(expr, f"has {len(expr):,} characters; expressions are limited to "
                            f"{MAX_LENGTH:,}")
    source, quoted = _backticks(expr)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise _refuse(expr, f"cannot be parsed: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise _refuse(expr, f"nests too deeply (at most {MAX_DEPTH} levels)") from None
    if _depth(tree) > MAX_DEPTH:
        raise _refuse(expr, f"nests too deeply (at most {MAX_DEPTH} levels)")
    for node in ast.walk(tree):
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Name,
                   ast.Constant, ast.Load, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd,
                   ast.Invert, ast.Call, *_BINARY, *_COMPARE)
        if not isinstance(node, allowed):
            raise ParameterError(f"The expression {expr!r} uses {type(node).__name__}, which is "
                                 "not allowed; use column names, numbers, strings, arithmetic, "
                                 f"comparisons, and/or/not and the functions {sorted(_FUNCTIONS)}"
                                 "; put a column name with dots, spaces or symbols in "
                                 "backticks, e.g. `a.b` > 1.")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCTIONS):
            raise ParameterError(f"The expression {expr!r} calls an unknown function; allowed "
                                 f"functions are {sorted(_FUNCTIONS)}.")
    _fold(tree.body, expr)
    for node in ast.walk(tree):  # backticked names back to the column names
        if isinstance(node, ast.Name) and node.id in quoted:
            node.id = quoted[node.id]
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
