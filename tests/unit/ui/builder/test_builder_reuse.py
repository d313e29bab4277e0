"""The Studio's Run and Preview reuse the unchanged steps of the previous fit, and say so:
the model passes its last fitted workflow as ``fit(..., reuse=)``, the graph marks each
statistics step "reused" or "computed", and the run and preview messages count them (no
browser: the builder's widgets with ipywidgets' dummy comm)."""

from __future__ import annotations

import os

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder._fit_status import reuse_text, step_status
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.views._dag import model_graph
from interactive_recsys.ui.studio._studio import find_button
from tests.conftest import assert_frames_equal, make_criteo_frame

CATS = ["C1", "C2", "C3"]
CONTS = ["I1", "I2", "F1"]


@pytest.fixture
def data(tmp_path) -> str:
    path = tmp_path / "clicks.parquet"
    make_criteo_frame(300).drop(columns=["L1"]).to_parquet(path)
    return str(path)


def build(m: BuilderModel) -> None:
    """Categorify; FillMissing -> Normalize; the label passed through."""
    m.add_step(CATS, "Categorify")
    m.new_branch()
    m.add_step(CONTS, "FillMissing", {"fill_val": 0})
    m.add_step(CONTS, "Normalize")
    m.new_branch(["label"])


def badges(m: BuilderModel) -> dict[str, str]:
    return {n["id"]: n["status"] for n in model_graph(m)[0] if n.get("status")}


def test_a_run_after_editing_one_continuous_step_computes_only_that_step(data):
    m = BuilderModel(data)
    build(m)
    first = m.run(None)
    first.result(timeout=60)
    m.wait_run(timeout=60)
    assert step_status(m) == {(0, 0): "computed", (1, 1): "computed"}
    assert badges(m) == {"op:0:0": "computed", "op:1:1": "computed"}
    m.update_step(1, 1, op="NormalizeMinMax")  # one continuous step edited
    assert m.fitted_workflow is None and badges(m) == {}  # not fitted as it is now
    job = m.run(None)
    wf = job.result(timeout=60)
    m.wait_run(timeout=60)
    assert m.fitted_workflow is wf and m.reuse_run is wf
    assert step_status(m) == {(0, 0): "reused", (1, 1): "computed"}
    assert badges(m) == {"op:0:0": "reused", "op:1:1": "computed"}
    assert [p["operators"] for p in wf.fit_stats["phases"]] == [["normalizeminmax-4"]]
    assert reuse_text(wf) == "reused 1 of 2 fitted steps; computed normalizeminmax-4"
    fresh = m.to_workflow().fit(data)  # the same result as a fit of everything
    assert_frames_equal(wf.transform(data).compute(), fresh.transform(data).compute())
    m.undo()  # back to Normalize: the Run before last fitted it, but only the last is reused
    again = m.run(None).result(timeout=60)
    m.wait_run(timeout=60)
    assert step_status(m) == {(0, 0): "reused", (1, 1): "computed"}
    assert again.fit_stats["reused"] == ["categorify-1"]


def test_previews_reuse_the_previous_preview_of_the_same_sample(data):
    m = BuilderModel(data)
    build(m)
    first = m.preview(100)
    assert not any(s.reused for s in first.workflow.fitted_steps())
    m.update_step(1, 1, op="NormalizeMinMax")
    second = m.preview(100)
    assert step_status(m, second.workflow) == {(0, 0): "reused", (1, 1): "computed"}
    expected = m.to_workflow().fit_transform(pd.read_parquet(data).head(100))
    assert_frames_equal(second.output, expected)
    m.new_branch()
    m.add_step(["I3"], "Normalize")  # one more input column: the others hash alike
    assert step_status(m, m.preview(100).workflow) == {(0, 0): "reused", (1, 1): "reused",
                                                      (3, 0): "computed"}


