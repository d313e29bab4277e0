"""The workflow as a graph drawing: input columns -> operators -> output columns.

The graph and its layered layout are computed here, in Python (testable without a
browser); ``widgets/dag.js`` only draws the SVG and reports clicks. Layout: longest-path
layers (inputs first, outputs last), node order in each layer by the barycenter heuristic
(a few down and up sweeps), then operator nodes placed at the mean height of their inputs
without overlaps.

>>> nodes = [{"id": "a"}, {"id": "b"}, {"id": "op"}, {"id": "out"}]
>>> edges = [{"source": "a", "target": "op"}, {"source": "b", "target": "op"},
...          {"source": "op", "target": "out"}]
>>> placed = layered_layout(nodes, edges)
>>> [(n["id"], n["layer"]) for n in placed]
[('a', 0), ('b', 0), ('op', 1), ('out', 2)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anywidget
import traitlets

from interactive_recsys.errors import IRSError
from interactive_recsys.ops._base import Operator
from interactive_recsys.ui._assets import widget_asset
from interactive_recsys.ui.builder._fit_status import step_status
from interactive_recsys.ui.builder.model import counted_profile

#: Pixel sizes of the drawing (the SVG scales down to the widget's width).
NODE_WIDTH = {"column": 130, "op": 190, "output": 150}
NODE_HEIGHT, ROW, LAYER_GAP = 22, 28, 40


# ---- the graph of a builder model ------------------------------------------------------------
def op_tooltip(op: Operator) -> str:
    """The operator with every parameter (set or default) and its one-line doc."""
    lines = [repr(op)]
    for name, spec in op.params.items():
        value = op.get_params()[name]
        lines.append(f"{name} = {value!r}" + (f"  ({spec.doc})" if spec.doc else ""))
    return "\n".join(lines)


def model_graph(model: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes and edges of a ``BuilderModel``'s branches.

    Node ids: ``col:<name>`` (input), ``op:<branch>:<step>`` and ``out:<name>``. An input's
    tooltip has its distinct count, exact once Suggest counted it (``counted_profile``),
    else marked as the sample's estimate. A statistics
    step fitted by the last Run has ``status`` ``"reused"`` (its state adopted from the Run
    before), ``"refinished"`` (rebuilt from that Run's saved counts) or ``"computed"`` (see
    :mod:`.._fit_status`).
    """
    schema = model.schema
    status = step_status(model)
    profile = {p.name: p for p in counted_profile(model)}
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    for k, branch in enumerate(model.branches):
        if not branch.columns and not branch.tags:
            continue
        inputs = [n for g in branch.selector().resolve(schema) for n in g]
        for name in inputs:
            p = profile.get(name)
            tip = p.describe() if p else f"{name}: {schema[name].dtype}"
            nodes.setdefault(f"col:{name}", {"id": f"col:{name}", "kind": "column",
                                             "label": name, "detail": schema[name].dtype,
                                             "tooltip": tip})
        previous = [f"col:{n}" for n in dict.fromkeys(inputs)]
        for j, step in enumerate(branch.steps):
            node = _step_node(k, j, step.op, step.operator(),
                              branch.node(j + 1).output_schema(schema), status.get((k, j), ""))
            nodes[node["id"]] = node
            edges += [{"source": s, "target": node["id"]} for s in previous]
            previous = [node["id"]]
        _add_outputs(branch.node().output_schema(schema), previous[0] if branch.steps
                     else None, nodes, edges)
    return list(nodes.values()), edges


def _step_node(k: int, j: int, label: str, op: Operator, outputs: Any,
               fit: str) -> dict[str, Any]:
    """The node of step ``j`` of branch ``k``: ``outputs`` its output schema, ``fit`` its
    status after the last Run ("reused", "refinished", "computed" or "")."""
    shown = ", ".join(f"{n}: {c.dtype}" for n, c in list(outputs.items())[:8])
    more = f", ... ({len(outputs)} columns)" if len(outputs) > 8 else ""
    note = {"reused": "\n(reused: its state was kept from the previous Run)",
            "refinished": "\n(refinished: rebuilt from the previous Run's saved counts, "
                          "without reading the data)",
            "computed": "\n(computed by the last Run)"}.get(fit, "")
    return {"id": op_id(k, j), "kind": "op", "label": label,
            "detail": _short_params(op), "branch": k, "step": j,
            "status": fit, "tooltip": f"{op_tooltip(op)}\n-> {shown}{more}{note}"}


