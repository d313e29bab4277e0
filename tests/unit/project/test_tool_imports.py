"""Benchmarks, docs tools and the repository's tools import no test module: what they share
with the tests (the JupyterLab + Chromium driver) lives in ``tools/``, which tests import
too. Imports are read with ``ast``, at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
#: Folders of the repository whose code must not import ``tests``.
FOLDERS = ("benchmarks", "docs", "tools", "scripts")


def imports_of_tests(source: str) -> list[str]:
    """The modules of ``tests`` that ``source`` imports (``tests`` itself included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [name for name in names if name == "tests" or name.startswith("tests.")]
    return found


def test_the_check_sees_an_import_of_tests():
    source = """
import os
import tests.helpers
from tests.browser.lab import LabPage
from tests import s3_server
from testsuite import x
from .tests import y

def f():
    import tests
"""
    assert sorted(imports_of_tests(source)) == ["tests", "tests", "tests.browser.lab",
                                              "tests.helpers"]
    assert imports_of_tests("import testsuite\nfrom tools.lab import LabPage\n") == []


def test_benchmarks_docs_and_tools_import_no_test_module():
    found = {}
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if "_build" in path.parts:
                continue
            hits = imports_of_tests(path.read_text())
            if hits:
                found[str(path.relative_to(REPO))] = hits
    assert (REPO / "tools" / "lab.py").is_file()
    assert found == {}, f"import from tools/ instead (or move the helper there): {found}"
