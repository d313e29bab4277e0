"""``irs report`` draws the package's anywidgets (column list, DAG) from saved widget state,
and the stored tutorial notebooks keep the widgets' final state (what the user saw)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import ipywidgets as w
import nbformat
import pyarrow as pa

from interactive_recsys.report._notebook_report import WIDGET_STATE, WIDGET_VIEW, notebook_html
from interactive_recsys.ui.builder._column_profile import profile_table
from interactive_recsys.ui.builder.views._column_list import ColumnChoice, ColumnList
from interactive_recsys.ui.builder.views._dag import DagView

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"


class _Elements(HTMLParser):
    """Text per class of the page's elements, checkbox states, inline styles, scripts."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.text: dict[str, list[str]] = {}
        self.rows: list[dict[str, Any]] = []
        self.scripts: list[str] = []
        self.edges = 0
        self._open: list[tuple[str, str]] = []
        self._script = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = a.get("class") or ""
        if "irs-cl-row" in classes.split():
            self.rows.append({"hidden": "display: none" in (a.get("style") or ""),
                              "selected": "irs-cl-selected" in classes.split(),
                              "checked": None})
        if tag == "input" and self.rows and self.rows[-1]["checked"] is None:
            self.rows[-1]["checked"] = "checked" in a
        if tag == "path" and "irs-dag-edge" in classes.split():
            self.edges += 1
        self._script = tag == "script"
        if tag not in ("input", "path", "rect"):
            self._open.append((tag, classes))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()[0] == tag:
                break
        self._script = False

    def handle_data(self, data: str) -> None:
        if self._script:
            self.scripts.append(data)
        if self._open:
            for name in self._open[-1][1].split():
                self.text.setdefault(name, []).append(data)


def _report_of(widgets: list[Any], texts: list[str]) -> str:
    """The report page of a notebook whose outputs show ``widgets``, with their state saved
    as a kernel sends it (``get_manager_state``: the same serialization as the comm)."""
    nb = nbformat.v4.new_notebook()
    shown = enumerate(zip(widgets, texts, strict=True))
    nb.cells = [nbformat.v4.new_code_cell("view", execution_count=i + 1, outputs=[
        nbformat.v4.new_output("display_data", {WIDGET_VIEW: {
            "model_id": widget.model_id, "version_major": 2, "version_minor": 0},
            "text/plain": text})]) for i, (widget, text) in shown]
    state = json.loads(json.dumps(w.Widget.get_manager_state(widgets=widgets)))
    nb.metadata["widgets"] = {WIDGET_STATE: state}
    return notebook_html(nb, title="widgets")


def test_column_list_is_drawn_from_its_saved_state() -> None:
    names = [f"C{i}" for i in range(1, 41)]
    table = pa.table({n: [f"v{i}" for i in range(5)] if n.startswith("C1") else
                      list(range(5)) for n in names})
    choice = ColumnChoice(profile_table(table))
    columns = ColumnList(choice)
    choice.click("C2")
    choice.click("C5", shift=True)  # C2..C5 ticked
    choice.pattern = "C1*,C2,C3,C4,C5"  # the filter hides the others
    columns.sync()
    page = _report_of([columns], [repr(columns)])
    found = _Elements(page)
    assert found.text["irs-cl-name"] == names  # every column, in dataset order
    assert found.text["irs-cl-dtype"][0] == "string" and found.text["irs-cl-dtype"][1] == "int64"
    shown = set(choice.shown)
    assert [not r["hidden"] for r in found.rows] == [n in shown for n in names]
    ticked = [n in {"C2", "C3", "C4", "C5"} for n in names]
    assert [r["checked"] for r in found.rows] == ticked
    assert [r["selected"] for r in found.rows] == ticked
    # the package's CSS is in the page; the notebook's JavaScript is not run
    assert ".irs-cl-body" in page and "max-height: 336px" in page
    assert not any("model.send" in s or "export default" in s for s in found.scripts)
    assert "ColumnList(4 of 40 selected" not in page  # drawn, not its text fallback
    columns.close()


