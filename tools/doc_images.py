"""Pictures of the tutorials' widgets for the docs: each notebook of ``notebooks/`` that shows
a widget is run in a real JupyterLab with headless Chromium (:mod:`tools.lab`) 1440 pixels wide, and
every widget output is photographed whole (the window made as tall as it) as the reader of
the notebook sees it once all cells ran.

The PNGs go to ``docs/images/tutorials/`` with ``manifest.json``: per notebook, its pictures
by cell id and the fingerprint of what drew them (:func:`fingerprint`: the notebook's code,
the widgets' browser sources and ``interactive_recsys/ui``). The docs show a picture in place
of each widget (``docs/_ext/irs_tutorials.py``); a test fails when a fingerprint no longer
matches, naming the command that makes the pictures again::

    python -m tools.doc_images            # every notebook with a widget
    python -m tools.doc_images 02 04      # those whose names start with 02 or 04

>>> sorted(widget_cells(ROOT / "notebooks" / "02_visual_builder.ipynb"))[:1] != []
True
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images" / "tutorials"
MANIFEST = OUT / "manifest.json"
VIEWPORT = {"width": 1440, "height": 900}
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
COMMAND = "python -m tools.doc_images"
#: Seconds a notebook may take to run in the browser.
RUN_TIMEOUT_S = 900.0


def widget_cells(notebook: Path) -> list[str]:
    """Ids of the code cells whose stored outputs show a widget, in notebook order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [c["id"] for c in cells if c["cell_type"] == "code" and any(
        WIDGET_MIME in o.get("data", {}) for o in c.get("outputs", []))]


def widget_notebooks() -> list[Path]:
    """The notebooks of ``notebooks/`` that show at least one widget."""
    return [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if widget_cells(p)]


def _ui_sources() -> list[Path]:
    ui = ROOT / "interactive_recsys" / "ui"
    return sorted([*ui.rglob("*.py"), *(ROOT / "widgets").rglob("*.*")])


def fingerprint(notebook: Path) -> str:
    """SHA-256 of what draws the notebook's widgets: its code cells' sources (not their
    outputs), every file of ``widgets/`` and every module of ``interactive_recsys/ui``."""
    digest = hashlib.sha256()
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell["cell_type"] == "code":
            source = cell["source"]
            digest.update(("".join(source) if isinstance(source, list) else source).encode())
            digest.update(b"\0")
    for path in _ui_sources():
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes().replace(b"\r\n", b"\n"))
    return digest.hexdigest()


def image_name(notebook: Path, cell_id: str) -> str:
    return f"{notebook.stem}-{cell_id}.png"


def read_manifest() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"notebooks": {}}


def photograph(notebook: Path, lab_page, timeout: float = RUN_TIMEOUT_S) -> dict[str, str]:
    """Run ``notebook`` in the page's JupyterLab and save a PNG of each widget output;
    returns cell id -> file name."""
    name = lab_page.copy_notebook(notebook)
    lab_page.open_notebook(name)
    lab_page.run_all(timeout=timeout)
    page = lab_page.page
    page.wait_for_timeout(3000)  # plots and widgets finish drawing
    ids = widget_cells(notebook)
    code_ids = [c["id"] for c in json.loads(notebook.read_text())["cells"]
                if c["cell_type"] == "code"]
    shots = {}
    for cell_id in ids:
        cell = page.locator(".jp-NotebookPanel .jp-CodeCell").nth(code_ids.index(cell_id))
        widget = cell.locator(".jp-OutputArea-output").filter(
            has=page.locator(".jupyter-widgets")).first
        widget.scroll_into_view_if_needed()
        # a window as tall as the widget (as wide as a laptop's): JupyterLab's bars would
        # cover the part of a taller widget that scrolls under them
        height = int(widget.bounding_box()["height"]) + 240
        page.set_viewport_size({"width": VIEWPORT["width"],
                                "height": max(VIEWPORT["height"], height)})
        widget.evaluate("el => el.scrollIntoView({block: 'center'})")
        page.wait_for_timeout(1000)
        shots[cell_id] = image_name(notebook, cell_id)
        widget.screenshot(path=str(OUT / shots[cell_id]))
        page.set_viewport_size(VIEWPORT)
    return shots


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    from tools.lab import CHROMIUM_ARGS, LabPage, LabServer

    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("prefixes", nargs="*", help="notebook name prefixes (default: all)")
    args = parser.parse_args(argv)
    chosen = [p for p in widget_notebooks()
              if not args.prefixes or p.name.startswith(tuple(args.prefixes))]
    if not chosen:
        parser.error(f"no notebook with a widget starts with {args.prefixes}")
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest()
    work = Path(tempfile.mkdtemp(prefix="irs-doc-images-"))
    server = LabServer(work / "root", work / "state", work / "lab.log")
    (work / "root").mkdir()
    try:
        server.start()
        with sync_playwright() as p:
            browser = p.chromium.launch_persistent_context(
                str(work / "profile"), headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT,
                executable_path=os.environ.get("IRS_CHROMIUM", "/usr/bin/chromium"))
            browser.set_default_timeout(60_000)
            for notebook in chosen:
                page = browser.new_page()
                lab = LabPage(server, page, work)
                print(f"{notebook.name}: running it in JupyterLab...", file=sys.stderr)
                for old in OUT.glob(f"{notebook.stem}-*.png"):
                    old.unlink()
                shots = photograph(notebook, lab)
                manifest["notebooks"][notebook.name] = {
                    "fingerprint": fingerprint(notebook), "images": shots}
                server.shutdown_kernels()
                page.close()
                print(f"{notebook.name}: {len(shots)} picture(s)", file=sys.stderr)
            browser.close()
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    manifest["made_by"] = COMMAND
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
