"""Feedback next to the control that caused it: one message area per group of controls,
stale messages cleared by the next action, and a visible busy state for slow clicks.

>>> fb = Feedback(["columns", "run"])
>>> fb.say("Select shown: 13 columns", area="columns")
>>> fb.say("No dataset is open", "error", area="run")
>>> fb.areas["columns"].value, fb.last
('', ('No dataset is open', 'error', 'run'))
"""

from __future__ import annotations

import html
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import ipywidgets as w

from interactive_recsys.errors import IRSError
from interactive_recsys.redact import redact_text

COLOURS = {"error": "var(--jp-error-color1, #b00020)",
           "success": "var(--jp-success-color1, #1b5e20)",
           "busy": "var(--jp-brand-color1, #0d47a1)"}


class Feedback:
    """Message areas by name (``areas[name]`` is an ``HTML`` widget placed by the view).

    Saying something in one area empties every other area, so an old error never stays
    next to a control after a later action elsewhere.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.areas: dict[str, w.HTML] = {}
        for name in names:
            area = w.HTML(layout=w.Layout(min_width="0"))
            area.add_class("irs-builder-messages")
            area.add_class(f"irs-feedback-{name}")
            self.areas[name] = area
        self.last: tuple[str, str, str] = ("", "info", "")

    def say(self, text: str, level: str = "info", area: str | None = None,
            details: str = "") -> None:
        """Show ``text`` (``level``: info, success, error, busy) in ``area``; clear the rest."""
        area = area or next(iter(self.areas))
        if area not in self.areas:
            raise KeyError(f"no feedback area {area!r}; areas are {list(self.areas)}")
        text, details = redact_text(text), redact_text(details)  # never a secret shown
        self.last = (text, level, area)
        colour = COLOURS.get(level, "inherit")
        spinner = '<span class="irs-spinner" aria-hidden="true"></span> ' \
            if level == "busy" else ""
        extra = (f"<details><summary>details</summary><pre>{html.escape(details)}</pre>"
                 "</details>") if details else ""
        for name, widget in self.areas.items():
            widget.value = "" if name != area else (
                f'<div class="irs-msg irs-msg-{level}" role="status" style="color:{colour}">'
                f"{spinner}{html.escape(text)}</div>{extra}")

    def clear(self) -> None:
        for widget in self.areas.values():
            widget.value = ""

    def guard(self, action: Callable[[], Any], area: str = "steps") -> Callable[[], Any]:
        """``action`` as a callback whose errors are said in ``area``, never only in the
        console (an unexpected one with its traceback)."""
        def run() -> Any:
            try:
                return action()
            except (IRSError, ValueError, FileNotFoundError, FileExistsError, KeyError) as exc:
                self.say(str(exc).strip("'\""), "error", area)
            except Exception as exc:  # unexpected: show it, with the traceback
                self.say(f"Unexpected error: {type(exc).__name__}: {exc}", "error", area,
                         traceback.format_exc())
            return None
        return run


def make_button(buttons: dict[str, w.Button], feedback: Feedback, text: str, css: str,
                action: Callable[[], Any], tip: str = "", style: str = "",
                area: str = "steps") -> w.Button:
    """A button (CSS class ``irs-btn-<css>``) whose click runs ``action`` guarded by
    ``feedback`` in ``area``; kept in ``buttons[css]``.

    >>> buttons, fb = {}, Feedback(["steps"])
    >>> _ = make_button(buttons, fb, "Fail", "fail", lambda: 1 / 0)
    >>> buttons["fail"].click(); fb.last[:2]
    ('Unexpected error: ZeroDivisionError: division by zero', 'error')
    """
    button = w.Button(description=text, tooltip=tip or text, button_style=style,
                      layout=w.Layout(width="auto", flex="0 0 auto"))
    button.add_class(f"irs-btn-{css}")
    button.on_click(lambda _: feedback.guard(action, area)())
    buttons[css] = button
    return button


@contextmanager
def busy(button: w.Button, text: str) -> Iterator[None]:
    """Show ``button`` as working (disabled, ``text`` as its label, a spinning icon) while
    the block runs; restored afterwards, also on error.

    >>> b = w.Button(description="Start")
    >>> with busy(b, "Starting..."):
    ...     b.description, b.disabled
    ('Starting...', True)
    >>> b.description, b.disabled
    ('Start', False)
    """
    description, disabled, icon = button.description, button.disabled, button.icon
    button.description, button.disabled, button.icon = text, True, "spinner"
    button.add_class("irs-busy")
    try:
        yield
    finally:
        button.description, button.disabled, button.icon = description, disabled, icon
        button.remove_class("irs-busy")


#: Style of the spinner and busy buttons (once per page, with the builder); text that wraps
#: (messages, help next to a field) at 20 px a line, not the 28 px of a widget row, which
#: single lines keep (4 px above and below; an empty message takes no room); once the
#: kernel is gone, JupyterLab's broken-link mark shows on the Studio (or builder) alone,
#: not before each of its inner widgets.
STYLE = """<style>
.irs-spinner { display: inline-block; width: 10px; height: 10px; vertical-align: -1px;
  border: 2px solid currentColor; border-right-color: transparent; border-radius: 50%;
  animation: irs-spin 0.8s linear infinite; }
.irs-busy { cursor: progress; }
.irs-busy .fa-spinner { animation: irs-spin 1s linear infinite; }
@keyframes irs-spin { to { transform: rotate(360deg); } }
.irs-preview-scroll { overflow-x: auto; max-width: 100%; }
.irs-preview-scroll th, .irs-preview-scroll td { padding: 3px 10px; white-space: nowrap; }
.irs-builder .widget-html, .irs-builder .widget-html-content { min-width: 0; }
.irs-studio .widget-html > .widget-html-content,
.irs-builder .widget-html > .widget-html-content { line-height: 20px; padding: 4px 0; }
.irs-studio .widget-html > .widget-html-content:empty,
.irs-builder .widget-html > .widget-html-content:empty { padding: 0; }
.irs-chip { border-radius: 12px !important; }
.irs-studio .jupyter-widgets-disconnected::before,
.irs-builder .jupyter-widgets-disconnected::before { display: none; }
.irs-builder-actionbar { background: var(--jp-layout-color2, #f5f7fa);
  border: 1px solid var(--jp-border-color2, #dde3ea); border-radius: 4px;
  padding: 2px 6px; margin: 2px 0 6px 0; }
.irs-builder-code textarea { font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 13px); line-height: 18px; white-space: pre;
  overflow: auto; height: 100%; }
</style>"""
