"""PipelineBuilder and Studio with ipywidgets' dummy comm: clicks simulated, traits asserted."""

from __future__ import annotations

import threading
import time

import ipywidgets as w
import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ops import OPERATORS
from interactive_recsys.ui.builder._builder import ParamForm, PipelineBuilder
from interactive_recsys.ui.studio._studio import Studio, find_button
from tests.conftest import assert_frames_equal, make_criteo_frame
from tests.html_tables import read_tables

CATS = ["C1", "C2", "C3"]
CONTS = ["I1", "I2", "F1"]


@pytest.fixture
def frame() -> pd.DataFrame:
    return make_criteo_frame(200)


def button(root: w.Widget, css: str) -> w.Button:
    """The button carrying CSS class ``css`` (what the browser test clicks too)."""
    return find_button(root, css)


def click(root: w.Widget, css: str) -> None:
    button(root, css).click()


def build_two_branches(b: PipelineBuilder) -> None:
    """Categorify on some columns; FillMissing -> Normalize on others (a click on an operator
    adds it to the ticked columns; other columns start a new branch)."""
    b.select_columns(CATS)
    click(b, "irs-op-Categorify")
    b.select_columns(CONTS)
    click(b, "irs-op-FillMissing")
    click(b, "irs-op-Normalize")


def row_click(b: PipelineBuilder, name: str, shift: bool = False) -> None:
    """What a click on a row of the column list sends from the browser."""
    b.column_list._on_message(b.column_list, {"event": "click", "name": name, "shift": shift}, [])


def test_column_list_rows_chips_filter_and_ranges(frame):
    b = PipelineBuilder(frame)
    rows = {r["name"]: r for r in b.column_list.rows}
    assert list(rows) == list(frame.columns)
    assert rows["C1"]["role"] == "categorical" and rows["I1"]["role"] == "continuous"
    assert rows["C1"]["null"] == f"{frame['C1'].isna().mean():.1%}"
    assert rows["C1"]["distinct"] == f"{frame['C1'].nunique():,} exact"  # every row seen
    assert b.column_count.value == "<b>0 of 9 selected</b>"
    chip = button(b, "irs-chip-continuous")
    assert chip.description == "continuous (4)"
    chip.click()
    assert b.selected_columns == b.column_list.selected == ["I1", "I2", "I3", "F1"]
    assert b.column_count.value == "<b>4 of 9 selected</b>"
    assert "Ticked the 4 continuous columns" in b.feedback.areas["columns"].value
    click(b, "irs-btn-clear")
    assert b.selected_columns == []
    row_click(b, "I1")
    row_click(b, "I3", shift=True)  # a range, in the shown order
    assert b.selected_columns == ["I1", "I2", "I3"]
    row_click(b, "I2", shift=True)  # unticking I2 unticks the range I3..I2
    assert b.selected_columns == ["I1"]
    b.name_filter.value = "C"  # names containing C
    assert b.shown_columns == b.column_list.shown == CATS
    assert b.column_count.value == "<b>1 of 9 selected · 3 shown</b>"
    click(b, "irs-btn-select-shown")
    assert b.selected_columns == CATS
    message = b.feedback.areas["columns"].value
    assert "ticked the 3 shown columns matching &#x27;C&#x27;: C1, C2, C3" in message
    b.name_filter.value = "I*, F1"  # globs and roles as well
    assert b.shown_columns == ["I1", "I2", "I3", "F1"]
    b.name_filter.value = "list"
    assert b.shown_columns == ["L1"]
    row_click(b, "nope")
    assert b.level == "error" and "'nope' is not in the dataset" in b.message


def test_palette_lists_every_operator_by_category(frame):
    b = PipelineBuilder(frame)
    assert set(b.op_buttons) == set(OPERATORS)
    for name, btn in b.op_buttons.items():
        assert btn.tooltip == OPERATORS[name].summary
    for row in b.palette.children:  # one row per category, each button of that category
        category = row.children[0].value.removeprefix("<small>").removesuffix("</small>")
        assert {OPERATORS[c.description].category for c in row.children[1:]} == {category}


