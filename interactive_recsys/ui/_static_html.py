"""Static HTML of the package's custom widgets, drawn from their saved widget state.

A saved notebook keeps each widget's state (``metadata.widgets``); for an ``anywidget`` that
includes its JavaScript (``_esm``) and CSS. ``irs report`` never runs JavaScript that comes
from a notebook (a notebook is untrusted input), so it draws the
:class:`~.column_list.ColumnList` and the :class:`~.dag.DagView` here instead, in Python, with
the same elements and class names as ``widgets/column_list.js`` and ``widgets/dag.js`` and the
package's own CSS (``widgets/*.css``, not the ``_css`` of the notebook): the rows of the
column list (name, dtype, role, null %, distinct; ticked ones checked, filtered-out ones
hidden) and the workflow graph as SVG (the layout is computed in Python and saved with the
nodes), with each node's tooltip as an SVG ``<title>``. Everything from the state is
escaped.

>>> state = {"rows": [{"name": "C1", "dtype": "string", "role": "categorical",
...                    "null": "0.0%", "distinct": "12"}],
...          "shown": ["C1"], "selected": ["C1"], "_esm": "// ColumnList: ..."}
>>> kind_of(state)
'column_list'
>>> html = anywidget_html(state)
>>> 'class="irs-cl-name">C1</span>' in html and "checked" in html
True
"""

from __future__ import annotations

import html
from typing import Any

from interactive_recsys.ui._assets import widget_asset

#: Saved traits that tell the package's anywidgets apart, and the first word of their ESM.
_SIGNATURES = {
    "column_list": ({"rows", "shown", "selected"}, "ColumnList"),
    "dag": ({"nodes", "edges", "selected", "message"}, "DagView"),
}
_CSS = {"column_list": "column_list.css", "dag": "dag.css"}
#: The same constants as ``widgets/dag.js``.
_PAD, _CHAR_PX = 8, 6.2
_FIELDS = ("dtype", "role", "null", "distinct")


def kind_of(state: dict[str, Any]) -> str | None:
    """``"column_list"``, ``"dag"`` or None: which of the package's anywidgets ``state``
    (the saved state of an ``anywidget`` model) belongs to."""
    first_line = str(state.get("_esm", "")).lstrip().split("\n", 1)[0]
    for kind, (traits, name) in _SIGNATURES.items():
        if traits <= state.keys() and name in first_line:
            return kind
    return None


def widget_css(kinds: set[str] | list[str]) -> str:
    """``<style>`` elements with the package's CSS of the widget ``kinds``."""
    return "".join(f"<style>{widget_asset(_CSS[k]).read_text(encoding='utf-8')}</style>\n"
                   for k in sorted(kinds))


