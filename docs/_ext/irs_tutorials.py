"""The tutorials: the notebooks of ``notebooks/``, rendered from the outputs stored in them.

The notebooks stay where they are (the test suite runs them there with nbval) and are read
from there: nothing is copied into ``docs/`` (``irs_sources``). Each is the document
``tutorials/generated/<name>``, and ``docs/tutorials/index.md``'s toctree lists them in file
order, in place of its ``<!-- irs-tutorials -->`` line.

A notebook is rendered without one part of its stored outputs: Bokeh's kernel-side messages
(``application/vnd.bokehjs_exec.v0+json``, empty data that tells the Jupyter extension which
plot to update), which have no meaning on a static page and no renderer in myst-nb. The same
output's JavaScript, HTML and text stay.

A widget output is shown as its picture: ``python -m tools.doc_images`` runs the notebook in
JupyterLab and photographs each widget (``docs/images/tutorials/``, listed in its
``manifest.json``); the picture replaces the widget's view, which a static page cannot draw
(its text form stays for readers without images). A test fails when a picture is older than
what draws it.

A notebook whose Bokeh plots were shown without BokehJS in the notebook itself (the kernel's
front end had it) gets BokehJS of the plots' version from Bokeh's CDN on its page, so the
plots draw there too.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from irs_sources import add_documents, declared_documents
from sphinx.application import Sphinx

PREFIX = "tutorials/generated/"
#: The line of ``tutorials/index.md`` that the notebooks' toctree entries replace.
MARKER = "<!-- irs-tutorials -->"
#: The widgets' pictures and their manifest, relative to the docs' source folder.
PICTURES = Path("images") / "tutorials"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def notebooks(app: Sphinx) -> dict[str, Path]:
    """Document name -> notebook, in file order."""
    folder = Path(app.srcdir).parent / "notebooks"
    return {f"{PREFIX}{path.stem}": path for path in sorted(folder.glob("*.ipynb"))}


def add_notebooks(app: Sphinx) -> None:
    add_documents(app, notebooks(app))


def render_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """A notebook without its kernel-only outputs; the tutorials' index with its toctree."""
    if docname.startswith(PREFIX):
        source[0] = static_copy(source[0], pictures(Path(app.srcdir), docname))
    elif docname == "tutorials/index":
        entries = "\n".join(name.removeprefix("tutorials/") for name in notebooks(app))
        source[0] = source[0].replace(MARKER, entries, 1)
        app.env.note_reread()  # by every build: a notebook may have been added or removed


#: Output types that only a live kernel's front end uses.
KERNEL_ONLY = ("application/vnd.bokehjs_exec.v0+json",)


def pictures(srcdir: Path, docname: str) -> dict[str, Path]:
    """Cell id -> the picture of its widget, for the notebook of ``docname``."""
    manifest = srcdir / PICTURES / "manifest.json"
    if not manifest.exists():
        return {}
    entry = json.loads(manifest.read_text()).get("notebooks", {}).get(
        docname.removeprefix(PREFIX) + ".ipynb", {})
    return {cell: srcdir / PICTURES / name for cell, name in entry.get("images", {}).items()}


def static_copy(text: str, shots: dict[str, Path] | None = None) -> str:
    """The notebook ``text`` without the outputs' :data:`KERNEL_ONLY` data, each widget
    view of a cell in ``shots`` (cell id -> PNG) replaced by that picture."""
    notebook = json.loads(text)
    for cell in notebook.get("cells", []):
        shot = (shots or {}).get(cell.get("id", ""))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if shot is not None and WIDGET_MIME in data:
                data.pop(WIDGET_MIME)
                data["image/png"] = base64.b64encode(shot.read_bytes()).decode()
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