def _add_outputs(outputs: Any, last: str | None, nodes: dict[str, dict[str, Any]],
                 edges: list[dict[str, Any]]) -> None:
    """The output nodes of a branch, each fed by its ``last`` step (None: a pass-through,
    fed by the input column of its name)."""
    for name, col in outputs.items():
        out_id = f"out:{name}"
        nodes[out_id] = {"id": out_id, "kind": "output", "label": name, "detail": col.dtype,
                         "tooltip": f"{name}: {col.dtype}" + (
                             f"  tags: {', '.join(sorted(col.tags))}" if col.tags else "")}
        edges.append({"source": last or f"col:{name}", "target": out_id})


def _short_params(op: Operator) -> str:
    text = repr(op)[len(type(op).__name__) + 1:-1]
    return text if len(text) <= 40 else text[:39] + "…"


# ---- layout -----------------------------------------------------------------------------------
def _layers(ids: list[str], edges: Sequence[dict[str, Any]]) -> dict[str, int]:
    parents: dict[str, list[str]] = {i: [] for i in ids}
    children: dict[str, list[str]] = {i: [] for i in ids}
    for e in edges:
        parents[e["target"]].append(e["source"])
        children[e["source"]].append(e["target"])
    layer: dict[str, int] = {}

    def depth(i: str, trail: frozenset[str] = frozenset()) -> int:
        if i in trail:
            raise IRSError(f"The graph has a cycle through node {i!r}.")
        if i not in layer:
            layer[i] = 1 + max((depth(p, trail | {i}) for p in parents[i]), default=-1)
        return layer[i]

    for i in ids:
        depth(i)
    last = max(layer.values(), default=0)
    for i in ids:  # sinks (outputs) all in the last layer; sources stay first
        if not children[i] and parents[i]:
            layer[i] = last
    return layer


def crossings(order: dict[str, int], layer: dict[str, int],
              edges: Sequence[dict[str, Any]]) -> int:
    """Number of pairs of edges between the same two layers that cross."""
    spans: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in edges:
        s, t = e["source"], e["target"]
        spans.setdefault((layer[s], layer[t]), []).append((order[s], order[t]))
    count = 0
    for pairs in spans.values():
        for i, (a1, b1) in enumerate(pairs):
            count += sum(1 for a2, b2 in pairs[i + 1:] if (a1 - a2) * (b1 - b2) < 0)
    return count


def layered_layout(nodes: Sequence[dict[str, Any]], edges: Sequence[dict[str, Any]],
                   sweeps: int = 4) -> list[dict[str, Any]]:
    """Copies of ``nodes`` with ``layer``, ``x``, ``y``, ``width`` and ``height`` set."""
    ids = [n["id"] for n in nodes]
    layer = _layers(ids, edges)
    count = max(layer.values(), default=0) + 1
    rows: list[list[str]] = [[i for i in ids if layer[i] == k] for k in range(count)]
    neighbours: dict[str, list[str]] = {i: [] for i in ids}
    for e in edges:
        neighbours[e["source"]].append(e["target"])
        neighbours[e["target"]].append(e["source"])
    rows = _ordered_rows(rows, layer, neighbours, edges, sweeps)
    by_id = {n["id"]: dict(n) for n in nodes}
    x, y = _positions(rows, by_id, neighbours)
    out = []
    for k, row in enumerate(rows):
        for i in row:
            node = by_id[i]
            node.update(layer=k, x=x[i], y=y[i], height=NODE_HEIGHT,
                        width=NODE_WIDTH.get(node.get("kind", "op"), 150))
            out.append(node)
    return out


