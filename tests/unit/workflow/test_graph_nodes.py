"""Typed graph nodes, ``>>``/``+`` owned by graph.py (no import cycle), and the compiled plan
that carries every step's schema."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import SchemaError
from interactive_recsys.schema import Schema
from interactive_recsys.workflow._graph import ConcatNode, Node, OpNode, SelectNode
from interactive_recsys.workflow._plan import ConcatStep, OpStep, SelectStep, compile_plan
from tests.conftest import partitioned

PACKAGE = Path(irs.__file__).parent


def module_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package modules it imports (anywhere in the file,
    function-level imports included), from the source text."""
    modules = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
               .removesuffix(".__init__"): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = (f"{base}.{node.module}" if node.module else base) if node.level \
                    else node.module or ""
                out |= {t for t in [target, *(f"{target}.{a.name}" for a in node.names)]
                        if t in modules}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names if a.name in modules}
        edges[name] = out - {name}
    return edges


def reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    todo, seen = [start], set()
    while todo:
        m = todo.pop()
        for n in edges.get(m, ()):
            if n == goal:
                return True
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return False


def test_the_graph_is_in_no_import_cycle():
    edges = module_imports()
    assert "interactive_recsys.ops._base" in edges["interactive_recsys.workflow._graph"]  # parsed right
    assert "interactive_recsys.schema" in edges["interactive_recsys.workflow._graph"]
    for module in ("graph", "selector", "ops.base", "plan"):
        name = f"interactive_recsys.{module}"
        assert not reaches(edges, name, name), f"{name} imports itself through others"
    for module in ("selector", "ops.base", "plan", "schema"):
        assert not reaches(edges, f"interactive_recsys.{module}", "interactive_recsys.workflow._graph")