def anywidget_html(state: dict[str, Any]) -> str | None:
    """HTML of a saved ColumnList or DagView state; None for another anywidget."""
    kind = kind_of(state)
    if kind == "column_list":
        return column_list_html(state)
    if kind == "dag":
        return dag_html(state)
    return None


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _css_name(text: Any) -> str:
    """As ``cssName`` in column_list.js."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else "_"
                   for ch in str(text))


def column_list_html(state: dict[str, Any]) -> str:
    """The column list as ``widgets/column_list.js`` draws it (checkboxes disabled)."""
    shown = set(map(str, state.get("shown") or []))
    selected = set(map(str, state.get("selected") or []))
    head = "".join(f"<span>{t}</span>" for t in
                   ("", "column", "dtype", "role", "null %", "distinct"))
    rows = []
    for row in state.get("rows") or []:
        if not isinstance(row, dict):
            continue
        name = str(row.get("name", ""))
        ticked = name in selected
        classes = (f"irs-cl-row irs-col irs-col-{_css_name(name)} "
                   f"irs-role-{_css_name(row.get('role', ''))}"
                   + (" irs-cl-selected" if ticked else ""))
        hidden = "" if name in shown else ' style="display: none;"'
        cells = "".join(f'<span class="irs-cl-{f}">{_e(row.get(f, ""))}</span>'
                        for f in _FIELDS)
        rows.append(f'<label class="{classes}" title="{_e(row.get("title") or name)}" '
                    f'aria-selected="{str(ticked).lower()}"{hidden}>'
                    f'<input type="checkbox" disabled{" checked" if ticked else ""}>'
                    f'<span class="irs-cl-name">{_e(name)}</span>{cells}</label>')
    return (f'<div class="irs-cl"><div class="irs-cl-head">{head}</div>'
            f'<div class="irs-cl-body" role="listbox" aria-multiselectable="true">'
            f'{"".join(rows)}</div></div>')


def _num(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and abs(number) != float("inf") else 0.0


def _fit(text: str, width: float) -> str:
    """As ``fit`` in dag.js: what fits in a node ``width`` px wide, with an ellipsis."""
    room = max(3, int((width - 12) // _CHAR_PX))
    return text if len(text) <= room else text[:room - 1] + "\u2026"


def dag_html(state: dict[str, Any]) -> str:
    """The workflow graph as ``widgets/dag.js`` draws it: an SVG of the saved layout.

    >>> svg = dag_html({"nodes": [{"id": "col:a", "kind": "column", "label": "a", "x": 0,
    ...     "y": 0, "width": 130, "height": 22, "tooltip": "a: int64"}], "edges": []})
    >>> '<tspan class="irs-dag-label">a</tspan>' in svg, "<title>a: int64</title>" in svg
    (True, True)
    """
    nodes = [n for n in state.get("nodes") or [] if isinstance(n, dict)]
    if not nodes:
        message = state.get("message") or "Empty workflow."
        return (f'<div class="irs-dag"><div class="irs-dag-canvas">'
                f'<div class="irs-dag-empty">{_e(message)}</div></div></div>')
    box = {str(n.get("id")): {k: _num(n.get(k)) for k in ("x", "y", "width", "height")}
           for n in nodes}
    width = max(b["x"] + b["width"] for b in box.values()) + 2 * _PAD
    height = max(b["y"] + b["height"] for b in box.values()) + 2 * _PAD
    paths = []
    for edge in state.get("edges") or []:
        if not isinstance(edge, dict):
            continue
        s, t = box.get(str(edge.get("source"))), box.get(str(edge.get("target")))
        if s is None or t is None:
            continue
        x1, y1 = s["x"] + s["width"], s["y"] + s["height"] / 2
        x2, y2 = t["x"], t["y"] + t["height"] / 2
        bend = max(20.0, (x2 - x1) / 2)
        paths.append(f'<path class="irs-dag-edge" d="M{x1:g},{y1:g} C{x1 + bend:g},{y1:g} '
                     f'{x2 - bend:g},{y2:g} {x2:g},{y2:g}"/>')
    selected = str(state.get("selected") or "")
    groups = []
    for node in nodes:
        b = box[str(node.get("id"))]
        label = str(node.get("label", ""))
        detail = f" {node['detail']}" if node.get("detail") else ""
        shown = _fit(label + detail, b["width"])
        text = f'<tspan class="irs-dag-label">{_e(shown[:len(label)])}</tspan>'
        if len(shown) > len(label):
            text += f'<tspan class="irs-dag-detail">{_e(shown[len(label):])}</tspan>'
        classes = f"irs-dag-node irs-dag-{_css_name(node.get('kind', 'op'))}" + (
            " irs-dag-selected" if str(node.get("id")) == selected else "")
        groups.append(
            f'<g class="{classes}" transform="translate({b["x"]:g},{b["y"]:g})" '
            f'data-id="{_e(node.get("id"))}"><title>{_e(node.get("tooltip") or label + detail)}'
            f'</title><rect width="{b["width"]:g}" height="{b["height"]:g}" rx="4" ry="4"/>'
            f'<text x="6" y="{b["height"] / 2:g}" dominant-baseline="central">{text}</text></g>')
    return (f'<div class="irs-dag"><div class="irs-dag-canvas">'
            f'<svg xmlns="http://www.w3.org/2000/svg" class="irs-dag-svg" width="{width:g}" '
            f'height="{height:g}" viewBox="{-_PAD} {-_PAD} {width:g} {height:g}" role="img" '
            f'aria-label="workflow graph with {len(nodes)} nodes">'
            f'<g class="irs-dag-edges">{"".join(paths)}</g>'
            f'<g class="irs-dag-nodes">{"".join(groups)}</g></svg></div></div>')
