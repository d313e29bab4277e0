"""What the live dashboard costs the browser: Chromium's CPU in JupyterLab, at 1440x900.

A real JupyterLab server and headless Chromium (:mod:`tools.lab`, which the browser tests
use too) open a notebook that starts a 2-worker cluster, shows ``irs.ui.Dashboard`` and
writes ``--rows`` synthetic Criteo rows. Chromium's CPU time (user + system, summed over
every process Playwright started) is measured over windows of ``--window`` seconds:

* idle, the dashboard visible (target: at most 5% of a core);
* idle, the dashboard paused (the page alone, for reference);
* idle, its notebook tab hidden behind a JupyterLab launcher (target: at most 2% of a core);
* during a run (fit, then transform and write), against the CPU time of the Dask workers
  (target: at most 25% of theirs).

These are measurements of the machine as much as of the code: a busy machine stretches the
run's wall time, and with it the browser's share (the dashboard draws every few seconds of
wall time). The load average before and after is recorded beside them. What the browser
test suite checks instead is the pace of drawing, which no machine's speed changes
(``tests/browser/test_dashboard_drawing_browser.py``).

``python -m benchmarks dashboard-cpu [--rows N] [--window S]``; results
``results/dashboard-cpu.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

HELP = "Chromium's CPU for the live dashboard: idle, paused, hidden, during a run"
VIEWPORT = {"width": 1440, "height": 900}
#: Targets: a share of one core (idle, hidden), and of the workers' CPU time (during a run).
TARGETS = {"idle": 0.05, "hidden": 0.02, "run": 0.25}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=3_000_000,
                        help="synthetic Criteo rows of the run (default 3000000)")
    parser.add_argument("--window", type=float, default=25.0,
                        help="seconds of each idle measurement (default 25)")
    parser.add_argument("--chromium",
                        default=os.environ.get("IRS_CHROMIUM", "/usr/bin/chromium"))


def notebook_cells(rows: int) -> list[str]:
    """The notebook: a 2-worker cluster and its dashboard, then the data and the workflow."""
    return [
        """import json, os, tempfile
from bokeh.io import output_notebook
from bokeh.resources import INLINE
import interactive_recsys as irs
from interactive_recsys import ops
output_notebook(INLINE, hide_banner=True)
workdir = tempfile.mkdtemp(prefix="irs-bench-dashboard-cpu-")""",
        """client = irs.start_cluster(n_workers=2, memory_limit="1GB", dashboard=False)
dash = irs.ui.Dashboard(client)
dash""",
        f"""path = irs.datasets.synthetic_criteo(rows={rows}, seed=0, path=f"{{workdir}}/raw",
                                      rows_per_file=250_000, cardinalities=[5000] * 26)
ds = irs.Dataset(str(path))
cats = [f"C{{i}}" for i in range(1, 27)] >> ops.Categorify()
conts = [f"I{{i}}" for i in range(1, 14)] >> ops.FillMissing(0) >> ops.LogOp() >> ops.Normalize()
wf = irs.Workflow(cats + conts + ["label"], artifacts_dir=f"{{workdir}}/artifacts")
pids = sorted(client.run(os.getpid).values())
print("workers", json.dumps(pids))""",
    ]


#: The run, in a thread: the cell returns at once, so that the dashboard can be scrolled back
#: into view for the run (the new cell below scrolls it away, and a dashboard out of view
#: rightly draws nothing); its end is a file beside the notebook.
RUN_CELL = """import shutil, threading
def work():
    wf.fit(ds, background=True).result(timeout=3600)
    wf.transform(ds).to_parquet(f"{workdir}/out", background=True).result(timeout=3600)
    shutil.rmtree(workdir, ignore_errors=True)
    open("run-done", "w").close()
threading.Thread(target=work, daemon=True).start()
print("run started")"""


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """CPU seconds (user + system, children waited for included) of ``procs``."""
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:  # a renderer that exited: its time is lost either way
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def chromium_processes() -> list[psutil.Process]:
    """Every Chromium process started by this process (through Playwright)."""
    return [p for p in psutil.Process().children(recursive=True)
            if "chrom" in (p.name() or "").lower() or "headless_shell" in p.name()]


def share_of_a_core(seconds: float) -> float:
    """Chromium's CPU as a share of one core over the next ``seconds``."""
    procs = chromium_processes()
    if not procs:
        raise RuntimeError("no Chromium process found under this process")
    before, t0 = cpu_seconds(procs), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(chromium_processes()) - before) / (time.monotonic() - t0)