def test_form_is_generated_from_the_declared_params(frame):
    b = PipelineBuilder(frame)
    click(b, "irs-op-Categorify")  # no column ticked: the form only
    assert "tick the columns" in b.message and b.model.branches[0].steps == []
    assert b.operator == "Categorify"
    assert b.op_buttons["Categorify"].button_style == "info"
    assert list(b.form.fields) == list(ops.Categorify.params)
    assert isinstance(b.form.fields["encode_type"], w.Dropdown)  # choices
    assert [v for _, v in b.form.fields["encode_type"].options] == ["joint", "combo"]
    assert isinstance(b.form.fields["freq_threshold"], w.Text)
    click(b, "irs-op-FillMissing")
    assert isinstance(b.form.fields["add_binary_cols"], w.Checkbox)  # bool
    assert "irs-param-fill_val" in b.form.fields["fill_val"]._dom_classes
    click(b, "irs-op-LogOp")
    assert b.form.fields == {}


def test_every_operator_form_reads_back_its_defaults():
    form = ParamForm()
    for name, cls in OPERATORS.items():
        form.show(name)
        assert list(form.fields) == list(cls.params), name
        assert form.values() == {}, name  # untouched fields: the defaults, not overrides


def test_errors_are_shown_in_the_widget(frame, tmp_path):
    b = PipelineBuilder(frame)
    click(b, "irs-btn-add")
    assert b.level == "error" and "No operator is chosen" in b.message
    click(b, "irs-op-Clip")
    click(b, "irs-btn-add")
    assert "No columns are selected" in b.message
    b.select_columns(["I1"])
    b.form.fields["min_value"].value = "a"
    click(b, "irs-btn-add")
    with pytest.raises(irs.ParameterError) as code_error:
        ops.Clip(min_value="a")
    assert b.message == str(code_error.value)
    assert "irs-msg-error" in b.feedback.areas["steps"].value  # next to Add
    assert b.model.branches[0].steps == []
    b.select_columns(["C1"])
    click(b, "irs-op-Normalize")  # added at once: refused, with the reason
    assert "Normalize needs numeric columns" in b.message and "'C1'" in b.message
    assert b.operator == "Normalize" and b.model.branches[0].steps == []
    click(b, "irs-btn-remove")
    assert "No step is selected" in b.message
    click(b, "irs-btn-save")
    assert "Type a directory" in b.message
    b.file_text.value = str(tmp_path / "missing")
    click(b, "irs-btn-load")
    assert "does not exist" in b.message and "missing" in b.message


def test_missing_dataset_path_then_open_a_real_one(frame, tmp_path):
    missing = str(tmp_path / "nope.parquet")
    b = PipelineBuilder(missing)
    assert b.model is None and b.level == "error"
    assert "nope.parquet" in b.message and "does not exist" in b.message
    assert "PipelineBuilder(no dataset" in repr(b)
    click(b, "irs-btn-add")
    assert "No dataset is open" in b.message
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    b.path_text.value = str(path)
    click(b, "irs-btn-open")
    assert b.level == "success" and b.model is not None
    assert [r["name"] for r in b.column_list.rows] == list(frame.columns)


def test_build_by_clicks_select_in_the_dag_edit_reorder_undo(frame):
    b = PipelineBuilder(frame)
    build_two_branches(b)
    expected = irs.Workflow(
        (CATS >> ops.Categorify()) + (CONTS >> ops.FillMissing() >> ops.Normalize())
    )
    assert b.model.to_workflow().to_config()["nodes"] == expected.to_config()["nodes"]
    assert [v for _, v in b.steps.options] == [(0, 0), (1, 0), (1, 1)]
    assert {n["id"] for n in b.dag.nodes if n["kind"] == "op"} == {"op:0:0", "op:1:0", "op:1:1"}
    assert "Predicted output" in b.schema_html.value and "float32" in b.schema_html.value

    b.dag.selected = "op:0:0"  # what a click on the node in the browser does
    assert b.model.selected == (0, 0) and b.steps.value == (0, 0)
    assert b.operator == "Categorify" and b.selected_columns == CATS
    field = b.form.fields["freq_threshold"]
    field.value = "2"  # applied as typed: no Update click
    assert b.model.branches[0].steps[0].params == {"freq_threshold": 2}
    assert "freq_threshold=2" in b.steps.options[0][0]
    assert b.form.fields["freq_threshold"] is field  # the field typed in stays
    field.value = "-"  # an invalid value: shown, the step keeps the last valid one
    assert b.level == "error" and "freq_threshold" in b.message
    assert b.model.branches[0].steps[0].params == {"freq_threshold": 2}
    field.value = "2"
    b.form.fields["max_size"].value = "10"
    click(b, "irs-btn-update")  # freq_threshold and max_size together: refused
    assert b.level == "error" and "not both" in b.message

    b.steps.value = (1, 1)  # the step list selects as well
    assert b.model.selected == (1, 1) and b.dag.selected == "op:1:1"
    click(b, "irs-btn-up")
    assert [s.op for s in b.model.branches[1].steps] == ["Normalize", "FillMissing"]
    click(b, "irs-btn-down")
    assert [s.op for s in b.model.branches[1].steps] == ["FillMissing", "Normalize"]
    click(b, "irs-btn-remove")
    assert [s.op for s in b.model.branches[1].steps] == ["FillMissing"]
    click(b, "irs-btn-undo")
    assert [s.op for s in b.model.branches[1].steps] == ["FillMissing", "Normalize"]
    click(b, "irs-btn-up")
    click(b, "irs-btn-up")  # already first
    assert "already first" in b.message


