"""The package's modules stay readable: none over 500 lines, no function over 80 (counted from
``def`` to its last line, docstring included)."""

from __future__ import annotations

import ast
import pathlib

import interactive_recsys

ROOT = pathlib.Path(interactive_recsys.__file__).parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def long_functions(source: str, limit: int) -> list[str]:
    return [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > limit]


def test_the_scan_finds_a_long_function():
    assert long_functions("def f():\n" + "    x = 1\n" * 3, 3) == ["f (4 lines)"]
    assert long_functions("class C:\n    def g(self):\n        pass\n", 1) == ["g (2 lines)"]


def test_no_module_over_500_lines_and_no_function_over_80():
    modules = sorted(ROOT.rglob("*.py"))
    assert len(modules) > 100
    too_long = {}
    for path in modules:
        text = path.read_text()
        found = long_functions(text, MAX_FUNCTION_LINES)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"module ({len(text.splitlines())} lines)")
        if found:
            too_long[str(path.relative_to(ROOT))] = found
    assert too_long == {}