def test_dag_is_drawn_from_its_saved_state() -> None:
    nodes = [{"id": "col:C1", "kind": "column", "label": "C1", "detail": "string",
              "tooltip": "C1: string"},
             {"id": "col:I1", "kind": "column", "label": "I1", "detail": "int64"},
             {"id": "op:0:0", "kind": "op", "label": "Categorify", "detail": "freq_threshold=2",
              "tooltip": "Categorify(freq_threshold=2)"},
             {"id": "out:C1", "kind": "output", "label": "C1", "detail": "int32"}]
    edges = [{"source": "col:C1", "target": "op:0:0"}, {"source": "op:0:0", "target": "out:C1"}]
    dag = DagView()
    dag.set_graph(nodes, edges)
    dag.selected = "op:0:0"
    page = _report_of([dag], [repr(dag)])
    found = _Elements(page)
    assert found.text["irs-dag-label"] == ["C1", "I1", "Categorify", "C1"]
    assert found.edges == len(edges)
    assert "<title>Categorify(freq_threshold=2)</title>" in page  # the tooltip on hover
    [selected] = re.findall(r'<g class="([^"]*irs-dag-selected[^"]*)"', page)
    assert "irs-dag-op" in selected
    # node boxes at the positions the Python layout computed (saved in the state)
    for node in dag.nodes:
        assert f'translate({node["x"]:g},{node["y"]:g})' in page
    assert ".irs-dag-op rect" in page  # the package's CSS
    empty = DagView()
    empty.set_graph([], [])
    assert "Select columns and add a step" in _report_of([empty], ["DagView(0 nodes)"])
    dag.close()
    empty.close()


def test_saved_state_is_escaped_and_other_anywidgets_are_not_run() -> None:
    import anywidget
    import traitlets

    class Other(anywidget.AnyWidget):
        _esm = "export default { render() { window.pwned = 1; } };"
        rows = traitlets.List().tag(sync=True)  # a look-alike that is not ours

    choice = ColumnChoice(profile_table(pa.table({"<img src=x onerror=alert(1)>": [1]})))
    columns = ColumnList(choice)
    other = Other()
    page = _report_of([columns, other], [repr(columns), "Other()"])
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "window.pwned" not in page and "<pre>Other()</pre>" in page
    columns.close()
    other.close()


# ---- the stored tutorial notebooks -------------------------------------------------------------
def _stored(name: str) -> tuple[Any, dict[str, Any]]:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    return nb, nb.metadata["widgets"][WIDGET_STATE]["state"]


def _tree(state: dict[str, Any], model_id: str) -> list[dict[str, Any]]:
    """The models a widget shows (itself and its children, depth first)."""
    model = state[model_id]
    out = [model]
    for child in model["state"].get("children", []):
        out += _tree(state, child.removeprefix("IPY_MODEL_"))
    return out


def _bokeh_models(bundle: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(bundle) if isinstance(bundle, str) else bundle)
    return found


def test_stored_notebook_04_keeps_the_embedding_view_final_settings() -> None:
    """The cell after the view sets GPUs and weights: the saved state (what JupyterLab,
    nbviewer and the report draw) shows those settings, not the ones the view started with."""
    nb, state = _stored("04_embedding_statistics.ipynb")
    [change] = [c for c in nb.cells if c.cell_type == "code" and "view.num_gpus.value" in c.source]
    gpus = int(re.search(r"view\.num_gpus\.value = (\d+)", change.source)[1])
    dtype = re.search(r'view\.dtype\.value = "(\w+)"', change.source)[1]
    [view_id] = [o["data"][WIDGET_VIEW]["model_id"] for c in nb.cells
                 for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})
                 and "EmbeddingReport" in "".join(o["data"].get("text/plain", ""))]
    models = _tree(state, view_id)
    controls = {m["state"].get("description"): m["state"] for m in models}
    assert controls["GPUs"]["value"] == gpus != 2  # the report was made with num_gpus=2
    weights = controls["weights"]
    assert weights["_options_labels"][weights["index"]] == dtype
    [plan] = [m for m in models if "irs-embedding-plan-plot" in m["state"].get("_dom_classes", [])]
    objects = _bokeh_models(plan["state"]["render_bundle"])
    [title] = [o["attributes"]["text"] for o in objects if o["name"] == "Title"]
    assert title.startswith(f"Memory per GPU (GiB), {dtype} + adam")
    [source] = [o for o in objects if o.get("attributes", {}).get("name") == "irs-embedding-plan"]
    entries = dict(source["attributes"]["data"]["entries"])
    gpus_drawn = {x[0] if isinstance(x, list) else x for x in entries["x"]}
    assert gpus_drawn == {f"GPU {g}" for g in range(gpus)}
    # the report of the stored notebook draws that document
    page = notebook_html(nb, title="04")
    assert f"GPU {gpus - 1}" in page and f"{dtype} + adam" in page


def test_stored_notebook_02_report_draws_the_column_list_and_dag() -> None:
    nb, state = _stored("02_visual_builder.ipynb")
    lists = [m["state"] for m in state.values() if {"rows", "shown"} <= m["state"].keys()]
    dags = [m["state"] for m in state.values() if {"nodes", "edges"} <= m["state"].keys()]
    assert lists and dags
    found = _Elements(notebook_html(nb, title="02"))
    names = found.text["irs-cl-name"]
    for saved in lists:
        assert [r["name"] for r in saved["rows"]] == names[:len(saved["rows"])]
    labels = found.text["irs-dag-label"]
    for saved in dags:
        assert {n["label"] for n in saved["nodes"]} <= set(labels)