def test_sugar_works_in_a_fresh_interpreter_importing_only_selector_and_ops():
    code = ("from interactive_recsys.schema import ColumnSelector\n"
            "from interactive_recsys.ops import Clip\n"
            "n = ColumnSelector(['a']) >> Clip(min_value=0)\n"
            "m = ['b'] >> Clip(max_value=1)\n"
            "print(type(n).__name__, type(m).__name__, type(n + m).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["OpNode", "OpNode", "ConcatNode"]


def test_nodes_are_typed_and_the_saved_kind_names_build_them():
    sel = irs.ColumnSelector(["a"])
    step = sel >> ops.Clip(min_value=0)
    both = step + "b" + "c"
    assert type(step) is OpNode and type(step.parents[0]) is SelectNode
    assert type(both) is ConcatNode and len(both.parents) == 3  # `+` flattens sums
    assert [n.kind for n in both.walk()] == ["select", "op", "select", "select", "concat"]
    assert type(Node("concat", parents=[step])) is ConcatNode  # codegen's and the format's form
    assert type(Node("select", selector=sel)) is SelectNode
    with pytest.raises(SchemaError, match="Unknown node kind 'join'"):
        Node("join")
    with pytest.raises(SchemaError, match="at least one parent"):
        OpNode(op=ops.Clip(min_value=0))
    copy = pickle.loads(pickle.dumps(both))
    assert [type(n) for n in copy.walk()] == [type(n) for n in both.walk()]


def test_the_compiled_plan_carries_each_steps_schema():
    schema = Schema.from_arrow(pa.schema([("a", pa.int64()), ("b", pa.float64()),
                                          ("label", pa.int8())]))
    cont = ["b"] >> ops.FillMissing(0) >> ops.Normalize()
    output = (["a"] >> ops.HashBucket(num_buckets=10)) + cont + ["label"]
    nodes = list(output.walk())
    state = {"means": {"b": 0.5}, "stds": {"b": 2.0}}  # as a fit would give (by step id)
    plan = compile_plan(output, schema, {output.node_ids()[id(cont)]: state}, "cpu", None)
    assert [type(s) for s in plan.steps] == [
        {SelectNode: SelectStep, OpNode: OpStep, ConcatNode: ConcatStep}[type(n)] for n in nodes]
    assert plan.steps[-1].schema == irs.Workflow(output).compute_schema(schema)
    fill = next(s for s in plan.steps if isinstance(s, OpStep)
                and isinstance(s.op, ops.FillMissing))
    assert fill.input_schema == schema.select(["b"]) and fill.groups == [("b",)]
    norm = next(s for s in plan.steps if isinstance(s, OpStep) and isinstance(s.op, ops.Normalize))
    assert norm.input_schema == fill.schema  # reads the fill step's output
    assert [s.columns for s in plan.steps if isinstance(s, SelectStep)] == [["a"], ["b"],
                                                                          ["label"]]
    shipped = pickle.loads(pickle.dumps(plan))  # as Dask workers get it: without schemas
    assert shipped.steps[-1].schema is None
    frame = pd.DataFrame({"a": [1, 2], "b": [0.5, None], "label": [0, 1]}).astype(
        {"a": "int64[pyarrow]", "b": "float64[pyarrow]", "label": "int8[pyarrow]"})
    names = plan.steps[-1].output_columns
    out = shipped.transform_partition(frame, len(nodes) - 1, names)
    pd.testing.assert_frame_equal(out, plan.transform_partition(frame, len(nodes) - 1, names))
    assert out["b"].tolist() == pytest.approx([0.0, -0.25])  # (b filled with 0 - 0.5) / 2


def test_a_transform_through_shuffles_computes_the_schemas_once(monkeypatch):
    df = pd.DataFrame({"user": [1, 2, 1, 3, 2, 1] * 5, "item": list(range(30)),
                       "ts": list(range(30, 0, -1))})
    graph = (["user", "ts"] >> ops.Groupby(["user"], aggs={"ts": ["max"]})
             >> ops.Groupby(["user"], aggs={"ts_max": ["sum"]}))  # two shuffles
    wf = irs.Workflow(graph).fit(partitioned(df, 3))
    calls = []
    original = Node.schemas
    monkeypatch.setattr(Node, "schemas", lambda self, *a, **k: calls.append(1)
                        or original(self, *a, **k))
    out = wf.transform(partitioned(df, 3)).compute()
    assert len(calls) == 1
    expected = df.groupby("user")["ts"].max().to_dict()
    assert dict(zip(out["user"].tolist(), out["ts_max_sum"].tolist(), strict=True)) == expected


def test_a_fit_compiles_the_plan_once_and_gives_it_the_states_phase_by_phase(monkeypatch):
    """Two dependent phases (Normalize of Categorify's codes; Categorify of normalised
    values): one plan, given each phase's states and the schemas that follow from them."""
    from interactive_recsys.workflow import _plan as execution
    from interactive_recsys.workflow import _workflow as workflow

    df = pd.DataFrame({"c": ["x", "y", "x", "z"] * 5, "n": [1.0, 2.0, None, 4.0] * 5})
    codes = ["c"] >> ops.Categorify() >> ops.Normalize()
    graph = codes + (["n"] >> ops.FillMissing(0) >> ops.Normalize() >> ops.Categorify())
    compiled, phases = [], []
    original = execution.compile_plan
    monkeypatch.setattr(execution, "compile_plan", lambda *a, **k: compiled.append(
        original(*a, **k)) or compiled[-1])
    original_fit = execution.fit_phases

    def spy(plan, ds, targets):
        for k, states, seconds in original_fit(plan, ds, targets):
            phases.append((k, sorted(states), plan.steps[-1].schema["c"].cardinality))
            yield k, states, seconds

    monkeypatch.setattr(workflow, "fit_phases", spy)
    wf = irs.Workflow(graph).fit(partitioned(df, 2))
    assert len(compiled) == 1
    assert [k for k, _, _ in phases] == [1, 2]
    assert phases[0][1] == ["categorify-1", "normalize-5"]  # the first phase of each branch
    codes_only = irs.Workflow(["c"] >> ops.Categorify()).fit(df)
    assert phases[0][2] == codes_only.output_schema["c"].cardinality  # known after phase 1
    assert compiled[0].states() == wf._states
    assert len(wf.fit_stats["phases"]) == 2
    expected = irs.Workflow(graph).fit_transform(df)
    pd.testing.assert_frame_equal(wf.transform(df), expected)
    shipped = pickle.loads(pickle.dumps(compiled[0]))  # to the workers: steps, no graph
    assert shipped.graph is None and shipped.input_schema is None


def test_nvtabular_graph_forms_function_index_graph_and_one_tag():
    """``node >> function`` is a LambdaOp, ``df.columns`` a selection, ``node.graph`` lists
    the steps, and one tag string is one tag (NVTabular's forms)."""
    df = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    node = df.columns >> ops.Clip(min_value=2) >> (lambda col: col * 10)
    assert isinstance(node.op, ops.LambdaOp) and node.parents[0].op == ops.Clip(min_value=2)
    assert irs.Workflow(node).fit_transform(df).to_dict("list") == {"a": [20, 20], "b": [30, 40]}
    lines = repr(node.graph).splitlines()
    assert lines[0] == "1: ['a', 'b'] >> Clip(min_value=2)" and "LambdaOp" in lines[1]
    col = irs.ColumnSchema("a", "int64").with_tags(add="custom_tag")
    assert col.tags == {"custom_tag"}