def measure(lab: Any, rows: int, window: float) -> dict[str, Any]:
    """Open the notebook in ``lab`` (a :class:`tools.lab.LabPage`) and measure."""
    page = lab.page
    name = lab.write_notebook("dashboard_cpu.ipynb", notebook_cells(rows))
    lab.open_notebook(name)
    lab.run_all(timeout=1800)
    out = lab.wait_for_output(re.compile(r"workers \["), timeout=600).inner_text()
    workers = [psutil.Process(pid) for pid in json.loads(out.split("workers", 1)[1])]
    lab.wait_for_output("live", selector=".irs-dashboard", timeout=120)
    page.locator(".irs-dashboard .bk-Figure canvas").first.scroll_into_view_if_needed()
    time.sleep(5.0)  # the first whole picture drawn, the kernel settled
    measured: dict[str, Any] = {"idle": share_of_a_core(window)}
    lab.run_cell("dash.pause()")
    measured["paused"] = share_of_a_core(window)
    lab.run_cell("dash.resume()")
    lab.menu("File", "New Launcher")  # another JupyterLab tab in front of the notebook
    page.locator(".jp-Launcher").first.wait_for(timeout=60_000)
    time.sleep(2.0)
    measured["hidden"] = share_of_a_core(window)
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab").filter(has_text=name).click()
    time.sleep(3.0)
    browser0, workers0, t0 = cpu_seconds(chromium_processes()), cpu_seconds(workers), \
        time.monotonic()
    lab.run_cell(RUN_CELL, timeout=600)
    page.locator(".irs-dashboard .bk-Figure canvas").first.scroll_into_view_if_needed()
    done = lab.server.root_dir / "run-done"
    while not done.exists():
        if time.monotonic() - t0 > 3600:
            raise TimeoutError("the run did not end within an hour")
        time.sleep(0.5)
    measured["run_wall_s"] = time.monotonic() - t0
    measured["run_browser_cpu_s"] = cpu_seconds(chromium_processes()) - browser0
    measured["run_workers_cpu_s"] = cpu_seconds(workers) - workers0
    measured["run"] = measured["run_browser_cpu_s"] / max(measured["run_workers_cpu_s"], 1e-9)
    measured["page_errors"] = list(lab.errors)
    return measured


def run(args: argparse.Namespace) -> None:
    from playwright.sync_api import sync_playwright

    from tools.lab import CHROMIUM_ARGS, LabPage, LabServer

    from .report import command_line, git_state, machine_info, result_stem

    load_before = os.getloadavg()
    base = Path(tempfile.mkdtemp(prefix="irs-bench-dashboard-cpu-"))
    (base / "root").mkdir()
    server = LabServer(base / "root", base / "state", base / "jupyterlab-server.log")
    server.start()
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(base / "profile"), executable_path=args.chromium, headless=True,
                args=CHROMIUM_ARGS, viewport=VIEWPORT)
            context.set_default_timeout(60_000)
            try:
                measured = measure(LabPage(server, context.new_page(), base), args.rows,
                                   args.window)
            finally:
                context.close()
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    summary = {key: {"value": measured[key], "target": target,
                     "met": measured[key] <= target} for key, target in TARGETS.items()}
    results = {"benchmark": "dashboard-cpu", "measured": measured, "summary": summary,
               "load_average": {"before": list(load_before), "after": list(os.getloadavg())},
               "settings": {"rows": args.rows, "window_s": args.window, "workers": 2,
                            "memory_limit": "1GB"},
               "machine": machine_info(), "code": git_state(), "command": command_line(),
               "date": datetime.date.today().isoformat()}
    stem = result_stem("dashboard-cpu")
    Path(f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    Path(f"{stem}.md").write_text(markdown(results))
    print(markdown(results))


def markdown(results: dict[str, Any]) -> str:
    """The result as a Markdown report: one table of the measurements against the targets."""
    m, s, r = results["measured"], results["summary"], results["settings"]
    machine, load = results["machine"], results["load_average"]
    met = {k: "yes" if v["met"] else "no" for k, v in s.items()}
    lines = [f"# dashboard-cpu benchmark, {results['date']}, {machine['host']}", "",
             f"Chromium's CPU (its whole process tree) with a live dashboard in JupyterLab at "
             f"1440x900, a cluster of {r['workers']} workers ({r['memory_limit']} each); idle "
             f"windows of {r['window_s']:.0f} s, and a run (fit, then transform and write) of "
             f"{r['rows']:,} synthetic Criteo rows.", "",
             "| Chromium's CPU | measured | target | met |", "|---|---:|---:|---|",
             f"| idle dashboard, visible | {m['idle']:.1%} of a core | "
             f"{s['idle']['target']:.0%} | {met['idle']} |",
             f"| the page alone (dashboard paused) | {m['paused']:.1%} of a core | - | - |",
             f"| idle dashboard, its notebook tab hidden | {m['hidden']:.1%} of a core | "
             f"{s['hidden']['target']:.0%} | {met['hidden']} |",
             f"| during a run of {m['run_wall_s']:.0f} s, against the workers' CPU | "
             f"{m['run']:.1%} ({m['run_browser_cpu_s']:.1f} of "
             f"{m['run_workers_cpu_s']:.1f} CPU-s) | {s['run']['target']:.0%} | "
             f"{met['run']} |", "",
             f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load['before'])};"
             f" after: {', '.join(f'{x:.1f}' for x in load['after'])}. "
             f"Machine: {machine['cpu']}, {machine['cpu_count']} CPUs, {machine['memory_gb']} GB. "
             f"Code: commit {results['code']['git_commit'][:12]}."]
    if m.get("page_errors"):
        lines += ["", f"Page errors: {m['page_errors']}"]
    return "\n".join(lines) + "\n"
