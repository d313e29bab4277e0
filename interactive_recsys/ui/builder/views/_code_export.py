"""The Copy and "Insert as a new cell" buttons beside the builder's exported code.

:class:`CodeExport` is an ``anywidget`` (``widgets/code_export.js``). Its synced ``code``
holds the exported text, which both buttons use as it is: Copy puts it on the clipboard
(``navigator.clipboard.writeText``; where the browser refuses, the code area's text is
selected and the note beside the buttons says "press Ctrl+C"); Insert adds a new code cell
holding it below the cell that shows one of ``hosts`` (the builder, the Studio), not run,
through the notebook model of JupyterLab's widget manager. Where the page gives no such
access, the note says so and names ``insert_code_cell``, which works from a cell.

>>> bar = CodeExport()
>>> bar.show("print(1)\\n")
>>> bar.code, bar.layout.display
('print(1)\\n', None)
>>> code_height("a\\nb\\nc")
'76px'
"""

from __future__ import annotations

import anywidget
import traitlets

from interactive_recsys.ui._assets import widget_asset

#: Lines the code area shows before it scrolls, and its pixels per line and padding.
MAX_LINES, LINE_PX, PAD_PX = 30, 18, 22


def code_height(code: str) -> str:
    """The code area's CSS height: all the lines of ``code``, at most :data:`MAX_LINES`."""
    lines = min(max(code.count("\n") + 1, 3), MAX_LINES)
    return f"{lines * LINE_PX + PAD_PX}px"


class CodeExport(anywidget.AnyWidget):
    """Copy and Insert buttons for the exported ``code`` (hidden until ``show``).

    ``hosts``: model ids of the widgets whose notebook cell the new cell goes below.
    """

    _esm = widget_asset("code_export.js")
    code = traitlets.Unicode("").tag(sync=True)
    hosts = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.layout.display = "none"

    def show(self, code: str) -> None:
        """Hold ``code`` and show the buttons."""
        self.code = code
        self.layout.display = None

    def add_host(self, widget_id: str) -> None:
        """Insert below the cell showing the widget of model id ``widget_id`` too."""
        if widget_id not in self.hosts:
            self.hosts = [*self.hosts, widget_id]


def insert_code_cell(code: str) -> None:
    """Put ``code`` in a new cell below the cell running this call (not run).

    It uses IPython's ``set_next_input``, which a notebook honours only for the cell being
    executed: call it in a cell, not from a button's callback.

    Raises
    ------
    RuntimeError
        Outside IPython.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("insert_code_cell needs IPython (a notebook cell).")
    shell.set_next_input(code, replace=False)


__all__ = ["MAX_LINES", "CodeExport", "code_height", "insert_code_cell"]
