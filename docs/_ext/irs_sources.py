"""Documents whose source is not a file under ``docs/``: the build writes nothing there.

Sphinx finds a site's documents by listing its source folder, so tools that generate pages
(autosummary and the like) write them into it, and a read-only checkout cannot build. Here
an extension declares its documents instead, each as (document name, source file), with
:func:`add_documents` at ``builder-inited``; the file is anywhere: a notebook of
``notebooks/`` as it is, or a page written under the build folder (:func:`build_folder`).
After Sphinx has listed ``docs/`` (``env-get-outdated``), the declared documents join the
site as if they were there: read when new or changed, kept between incremental builds.

Sphinx has no public API for a document outside the source folder; this uses the mapping
of its ``Project`` (document name <-> source path, Sphinx >= 7.2), and says so loudly if a
later Sphinx changes it. ``html_copy_source`` is off (no "show source" link), so the HTML
builder never derives a file name from those paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.errors import ExtensionError


def build_folder(app: Sphinx, name: str) -> Path:
    """A folder for generated sources, inside the build's doctree folder (``-d``; by default
    ``OUTDIR/.doctrees``), never inside ``docs/``."""
    folder = Path(app.doctreedir) / "irs-sources" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds it (an unchanged page keeps its
    time, so an incremental build does not read it again); whether it wrote."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def add_documents(app: Sphinx, documents: dict[str, Path]) -> None:
    """Declare ``documents`` (document name -> source path) for this build."""
    declared = app.__dict__.setdefault("_irs_documents", {})
    declared.update({name: Path(path).resolve() for name, path in documents.items()})


def declared_documents(app: Sphinx) -> dict[str, Path]:
    return dict(app.__dict__.get("_irs_documents", {}))


def _join(app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str],
          removed: set[str]) -> list[str]:
    project = env.project
    if not (hasattr(project, "_docname_to_path") and hasattr(project, "_path_to_docname")):
        raise ExtensionError("irs_sources: this Sphinx's Project has no document <-> path "
                             "mapping; docs/_ext/irs_sources.py needs updating")
    outdated = []
    for name, path in declared_documents(app).items():
        project.docnames.add(name)
        project._docname_to_path[name] = path
        project._path_to_docname[path] = name
        removed.discard(name)
        if name not in env.all_docs:
            added.add(name)
        elif path.stat().st_mtime_ns // 1000 > env.all_docs[name]:  # Sphinx's own test
            outdated.append(name)
    return outdated


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-get-outdated", _join)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
