"""The API reference documents the public packages and modules, never a private ``_name`` one.

These check the pages the generator (docs/_ext/irs_api.py) writes, without building the site
(tests/.../test_docs.py builds it).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import irs_api  # noqa: E402

PUBLIC = ["interactive_recsys.io", "interactive_recsys.store", "interactive_recsys.store.storage",
          "interactive_recsys.store.commit", "interactive_recsys.workflow",
          "interactive_recsys.runtime", "interactive_recsys.runtime.cluster",
          "interactive_recsys.runtime.jobs", "interactive_recsys.runtime.monitor",
          "interactive_recsys.report", "interactive_recsys.ui", "interactive_recsys.ui.builder",
          "interactive_recsys.ui.dashboard", "interactive_recsys.ui.studio",
          "interactive_recsys.loader", "interactive_recsys.models", "interactive_recsys.ops",
          "interactive_recsys.params", "interactive_recsys.cli"]


def test_the_public_packages_and_modules_have_pages_by_their_real_names():
    pages = irs_api.all_pages()
    assert sorted(set(PUBLIC) - set(pages)) == []
    for name in PUBLIC:
        assert f".. automodule:: {name}\n" in pages[name], name


def test_no_page_documents_a_private_module():
    pages = irs_api.all_pages()
    private = [name for name in pages if any(p.startswith("_") for p in name.split("."))]
    assert private == []
    shown = [m for text in pages.values()
             for m in re.findall(r"automodule:: (\S+)\n   :no-members:\n(?!   :no-index:)", text)]
    assert len(shown) >= len(PUBLIC)
    assert [m for m in shown if any(p.startswith("_") for p in m.split("."))] == []


def test_a_package_page_links_every_name_of_its_all_to_a_page():
    """Each name in ``__all__`` links to the one page that describes it (its own, or the
    top-level one: ``interactive_recsys.io``'s ``Dataset`` is ``irs.Dataset``'s page), or is
    a constant documented on the package's page."""
    pages = irs_api.all_pages()
    for name in ["interactive_recsys.io", "interactive_recsys.workflow",
                 "interactive_recsys.models", "interactive_recsys.report"]:
        module = importlib.import_module(name)
        links = dict(re.findall(r":doc:`(\w+) <([\w.]+)>`", pages[name]))
        constants = set(re.findall(r"autodata:: (\w+)", pages[name]))  # on the page itself
        assert set(module.__all__) <= set(links) | constants, name
        assert all(target in pages for target in links.values()), name
    io_links = dict(re.findall(r":doc:`(\w+) <([\w.]+)>`", pages["interactive_recsys.io"]))
    assert io_links["Dataset"] == "interactive_recsys.Dataset"
    assert io_links["write_dataset"] == "interactive_recsys.io.write_dataset"


def test_each_object_is_described_on_one_page():
    """No two pages autodoc the same object (Sphinx would warn of a duplicate description)."""
    described: dict[int, list[str]] = {}
    for page, text in irs_api.all_pages().items():
        for name in re.findall(r"\.\. (?:autoclass|autofunction|autoexception):: (\w+)", text):
            module = re.search(r"currentmodule:: (\S+)", text).group(1)
            obj = getattr(importlib.import_module(module), name)
            described.setdefault(id(obj), []).append(page)
    assert len(described) > 100
    assert {k: v for k, v in described.items() if len(v) > 1} == {}


def test_the_aliases_point_to_the_real_module():
    pages = irs_api.all_pages()
    assert ":doc:`interactive_recsys.runtime.cluster <interactive_recsys.runtime.cluster>`" \
        in pages["interactive_recsys.cluster"]
    assert "interactive_recsys.store.storage" in pages["interactive_recsys.storage"]
