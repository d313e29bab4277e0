"""An ``irs report`` page opened in Chromium without network: the dashboard's Bokeh figure
is drawn from the inline BokehJS with the data it had at the end of the run, a
``bokeh.io.show`` figure too, and the notebook's own HTML runs nothing."""

from __future__ import annotations

import nbformat
from lab import bokeh_source

from interactive_recsys.notebook_report import notebook_report

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
