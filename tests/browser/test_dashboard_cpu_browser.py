"""What the live dashboard costs the browser, measured: the CPU time of Chromium's process
tree (psutil, every process Playwright started) over a window of :data:`WINDOW_S` seconds,

* idle with the dashboard visible: at most :data:`IDLE_MAX` of a core;
* idle with its notebook tab hidden (another JupyterLab tab in front): about zero, and
  the figures catch up with one update when the tab is shown again;
* during a run: at most :data:`RUN_MAX` of the CPU time the Dask workers spent on it.

The numbers are printed (run with ``-s``). Screenshots at 1440x900: ``dashboard-cpu-live``,
``dashboard-cpu-resumed``."""

from __future__ import annotations

import json
import re
import time

import psutil

#: Seconds each idle measurement lasts (long enough for a stable mean on a busy machine).
WINDOW_S = 25.0
#: Targets: a share of one core (idle), and of the workers' CPU time (during a run).
IDLE_MAX, HIDDEN_MAX, RUN_MAX = 0.05, 0.02, 0.25

CELLS = [
    """import json, os, tempfile
from bokeh.io import output_notebook
from bokeh.resources import INLINE
import interactive_recsys as irs
from interactive_recsys import ops
output_notebook(INLINE, hide_banner=True)
workdir = tempfile.mkdtemp(prefix="irs-browser-cpu-")""",
    """client = irs.start_cluster(n_workers=2, memory_limit="1GB", dashboard=False)
dash = irs.ui.Dashboard(client)
dash""",
    """path = irs.datasets.synthetic_criteo(rows=3_000_000, seed=0, path=f"{workdir}/raw",
                                      rows_per_file=250_000, cardinalities=[5000] * 26)
ds = irs.Dataset(str(path))
cats = [f"C{i}" for i in range(1, 27)] >> ops.Categorify()
conts = [f"I{i}" for i in range(1, 14)] >> ops.FillMissing(0) >> ops.LogOp() >> ops.Normalize()
wf = irs.Workflow(cats + conts + ["label"], artifacts_dir=f"{workdir}/artifacts")
pids = sorted(client.run(os.getpid).values())
print("workers", json.dumps(pids))""",
]

RUN_CELL = """wf.fit(ds, background=True).result(timeout=300)
wf.transform(ds).to_parquet(f"{workdir}/out", background=True).result(timeout=300)
print("run done")"""


def _tree_cpu(procs: list[psutil.Process]) -> float:
    """CPU seconds (user + system, children waited for included) of ``procs``."""
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:  # a renderer that exited: its time is lost either way
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _chromium() -> list[psutil.Process]:
    """Every Chromium process started by this test session (through Playwright)."""
    return [p for p in psutil.Process().children(recursive=True)
            if "chrom" in (p.name() or "").lower() or "headless_shell" in p.name()]


def _browser_seconds_over(seconds: float) -> float:
    """The browser's CPU as a share of one core over the next ``seconds``."""
    procs = _chromium()
    assert procs, "no Chromium process found under the test process"
    before, t0 = _tree_cpu(procs), time.monotonic()
    time.sleep(seconds)
    return (_tree_cpu(_chromium()) - before) / (time.monotonic() - t0)


def test_dashboard_cpu_idle_hidden_and_during_a_run(lab) -> None:
    page = lab.page
    page.set_viewport_size({"width": 1440, "height": 900})
    name = lab.write_notebook("dashboard_cpu.ipynb", CELLS)
    lab.open_notebook(name)
    lab.run_all(timeout=180)
    out = lab.wait_for_output(re.compile(r"workers \[")).inner_text()
    workers = [psutil.Process(pid) for pid in json.loads(out.split("workers", 1)[1])]
    lab.wait_for_output("live", selector=".irs-dashboard")
    lab.page.locator(".irs-dashboard .bk-Figure canvas").first.scroll_into_view_if_needed()
    time.sleep(5.0)  # the first whole picture drawn, the kernel settled

    idle = _browser_seconds_over(WINDOW_S)
    print(f"\nbrowser CPU, idle dashboard visible: {idle:.1%} of a core over {WINDOW_S:.0f} s")
    lab.screenshot("dashboard-cpu-live")
    lab.run_cell("dash.pause()")
    paused = _browser_seconds_over(WINDOW_S)
    print(f"browser CPU, dashboard paused (the page alone): {paused:.1%} of a core")
    lab.run_cell("dash.resume()")

    # hide the notebook: another JupyterLab tab (a launcher) in front of it
    before = lab.bokeh_source("irs-utilization")["time"][-1]
    lab.menu("File", "New Launcher")
    page.locator(".jp-Launcher").first.wait_for(timeout=10_000)
    time.sleep(2.0)
    hidden = _browser_seconds_over(WINDOW_S)
    print(f"browser CPU, notebook tab hidden: {hidden:.1%} of a core over {WINDOW_S:.0f} s")
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab").filter(has_text=name).click()
    time.sleep(3.0)
    after = lab.bokeh_source("irs-utilization")["time"]
    page.locator(".irs-dashboard .bk-Figure canvas").first.scroll_into_view_if_needed()
    lab.screenshot("dashboard-cpu-resumed")

    # a run: the browser's CPU against the workers'
    browser0, workers0, t0 = _tree_cpu(_chromium()), _tree_cpu(workers), time.monotonic()
    lab.run_cell(RUN_CELL, timeout=600)
    browser_run = _tree_cpu(_chromium()) - browser0
    workers_run = _tree_cpu(workers) - workers0
    print(f"during a run of {time.monotonic() - t0:.0f} s: browser {browser_run:.1f} CPU-s, "
          f"workers {workers_run:.1f} CPU-s, ratio {browser_run / workers_run:.1%}")
    assert lab.errors == []
    assert idle <= IDLE_MAX, f"idle dashboard: {idle:.1%} of a core"
    assert hidden <= HIDDEN_MAX, f"hidden dashboard: {hidden:.1%} of a core"
    assert browser_run <= RUN_MAX * workers_run, (browser_run, workers_run)
    # shown again, the figures caught up at once: the lines reach past the hidden time
    assert after[-1] >= before + WINDOW_S, (before, after[-3:])
