"""Widget outputs a report cannot draw: the notebook was saved without its widget state.

JupyterLab writes the widgets' state into the notebook only when *Settings > Save Widget
State Automatically* is on. Without it each widget output keeps only its ``text/plain``
line (``Studio(...)``), and a report would show the Studio as that one line of text.
:func:`widgets_without_state` counts such outputs; the report then says why and how to fix
it (:data:`MISSING_STATE_HINT`), on stderr and at the top of the page.

>>> import nbformat
>>> nb = nbformat.v4.new_notebook()
>>> view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
>>> nb.cells.append(nbformat.v4.new_code_cell("studio", outputs=[nbformat.v4.new_output(
...     "display_data", data={WIDGET_VIEW: view, "text/plain": "Studio(...)"})]))
>>> widgets_without_state(nb)
1
>>> nb.metadata["widgets"] = {WIDGET_STATE: {"state": {"abc": {"state": {}}}}}
>>> widgets_without_state(nb)
0
"""

from __future__ import annotations

import html
from typing import Any

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

#: What the user reads, on stderr and in the report.
MISSING_STATE_HINT = ("the notebook was saved without its widget state: in JupyterLab, "
                      "Settings > Save Widget State Automatically, then save the notebook "
                      "again")


def widgets_without_state(nb: Any) -> int:
    """Number of widget outputs of ``nb`` (a notebook node) whose model has no saved state."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    missing = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if isinstance(view, dict) and view.get("model_id") not in state:
                missing += 1
    return missing


def missing_state_note(count: int) -> str:
    """The note at the top of a report with ``count`` widget outputs drawn as text only
    (empty when ``count`` is 0).

    >>> missing_state_note(0)
    ''
    >>> "Save Widget State Automatically" in missing_state_note(2)
    True
    """
    if not count:
        return ""
    shown = "1 widget is" if count == 1 else f"{count} widgets are"
    return (f'<div class="irs-report-note" role="note" style="border:1px solid #c77c12;'
            f'background:#fff4e0;color:#222;padding:6px 10px;margin:8px 0;border-radius:4px">'
            f"<b>{shown} shown as text only</b>: {html.escape(MISSING_STATE_HINT)}.</div>")
