"""The tutorials: the notebooks of ``notebooks/``, rendered from the outputs stored in them.

The notebooks stay where they are (the test suite runs them there with nbval) and are read
from there: nothing is copied into ``docs/`` (``irs_sources``). Each is the document
``tutorials/generated/<name>``, and ``docs/tutorials/index.md``'s toctree lists them in file
order, in place of its ``<!-- irs-tutorials -->`` line.

A notebook is rendered without one part of its stored outputs: Bokeh's kernel-side messages
(``application/vnd.bokehjs_exec.v0+json``, empty data that tells the Jupyter extension which
plot to update), which have no meaning on a static page and no renderer in myst-nb. The same
output's JavaScript, HTML and text stay.

A notebook whose Bokeh plots were shown without BokehJS in the notebook itself (the kernel's
front end had it) gets BokehJS of the plots' version from Bokeh's CDN on its page, so the
plots draw there too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from irs_sources import add_documents, declared_documents
from sphinx.application import Sphinx

PREFIX = "tutorials/generated/"
#: The line of ``tutorials/index.md`` that the notebooks' toctree entries replace.
MARKER = "<!-- irs-tutorials -->"


def notebooks(app: Sphinx) -> dict[str, Path]:
    """Document name -> notebook, in file order."""
    folder = Path(app.srcdir).parent / "notebooks"
    return {f"{PREFIX}{path.stem}": path for path in sorted(folder.glob("*.ipynb"))}


def add_notebooks(app: Sphinx) -> None:
    add_documents(app, notebooks(app))


def render_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """A notebook without its kernel-only outputs; the tutorials' index with its toctree."""
    if docname.startswith(PREFIX):
        source[0] = static_copy(source[0])
    elif docname == "tutorials/index":
        entries = "\n".join(name.removeprefix("tutorials/") for name in notebooks(app))
        source[0] = source[0].replace(MARKER, entries, 1)
        app.env.note_reread()  # by every build: a notebook may have been added or removed


#: Output types that only a live kernel's front end uses.
KERNEL_ONLY = ("application/vnd.bokehjs_exec.v0+json",)


def static_copy(text: str) -> str:
    """The notebook ``text`` without the outputs' :data:`KERNEL_ONLY` data."""
    notebook = json.loads(text)
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            for key in ("data", "metadata"):
                for mime in KERNEL_ONLY:
                    output.get(key, {}).pop(mime, None)
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


#: A Bokeh plot's embedding script names the BokehJS version it needs.
_BOKEH_EMBED = re.compile(r'embed_document.*?\\?"version\\?":\\?"(\d+\.\d+\.\d+)\\?"', re.S)


def bokeh_version(notebook_text: str) -> str | None:
    """The BokehJS version a notebook's stored plots need from the page, or None when it has
    no such plots or loads BokehJS itself (``output_notebook()``'s output)."""
    if "_bokeh_onload_callbacks" in notebook_text:
        return None
    found = _BOKEH_EMBED.search(notebook_text)
    return found.group(1) if found else None


def add_bokehjs(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                doctree: Any) -> None:
    source = declared_documents(app).get(pagename)
    if source is None or not pagename.startswith(PREFIX):
        return
    version = bokeh_version(source.read_text(encoding="utf-8"))
    if version:  # on this page only (called during html-page-context)
        app.add_js_file(f"https://cdn.bokeh.org/bokeh/release/bokeh-{version}.min.js",
                        crossorigin="anonymous", priority=200)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("irs_sources")
    app.connect("builder-inited", add_notebooks)
    app.connect("source-read", render_source)
    app.connect("html-page-context", add_bokehjs)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
