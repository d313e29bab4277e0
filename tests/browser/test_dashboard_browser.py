"""End to end: JupyterLab + headless Chromium run a notebook that starts a cluster, shows the
live Dashboard and runs a workflow in the background; the Bokeh plots render and their data
change in the browser while the workflow runs. Screenshots go to the artifacts folder."""

from __future__ import annotations

import json
import re
import time

CELLS = [
    """import tempfile
from bokeh.io import output_notebook
from bokeh.resources import INLINE
import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.runtime.jobs import submit
output_notebook(INLINE, hide_banner=True)
scratch = tempfile.TemporaryDirectory(prefix="irs-browser-")  # removed with the kernel
workdir = scratch.name""",
    """client = irs.start_cluster(n_workers=2, memory_limit="1GB", dashboard=False)
dash = irs.ui.Dashboard(client, interval_ms=250)
dash""",
    """path = irs.datasets.synthetic_criteo(rows=240_000, seed=0, path=f"{workdir}/raw",
                                      rows_per_file=20_000, cardinalities=[2000] * 26)
ds = irs.Dataset(str(path))
cats = [f"C{i}" for i in range(1, 27)] >> ops.Categorify()
conts = [f"I{i}" for i in range(1, 14)] >> ops.FillMissing(0) >> ops.LogOp() >> ops.Normalize()
wf = irs.Workflow(cats + conts + ["label"], artifacts_dir=f"{workdir}/artifacts")
job = submit(lambda: wf.fit(ds), name="fit")
print("started", ds)""",
]

#: Run once the browser has drawn the fit's tasks, so the plots must change while it runs.
WRITE_CELL = """job.result(timeout=120)
write = submit(lambda: wf.transform(ds).to_parquet(f"{workdir}/out"), name="write")
print("write started")"""


#: The kernel's point count per streamed source of the dashboard, as JSON on one line.
KERNEL_COUNTS = ("import json; print(json.dumps({n: len(s.data['time' if n != 'tasks' else "
                 "'start']) for n, s in dash.sources.items() if n != 'memory'}))")


def _settled_browser_counts(lab, timeout: float = 20) -> dict:
    """The browser's point counts once two reads a second apart agree (or after ``timeout``)."""
    deadline = time.monotonic() + timeout
    browser = _browser_counts(lab)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        browser, before = _browser_counts(lab), browser
        if browser == before:
            break
    return browser


def _browser_counts_become(lab, expected: dict, timeout: float = 300) -> dict[str, int]:
    """The browser's point counts once they equal ``expected`` (the kernel's), waiting for
    the messages on their way (seconds on a busy machine); the last counts otherwise."""
    deadline = time.monotonic() + timeout
    browser = _browser_counts(lab)
    while browser != expected and time.monotonic() < deadline:
        time.sleep(0.5)
        browser = _browser_counts(lab)
    return browser


def _browser_counts(lab) -> dict[str, int]:
    counts = {}
    for name, column in (("spill", "time"), ("utilization", "time"), ("tasks", "start")):
        counts[name] = len(lab.bokeh_source(f"irs-{name}")[column])
    return counts


def _groups(data: dict | None) -> set[str]:
    return set((data or {}).get("group", []))


