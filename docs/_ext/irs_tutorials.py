"""The tutorials: the notebooks of ``notebooks/``, rendered from the outputs stored in them.

The notebooks stay where they are (the test suite runs them there with nbval); at build start
each is copied into the git-ignored ``docs/tutorials/generated/``, which
``docs/tutorials/index.md`` lists with a glob. A copy is rewritten only when the notebook
changed, and the copy of a notebook that is gone is removed. A copy, not a symbolic link:
links need privileges on Windows and are lost by some archive tools.

The copy leaves out one part of the stored outputs: Bokeh's kernel-side messages
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
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx


def copy_notebooks(app: Sphinx) -> None:
    source = Path(app.srcdir).parent / "notebooks"
    target = Path(app.srcdir) / "tutorials" / "generated"
    target.mkdir(parents=True, exist_ok=True)
    notebooks = {p.name: p for p in sorted(source.glob("*.ipynb"))}
    for old in target.iterdir():
        if old.name not in notebooks:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    for name, path in notebooks.items():
        copy = target / name
        text = static_copy(path.read_text(encoding="utf-8"))
        if not copy.exists() or copy.read_text(encoding="utf-8") != text:
            copy.write_text(text, encoding="utf-8")


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
    if not pagename.startswith("tutorials/generated/"):
        return
    source = Path(app.srcdir) / f"{pagename}.ipynb"
    version = bokeh_version(source.read_text(encoding="utf-8")) if source.exists() else None
    if version:  # on this page only (called during html-page-context)
        app.add_js_file(f"https://cdn.bokeh.org/bokeh/release/bokeh-{version}.min.js",
                        crossorigin="anonymous", priority=200)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", copy_notebooks)
    app.connect("html-page-context", add_bokehjs)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
