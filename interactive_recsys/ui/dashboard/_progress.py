"""Progress of the workflow's phases, per operator: a thin ipywidgets view.

The data come from :meth:`Monitor.progress` (plain dicts, see ``jobs.Phase.to_dict``); this
module only draws them. One row per phase, labelled with its name and the clock time it
started (repeated runs stay apart), a bar, ``done/total tasks, status, seconds``, then a
small table with one line per operator: done/total tasks and compute time spent.

>>> view = ProgressView()
>>> view.update([{"name": "fit 1/1", "job": "fit", "status": "finished", "done": 3,
...               "total": 3, "fraction": 1.0, "started": 0.0, "seconds": 1.25,
...               "operators": [{"label": "Categorify", "done": 2, "total": 2,
...                              "seconds": 0.5}]}])
>>> view.rows[0].label.value
'3/3 tasks, finished, 1.2 s'
>>> "Categorify" in view.rows[0].operators.value
True
"""

from __future__ import annotations

import html
import time
from typing import Any

import ipywidgets as widgets

#: Phases shown (the most recent ones).
MAX_PHASES = 8
_STYLES = {"finished": "success", "error": "danger", "cancelled": "warning"}


def phase_title(phase: dict[str, Any]) -> str:
    """``'fit 1/2 · 14:02:31'``: the phase's name and the local time it started.

    >>> phase_title({"name": "write", "started": 0.0}).startswith("write · ")
    True
    """
    return f"{phase['name']} · {time.strftime('%H:%M:%S', time.localtime(phase['started']))}"


def operators_html(operators: list[dict[str, Any]]) -> str:
    """A compact table: one line per operator with a small bar, tasks and seconds."""
    if not operators:
        return ""
    lines = []
    for op in operators:
        share = op["done"] / max(op["total"], 1)
        bar = (f'<span style="display:inline-block;width:80px;height:8px;'
               f'background:var(--jp-layout-color3, #eee);vertical-align:middle">'
               f'<span style="display:block;height:8px;width:'
               f'{80 * share:.0f}px;background:#5cb85c"></span></span>')
        lines.append(f"<tr><td style='padding:0 8px 0 0'>{html.escape(op['label'])}</td>"
                     f"<td>{bar}</td><td style='padding:0 8px'>{op['done']}/{op['total']}"
                     f"</td><td>{op['seconds']:.1f} s of compute</td></tr>")
    return ("<table class='irs-operator-progress' style='font-size:11px;margin-left:16px'>"
            + "".join(lines) + "</table>")


class PhaseRow(widgets.VBox):
    """One phase: title, bar, status label and the per-operator table."""

    def __init__(self, phase: dict[str, Any]) -> None:
        self.title = widgets.Label(phase_title(phase), layout=widgets.Layout(width="170px"))
        self.bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0,
                                         layout=widgets.Layout(width="300px"))
        self.label = widgets.Label()
        self.operators = widgets.HTML()
        super().__init__([widgets.HBox([self.title, self.bar, self.label]), self.operators])

    def update(self, phase: dict[str, Any]) -> None:
        self.bar.value = phase["fraction"]
        self.bar.bar_style = _STYLES.get(phase["status"], "info")
        self.label.value = (f"{phase['done']}/{phase['total']} tasks, {phase['status']}, "
                            f"{phase['seconds']:.1f} s")
        table = operators_html(phase.get("operators", []))
        if self.operators.value != table:
            self.operators.value = table

    def close(self) -> None:
        for w in (self.title, self.bar, self.label, self.operators, *self.children):
            w.close()
        super().close()


class ProgressView(widgets.VBox):
    """The last :data:`MAX_PHASES` phases, one :class:`PhaseRow` each (made once per phase,
    closed when it scrolls out)."""

    def __init__(self) -> None:
        super().__init__([])
        self._rows: dict[tuple[str, float], PhaseRow] = {}

    @property
    def rows(self) -> list[PhaseRow]:
        return list(self.children)

    def update(self, phases: list[dict[str, Any]]) -> None:
        phases = phases[-MAX_PHASES:]
        keys = [(p["name"], p["started"]) for p in phases]
        for key, phase in zip(keys, phases, strict=True):
            if key not in self._rows:
                self._rows[key] = PhaseRow(phase)
            self._rows[key].update(phase)
        for key in [k for k in self._rows if k not in keys]:
            self._rows.pop(key).close()
        children = tuple(self._rows[k] for k in keys)
        if self.children != children:
            self.children = children

    def summary(self) -> str:
        """The phases as HTML (for a saved report)."""
        items = []
        for row in self.rows:
            items.append(f"<li>{html.escape(row.title.value)}: {row.bar.value:.0%} "
                         f"({html.escape(row.label.value)}){row.operators.value}</li>")
        return f"<ul>{''.join(items)}</ul>" if items else ""

    def close(self) -> None:
        for row in self._rows.values():
            row.close()
        self._rows.clear()
        super().close()
