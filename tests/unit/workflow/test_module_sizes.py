"""The workflow's modules stay readable: none over 500 lines, no function over 80."""

from __future__ import annotations

import ast
import pathlib

import interactive_recsys

FOLDER = pathlib.Path(interactive_recsys.__file__).parent / "workflow"


def long_functions(source: str, limit: int) -> list[str]:
    return [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > limit]


def test_the_scan_finds_a_long_function():
    assert long_functions("def f():\n" + "    x = 1\n" * 3, 3) == ["f (4 lines)"]


def test_no_long_module_or_function_in_the_workflow():
    modules = sorted(FOLDER.glob("*.py"))
    assert len(modules) > 5
    for path in modules:
        text = path.read_text()
        assert len(text.splitlines()) <= 500, path.name
        assert long_functions(text, 80) == [], path.name