def test_the_builder_says_what_its_run_and_preview_reused(data):
    b = PipelineBuilder(data, preview_rows=80)
    build(b.model)
    find_button(b, "irs-btn-preview").click()
    first = b.feedback.areas["run"].value  # nothing to reuse yet: nothing said
    assert "Preview: fitted and transformed 80" in first and "reused" not in first
    b.model.update_step(1, 1, op="NormalizeMinMax")
    find_button(b, "irs-btn-preview").click()
    assert "reused 1 of 2 fitted steps; computed NormalizeMinMax (step 2 of branch 2)" in \
        b.feedback.areas["run"].value
    b.output_text.value = ""  # fit only
    find_button(b, "irs-btn-run").click()
    b.model.wait_run(timeout=60)
    b.model.update_step(1, 1, op="Normalize")
    find_button(b, "irs-btn-run").click()
    b.model.wait_run(timeout=60)
    assert "irs-run-finished" in b.status.value
    assert "reused 1 of 2 fitted steps; computed Normalize (step 2 of branch 2)" in b.status.value
    assert {n["id"]: n["status"] for n in b.dag.nodes if n.get("status")} == {
        "op:0:0": "reused", "op:1:1": "computed"}
    tip = next(n["tooltip"] for n in b.dag.nodes if n["id"] == "op:0:0")
    assert "reused: its state was kept from the previous Run" in tip


def test_a_loaded_fitted_workflow_is_reused_by_the_first_run(data, tmp_path):
    graph = ((CATS >> ops.Categorify()) + (CONTS >> ops.FillMissing(0) >> ops.Normalize())
             + ["label"])
    irs.Workflow(graph).fit(data).save(tmp_path / "wf")
    m = BuilderModel(data)
    m.load(str(tmp_path / "wf"))
    m.update_step(1, 1, op="NormalizeMinMax")
    wf = m.run(None).result(timeout=60)
    m.wait_run(timeout=60)
    assert [s.reused for s in wf.fitted_steps()] == [True, False]


def test_the_preview_tab_refits_its_sample_copy_reusing_the_last_one(data):
    from interactive_recsys.ui.preview._preview import Preview

    def graph(normalize: ops.Operator) -> irs.Workflow:
        return irs.Workflow((CATS >> ops.Categorify())
                            + (CONTS >> ops.FillMissing(0) >> normalize) + ["label"])

    view = Preview(graph(ops.Normalize()), data, n_rows=100)
    assert [s.reused for s in view.model.fitted.fitted_steps()] == [False, False]
    first_folder = view.model._tmp
    view.refresh(graph(ops.NormalizeMinMax()))  # an edit: the copy is fitted again
    assert view.error is None
    assert [s.reused for s in view.model.fitted.fitted_steps()] == [True, False]
    assert not os.path.exists(first_folder)  # the last copy's folder goes once read
    expected = graph(ops.NormalizeMinMax()).fit_transform(pd.read_parquet(data).head(100))
    assert_frames_equal(view.model.output, expected)


def test_a_run_after_editing_only_freq_threshold_refinishes_categorify(data):
    """The Studio's second Run after a freq_threshold edit reads no data for Categorify: its
    vocabularies are cut again from the counts the first Run saved."""
    b = PipelineBuilder(data, preview_rows=80)
    build(b.model)
    b.output_text.value = ""  # fit only
    find_button(b, "irs-btn-run").click()
    b.model.wait_run(timeout=60)
    b.model.update_step(0, 0, params={"freq_threshold": 3})
    find_button(b, "irs-btn-run").click()
    b.model.wait_run(timeout=60)
    wf = b.model.fitted_workflow
    assert [(s.node_id, s.reused, s.refinished) for s in wf.fitted_steps()] == [
        ("categorify-1", False, True), ("normalize-4", True, False)]
    assert wf.fit_stats["phases"] == []  # no pass over the data
    assert step_status(b.model) == {(0, 0): "refinished", (1, 1): "reused"}
    assert "irs-run-finished" in b.status.value
    assert ("reused 1 of 2 fitted steps; refinished Categorify (step 1 of branch 1) from the "
            "saved counts") in b.status.value
    tip = next(n["tooltip"] for n in b.dag.nodes if n["id"] == "op:0:0")
    assert "refinished: rebuilt from the previous Run's saved counts" in tip
    fresh = b.model.to_workflow().fit(data)
    assert_frames_equal(wf.transform(data).compute(), fresh.transform(data).compute())