def test_preview_export_save_load_run(frame, tmp_path):
    b = PipelineBuilder(frame, preview_rows=50)
    build_two_branches(b)
    click(b, "irs-btn-preview")
    assert b.level == "success"
    expected = irs.Workflow(
        (CATS >> ops.Categorify()) + (CONTS >> ops.FillMissing() >> ops.Normalize())
    ).fit_transform(frame.head(50))
    assert_frames_equal(b.last_preview.output, expected)
    page = b.preview_html.value  # the output first, in a box scrolling sideways
    assert "irs-preview-output" in page and "irs-preview-input" not in page
    assert 'class="irs-preview-scroll"' in page and "overflow-x:auto" in page
    (table,) = read_tables(page)
    first = dict(zip([c.text for c in table.rows[0]], table.body[0], strict=True))
    assert first["C1"].text == str(expected["C1"].iloc[0])
    assert "text-align:right" in first["C1"].style  # numbers right-aligned
    assert "Preview: fitted and transformed 50" in b.feedback.areas["run"].value
    b.preview_view.value = "input"  # the toggle
    assert "irs-preview-input" in b.preview_html.value
    (table,) = read_tables(b.preview_html.value)
    first = dict(zip([c.text for c in table.rows[0]], table.body[0], strict=True))
    assert first["C2"].text == str(frame["C2"].iloc[0])

    click(b, "irs-btn-export")
    assert b.code.layout.display is None and b.code.value == b.model.export_code()
    namespace: dict = {}
    exec(b.code.value, namespace)
    assert namespace["workflow"].to_config()["nodes"] == b.model.to_workflow().to_config()["nodes"]

    b.file_text.value = str(tmp_path / "wf")
    click(b, "irs-btn-save")  # before any Run: saved, and the message says it is not fitted
    assert (tmp_path / "wf" / "workflow.json").exists()
    assert b.level == "info" and "NOT fitted" in b.message
    assert f"irs fit --workflow {tmp_path / 'wf'} --input DATA" in b.message
    assert not irs.Workflow.load(tmp_path / "wf").fitted  # what the message says
    other = PipelineBuilder(frame)
    other.file_text.value = str(tmp_path / "wf")
    click(other, "irs-btn-load")
    assert other.model.branches == b.model.branches and len(other.steps.options) == 3

    click(b, "irs-btn-cancel")
    assert b.message == "No run is in progress."
    ended = threading.Event()
    release = threading.Event()
    b.on_run(lambda job: (ended.set(), release.wait(10)))  # hold the run's end a moment
    click(b, "irs-btn-run")
    b.job.result(timeout=60)
    assert ended.wait(10)
    click(b, "irs-btn-run")  # its end is still being reported: refused
    assert "A run is in progress" in b.message
    release.set()
    b.model.wait_run(timeout=60)
    assert "irs-run-finished" in b.status.value and b.model.fitted_workflow.fitted
    click(b, "irs-btn-save")  # after the Run: the fitted workflow
    assert b.level == "success" and "fitted, with vocabularies" in b.message
    assert irs.Workflow.load(tmp_path / "wf").fitted


