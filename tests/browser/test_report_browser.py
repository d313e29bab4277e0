"""An ``irs report`` page opened in Chromium without network: the dashboard's Bokeh figure
is drawn from the inline BokehJS with the data it had at the end of the run, a
``bokeh.io.show`` figure too, and the notebook's own HTML runs nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
from lab import bokeh_source

from interactive_recsys.report._notebook_report import notebook_report

CELLS = [
    """\
import ipywidgets as w
from bokeh.io import output_notebook
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure
from jupyter_bokeh import BokehModel

output_notebook(hide_banner=True)
src = ColumnDataSource({"x": [1, 2], "y": [10, 20]}, name="pts")
fig = figure(width=400, height=250, title="points")
fig.line("x", "y", source=src)
w.VBox([w.HTML("<b>report dashboard</b>"), BokehModel(fig)])""",
    'src.stream({"x": [3], "y": [5]})',
    """from bokeh.io import show
shown = figure(width=300, height=200, title="shown")
shown.scatter("x", "y", source=ColumnDataSource({"x": [1, 2], "y": [4, 6]}, name="shown"))
show(shown)""",
    'from IPython.display import HTML\nHTML("<b>kept</b><img src=x onerror=\\"window.pwned=1\\">")',
]


def test_report_renders_offline_in_chromium(tmp_path, browser_context, artifacts_dir):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nbformat.write(nb, tmp_path / "run.ipynb")
    report = notebook_report(tmp_path / "run.ipynb", execute=True, timeout=120)

    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    try:
        page.goto(report.as_uri())
        page.locator(".bk-Figure canvas").first.wait_for(timeout=20_000)
        page.wait_for_function("() => window.Bokeh && window.Bokeh.documents.length > 0")
        assert bokeh_source(page, "pts") == {"x": [1, 2, 3], "y": [10, 20, 5]}
        # a bokeh.io.show figure is drawn from its document (the notebook's script is not
        # copied), and the notebook's HTML ran no handler
        page.wait_for_function("() => window.Bokeh.documents.length >= 2")
        assert bokeh_source(page, "shown") == {"x": [1, 2], "y": [4, 6]}
        assert page.evaluate("() => window.pwned") is None
        assert page.locator(".jp-OutputArea-output b").all_inner_texts() == [
            "report dashboard", "kept"]
        page.screenshot(path=str(artifacts_dir / "irs_report.png"))
    finally:
        page.close()
    assert errors == []
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_report_of_stored_notebooks_draws_the_studio_widgets_and_final_plan(
        tmp_path, browser_context, artifacts_dir):
    """Reports of the stored notebooks 02 and 04 (no kernel): the Studio's column list (every
    row readable, fixed height, scrolling) and workflow graph drawn from their saved state,
    and notebook 04's memory plan with the settings its last cells chose (8 GPUs, fp16)."""
    pages = {}
    for name in ("02_visual_builder.ipynb", "04_embedding_statistics.ipynb"):
        shutil.copy(NOTEBOOKS / name, tmp_path / name)
        pages[name] = notebook_report(tmp_path / name)
    page = browser_context.new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    try:
        page.goto(pages["02_visual_builder.ipynb"].as_uri())
        rows = page.locator(".irs-cl-row:visible")
        rows.first.wait_for(timeout=10_000)
        names = page.locator(".irs-cl-row:visible .irs-cl-name").all_inner_texts()
        assert len(names) >= 14 and len(set(names)) == len(names)
        for i in (0, len(names) - 1):  # first and last row, the last scrolled into view
            rows.nth(i).scroll_into_view_if_needed()
            box = rows.nth(i).bounding_box()
            assert box is not None and box["height"] >= 20, box
            name = rows.nth(i).locator(".irs-cl-name")
            assert name.is_visible() and name.inner_text() == names[i]
        nodes = page.locator(".irs-dag-svg .irs-dag-node")
        assert nodes.count() > 3
        labels = page.locator(".irs-dag-svg .irs-dag-label").all_text_contents()
        assert any(label == "Categorify" for label in labels), labels
        svg = page.locator(".irs-dag-svg").first.bounding_box()
        assert svg is not None and svg["width"] > 200 and svg["height"] > 50
        page.locator(".irs-cl").first.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir / "irs_report_02_studio.png"))
        page.locator(".irs-dag-svg").first.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir / "irs_report_02_dag.png"))

        page.goto(pages["04_embedding_statistics.ipynb"].as_uri())
        page.locator(".bk-Figure canvas").first.wait_for(timeout=20_000)
        page.wait_for_function("() => window.Bokeh && window.Bokeh.documents.length >= 2")
        plan = bokeh_source(page, "irs-embedding-plan")
        gpus = {x[0] for x in plan["x"]}
        assert gpus == {f"GPU {g}" for g in range(8)}, gpus
        page.locator(".bk-Figure").last.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir / "irs_report_04_plan.png"))
    finally:
        page.close()
    assert errors == []
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