def test_dashboard_updates_live_in_jupyterlab(lab) -> None:
    name = lab.write_notebook("dashboard_live.ipynb", CELLS)
    lab.open_notebook(name)
    lab.run_all(timeout=300)  # returns when the cells ran; the job goes on in the background
    lab.wait_for_output(re.compile(r"started Dataset\(rows=240000"))

    # the plots render: four Bokeh figures (no GPU here) inside the output area
    figures = lab.outputs().locator(".bk-Figure")
    figures.first.wait_for(timeout=30_000)
    assert figures.count() >= 4
    assert lab.outputs().locator(".bk-Figure canvas").count() >= 4

    # the browser's copy of the data changes while the workflow runs
    memory = lab.wait_for_bokeh_source("irs-memory", lambda d: len(d["worker"]) == 2)
    assert memory["worker"] == ["worker 0", "worker 1"]
    assert all(limit == 1_000_000_000 for limit in memory["limit"])
    first = lab.wait_for_bokeh_source("irs-tasks", lambda d: len(d["start"]) > 0, timeout=300)
    spill_first = lab.bokeh_source("irs-spill")
    lab.screenshot("dashboard-running")
    assert "write_part" not in _groups(first)
    lab.run_cell(WRITE_CELL, timeout=600)  # the write starts only after the browser saw the fit
    lab.outputs().locator(".irs-dashboard").first.scroll_into_view_if_needed()  # watched
    final = lab.wait_for_bokeh_source(
        "irs-tasks", lambda d: "write_part" in _groups(d) and len(d["start"]) > len(
            first["start"]), timeout=300)
    assert {"categorify", "normalize", "fit"} <= _groups(final)
    assert len(lab.bokeh_source("irs-spill")["time"]) > len(spill_first["time"])

    # progress bars per phase end green (ipywidgets 8: bar-style success)
    deadline = time.monotonic() + 300
    done = lab.outputs().locator(".widget-hprogress .progress-bar-success")
    while done.count() < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert done.count() >= 2, lab.outputs().all_inner_texts()
    labels = " ".join(lab.outputs().locator(".widget-label").all_inner_texts())
    assert "fit 1/1" in labels and "write" in labels and "finished" in labels

    # the kernel's copy of the streamed data is the browser's: jupyter_bokeh 4.1 echoes each
    # stream back from the browser, which the kernel used to apply again (twice the points)
    lab.run_cell("dash.pause()")  # no more samples: both copies settle
    browser = _settled_browser_counts(lab)
    kernel = json.loads(lab.run_cell(KERNEL_COUNTS).strip().splitlines()[-1])
    browser = _browser_counts_become(lab, kernel)
    # a flat spill line is sent as its two ends (only changes are streamed): at least a line
    assert browser["spill"] >= 2 and browser["tasks"] > 20, browser
    assert kernel == browser
    assert _browser_counts(lab) == browser

    stderr = lab.outputs().locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert lab.errors == []
    assert lab.screenshot("dashboard-finished").stat().st_size > 20_000


def _server_log_count(lab, text: str) -> int:
    return lab.server.log_tail(chars=10_000_000).count(text)


def test_rerunning_the_cell_and_close_leave_no_comm_behind(lab) -> None:
    """Re-running the cell that shows a dashboard disposes of the old one (no thread, no
    widget, no "No such comm" warning); Close freezes the picture in place."""
    before = _server_log_count(lab, "No such comm")
    name = lab.write_notebook("dashboard_rerun.ipynb", [
        CELLS[0],
        'client = irs.start_cluster(n_workers=2, memory_limit="1GB", dashboard=False)',
        "dash = irs.ui.Dashboard(client, interval_ms=200)\ndash",
    ])
    lab.open_notebook(name)
    lab.run_all(timeout=90)
    page = lab.page
    lab.wait_for_output("live", selector=".irs-dashboard")
    cell = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(2)
    for _ in range(3):  # run the dashboard's cell again (Ctrl+Enter), three times
        cell.locator(".jp-InputPrompt").click()
        page.keyboard.press("Control+Enter")
        time.sleep(1.5)
        lab.wait_for_output("live", selector=".irs-dashboard")
    counts = json.loads(lab.run_cell(
        "import json, threading\nfrom ipywidgets.widgets.widget import _instances\n"
        "print(json.dumps({'monitors': sum(t.name == 'irs-monitor' for t in "
        "threading.enumerate()), 'widgets': len(_instances)}))").strip().splitlines()[-1])
    assert counts["monitors"] == 1, counts  # the three older dashboards were disposed of
    assert page.locator(".irs-dashboard").count() == 1
    widgets_one = counts["widgets"]

    # Close: the picture stays, with the browser's data equal to the kernel's
    page.locator(".irs-dashboard button").filter(has_text="Close").click()
    lab.wait_for_output("closed", selector=".irs-dashboard")
    kernel = json.loads(lab.run_cell(KERNEL_COUNTS).strip().splitlines()[-1])
    assert _browser_counts_become(lab, kernel) == kernel
    assert page.locator(".irs-dashboard .bk-Figure canvas").count() >= 4  # still drawn
    assert page.locator(".irs-dashboard button").count() == 0  # the controls went
    lab.screenshot("dashboard-closed-frozen")
    left = json.loads(lab.run_cell(
        "print(json.dumps({'monitors': sum(t.name == 'irs-monitor' for t in "
        "threading.enumerate()), 'widgets': len(_instances)}))").strip().splitlines()[-1])
    assert left["monitors"] == 0 and left["widgets"] < widgets_one
    time.sleep(2.0)  # any late message from the browser to a closed comm would show now
    assert _server_log_count(lab, "No such comm") == before
    assert lab.errors == []


