"""A dataset URL with a password, opened in the builder, is never written in clear: not in
the autosave beside the notebook (a file people commit), not in exported code. A restore
asks for the URL again instead of opening the masked one."""

from __future__ import annotations

import ast
import functools
import http.server
import json
import threading

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ops._join_external import SideTable
from interactive_recsys.ui.builder import PipelineBuilder
from interactive_recsys.ui.builder._autosave import pipeline_record
from interactive_recsys.ui.builder._branches import Branch, Step
from interactive_recsys.ui.builder._codegen import training_code, workflow_code

SECRET = "PASSWORD-4f9c1e"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path):
    """``data.parquet`` served over HTTP on 127.0.0.1; yields its URL with a password."""
    folder = tmp_path / "served"
    folder.mkdir()
    pd.DataFrame({"c": ["x", "y", "x", "z"], "n": [1.0, 2.0, 3.0, 4.0]}).to_parquet(
        folder / "data.parquet"
    )
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://admin:{SECRET}@127.0.0.1:{server.server_port}/data.parquet"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _categorify(builder: PipelineBuilder) -> None:
    builder.select_columns(["c"])
    builder.choose_operator("Categorify")
    builder.add_button.click()
    assert builder.model.branches[0].steps, builder.message


def test_the_autosave_never_holds_the_password(tmp_path, served):
    path = tmp_path / ".nb.irs-pipeline.json"
    builder = PipelineBuilder(served, autosave=path)
    assert builder.model is not None, builder.message
    assert SECRET in builder.output_text.real_value  # the default output: beside the data
    _categorify(builder)
    builder.autosaver.flush()
    data = path.read_bytes()
    assert SECRET.encode() not in data
    record = json.loads(data)
    host = served.split("@", 1)[1].rsplit("/", 1)[0]
    assert record["dataset"] == f"http://***@{host}/data.parquet"
    assert record["output"] == f"http://***@{host}/data-processed"
    assert record["redacted"] == ["dataset", "output"]


def _tree(root):
    """Every widget reachable from ``root`` through its synced traits (children, layouts...)."""
    import ipywidgets as w

    seen, todo = {}, [root]
    while todo:
        widget = todo.pop()
        if id(widget) in seen:
            continue
        seen[id(widget)] = widget
        for name in widget.keys:
            value = getattr(widget, name)
            items = value if isinstance(value, list | tuple) else [value]
            todo += [item for item in items if isinstance(item, w.Widget)]
    return list(seen.values())


def test_the_widgets_state_never_holds_the_password(served):
    """What a notebook saved with its widget state holds: every widget's synced state."""
    builder = PipelineBuilder(served, autosave=False)
    assert builder.model is not None and builder.model.source == served, builder.message
    builder.output_text.value = served.rsplit("/", 1)[0] + "/typed-output/"
    _categorify(builder)
    widgets = _tree(builder)
    assert builder.path_text in widgets and builder.output_text in widgets
    states = json.dumps([widget.get_state() for widget in widgets], default=str)
    assert SECRET not in states
    host = served.split("@", 1)[1].rsplit("/", 1)[0]
    assert builder.path_text.value == f"http://***@{host}/data.parquet"
    assert builder.output_text.value == f"http://***@{host}/typed-output/"
    # what the builder uses is the URL as typed, with its password
    assert builder.output_text.real_value == served.rsplit("/", 1)[0] + "/typed-output/"
    builder.buttons["open"].click()  # Open again on the masked field: the same dataset
    assert builder.model.source == served, builder.message


def test_a_restore_without_the_dataset_asks_for_the_url_again(tmp_path, served):
    path = tmp_path / ".nb.irs-pipeline.json"
    first = PipelineBuilder(served, autosave=path)
    _categorify(first)
    first.autosaver.flush()

    empty = PipelineBuilder(None, autosave=path)  # after a kernel restart, say
    assert "without its credentials" in empty.restore_note.value
    empty.restore_button.click()  # never opens the masked URL, never crashes
    assert empty.model is None
    assert empty.level == "error"
    assert "type that URL again with them in the Dataset field" in empty.message
    assert "http://***@127.0.0.1" in empty.message and SECRET not in empty.message
    assert empty.path_text.value == ""  # no masked URL typed in for the user
    assert empty.restore_row.layout.display is None  # the offer stays

    empty.path_text.value = served  # the user types the URL again, with the password
    empty.buttons["open"].click()
    empty.restore_button.click()
    assert empty.level == "success", empty.message
    assert empty.model.branches == first.model.branches
    assert empty.output_text.value == first.output_text.value  # the same output, in full


