"""Users read steps by operator and position ("Categorify (step 1 of branch 1)", as in the
Steps list), not by internal node ids; the ids stay the keys (no browser)."""

from __future__ import annotations

from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder._fit_status import reuse_text, step_names
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.studio._studio import find_button
from tests.conftest import make_criteo_frame


def build(m: BuilderModel) -> None:
    """Categorify; the label passed through (a branch without steps); FillMissing ->
    Normalize."""
    m.add_step(["C1", "C2"], "Categorify")
    m.new_branch(["label"])
    m.new_branch()
    m.add_step(["I1", "F1"], "FillMissing", {"fill_val": 0})
    m.add_step(["I1", "F1"], "Normalize")


def test_step_names_follow_the_steps_list(tmp_path):
    path = tmp_path / "clicks.parquet"
    make_criteo_frame(200).to_parquet(path)
    m = BuilderModel(str(path))
    build(m)
    wf = m.to_workflow()
    names = step_names(m, wf)
    assert sorted(names.values()) == ["Categorify (step 1 of branch 1)",
                                      "FillMissing (step 1 of branch 3)",
                                      "Normalize (step 2 of branch 3)"]
    assert set(names) <= {wf.node_id(n) for n in wf.nodes}  # keyed by the node ids
    listed = [text for text, _ in m.items()]  # the Steps list says the same positions
    assert any(t.startswith("branch 3 · step 2:") and "Normalize" in t for t in listed)


def test_the_preview_message_names_the_computed_step_by_operator_and_position(tmp_path):
    path = tmp_path / "clicks.parquet"
    make_criteo_frame(200).to_parquet(path)
    b = PipelineBuilder(str(path), preview_rows=60)
    build(b.model)
    find_button(b, "irs-btn-preview").click()
    b.model.update_step(2, 1, op="NormalizeMinMax")
    find_button(b, "irs-btn-preview").click()
    message = b.feedback.areas["run"].value
    assert "reused 1 of 2 fitted steps; computed NormalizeMinMax (step 2 of branch 3)" in message
    ids = [b.last_preview.workflow.node_id(n) for n in b.last_preview.workflow.nodes]
    assert not any(i in message for i in ids if "-" in i)  # no internal id shown
    assert reuse_text(b.last_preview.workflow).endswith(  # without the model: the node id
        next(i for i in ids if i.startswith("normalizeminmax")))
