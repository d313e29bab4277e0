"""``irs report``: a real nbconvert/nbclient run on small generated notebooks."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from interactive_recsys.cli._main import main
from interactive_recsys.report._notebook_report import StaticWidgets, static_widget_outputs

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

DASHBOARD_CELL = """\
import ipywidgets as w
from bokeh.io import output_notebook
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure
from jupyter_bokeh import BokehModel

output_notebook(hide_banner=True)
src = ColumnDataSource({"x": [1, 2], "y": [10, 20]}, name="pts")
fig = figure(width=300, height=200)
fig.line("x", "y", source=src)
bar = w.FloatProgress(value=0.25, min=0, max=1, description="fit phase")
box = w.VBox([w.HTML("<b>demo dashboard</b>"), BokehModel(fig), bar])
box"""


def _notebook(path: Path, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.cells = [nbformat.v4.new_markdown_cell("# Report of a small run")]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


class _Page(HTMLParser):
    """External resources a page would fetch (``<script src>``, ``<link href>``,
    ``<img src>``) and the JSON of the report's Bokeh documents."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.external: list[str] = []
        self.bokeh_docs: list[dict] = []
        self._in_docs = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if (tag, key) in (("script", "src"), ("link", "href"), ("img", "src")) and value \
                    and re.match(r"(https?:)?//", value):
                self.external.append(value)
        ident = dict(attrs).get("id") or ""
        self._in_docs = tag == "script" and re.fullmatch(r"irs-bokeh-[0-9a-f]+-docs", ident)

    def handle_data(self, data: str) -> None:
        if self._in_docs:
            self.bokeh_docs.append(json.loads(data))
            self._in_docs = False


def _source_data(docs: list[dict], name: str) -> dict:
    def walk(node):
        if isinstance(node, dict):
            if node.get("name") == "ColumnDataSource" and \
                    node.get("attributes", {}).get("name") == name:
                yield node["attributes"]["data"]
            for v in node.values():
                yield from walk(v)
        elif isinstance(node, list):
            for v in node:
                yield from walk(v)

    found = [d for doc in docs for d in walk(doc)]
    assert len(found) == 1, f"{len(found)} sources named {name!r}"
    return {k: v for k, v in found[0]["entries"]}


@pytest.mark.slow
def test_report_executes_and_snapshots_the_final_dashboard_state(tmp_path, capsys):
    nb_path = _notebook(tmp_path / "run.ipynb", [
        'print(f"{6 * 7} rows processed")',
        DASHBOARD_CELL,
        'src.stream({"x": [3], "y": [777]})\nbar.value = 1.0',
        "for child in box.children:\n    child.close()\nbox.close()  # like dash.close()",
    ])
    before = nb_path.read_bytes()
    out = tmp_path / "report.html"
    assert main(["report", str(nb_path), "-o", str(out), "--execute"]) == 0
    assert capsys.readouterr().out.strip() == f"Wrote {out}"
    assert nb_path.read_bytes() == before  # the notebook itself is not modified
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "run.ipynb"]
    assert out.stat().st_mode & 0o777 == 0o644
    page = out.read_text()

    assert "42 rows processed" in page  # the run's own output
    # The snapshots taken after each cell are not counted: prompts run 1..4.
    assert re.findall(r"In\xa0?\s*\[(\d+)\]", page) == ["1", "2", "3", "4"]
    assert "<title>run</title>" in page
    assert "<b>demo dashboard</b>" in page  # HTML widget inside the VBox
    # The progress bar and the Bokeh figure as they were at the end of the run (before the
    # widgets were closed): the stream and the bar update after display are in the report.
    bars = re.findall(r"<b>fit phase</b> <progress ([^>]*)></progress> (\d+)%", page)
    assert [(sorted(attrs.split()), share) for attrs, share in bars] == [
        (['max="1"', 'value="1"'], "100")]
    parsed = _Page(page)
    assert _source_data(parsed.bokeh_docs, "pts") == {"x": [1, 2, 3], "y": [10, 20, 777]}
    # Offline: BokehJS is inline, nothing is fetched (no CDN, no widget manager).
    assert parsed.external == []
    assert re.search(r"Bokeh\s*=|\"bokeh\"|bokehjs", page)
    assert "Bokeh.embed.embed_items(" in page
    assert "html-manager" not in page and "require.min.js" not in page