STUDIO_CELLS = [
    CELLS[0],
    """client = irs.start_cluster(n_workers=2, memory_limit="1GB", dashboard=False)
path = irs.datasets.synthetic_criteo(rows=100_000, seed=0, path=f"{workdir}/raw",
                                     rows_per_file=10_000)
studio = irs.ui.Studio(str(path))
studio""",
    """b = studio.builder
b.select_columns([f"C{i}" for i in range(1, 27)])
b.choose_operator("Categorify")
b.add_button.click()
print(len(b.model.steps) if hasattr(b.model, "steps") else "", "step added")""",
]

STUDIO_COUNTS = KERNEL_COUNTS.replace("dash.sources", "studio.dashboard.sources")
RUN_AND_WAIT = """studio.run_button.click()
job = studio.builder.model.wait_run(timeout=240)
print(job.status)"""


def _cluster_tab(page):
    return page.locator(".irs-studio-tabs .lm-TabBar-tab").filter(has_text="Cluster")


def test_studio_cluster_tab_live_closed_restarted(lab) -> None:
    """At 1440x900 on the 40-column data: the Cluster tab draws points during a run (browser
    and kernel agree), a closed cluster offers Start again, the new cluster runs a Run, and
    Close freezes the picture."""
    page = lab.page
    page.set_viewport_size({"width": 1440, "height": 900})
    name = lab.write_notebook("studio_cluster.ipynb", STUDIO_CELLS)
    lab.open_notebook(name)
    lab.run_all(timeout=120)
    lab.wait_for_output("step added")
    _cluster_tab(page).click()
    tab = page.locator(".irs-studio .irs-dashboard")
    tab.locator(".bk-Figure canvas").first.wait_for(timeout=30_000)
    lab.wait_for_bokeh_source("irs-memory", lambda d: len(d["worker"]) == 2)

    # a Run draws points in the tab while it runs
    lab.run_cell("studio.run_button.click()")
    # watched, as a user does: the new cell scrolled the notebook, and a dashboard out of the
    # window draws nothing until it is back (one catch-up then)
    tab.scroll_into_view_if_needed()
    during = lab.wait_for_bokeh_source("irs-tasks", lambda d: len(d["start"]) > 20, timeout=120)
    assert "categorify" in _groups(during)
    lab.screenshot("studio-cluster-running")
    page.locator(".irs-studio").screenshot(path=str(lab.artifacts / "studio-dashboard.png"))
    out = lab.run_cell("job = studio.builder.model.wait_run(timeout=240)\nprint(job.status)",
                       timeout=250)
    assert "finished" in out
    lab.run_cell("studio.dashboard.pause()")
    browser = _settled_browser_counts(lab)
    kernel = json.loads(lab.run_cell(STUDIO_COUNTS).strip().splitlines()[-1])
    assert kernel == browser and browser["tasks"] > 20, (kernel, browser)

    # the cluster closes: detected, Start offered, the last picture kept
    lab.run_cell("client.close(); client.cluster.close()")
    start = page.locator(".irs-studio .irs-btn-start-cluster")
    start.wait_for(timeout=30_000)
    assert "closed" in page.locator(".irs-studio .irs-studio-no-cluster").inner_text()
    assert "live" not in tab.locator(".widget-html").first.inner_text()
    lab.screenshot("studio-cluster-closed")
    start.click()
    page.locator(".irs-studio .irs-btn-start-cluster").filter(
        has_text="Starting").wait_for(timeout=10_000)  # the busy state shows
    page.locator(".irs-studio .irs-dashboard").filter(has_text="live").wait_for(
        timeout=90_000)
    # the first Run wrote the default output: this one must replace it (else it is refused,
    # nothing runs and wait_run returns None); it runs on the new cluster
    lab.run_cell("studio.builder.overwrite.value = True")
    out = lab.run_cell(RUN_AND_WAIT + "\nprint('on new', job._client is studio.client, "
                       "studio.client.status)", timeout=250)
    assert "finished" in out and "on new True running" in out, out

    # Close freezes the picture in place
    new = page.locator(".irs-studio .irs-dashboard")
    new.locator("button").filter(has_text="Close").click()
    new.filter(has_text="closed").wait_for(timeout=20_000)
    kernel = json.loads(lab.run_cell(STUDIO_COUNTS).strip().splitlines()[-1])
    # the second Run reuses every fitted step (nothing changed): its tasks are the read,
    # transform and write of the output only, fewer than the first Run's
    assert _browser_counts_become(lab, kernel) == kernel and kernel["tasks"] > 0
    reused = lab.run_cell("print(sorted({s.reused for s in "
                          "studio.builder.model.reuse_run.fitted_steps()}))")
    assert "[True]" in reused, reused
    assert new.locator(".bk-Figure canvas").count() >= 4
    new.scroll_into_view_if_needed()
    lab.screenshot("studio-cluster-frozen")
    assert lab.errors == []


