"""Export code in JupyterLab + headless Chromium at 1440x900: the code area fits its lines
in a monospace font; Copy puts exactly ``builder.model.export_code()`` on the clipboard
(read back from Chromium's clipboard) and, where the browser refuses the clipboard, selects
the code and says "press Ctrl+C"; Insert as a new cell puts the same text in a new cell
below the Studio's cell, not run (read back from the saved notebook).

Screenshot: ``export-code.png`` in the artifacts folder."""

from __future__ import annotations

import json
import time

from lab import CATS, VIEWPORT, click_button, make_frame, wait_message

from interactive_recsys.ui.builder.views._code_export import LINE_PX, MAX_LINES

STUDIO_CELL = "studio = irs.ui.Studio('clicks.parquet', preview_rows=300)\nstudio"
REFUSE_CLIPBOARD = ("() => { navigator.clipboard.writeText = () => Promise.reject("
                    "new DOMException('Write permission denied.', 'NotAllowedError')); }")


def saved_cells(path, code: str, timeout: float = 30) -> list[dict]:
    """The code cells of the saved notebook once one of them holds ``code``."""
    deadline = time.monotonic() + timeout
    cells: list[dict] = []
    while time.monotonic() < deadline:
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        if any("".join(c["source"]) == code for c in cells):
            return cells
        time.sleep(0.3)
    raise AssertionError(f"no saved cell holds the code: {cells}")


def open_studio_and_export(lab) -> None:
    make_frame().to_parquet(lab.server.root_dir / "clicks.parquet")
    lab.open_notebook(lab.write_notebook("export.ipynb", ["import interactive_recsys as irs",
                                                          STUDIO_CELL]))
    lab.run_all(timeout=90)
    page = lab.page
    page.locator(".irs-studio .irs-builder-columns").wait_for(timeout=30_000)
    for column in CATS:
        page.locator(f".irs-col-{column} input[type=checkbox]").check()
    click_button(page, "irs-op-Categorify")
    wait_message(page, "Added Categorify")
    click_button(page, "irs-btn-export")
    wait_message(page, "Exported code below")


def test_export_copy_and_insert(lab, browser_context):
    page = lab.page
    page.set_viewport_size(VIEWPORT)
    browser_context.grant_permissions(["clipboard-read", "clipboard-write"],
                                      origin=lab.server.url)
    try:
        open_studio_and_export(lab)
        area = page.locator(".irs-studio .irs-builder-code textarea")
        area.scroll_into_view_if_needed()
        shown = area.input_value()
        lines = shown.count("\n") + 1
        box = area.bounding_box()
        assert box["height"] >= min(lines, MAX_LINES) * LINE_PX, (box, lines)
        assert box["height"] <= MAX_LINES * LINE_PX + 40, box
        fits = area.evaluate("a => a.scrollHeight <= a.clientHeight + 1")
        assert fits == (lines <= MAX_LINES - 1), (lines, fits)
        font = area.evaluate("a => getComputedStyle(a).fontFamily").lower()
        assert "mono" in font, font
        assert area.evaluate("a => getComputedStyle(a).overflowY") == "auto"  # its own scroll

        page.locator(".irs-studio .irs-btn-copy-code").click()
        note = page.locator(".irs-studio .irs-code-export-note")
        note.filter(has_text="Copied").wait_for(timeout=10_000)
        lab.screenshot("export-code")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == shown

        # the text is what export_code() returns in the kernel
        lab.run_cell("open('exported.py', 'w').write(studio.builder.model.export_code())")
        assert (lab.server.root_dir / "exported.py").read_text() == copied

        # refused clipboard: the code is selected and the note says how to copy it
        page.evaluate(REFUSE_CLIPBOARD)
        page.locator(".irs-studio .irs-btn-copy-code").click()
        note.filter(has_text="press Ctrl+C").wait_for(timeout=10_000)
        chosen = area.evaluate("a => a.value.slice(a.selectionStart, a.selectionEnd)")
        assert chosen == shown

        page.locator(".irs-studio .irs-btn-insert-code").click()
        note.filter(has_text="Inserted as cell 3, below the Studio (not run)").wait_for(
            timeout=10_000)
        lab.menu("File", "Save Notebook")
        cells = saved_cells(lab.server.root_dir / "export.ipynb", copied)
        assert "".join(cells[1]["source"]) == STUDIO_CELL
        inserted = cells[2]
        assert "".join(inserted["source"]) == copied
        assert inserted["execution_count"] is None and inserted["outputs"] == []
        assert not lab.errors, lab.errors
    finally:
        browser_context.clear_permissions()