def test_report_of_a_saved_notebook_without_executing(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("6 * 7", execution_count=1, outputs=[
        nbformat.v4.new_output("execute_result", {"text/plain": "4242"}, execution_count=1)])]
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    assert main(["report", str(path)]) == 0  # default output: saved.html beside it
    page = (tmp_path / "saved.html").read_text()
    assert "4242" in page and "Bokeh.embed" not in page  # no BokehJS when no figure


def test_report_errors_name_the_file_and_the_fix(tmp_path, capsys):
    missing = tmp_path / "nope.ipynb"
    assert main(["report", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "does not exist" in err

    never_run = _notebook(tmp_path / "never_run.ipynb", ["1 + 1"])
    assert main(["report", str(never_run)]) == 2
    err = capsys.readouterr().err
    assert "has no outputs" in err and "--execute" in err
    assert not (tmp_path / "never_run.html").exists()

    text = tmp_path / "notes.txt"
    text.write_text("x")
    assert main(["report", str(text)]) == 2
    assert "not a .ipynb file" in capsys.readouterr().err

    assert main(["report", str(never_run), "-o", str(tmp_path / "no" / "r.html")]) == 2
    assert "output directory" in capsys.readouterr().err


@pytest.mark.slow
def test_a_failing_cell_leaves_no_report(tmp_path, capsys):
    path = _notebook(tmp_path / "broken.ipynb", ["x = 1", "1 / 0"])
    out = tmp_path / "broken.html"
    out.write_text("previous report")
    assert main(["report", str(path), "-o", str(out), "--execute"]) == 2
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and "failed while executing" in err
    assert out.read_text() == "previous report"  # untouched: written only on success
    assert sorted(os.listdir(tmp_path)) == ["broken.html", "broken.ipynb"]


def test_widgets_without_saved_state_fall_back_to_their_text():
    nb = nbformat.v4.new_notebook()
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    nb.cells = [nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output(
        "display_data", {"application/vnd.jupyter.widget-view+json": view,
                         "text/plain": "Dashboard(2 workers, no GPU, every 500 ms)"})])]
    assert static_widget_outputs(nb).uses_bokeh is False
    data = nb.cells[0].outputs[0]["data"]
    assert data["text/html"] == "<pre>Dashboard(2 workers, no GPU, every 500 ms)</pre>"


def test_static_widgets_draw_a_saved_widget_tree():
    state = {
        "box": {"model_name": "HBoxModel", "model_module": "@jupyter-widgets/controls",
                "state": {"children": ["IPY_MODEL_lbl", "IPY_MODEL_bar", "IPY_MODEL_out"]}},
        "lbl": {"model_name": "LabelModel", "state": {"value": "a < b"}},
        "bar": {"model_name": "IntProgressModel",
                "state": {"value": 30, "min": 10, "max": 50, "description": "write"}},
        "out": {"model_name": "OutputModel", "model_module": "@jupyter-widgets/output",
                "state": {"outputs": [{"output_type": "stream", "name": "stdout",
                                       "text": "log line\n"}]}},
    }
    page = StaticWidgets(state).render("box")
    assert page == ('<div class="irs-widget-box irs-widget-hbox"><div>a &lt; b</div>'
                    '<div><b>write</b> <progress value="20" max="40"></progress> 50%</div>'
                    "<pre>log line\n</pre></div>")


def test_static_widgets_show_choices_and_checkboxes():
    state = {
        "pick": {"model_name": "DropdownModel", "state": {
            "_options_labels": ["sgd", "adam"], "index": 1, "description": "optimizer"}},
        "many": {"model_name": "SelectMultipleModel", "state": {
            "_options_labels": ["C1", "C2", "C3"], "index": [0, 2]}},
        "none": {"model_name": "DropdownModel", "state": {"_options_labels": ["a"],
                                                          "index": None}},
        "tick": {"model_name": "CheckboxModel", "state": {"value": True, "description": "I1"}},
        "off": {"model_name": "CheckboxModel", "state": {"value": False}},
    }
    w = StaticWidgets(state)
    assert w.render("pick") == "<div><b>optimizer</b> <code>adam</code></div>"
    assert w.render("many") == "<div><code>C1, C3</code></div>"
    assert w.render("none") == "<div><code></code></div>"
    assert w.render("tick") == '<div><b>I1</b> <input type="checkbox" disabled checked></div>'
    assert w.render("off") == '<div><input type="checkbox" disabled></div>'