def test_from_workflow(frame):
    wf = irs.Workflow((CATS >> ops.Categorify(max_size=10)) + ["label"])
    b = PipelineBuilder.from_workflow(wf, frame)
    assert [b_.columns for b_ in b.model.branches] == [CATS, ["label"]]
    assert b.level == "success"
    assert {"col:label", "out:label"} <= {n["id"] for n in b.dag.nodes}
    # the pass-through branch is in the step list: selectable and removable
    assert [v for _, v in b.steps.options] == [(0, 0), (1, -1)]
    assert b.steps.options[1][0] == "branch 2 · pass through: ['label']"
    b.steps.value = (0, 0)
    b.steps.value = (1, -1)
    assert b.model.selected_item == (1, -1) and b.selected_columns == ["label"]
    click(b, "irs-btn-remove")
    assert b.message == "Removed the pass-through branch 2."
    assert [b_.columns for b_ in b.model.branches] == [CATS]
    assert [v for _, v in b.steps.options] == [(0, 0)]
    click(b, "irs-btn-undo")
    assert [v for _, v in b.steps.options] == [(0, 0), (1, -1)]


def test_studio_tabs(frame):
    studio = Studio(frame, preview_rows=40)
    assert studio.titles == ("Build", "Preview", "Embeddings", "Cluster")
    b = studio.builder
    build_two_branches(b)
    studio.preview_button.click()
    assert studio.preview is not None and studio.preview_tab.children == (studio.preview,)
    assert list(studio.preview.model.output.columns) == [*CATS, *CONTS]
    assert len(studio.preview.model.output) == 40
    ended = threading.Event()
    b.on_run(lambda job: ended.set())  # after the Studio's own callback
    studio.run_button.click()
    assert ended.wait(60)
    assert studio.message.value == ""
    assert studio.embeddings is not None
    assert list(studio.embeddings.report.tables) == CATS
    assert studio.embeddings_tab.children == (studio.embeddings,)
    assert studio.preview.model.workflow is b.model.fitted_workflow  # the full fit now
    # no cluster was active: Run started a local one, and its dashboard watched the run
    client = studio._own_client
    assert client is not None and client.status == "running"
    assert b.model.last_job._client is client
    studio.tabs.selected_index = 3
    assert studio.cluster_tab.children == (studio.dashboard,)
    studio.dashboard.monitor.sample()
    phases = [p["name"] for p in studio.dashboard.monitor.progress()]
    assert any(name.startswith("fit") for name in phases), phases
    assert "finished" in studio.dashboard.status.value
    assert "Build | Preview | Embeddings | Cluster" in repr(studio)
    dash = studio.dashboard
    assert studio.stop_cluster()  # the notebook's end: the cluster it started stops
    assert client.status == "closed" and not studio.stop_cluster()  # once
    deadline = time.monotonic() + 10
    while (
        not (dash.closed and dash in studio.cluster_tab.children[-1:])
        and time.monotonic() < deadline
    ):  # the dashboard sees its client closed by polling
        time.sleep(0.1)
    assert dash.closed and studio.cluster_tab.children[-1] is dash  # the last picture
    assert studio.comm is not None and studio.embeddings.comm is not None  # widgets stay
    studio.close()
    assert studio.comm is None


def test_studio_cluster_tab_and_run_on_the_client(client, frame):
    studio = Studio(frame, client=client)
    studio.tabs.selected_index = 3
    try:
        assert type(studio.dashboard).__name__ == "Dashboard"
        assert studio.cluster_tab.children == (studio.dashboard,)
        build_two_branches(studio.builder)
        studio.run_button.click()
        assert "on the Dask cluster" in studio.builder.message
        job = studio.builder.model.wait_run(timeout=60)
        assert job.status == "finished" and job.progress  # phases tracked on the cluster
        assert studio.embeddings is not None
    finally:
        studio.close()


def test_studio_of_a_fitted_workflow_shows_its_statistics_at_once(frame):
    wf = irs.Workflow(CATS >> ops.Categorify()).fit(frame)
    studio = Studio(frame, workflow=wf)
    assert studio.builder.model.fitted_workflow is wf
    assert list(studio.embeddings.report.tables) == CATS
    assert studio.preview.model.workflow is wf and studio.message.value == ""


