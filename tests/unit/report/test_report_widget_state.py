"""``irs report`` on a notebook saved without its widget state: a hint on stderr and in the page."""

from __future__ import annotations

from pathlib import Path

import nbformat

from interactive_recsys.cli._main import main
from interactive_recsys.report._widget_state import (
    MISSING_STATE_HINT,
    WIDGET_STATE,
    WIDGET_VIEW,
    widgets_without_state,
)

HINT = ("the notebook was saved without its widget state: in JupyterLab, Settings > Save "
        "Widget State Automatically, then save the notebook again")


def _studio_notebook(path: Path, *, saved_state: bool) -> Path:
    """A notebook as JupyterLab saves it after showing a widget: the output refers to a
    model id, and the model's state is in the metadata only if the setting was on."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    view = {"model_id": "m-studio", "version_major": 2, "version_minor": 0}
    nb.cells = [
        nbformat.v4.new_code_cell("print('rows: 42')", execution_count=1, outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="rows: 42\n")]),
        nbformat.v4.new_code_cell("studio", execution_count=2, outputs=[
            nbformat.v4.new_output("display_data", data={
                WIDGET_VIEW: view, "text/plain": "Studio(columns=4, steps=2)"})]),
    ]
    if saved_state:
        nb.metadata["widgets"] = {WIDGET_STATE: {"version_major": 2, "version_minor": 0,
                                                 "state": {"m-studio": {
            "model_module": "@jupyter-widgets/controls", "model_name": "HTMLModel",
            "model_module_version": "2.0.0",
            "state": {"value": "<b>the studio's header</b>"}}}}}
    nbformat.write(nb, path)
    return path


def test_missing_widget_state_is_explained_on_stderr_and_in_the_page(tmp_path, capsys):
    path = _studio_notebook(tmp_path / "mine.ipynb", saved_state=False)
    assert MISSING_STATE_HINT == HINT
    assert widgets_without_state(nbformat.read(path, as_version=4)) == 1
    out = tmp_path / "mine.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"irs report: {HINT}"]  # exactly one line
    page = out.read_text()
    assert "1 widget is shown as text only" in page
    assert HINT.replace(">", "&gt;") in page
    assert "Studio(columns=4, steps=2)" in page and "rows: 42" in page
    # the note sits in the body, before the first cell
    assert page.index("irs-report-note") < page.index("rows: 42")
    assert page.index("<body") < page.index("irs-report-note")


def test_no_hint_when_the_widget_state_was_saved(tmp_path, capsys):
    path = _studio_notebook(tmp_path / "saved.ipynb", saved_state=True)
    out = tmp_path / "saved.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    assert "widget state" not in capsys.readouterr().err
    page = out.read_text()
    assert "irs-report-note" not in page
    assert "<b>the studio's header</b>" in page  # drawn from the saved state