def _ordered_rows(rows: list[list[str]], layer: dict[str, int],
                  neighbours: dict[str, list[str]], edges: Sequence[dict[str, Any]],
                  sweeps: int) -> list[list[str]]:
    """The layers' rows reordered by sweeps down and up (each node at the mean position of
    its neighbours on one side), the order with the fewest crossings."""
    count = len(rows)

    def sweep(sequence: range, side: int) -> None:
        """Order each layer by the mean position of its neighbours on one side."""
        for k in sequence:
            pos = {i: p for r in rows for p, i in enumerate(r)}
            keys = {}
            for p, i in enumerate(rows[k]):
                near = [pos[n] for n in neighbours[i] if (layer[n] - k) * side > 0]
                keys[i] = (sum(near) / len(near) if near else p, p)
            rows[k].sort(key=keys.__getitem__)

    best = [list(r) for r in rows]
    best_cost = crossings({i: p for r in rows for p, i in enumerate(r)}, layer, edges)
    for _ in range(sweeps):
        sweep(range(1, count), -1)            # down: order by the layers above
        sweep(range(count - 2, -1, -1), +1)   # up: order by the layers below
        cost = crossings({i: p for r in rows for p, i in enumerate(r)}, layer, edges)
        if cost < best_cost:
            best, best_cost = [list(r) for r in rows], cost
    return best


def _positions(rows: list[list[str]], by_id: dict[str, dict[str, Any]],
               neighbours: dict[str, list[str]]) -> tuple[dict[str, float], dict[str, float]]:
    """``x`` and ``y`` of each node: a column per layer; the first and last layers stacked,
    the others at the mean height of their placed neighbours, without overlaps."""
    y: dict[str, float] = {}
    x, left = {}, 0.0
    for k, row in enumerate(rows):
        width = max((NODE_WIDTH.get(by_id[i].get("kind", "op"), 150) for i in row), default=0)
        for i in row:
            x[i] = left
        left += width + LAYER_GAP
        if k in (0, len(rows) - 1):
            for p, i in enumerate(row):
                y[i] = p * ROW
            continue
        floor = 0.0
        for i in row:  # at the mean height of the placed neighbours, no overlaps
            placed = [y[n] for n in neighbours[i] if n in y]
            want = sum(placed) / len(placed) if placed else floor
            y[i] = max(want, floor)
            floor = y[i] + ROW
    return x, y


# ---- the widget -------------------------------------------------------------------------------
class DagView(anywidget.AnyWidget):
    """An SVG drawing of a workflow; click a step to select it, hover for its parameters.

    ``nodes`` carry ``id``, ``kind`` (``column``, ``op``, ``output``), ``label``, ``detail``
    (dtype or parameters), ``tooltip`` and the layout (``x``, ``y``, ``width``, ``height``);
    ``edges`` are ``{"source": id, "target": id}``; ``selected`` is the id of the clicked node
    (the browser writes it, Python may too).

    >>> view = DagView()
    >>> view.set_graph([{"id": "col:a", "kind": "column", "label": "a"}], [])
    >>> view.nodes[0]["x"], view.nodes[0]["layer"]
    (0.0, 0)
    """

    _esm = widget_asset("dag.js")
    _css = widget_asset("dag.css")
    nodes = traitlets.List(traitlets.Dict()).tag(sync=True)
    edges = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)

    def set_graph(self, nodes: Sequence[dict[str, Any]], edges: Sequence[dict[str, Any]]) -> None:
        """Lay out and show ``nodes`` and ``edges``; keeps ``selected`` if the node remains."""
        placed = layered_layout(nodes, edges)
        with self.hold_sync():
            self.nodes = placed
            self.edges = [dict(e) for e in edges]
            self.message = "" if placed else "Select columns and add a step to draw the workflow."
            if self.selected and self.selected not in {n["id"] for n in placed}:
                self.selected = ""

    def show_model(self, model: Any) -> None:
        """Draw a ``BuilderModel`` and mark its selected
        step."""
        self.set_graph(*model_graph(model))
        if model.selected is not None:
            self.selected = op_id(*model.selected)

    def __repr__(self) -> str:
        ops = sum(1 for n in self.nodes if n.get("kind") == "op")
        return f"DagView({len(self.nodes)} nodes, {ops} operators)"


def op_id(branch: int, step: int) -> str:
    """The node id of step ``step`` of branch ``branch`` (the inverse of :func:`parse_op_id`).

    >>> op_id(1, 0)
    'op:1:0'
    """
    return f"op:{branch}:{step}"


def parse_op_id(node_id: str) -> tuple[int, int] | None:
    """``(branch, step)`` of an operator node id, else None.

    >>> parse_op_id("op:1:0"), parse_op_id("col:C1")
    ((1, 0), None)
    """
    parts = node_id.split(":")
    if len(parts) == 3 and parts[0] == "op" and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2])
    return None
