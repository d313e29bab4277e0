"""One fitted-state object: fit builds it, update builds a new one, save/load round-trip it,
and the incremental update reaches no private member of a Workflow."""

from __future__ import annotations

import ast
import copy
import pathlib

import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.workflow import _fitted, _incremental
from interactive_recsys.workflow._fitted import FittedState
from interactive_recsys.workflow._keys import state_digest

#: the modules the incremental update is written with (its own, and the state it builds)
SCANNED = [pathlib.Path(_incremental.__file__), pathlib.Path(_fitted.__file__)]


def private_accesses(source: str) -> list[str]:
    """``x._name`` attribute accesses where ``x`` is not ``self`` (dunders aside)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                and not node.attr.startswith("__") \
                and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_a_private_access_on_a_workflow():
    snippet = ("def updated(wf, data):\n"
               "    wf._check_fitted()\n"
               "    states = wf._states\n"
               "    return self._ok, wf.fitted, type(wf).__name__\n")
    assert sorted(private_accesses(snippet)) == ["2: wf._check_fitted", "3: wf._states"]


def test_the_incremental_update_touches_no_private_member():
    for path in SCANNED:
        assert private_accesses(path.read_text()) == [], path.name


def _codes(wf: irs.Workflow, values: list[str]) -> list[int]:
    return wf.transform(pd.DataFrame({"c": values}))["c"].tolist()


def _fitted_workflow() -> tuple[irs.Workflow, irs.Dataset]:
    # frequencies b 3, a 2, c 1: ids by descending frequency after 0 pad, 1 null, 2 OOV
    ds = irs.Dataset(pd.DataFrame({"c": ["b", "a", "b", "c", "b", "a"]}))
    return irs.Workflow(["c"] >> ops.Categorify()).fit(ds), ds


def test_fit_builds_the_state():
    unfitted = irs.Workflow(["c"] >> ops.Categorify())
    assert isinstance(unfitted._state, FittedState) and not unfitted._state.fitted
    wf, ds = _fitted_workflow()
    state = wf._state
    assert state is not unfitted._state and state.fitted and wf.fitted
    assert state.input_schema == ds.schema == wf.input_schema
    assert list(state.states) == ["categorify-1"]
    assert state.digests == {"categorify-1": state_digest(state.states["categorify-1"])}
    assert len(state.keys["categorify-1"]) == 64 and state.reused == frozenset()
    assert state.artifacts_dir == wf.artifacts_dir and state.temporary is not None
    (step,) = state.steps(wf.output_node)
    assert (step.node_id, step.columns, step.outputs) == ("categorify-1", ("c",), ("c",))
    assert _codes(wf, ["b", "a", "c", "zz"]) == [3, 4, 5, 2]


def test_update_returns_a_workflow_with_a_new_state_and_leaves_the_original():
    wf, _ = _fitted_workflow()
    before, held = wf._state, copy.deepcopy(wf._state.states)
    new = wf.update(pd.DataFrame({"c": ["d", "a", "d"]}))
    assert wf._state is before and wf._state.states == held  # untouched
    assert new._state is not before and new._state.fitted
    assert new.artifacts_dir != wf.artifacts_dir
    assert new._state.input_schema == before.input_schema
    # the old ids kept, the new value d appended after them; the original has no d
    assert _codes(new, ["b", "a", "c", "d", "zz"]) == [3, 4, 5, 6, 2]
    assert _codes(wf, ["b", "a", "c", "d", "zz"]) == [3, 4, 5, 2, 2]
    assert new.fit_stats["update"]["rows"] == 3


def test_save_and_load_round_trip_the_state(tmp_path):
    wf, _ = _fitted_workflow()
    loaded = irs.Workflow.load(wf.save(tmp_path / "saved"))
    a, b = wf._state, loaded._state
    assert b.states == a.states and b.keys == a.keys and b.digests == a.digests
    assert b.input_schema == a.input_schema and b.fitted
    assert b.read_only and not a.read_only  # a loaded folder is read, never written

    def described(state: FittedState, output) -> list[tuple]:
        return [(s.node_id, s.columns, s.outputs, s.groups, s.key, s.state)
                for s in state.steps(output)]

    assert described(b, loaded.output_node) == described(a, wf.output_node)
    schemas_a = {k: v.to_dict() for k, v in zip(
        [wf.node_id(n) for n in wf.nodes], a.schemas(wf.output_node).values(), strict=True)}
    schemas_b = {k: v.to_dict() for k, v in zip(
        [loaded.node_id(n) for n in loaded.nodes], b.schemas(loaded.output_node).values(),
        strict=True)}
    assert schemas_a == schemas_b
    assert _codes(loaded, ["b", "a", "c", "zz"]) == [3, 4, 5, 2]
