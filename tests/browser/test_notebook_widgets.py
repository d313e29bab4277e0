"""Each tutorial notebook that shows widgets renders them in JupyterLab (headless Chromium).

The notebooks are found in ``notebooks/``: those whose stored outputs contain widgets (the
stored copy says how many widget outputs a run shows). Each is copied without its outputs,
run with Run All, and must show the same number of widget views, each really drawn (not
"Loading widget...", not "Error displaying widget"), Bokeh figures on a canvas where its
widgets hold Bokeh models, with no stderr output and no JavaScript error. A screenshot of
each goes to the artifacts folder.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _stored(path: Path) -> tuple[int, bool]:
    """(widget outputs, whether the saved widget state holds Bokeh models) of a notebook."""
    nb = json.loads(path.read_text())
    views = sum(WIDGET_VIEW in out.get("data", {}) for cell in nb["cells"]
                if cell["cell_type"] == "code" for out in cell.get("outputs", []))
    state = nb["metadata"].get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    bokeh = any(m.get("model_module") == "@bokeh/jupyter_bokeh" for m in state.values())
    return views, bokeh


#: Notebooks whose widgets another browser test drives end to end, left out here to keep
#: the browser tests within about two minutes: 03 runs a 3M-row out-of-core job, and its
#: Dashboard (cluster + workflow + live plots) is the subject of test_dashboard_browser.py.
COVERED_ELSEWHERE = {"03_live_dashboard_out_of_core.ipynb"}

#: A Bokeh source the page must show after Run All, and what its data must satisfy: notebook
#: 04 sets 8 GPUs after the EmbeddingView is shown, so the plan is drawn again for 8 GPUs.
FINAL_SOURCES = {
    "04_embedding_statistics.ipynb": (
        "irs-embedding-plan", lambda d: {x[0] for x in d["x"]} == {f"GPU {g}" for g in range(8)}),
}

WIDGET_NOTEBOOKS = [p.name for p in sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
                    if p.name not in COVERED_ELSEWHERE and _stored(p)[0]]


@pytest.mark.slow
@pytest.mark.parametrize("name", WIDGET_NOTEBOOKS)
def test_notebook_renders_its_widgets(lab, name):
    expected_views, has_bokeh = _stored(NOTEBOOKS / name)
    lab.open_notebook(lab.copy_notebook(NOTEBOOKS / name))
    lab.run_all(timeout=180)

    # Top-level widget views of the cells (not widgets nested in Output widgets).
    views = lab.page.locator(".jp-NotebookPanel .jp-Cell-outputArea > .jp-OutputArea-child"
                             " > .jp-OutputArea-output:has(> .jupyter-widgets)")
    broken = lab.outputs().filter(has_text=re.compile(r"Error displaying widget|Loading widget"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (views.count() < expected_views or broken.count()):
        time.sleep(0.5)
    assert broken.count() == 0, broken.all_inner_texts()
    assert views.count() == expected_views, views.all_inner_texts()
    for i in range(expected_views):
        box = views.nth(i).bounding_box()
        assert box is not None and box["height"] > 20, (i, box)
    if has_bokeh:
        # a figure drawn on screen (those in a hidden tab, like the Studio's, are not)
        views.locator(".bk-Figure canvas:visible").first.wait_for(timeout=30_000)

    if name in FINAL_SOURCES:
        lab.wait_for_bokeh_source(*FINAL_SOURCES[name])

    stderr = lab.outputs().locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert lab.errors == []
    views.first.scroll_into_view_if_needed()
    lab.screenshot(f"notebook-{Path(name).stem}")
