"""DagView: the graph of a builder model, its layered layout and the anywidget's assets."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from interactive_recsys.ui._assets import widget_asset
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.views._dag import (
    NODE_HEIGHT,
    DagView,
    crossings,
    layered_layout,
    model_graph,
    parse_op_id,
)
from tests.conftest import make_criteo_frame

REPO = Path(__file__).resolve().parents[4]


def criteo_model() -> BuilderModel:
    """39 input columns in an interleaved order, two processed branches and the label."""
    names = ["label"] + [n for i in range(1, 27) for n in ((f"C{i}", f"I{i}") if i <= 13
                                                             else (f"C{i}",))]
    frame = pd.DataFrame({n: ([0, 1] * 5 if n == "label" else
                              [f"v{k % 3}" for k in range(10)] if n.startswith("C") else
                              [float(k) for k in range(10)]) for n in names})
    model = BuilderModel(frame)
    model.add_step([f"C{i}" for i in range(1, 27)], "Categorify")
    conts = [f"I{i}" for i in range(1, 14)]
    for op, params in (("FillMissing", {}), ("Clip", {"min_value": 0}), ("LogOp", {}),
                       ("Normalize", {})):
        model.add_step(conts, op, params)
    model.new_branch(["label"])
    return model


def check_layout(nodes: list[dict], edges: list[dict]) -> dict[str, dict]:
    by_id = {n["id"]: n for n in nodes}
    for e in edges:  # edges go left to right
        assert by_id[e["source"]]["layer"] < by_id[e["target"]]["layer"]
        assert by_id[e["source"]]["x"] + by_id[e["source"]]["width"] < by_id[e["target"]]["x"]
    layers: dict[int, list[dict]] = {}
    for n in nodes:
        layers.setdefault(n["layer"], []).append(n)
    for members in layers.values():  # no two boxes of a layer overlap
        ys = sorted(n["y"] for n in members)
        assert all(b - a >= NODE_HEIGHT for a, b in itertools.pairwise(ys))
    return by_id


def test_model_graph_has_columns_operators_and_predicted_outputs():
    model = BuilderModel(make_criteo_frame(50))
    model.add_step(["C1", "C2"], "Categorify", {"freq_threshold": 2})
    model.add_step(["I1"], "FillMissing")
    model.add_step(["I1"], "Normalize")
    nodes, edges = model_graph(model)
    by_id = {n["id"]: n for n in nodes}
    assert sorted(by_id) == sorted(["col:C1", "col:C2", "col:I1", "op:0:0", "op:1:0", "op:1:1",
                                    "out:C1", "out:C2", "out:I1"])
    assert by_id["col:C1"]["detail"] == "string" and by_id["col:I1"]["detail"] == "int64"
    assert by_id["out:C1"]["detail"] == "int64" and by_id["out:I1"]["detail"] == "float32"
    assert by_id["op:0:0"]["label"] == "Categorify"
    assert by_id["op:0:0"]["detail"] == "freq_threshold=2"
    tip = by_id["op:0:0"]["tooltip"]
    assert "freq_threshold = 2" in tip and "max_size = None" in tip and "C1: int64" in tip
    assert {(e["source"], e["target"]) for e in edges} == {
        ("col:C1", "op:0:0"), ("col:C2", "op:0:0"), ("op:0:0", "out:C1"), ("op:0:0", "out:C2"),
        ("col:I1", "op:1:0"), ("op:1:0", "op:1:1"), ("op:1:1", "out:I1")}


def test_layout_of_tens_of_nodes_is_layered_without_overlaps_or_crossings():
    model = criteo_model()
    nodes, edges = model_graph(model)
    assert len(nodes) == 40 + 5 + 40  # 40 input columns, 5 operators, 40 output columns
    placed = layered_layout(nodes, edges)
    by_id = check_layout(placed, edges)
    assert {by_id[f"out:C{i}"]["layer"] for i in range(1, 27)} == {5}  # outputs aligned last
    order = {}
    for layer in {n["layer"] for n in placed}:
        members = sorted((n for n in placed if n["layer"] == layer), key=lambda n: n["y"])
        order.update({n["id"]: k for k, n in enumerate(members)})
    layer = {n["id"]: n["layer"] for n in placed}
    assert crossings(order, layer, edges) == 0
    ys = [by_id[f"col:C{i}"]["y"] for i in range(1, 27)]  # the operator sits beside its inputs
    assert min(ys) <= by_id["op:0:0"]["y"] <= max(ys)


def test_barycenter_ordering_removes_crossings_of_interleaved_inputs():
    nodes = [{"id": i} for i in ("c1", "i1", "c2", "i2", "cat", "fill", "o1", "o2", "o3", "o4")]
    edges = [{"source": s, "target": t} for s, t in (
        ("c1", "cat"), ("i1", "fill"), ("c2", "cat"), ("i2", "fill"),
        ("cat", "o1"), ("fill", "o2"), ("cat", "o3"), ("fill", "o4"))]
    given = {n["id"]: k for k, n in enumerate(nodes[:4])} | {"cat": 0, "fill": 1} | {
        f"o{k}": k for k in range(1, 5)}
    layer = dict.fromkeys(["c1", "i1", "c2", "i2"], 0) | {"cat": 1, "fill": 1} | dict.fromkeys(
        ["o1", "o2", "o3", "o4"], 2)
    assert crossings(given, layer, edges) == 2  # i1->fill crosses c2->cat, same on the right
    placed = layered_layout(nodes, edges)
    order = {n["id"]: sorted(m["y"] for m in placed if m["layer"] == n["layer"]).index(n["y"])
             for n in placed}
    assert crossings(order, layer, edges) == 0
    check_layout(placed, edges)


def test_cycles_are_refused():
    with pytest.raises(Exception, match="cycle"):
        layered_layout([{"id": "a"}, {"id": "b"}], [{"source": "a", "target": "b"},
                                                    {"source": "b", "target": "a"}])


def test_dag_view_traits_follow_the_model():
    model = BuilderModel(make_criteo_frame(50))
    view = DagView()
    view.show_model(model)
    assert view.nodes == [] and "Select columns" in view.message
    model.add_step(["C1"], "Categorify")
    view.show_model(model)
    assert view.selected == "op:0:0"  # the model's selected step
    assert {n["id"] for n in view.nodes} == {"col:C1", "op:0:0", "out:C1"}
    assert all({"x", "y", "width", "height", "layer"} <= set(n) for n in view.nodes)
    view.selected = "op:0:0"
    model.remove_step(0, 0)
    view.show_model(model)
    assert view.selected == "" and repr(view) == "DagView(2 nodes, 0 operators)"  # C1 as is
    assert parse_op_id("op:3:12") == (3, 12) and parse_op_id("out:op:1") is None


def test_assets_are_bundled_and_need_no_network():
    js = widget_asset("dag.js").read_text()
    css = widget_asset("dag.css").read_text()
    esm, style = DagView._esm, DagView._css
    assert str(esm) == js and str(style) == css  # anywidget serves the files' contents
    assert re.search(r"export default \{ render \}", js)
    urls = set(re.findall(r"https?://[^\s\"'`)]+", js + css))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace, nothing to fetch
    assert not re.search(r"^\s*import\s", js, re.MULTILINE)  # no external modules
    for name in ("irs-dag-node", "irs-dag-selected", "irs-dag-tooltip", "irs-dag-edge"):
        assert name in js and name in css
    for kind in ("column", "op", "output"):  # js builds `irs-dag-${node.kind}`
        assert f".irs-dag-{kind} rect" in css
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"interactive_recsys._widgets" = ["*.js", "*.css"]' in pyproject


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js checks the module syntax")
def test_dag_js_is_valid_javascript(tmp_path):
    module = tmp_path / "dag.mjs"
    module.write_text(widget_asset("dag.js").read_text())
    done = subprocess.run(["node", "--check", str(module)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