def test_a_restore_names_an_output_it_cannot_fill_in(tmp_path, served):
    path = tmp_path / ".nb.irs-pipeline.json"
    first = PipelineBuilder(served, autosave=path)
    _categorify(first)
    first.autosaver.flush()
    other = PipelineBuilder(pd.DataFrame({"c": ["x"], "n": [1.0]}), autosave=path)
    other.restore_button.click()
    assert other.model.branches == first.model.branches
    assert other.output_text.value == ""  # not the masked URL
    assert "Output field" in other.message and SECRET not in other.message


def test_exported_code_reads_the_url_from_the_environment(tmp_path, served):
    frame = pd.DataFrame({"c": ["x", "y", "x", "z"], "n": [1.0, 2.0, 3.0, 4.0]})
    fitted = irs.Workflow(["c"] >> ops.Categorify())
    fitted.fit(frame)
    fitted.save(str(tmp_path / "wf"))
    builder = PipelineBuilder(served, autosave=False)
    _categorify(builder)
    builder.file_text.value = str(tmp_path / "wf")
    builder.buttons["load"].click()
    builder.buttons["export"].click()
    code = builder.code.value
    assert "Train from raw data" in code, builder.message
    assert SECRET not in code
    ast.parse(code)
    assert "irs.Dataset(os.environ['IRS_DATA_URL'])" in code
    assert "irs.Loader(os.environ['IRS_DATA_URL'], " in code
    job, training = code.split("# ---- Train from raw data")
    masked = "http://***@" + served.split("@", 1)[1]
    assert f"# Set IRS_DATA_URL to the data's URL with its credentials ('{masked}')" in job
    shown = builder.output_text.value  # the Output field, as the page shows it
    assert SECRET not in shown and "***@" in shown
    assert f"# Set IRS_OUTPUT_URL to the output's URL with its credentials ('{shown}')" in job
    assert "# Set IRS_DATA_URL to the raw data's URL with its credentials " \
        f"('{masked}')" in training  # the data as the Studio opened it
    for part in (job, training):  # each part runs on its own: it imports what it reads
        assert part.index("import os") < part.index("os.environ[")


def test_a_workflow_url_and_a_side_table_url_are_placeholders_too(tmp_path):
    url = f"https://ann:{SECRET}@h.example/wf/"
    code = training_code(["c"] >> ops.Categorify(), data="day_0/", workflow_dir=url)
    assert SECRET not in code and "irs.Workflow.load(os.environ['IRS_WORKFLOW_URL'])" in code
    assert "irs.Dataset('day_0/')" in code  # a plain path is written as it is
    ast.parse(code)

    items = tmp_path / "items.parquet"
    pd.DataFrame({"c": ["x", "y"], "price": [1.0, 2.0]}).to_parquet(items)
    side = SideTable.of(str(items))
    side.path = f"http://admin:{SECRET}@h.example/items.parquet"
    code = workflow_code(["c"] >> ops.JoinExternal(df_ext=side, on="c"))
    assert SECRET not in code
    assert "df_ext=os.environ['IRS_DF_EXT_URL']" in code and code.startswith("import os\n")
    ast.parse(code)


def test_an_expression_is_code_not_a_secret():
    """The redaction rule masks ``session_id==3`` in messages; the autosave and exported
    code keep it (only URLs are checked for credentials there)."""
    code = workflow_code(["session_id"] >> ops.Filter("session_id==3"))
    assert "ops.Filter(expr='session_id==3')" in code and "os.environ" not in code
    record = pipeline_record(
        [Branch(["session_id"], steps=[Step("Filter", {"expr": "session_id==3"})])]
    )
    assert record["branches"][0]["steps"] == [{"op": "Filter", "params": {"expr": "session_id==3"}}]
    assert record["redacted"] == []


def test_the_exported_training_code_runs_with_the_url_from_the_environment(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    raw.mkdir()
    frame = pd.DataFrame(
        {"c": [f"v{i % 7}" for i in range(60)], "x": [float(i) for i in range(60)]}
    )
    frame.to_parquet(raw / "part.0.parquet")
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    wf.fit(str(raw))
    wf.save(str(tmp_path / "saved"))
    code = training_code(
        wf,
        data=f"https://ann:{SECRET}@h.example/raw/",
        workflow_dir=str(tmp_path / "saved"),
        device="cpu",
    )
    assert SECRET not in code
    monkeypatch.setenv("IRS_DATA_URL", str(raw) + "/")  # what the comment says to set
    namespace: dict = {}
    exec(code, namespace)
    assert (tmp_path / "raw-processed").is_dir()  # the pre-processed copy, beside the data
    rows = sum(len(batch.dense) for batch in namespace["loader"])  # the online loader
    assert rows == len(frame)
