"""Sphinx configuration of the interactive-recsys documentation.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (warnings are errors).

Three pieces of the site are generated at build start (``builder-inited``) by the
extensions in ``docs/_ext/``, into git-ignored ``generated/`` folders:

* ``irs_api``: one API page per public name of ``interactive_recsys`` and one per registered
  operator, with the operator's parameter table read from its declared ``Param``\\ s;
* ``irs_tutorials``: the notebooks of ``notebooks/``, copied as they are and rendered from
  their stored outputs (never executed);
* ``irs_performance``: the Performance page's tables, read from ``benchmarks/results/``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

from interactive_recsys import __version__  # noqa: E402

project = "interactive-recsys"
author = "the interactive-recsys developers"
copyright = "the interactive-recsys developers"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_nb",
    "irs_api",
    "irs_tutorials",
    "irs_performance",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "api/generated/_*",
                    "performance/generated/_*"]

# ---- MyST / notebooks ----------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# The notebooks are rendered from the outputs stored in them; they need a cluster, data and
# minutes to run, and their outputs are checked by nbval in the test suite instead.
nb_execution_mode = "off"

# ---- API reference -------------------------------------------------------------------------
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False
numpydoc_show_class_members = False  # members are documented on the class page itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# ---- the user guide's catch-all entry ----------------------------------------------------
#: guide/index.md lists the guide's pages in reading order, then a glob (``*``) that picks up
#: any page not listed yet. Sphinx warns when that glob matches nothing, so it is dropped
#: while every page is listed. tests/unit/project/test_docs.py checks that every page is in
#: the site.
GUIDE_INDEX = "guide/index"


def _drop_empty_glob(app, docname: str, source: list[str]) -> None:
    if docname != GUIDE_INDEX:
        return
    listed = set(re.findall(r"^([\w-]+)$", source[0], flags=re.MULTILINE))
    pages = {p.stem for p in (DOCS / "guide").glob("*.md")} - {"index"}
    if pages <= listed:
        source[0] = source[0].replace("\n*\n", "\n", 1)


def setup(app) -> None:
    app.connect("source-read", _drop_empty_glob)


# ---- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"interactive-recsys {version}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
# Single pages without a section to navigate: no left sidebar.
html_sidebars = {"performance": [], "changelog": [], "getting-started": []}
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
}
html_show_sourcelink = False
# Quotes stay as typed: parameter constraints and values quote Python strings ('int64').
smartquotes = False
