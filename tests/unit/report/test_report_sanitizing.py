"""The notebook report carries no script, draws Bokeh outputs from their data only, and
never replaces the notebook.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from interactive_recsys.report._notebook_report import notebook_report
from tests.helpers import digest_tree


# ---- 6. report sanitizing --------------------------------------------------------------------
def _report_case(case: str) -> nbformat.NotebookNode:
    v4 = nbformat.v4
    nb = v4.new_notebook()
    payload = "alert('irs_pwned')"
    out = {"markdown": None,
           "text/html": v4.new_output("display_data", {
               "text/html": f"<b>kept</b><script>{payload}</script>", "text/plain": "x"}),
           "widget onerror": v4.new_output("display_data", {
               "application/vnd.jupyter.widget-view+json": {"model_id": "h1", "version_major": 2,
                                                            "version_minor": 0},
               "text/plain": "HTML()"}),
           "image/png": v4.new_output("display_data", {
               "image/png": f'iVBORw0KGgo=" onerror="{payload}', "text/plain": "img"}),
           "javascript": v4.new_output("display_data", {
               "application/javascript": payload, "text/plain": "js"})}[case]
    nb.cells = [v4.new_markdown_cell(f"# Notes\n\n**kept**\n\n<script>{payload}</script>"
                                     if case == "markdown" else "**kept**"),
                v4.new_code_cell("x", execution_count=1, outputs=[out] if out else [
                    v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)])]
    if case == "widget onerror":
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"h1": {
            "model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls",
            "state": {"value": f'<b>kept</b><img src="x" onerror="{payload}">'}}}}}
    return nb


@pytest.mark.parametrize("case", ["markdown", "text/html", "widget onerror", "image/png",
                                  "javascript"])
def test_report_carries_no_script_from_the_notebook(case, tmp_path):
    nbformat.write(_report_case(case), tmp_path / "nb.ipynb")
    before = digest_tree(tmp_path)
    path = notebook_report(tmp_path / "nb.ipynb")
    page = path.read_text()
    assert "irs_pwned" not in page  # the payload is gone, not merely moved
    assert "<b>kept</b>" in page or "<strong>kept</strong>" in page
    assert not re.search(r"\son[a-z]+\s*=", page.split("</style>")[-1])  # no event handlers
    after = digest_tree(tmp_path)
    assert {k: v for k, v in after.items() if k != str(path)} == before


def test_report_draws_bokeh_show_outputs_from_their_data_only(tmp_path):
    from bokeh.embed.notebook import notebook_content
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, Div
    from bokeh.plotting import figure

    fig = figure(width=300, height=200)
    fig.line("x", "y", source=ColumnDataSource({"x": [1, 2], "y": [3, 4]}, name="shown"))
    fig.js_on_event("tap", CustomJS(code="alert('irs_pwned')"))
    script, div, _ = notebook_content(column(Div(text='<img src=x onerror="irs_pwned()">'), fig))
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("show(fig)", execution_count=1, outputs=[v4.new_output(
        "display_data", {"text/html": div, "application/javascript": script,
                         "application/vnd.bokehjs_exec.v0+json": ""},
        metadata={"application/vnd.bokehjs_exec.v0+json": {"id": "p1"}})])]
    nbformat.write(nb, tmp_path / "nb.ipynb")
    page = notebook_report(tmp_path / "nb.ipynb").read_text()
    assert "irs_pwned" not in page
    docs = re.search(r'<script[^>]* id="irs-bokeh-[0-9a-f]+-docs"[^>]*>(.*?)</script>', page,
                     re.S)
    assert docs and '"shown"' in docs[1] and "Bokeh.embed.embed_items" in page
    assert '<img src=\\"x\\">' in docs[1] and "CustomJS" not in docs[1]  # Div text cleaned


def test_report_refuses_to_replace_the_notebook(tmp_path):
    from interactive_recsys.report._notebook_report import ReportError

    nbformat.write(_report_case("text/html"), tmp_path / "nb.ipynb")
    before = digest_tree(tmp_path)
    with pytest.raises(ReportError, match=r"nb\.ipynb.*is the notebook itself"):
        notebook_report(tmp_path / "nb.ipynb", tmp_path / "nb.ipynb")
    assert digest_tree(tmp_path) == before
