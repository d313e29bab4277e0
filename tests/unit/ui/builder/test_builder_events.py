"""BuilderModel's per-field events, and the builder view that draws each field on its own.

The expectations are the model's states written out by hand: which field changes (and from
what to what) after each action, and which widget traits a selection may touch.
"""

from __future__ import annotations

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder.model._events import Change
from interactive_recsys.ui.builder.model._model import Branch, BuilderModel, Step
from tests.conftest import make_criteo_frame

CATS = ["C1", "C2", "C3"]
CONTS = ["I1", "I2", "F1"]


@pytest.fixture
def frame() -> pd.DataFrame:
    return make_criteo_frame(100)


class Recorder:
    """Every event a model sends, in order."""

    def __init__(self, model: BuilderModel, names=None) -> None:
        self.events: list[Change] = []
        model.observe(self.events.append, names=names)

    def take(self) -> list[Change]:
        events = list(self.events)
        self.events.clear()  # the same list: the observer appends to it
        return events


def names(events: list[Change]) -> list[str]:
    return [e.name for e in events]


# ---- the model --------------------------------------------------------------------------------
def test_each_edit_sends_branches_then_selection_with_old_and_new(frame):
    m = BuilderModel(frame)
    seen = Recorder(m)
    cat = Branch(columns=CATS, steps=[Step("Categorify")])
    m.add_step(CATS, "Categorify")
    assert seen.take() == [Change("branches", [Branch()], [cat]),
                           Change("selection", (0, None), (0, (0, 0)))]
    m.add_step(CONTS, "FillMissing")  # other columns: a new branch, selected
    fill = Branch(columns=CONTS, steps=[Step("FillMissing")])
    assert seen.take() == [Change("branches", [cat], [cat, fill]),
                           Change("selection", (0, (0, 0)), (1, (1, 0)))]
    m.update_step(1, 0, params={"fill_val": 1})  # the selected step: steps change only
    filled = Branch(columns=CONTS, steps=[Step("FillMissing", {"fill_val": 1})])
    assert seen.take() == [Change("branches", [cat, fill], [cat, filled])]
    m.update_step(1, 0, params={"fill_val": 1})  # the same parameters: nothing changed
    assert seen.take() == []
    m.add_step(CONTS, "Normalize")
    assert names(seen.take()) == ["branches", "selection"] and m.selection == (1, (1, 1))
    m.move_step(1, 1, -1)
    events = seen.take()
    assert names(events) == ["branches", "selection"]
    assert [s.op for s in events[0].new[1].steps] == ["Normalize", "FillMissing"]
    assert events[1] == Change("selection", (1, (1, 1)), (1, (1, 0)))
    m.remove_step(1, 0)
    assert names(seen.take()) == ["branches"]  # the selection stays on step 1 of branch 2
    assert m.selection == (1, (1, 0)) and m.branches[1].steps == [filled.steps[0]]
    m.new_branch()
    assert seen.take() == [Change("branches", m.branches[:2], m.branches),
                           Change("selection", (1, (1, 0)), (2, None))]
    m.new_branch()  # the empty last branch is reused: nothing changed
    assert seen.take() == []
    m.remove_branch(2)
    assert seen.take() == [Change("branches", [*m.branches, Branch()], m.branches),
                           Change("selection", (2, None), (1, None))]


def test_undo_suggest_and_load_send_branches(frame, tmp_path):
    m = BuilderModel(frame)
    m.add_step(CATS, "Categorify")
    m.update_step(0, 0, params={"max_size": 10})
    seen = Recorder(m)
    m.undo()  # the parameters come back; the selection was the same before
    assert seen.take() == [Change("branches",
                                  [Branch(CATS, steps=[Step("Categorify", {"max_size": 10})])],
                                  [Branch(CATS, steps=[Step("Categorify")])])]
    m.undo()
    assert seen.take() == [Change("branches", [Branch(CATS, steps=[Step("Categorify")])],
                                  [Branch()]),
                           Change("selection", (0, (0, 0)), (0, None))]
    suggested = m.suggest()  # the first Suggest counts every row first
    events = seen.take()
    assert names(events) == ["measured", "branches", "selection"]
    assert events[0].new is m.measured and events[1].new == suggested
    assert events[2].new == (len(suggested) - 1, None)
    irs.Workflow(CONTS >> ops.FillMissing()).save(tmp_path / "wf")
    m.load(tmp_path / "wf")
    assert seen.take() == [Change("branches", suggested,
                                  [Branch(CONTS, steps=[Step("FillMissing")])]),
                           Change("selection", (len(suggested) - 1, None), (0, None))]
    m.undo()
    assert names(seen.take()) == ["branches", "selection"] and m.branches == suggested


