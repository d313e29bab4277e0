"""End to end: JupyterLab + headless Chromium run a notebook that starts a cluster, shows the
live Dashboard and runs a workflow in the background; the Bokeh plots render and their data
change in the browser while the workflow runs. Screenshots go to the artifacts folder."""

from __future__ import annotations

import re
import time

CELLS = [
    """import tempfile
from bokeh.io import output_notebook
from bokeh.resources import INLINE
import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.jobs import submit
output_notebook(INLINE, hide_banner=True)
workdir = tempfile.mkdtemp(prefix="irs-browser-")""",
    """client = irs.start_cluster(n_workers=2, memory_limit="1GB", dashboard=False)
dash = irs.ui.Dashboard(client, interval_ms=250)
dash""",
    """path = irs.datasets.synthetic_criteo(rows=240_000, seed=0, path=f"{workdir}/raw",
                                      rows_per_file=20_000, cardinalities=[2000] * 26)
ds = irs.Dataset(str(path))
cats = [f"C{i}" for i in range(1, 27)] >> ops.Categorify()
conts = [f"I{i}" for i in range(1, 14)] >> ops.FillMissing(0) >> ops.LogOp() >> ops.Normalize()
wf = irs.Workflow(cats + conts + ["label"], artifacts_dir=f"{workdir}/artifacts")
job = submit(lambda: wf.fit(ds).transform(ds).to_parquet(f"{workdir}/out"), name="fit+write")
print("started", ds)""",
]


#: The named source's columns from the newest Bokeh document that has it (the dashboard sends
#: its plots whole once displayed, so the page holds an older, emptied document too).
_SOURCE_JS = """
(name) => {
  const docs = [...((window.Bokeh && window.Bokeh.documents) || [])].reverse();
  for (const doc of docs) {
    const model = doc.get_model_by_name(name);
    if (model == null) continue;
    const data = model.data instanceof Map ? Object.fromEntries(model.data) : model.data;
    const out = {};
    for (const [k, v] of Object.entries(data || {})) out[k] = Array.from(v);
    return out;
  }
  return null;
}
"""


def _source(lab, name: str) -> dict | None:
    return lab.page.evaluate(_SOURCE_JS, name)


def _wait_source(lab, name: str, predicate, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    data = None
    while time.monotonic() < deadline:
        data = _source(lab, name)
        if data is not None and predicate(data):
            return data
        time.sleep(0.3)
    raise TimeoutError(f"Bokeh source {name!r}: condition not met in {timeout} s; last {data!r}")


def _groups(data: dict | None) -> set[str]:
    return set((data or {}).get("group", []))


def test_dashboard_updates_live_in_jupyterlab(lab) -> None:
    name = lab.write_notebook("dashboard_live.ipynb", CELLS)
    lab.open_notebook(name)
    lab.run_all(timeout=90)  # returns when the cells ran; the job goes on in the background
    lab.wait_for_output(re.compile(r"started Dataset\(rows=240000"))

    # the plots render: four Bokeh figures (no GPU here) inside the output area
    figures = lab.outputs().locator(".bk-Figure")
    figures.first.wait_for(timeout=30_000)
    assert figures.count() >= 4
    assert lab.outputs().locator(".bk-Figure canvas").count() >= 4

    # the browser's copy of the data changes while the workflow runs
    memory = _wait_source(lab, "irs-memory", lambda d: len(d["worker"]) == 2)
    assert memory["worker"] == ["worker 0", "worker 1"]
    assert all(limit == 1_000_000_000 for limit in memory["limit"])
    first = _wait_source(lab, "irs-tasks", lambda d: len(d["start"]) > 0, timeout=60)
    spill_first = _source(lab, "irs-spill")
    lab.screenshot("dashboard-running")
    final = _wait_source(
        lab, "irs-tasks", lambda d: "write_part" in _groups(d) and len(d["start"]) > len(
            first["start"]), timeout=90)
    assert {"categorify", "normalize", "fit"} <= _groups(final)
    assert len(_source(lab, "irs-spill")["time"]) > len(spill_first["time"])

    # progress bars per phase end green (ipywidgets 8: bar-style success)
    deadline = time.monotonic() + 60
    done = lab.outputs().locator(".widget-hprogress .progress-bar-success")
    while done.count() < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert done.count() >= 2, lab.outputs().all_inner_texts()
    labels = " ".join(lab.outputs().locator(".widget-label").all_inner_texts())
    assert "fit 1/1" in labels and "write" in labels and "finished" in labels

    stderr = lab.outputs().locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert lab.errors == []
    assert lab.screenshot("dashboard-finished").stat().st_size > 20_000
