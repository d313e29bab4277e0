"""The layer table of docs/develop/architecture.md is the import test's ``LAYERS``, bottom first.

The import test (``test_imports.py``) checks the package against ``LAYERS``; the guide shows
the same layers to people. This test reads the guide's table and compares it with ``LAYERS``
(loaded from the test's file), so that neither can change without the other.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
GUIDE = ROOT / "docs" / "develop" / "architecture.md"

#: A row of the layer table: ``| 3 | `io/` | what it holds |``.
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([\w.]+)/?`\s*\|(.*)\|\s*$")


def layer_table(text: str) -> list[set[str]]:
    """The layers of the Markdown table under ``## Layers``, bottom (layer 0) first: the names
    of each layer's folders (without their ``/``) and root modules.

    >>> [sorted(layer) for layer in layer_table(
    ...     "## Layers\\n\\n| layer | entry | holds |\\n| --- | --- | --- |\\n"
    ...     "| 0 | `errors` | error classes |\\n| 1 | `store/` | files |\\n"
    ...     "| 1 | `backend/` | kernels |\\n")]
    [['errors'], ['backend', 'store']]
    """
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [ROW.match(line) for line in section.splitlines() if line.startswith("|")]
    table = [(int(m.group(1)), m.group(2), m.group(3).strip()) for m in rows if m]
    assert table, "no rows of the form | layer | `entry` | holds | under '## Layers'"
    empty = [name for _, name, holds in table if not holds]
    assert not empty, f"rows with nothing in 'holds': {empty}"
    numbers = [number for number, _, _ in table]
    assert numbers == sorted(numbers), "the table is not bottom first (layer numbers go down)"
    assert sorted(set(numbers)) == list(range(max(numbers) + 1)), f"layers missing: {numbers}"
    layers: list[set[str]] = [set() for _ in range(max(numbers) + 1)]
    for number, name, _ in table:
        assert all(name not in layer for layer in layers), f"{name} is in the table twice"
        layers[number].add(name)
    return layers


def import_test_layers() -> list[set[str]]:
    """``LAYERS`` from the import test's own file (wherever the tests folder keeps it)."""
    found = sorted((ROOT / "tests").rglob("test_imports.py"))
    assert len(found) == 1, f"expected one test_imports.py under tests/, found {found}"
    spec = importlib.util.spec_from_file_location("_layers_of_the_import_test", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LAYERS


def test_the_guide_table_is_the_import_tests_layers():
    layers, table = import_test_layers(), layer_table(GUIDE.read_text())
    every_name = set().union(*layers)
    assert len(layers) >= 5 and len(every_name) >= 20  # the real table, not an empty one
    assert set().union(*table) == every_name, (
        f"in LAYERS only: {sorted(every_name - set().union(*table))}; "
        f"in the guide only: {sorted(set().union(*table) - every_name)}")
    assert table == layers


def test_the_comparison_sees_a_missing_or_moved_entry():
    """The check fails on a table that lost a row or put an entry on another layer."""
    text = GUIDE.read_text()
    layers = import_test_layers()
    missing = "\n".join(line for line in text.splitlines() if not line.startswith("| 1 | `store/`"))
    assert missing != text and layer_table(missing) != layers
    assert "store" not in set().union(*layer_table(missing))
    moved = text.replace("| 1 | `store/` |", "| 2 | `store/` |", 1)
    assert moved != text and "store" in layer_table(moved)[2] and layer_table(moved) != layers
    moved = text.replace("| 1 | `store/` |", "| 0 | `store/` |", 1)
    with pytest.raises(AssertionError, match="bottom first"):
        layer_table(moved)
    swapped = text.replace("| 6 | `torchrec` |", "| 6 | `torch_rec` |", 1)
    assert swapped != text and layer_table(swapped) != layers


def test_every_row_says_what_the_entry_holds():
    with pytest.raises(AssertionError, match="nothing in 'holds'"):
        layer_table("## Layers\n| 0 | `errors` |  |\n")