def test_select_sends_selection_only_and_nothing_when_already_selected(frame):
    m = BuilderModel(frame)
    m.add_step(CATS, "Categorify")
    m.add_step(CONTS, "FillMissing")
    m.add_step(CONTS, "Normalize")
    m.fitted_workflow = fitted = m.to_workflow().fit(frame)
    seen = Recorder(m)
    m.select(0, 0)
    assert seen.take() == [Change("selection", (1, (1, 1)), (0, (0, 0)))]
    m.select(0, 0)  # what is selected: no event
    assert seen.take() == []
    m.select(1, -1)  # the branch itself
    assert seen.take() == [Change("selection", (0, (0, 0)), (1, None))]
    m.select(1, None)  # the same as -1
    assert seen.take() == []
    with pytest.raises(irs.ParameterError, match="no step 5 in branch 1"):
        m.select(0, 4)
    assert seen.take() == [] and m.selection == (1, None)
    assert m.fitted_workflow is fitted  # a selection is not an edit: the fit stays
    m.update_step(0, 0, params={"max_size": 5})
    assert m.fitted_workflow is None


def test_refused_edits_send_nothing(frame):
    m = BuilderModel(frame)
    m.add_step(CONTS, "FillMissing")
    seen = Recorder(m)
    with pytest.raises(irs.ParameterError):
        m.add_step(CONTS, "Clip", {"min_value": "a"})
    with pytest.raises(irs.SchemaError):
        m.add_step(CATS, "Normalize")
    with pytest.raises(irs.SchemaError):
        m.new_branch(CONTS)  # the same output columns twice
    with pytest.raises(irs.ParameterError):
        m.move_step(0, 0, -1)
    assert seen.take() == []


def test_observe_by_field_and_unobserve(frame):
    m = BuilderModel(frame)
    branches, selection, both = Recorder(m, "branches"), Recorder(m, ["selection"]), Recorder(m)
    m.add_step(CATS, "Categorify")
    m.new_branch()
    m.select(0, 0)
    assert names(branches.take()) == ["branches", "branches"]
    assert names(selection.take()) == ["selection"] * 3
    assert names(both.take()) == ["branches", "selection", "branches", "selection",
                                  "selection"]
    m.unobserve(both.events.append, "selection")
    m.select(1, None)
    assert both.take() == [] and names(selection.take()) == ["selection"]
    m.unobserve(selection.events.append)
    m.remove_branch(1)
    assert selection.take() == [] and names(both.take()) == ["branches"]
    with pytest.raises(irs.ParameterError, match="no field 'steps'.*'branches', 'selection'"):
        m.observe(print, names="steps")


# ---- the view ---------------------------------------------------------------------------------
class Redraws:
    """Counts what the builder recomputes and which widget traits it assigns."""

    def __init__(self, b: PipelineBuilder) -> None:
        self.counts = dict.fromkeys(["items", "graph", "schema", "options", "nodes", "value",
                                     "selected", "model-selection"], 0)
        model, dag = b.model, b.dag
        items, set_graph, output_schema = model.items, dag.set_graph, model.output_schema
        model.items = self._count("items", items)  # instance attributes shadow the methods
        dag.set_graph = self._count("graph", set_graph)
        model.output_schema = self._count("schema", output_schema)
        b.steps.observe(lambda _: self._add("options"), "options")
        b.steps.observe(lambda _: self._add("value"), "value")
        dag.observe(lambda _: self._add("nodes"), "nodes")
        dag.observe(lambda _: self._add("selected"), "selected")
        model.observe(lambda _: self._add("model-selection"), "selection")

    def _add(self, key: str) -> None:
        self.counts[key] += 1

    def _count(self, key, method):
        def counted(*args, **kwargs):
            self._add(key)
            return method(*args, **kwargs)
        return counted

    def take(self) -> dict[str, int]:
        counts = {k: v for k, v in self.counts.items() if v}
        self.counts = dict.fromkeys(self.counts, 0)
        return counts


