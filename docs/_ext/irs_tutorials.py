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
"""

from __future__ import annotations

import json
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


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", copy_notebooks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