def test_suggest_then_run_writes_the_output(frame, tmp_path):
    path = tmp_path / "clicks.parquet"
    frame.drop(columns=["L1"]).to_parquet(path)
    b = PipelineBuilder(str(path))
    assert b.output_text.value == str(tmp_path / "clicks-processed")  # a default output
    click(b, "irs-btn-suggest")
    b.model.wait_suggest(60)  # Suggest counts in the background
    area = b.feedback.areas["suggest"].value
    assert "Suggested: 3 column(s) -&gt; Categorify" in area and "irs-msg-success" in area
    assert b.feedback.areas["steps"].value == ""
    chains = {c: [s.op for s in br.steps] for br in b.model.branches for c in br.columns}
    assert chains["C1"] == ["Categorify"] and chains["label"] == ["AddTags"]
    assert chains["I1"][0] == "FillMissing" and chains["I1"][-1] == "Normalize"
    assert len(b.steps.options) == sum(len(br.steps) for br in b.model.branches)
    ended = threading.Event()
    b.on_run(lambda job: ended.set())
    click(b, "irs-btn-run")
    assert "irs-msg-busy" in b.feedback.areas["run"].value  # a visible busy state at once
    assert "write" in b.message and "clicks-processed" in b.message
    assert ended.wait(60)
    written = pd.read_parquet(tmp_path / "clicks-processed")
    expected = b.model.to_workflow().fit_transform(frame.drop(columns=["L1"]))
    assert_frames_equal(written.reset_index(drop=True), expected)
    assert "output written to" in b.status.value and "irs-run-finished" in b.status.value
    assert b.feedback.areas["run"].value == "" and b.level == "success"  # no duplicate
    first = b.model.wait_run(timeout=60)
    assert first.status == "finished"
    click(b, "irs-btn-run")  # the output exists now: refused, nothing runs
    assert b.level == "error" and "already exists" in b.message
    assert b.model.wait_run(timeout=1) is None  # not the earlier run's "finished" job
    assert "irs-msg-error" in b.feedback.areas["run"].value
    b.overwrite.value = True
    ended.clear()
    click(b, "irs-btn-run")
    assert ended.wait(60) and b.level == "success"
    again = b.model.wait_run(timeout=60)
    assert again is not first and again.status == "finished"


def test_feedback_sits_next_to_its_control_and_stale_errors_go(frame):
    b = PipelineBuilder(frame)
    click(b, "irs-btn-update")  # nothing selected: an error next to the step buttons
    assert "irs-msg-error" in b.feedback.areas["steps"].value
    button(b, "irs-chip-categorical").click()  # a later action elsewhere clears it
    assert b.feedback.areas["steps"].value == ""
    assert "Ticked the 3 categorical columns" in b.feedback.areas["columns"].value
    click(b, "irs-op-Categorify")  # next to the palette
    assert "Added Categorify on C1, C2, C3" in b.feedback.areas["palette"].value
    assert b.feedback.areas["columns"].value == ""
    click(b, "irs-btn-preview")
    assert "Preview: fitted" in b.feedback.areas["run"].value
    assert b.buttons["preview"].description == "Preview"  # back from "Previewing..."
    assert not b.buttons["preview"].disabled


def test_counts_get_clip_at_zero_and_the_label_its_target_tag_in_one_click(frame):
    b = PipelineBuilder(frame)
    assert (frame[["I1", "I2"]].min() >= 0).all()  # counters: never negative
    b.select_columns(["I1", "I2"])
    click(b, "irs-op-Clip")  # no keystroke: min_value=0 from the column profile
    assert [(s.op, s.params) for s in b.model.branches[0].steps] == [("Clip", {"min_value": 0})]
    assert b.form.fields["min_value"].value == "0"  # the form shows it, editable
    b.model.new_branch()
    b.select_columns(["label"])
    click(b, "irs-op-AddTags")
    steps = [(s.op, s.params) for br in b.model.branches for s in br.steps]
    assert ("AddTags", {"tags": ["target"]}) in steps
    assert "target" in b.model.output_schema()["label"].tags


def test_an_operator_needing_a_value_is_added_once_its_form_is_valid(frame):
    frame = frame.assign(G=np.linspace(-50.0, 50.0, len(frame)))  # real negatives
    b = PipelineBuilder(frame)
    b.select_columns(["G"])
    click(b, "irs-op-Clip")  # Clip() is not valid here: the form, and the operator's reason
    assert b.model.branches[0].steps == [] and b.operator == "Clip"
    assert "Clip needs min_value, max_value or both" in b.message
    b.form.fields["min_value"].value = "a"  # still invalid: said, nothing added
    assert b.level == "error" and b.model.branches[0].steps == []
    b.form.fields["min_value"].value = "1"  # valid: added
    assert [(s.op, s.params) for s in b.model.branches[0].steps] == [("Clip", {"min_value": 1})]
    assert b.message.startswith("Added Clip(min_value=1) on G")
    b.form.fields["min_value"].value = "10"  # later keystrokes edit that step
    assert [(s.op, s.params) for s in b.model.branches[0].steps] == [("Clip", {"min_value": 10})]