def two_branch_builder(frame: pd.DataFrame) -> PipelineBuilder:
    b = PipelineBuilder(frame)
    b.model.add_step(CATS, "Categorify")
    b.model.add_step(CONTS, "FillMissing")
    b.model.add_step(CONTS, "Normalize")
    return b


def test_a_selection_moves_the_highlight_without_redrawing(frame):
    b = two_branch_builder(frame)
    options, nodes = b.steps.options, b.dag.nodes
    redraws = Redraws(b)
    b.steps.value = (0, 0)  # a click in the step list
    assert b.model.selection == (0, (0, 0)) and b.dag.selected == "op:0:0"
    assert b.operator == "Categorify" and b.selected_columns == CATS  # the form is loaded
    # one selection event (no echo from the graph), and nothing redrawn
    assert redraws.take() == {"value": 1, "selected": 1, "model-selection": 1}
    b.dag.selected = "op:1:0"  # a click in the graph
    assert b.model.selection == (1, (1, 0)) and b.steps.value == (1, 0)
    assert b.operator == "FillMissing" and b.selected_columns == CONTS
    assert redraws.take() == {"value": 1, "selected": 1, "model-selection": 1}
    b.model.select(1, 1)  # from code
    assert b.steps.value == (1, 1) and b.dag.selected == "op:1:1" and b.operator == "Normalize"
    assert redraws.take() == {"value": 1, "selected": 1, "model-selection": 1}
    b.steps.value = (1, 1)  # the selected step again: nothing at all
    b.dag.selected = "col:C1"  # a column node: not a step, the model's selection stays
    assert b.model.selection == (1, (1, 1))
    assert redraws.take() == {"selected": 1}
    assert b.steps.options is options and b.dag.nodes is nodes  # the very same objects


def test_an_edit_redraws_once_and_keeps_the_selection(frame):
    b = two_branch_builder(frame)
    b.steps.value = (0, 0)
    redraws = Redraws(b)
    b.form.fields["freq_threshold"].value = "2"  # typed: the step changes, not the selection
    assert b.model.branches[0].steps[0].params == {"freq_threshold": 2}
    assert "freq_threshold=2" in b.steps.options[0][0]
    assert b.steps.value == (0, 0) and b.dag.selected == "op:0:0"
    counts = redraws.take()
    assert counts["items"] == counts["graph"] == counts["schema"] == counts["options"] == 1
    assert "model-selection" not in counts
    b.buttons["undo"].click()  # the same selection: the undone parameter is in the form
    assert b.model.branches[0].steps[0].params == {}
    assert b.form.op == "Categorify" and b.form.values() == {} and b.steps.value == (0, 0)
    counts = redraws.take()
    assert counts["items"] == counts["graph"] == 1 and "model-selection" not in counts
    b.model.remove_branch(0)  # the selection goes: new options must not select the first
    assert b.model.selection == (0, None) and b.steps.value is None and b.dag.selected == ""
    assert [v for _, v in b.steps.options] == [(0, 0), (0, 1)]
    assert redraws.take()["model-selection"] == 1  # remove_branch's own, no click echo
    b.steps.value = (0, 1)  # and clicks still select
    assert b.model.selection == (0, (0, 1)) and b.operator == "Normalize"


def test_opening_another_dataset_unhooks_the_old_model(frame):
    b = two_branch_builder(frame)
    old = b.model
    b.open_dataset(frame[CONTS])
    assert b.model is not old and b.steps.options == () and b.dag.nodes == []
    redraws = Redraws(b)
    old.add_step(CONTS, "LogOp")  # not drawn any more
    old.select(0, 0)
    assert redraws.take() == {} and b.steps.options == () and b.dag.nodes == []
    b.model.add_step(CONTS, "FillMissing")
    assert [v for _, v in b.steps.options] == [(0, 0)] and b.dag.selected == "op:0:0"