REPORT_CELLS = [
    CELLS[0],
    """client = irs.start_cluster(n_workers=2, memory_limit="1GB", dashboard=False)
dash = irs.ui.Dashboard(client, interval_ms=60_000)  # one sample a minute: state from phase ends
dash""",
    """path = irs.datasets.synthetic_criteo(rows=40_000, seed=0, path=f"{workdir}/raw",
                                     rows_per_file=10_000, cardinalities=[500] * 26)
ds = irs.Dataset(str(path))
wf = irs.Workflow([f"C{i}" for i in range(1, 27)] >> ops.Categorify(),
                  artifacts_dir=f"{workdir}/artifacts")
wf.fit(ds, background=True).result(timeout=120)
written = wf.transform(ds).to_parquet(f"{workdir}/out", background=True).result(timeout=120)""",
    """dash.close()
import json
print(json.dumps({"tasks": len(dash.sources["tasks"].data["start"])}))
irs.stop_cluster(client)""",
]


def test_report_shows_the_final_state(tmp_path, browser_context, artifacts_dir) -> None:
    """A notebook executed without a browser (as notebooks/execute.py does) keeps the
    dashboard's final state in its widget state: ``irs report`` draws every task of the run
    and the progress at 100%, offline."""
    import nbformat
    from nbclient import NotebookClient

    from interactive_recsys.report._notebook_report import notebook_report

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in REPORT_CELLS]
    NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert "WARNING" not in text  # irs.stop_cluster closes quietly
    tasks = json.loads(text.strip().splitlines()[-1])["tasks"]
    assert tasks > 40
    nbformat.write(nb, tmp_path / "run.ipynb")
    report = notebook_report(tmp_path / "run.ipynb")  # stored state only, no re-execution

    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(report.as_uri())
        page.locator(".bk-Figure canvas").first.wait_for(timeout=30_000)
        page.wait_for_function("() => window.Bokeh && window.Bokeh.documents.length > 0")
        from lab import bokeh_source

        data = bokeh_source(page, "irs-tasks")
        assert len(data["start"]) == tasks  # every task of the run, not the first seconds
        assert {"categorify", "write_part"} <= _groups(data)
        body = page.locator("body").inner_text()
        assert re.search(r"fit 1/1 · \d\d:\d\d:\d\d", body) and "write · " in body
        assert body.count("tasks, finished") >= 2 and "running" not in body
        page.screenshot(path=str(artifacts_dir / "dashboard-report.png"), full_page=True)
    finally:
        page.close()
    assert errors == []
