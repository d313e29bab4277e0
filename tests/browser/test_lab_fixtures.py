"""The browser fixtures themselves: an ipywidgets button and a Bokeh plot rendered in
JupyterLab, a click in Chromium runs a kernel callback that adds a point, and the page's
Bokeh document (read by name) receives it.

The callback sets the whole ``data``: with jupyter_bokeh 4.1 a ``source.stream`` from a
widget callback comes back from the browser as a second stream, so the kernel's copy gets
each streamed row twice (seen here: x = [1, 2, 3, 4, 4] after one click).
"""

from __future__ import annotations

CELLS = [
    "#md A Bokeh plot inside ipywidgets, and a button that adds a point.",
    """\
import ipywidgets as widgets
from bokeh.io import output_notebook
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure
from jupyter_bokeh import BokehModel

output_notebook(hide_banner=True)
source = ColumnDataSource({"x": [1, 2, 3], "y": [4.0, 5.5, 6.0]}, name="points")
fig = figure(width=300, height=200, name="fig")
fig.line("x", "y", source=source)
button = widgets.Button(description="add point")
log = widgets.Output()

@log.capture()
def add_point(_):
    x, y = list(source.data["x"]), list(source.data["y"])
    source.data = {"x": [*x, len(x) + 1], "y": [*y, len(x) * 10.0]}
    print(f"kernel has {len(x) + 1} points")

button.on_click(add_point)
widgets.VBox([button, BokehModel(fig), log])""",
    'print("ready")',
]


def test_button_click_streams_to_bokeh_source(lab):
    lab.open_notebook(lab.write_notebook("fixtures.ipynb", CELLS))
    lab.run_all(timeout=60)
    lab.wait_for_output("ready")
    lab.wait_for_output(selector=".bk-Figure canvas", timeout=30)
    assert lab.wait_for_bokeh_source("points") == {"x": [1, 2, 3], "y": [4.0, 5.5, 6.0]}
    assert lab.bokeh_source("no such name") is None

    lab.outputs().locator("button", has_text="add point").click()
    data = lab.wait_for_bokeh_source("points", lambda d: len(d["x"]) == 4)
    assert data == {"x": [1, 2, 3, 4], "y": [4.0, 5.5, 6.0, 30.0]}
    lab.outputs().locator("button", has_text="add point").click()
    data = lab.wait_for_bokeh_source("points", lambda d: len(d["x"]) == 5)
    assert data == {"x": [1, 2, 3, 4, 5], "y": [4.0, 5.5, 6.0, 30.0, 40.0]}
    lab.wait_for_output("kernel has 5 points")
    assert lab.errors == []
    lab.screenshot("fixtures_bokeh_widget")
