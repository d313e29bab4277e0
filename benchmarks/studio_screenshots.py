"""Screenshots of the Studio as a user sees it, at 1440x900, on a large dataset.

A real JupyterLab server and headless Chromium (:mod:`tools.lab`, which the browser tests
use too) open a notebook that starts a 2-worker cluster (``--memory-limit`` per worker) and
shows ``irs.ui.Studio`` on ``--data`` (a parquet folder, e.g. 8M rows of the kaggle
profile). The script then clicks through the Studio as a user would and saves one PNG per
item into ``--out``:

1. ``01a-suggest-progress``, ``01-suggest``: Suggest counting in the background (rows,
   rows/s, time left, Cancel), then its card (ids kept, lookups lost, table sizes vs the
   budget);
2. ``02a-build-progress``, ``02b-dashboard-header``: rows/s and time left during Run;
3. ``03-build-after-run``: the Build tab after Run (over-budget lookups flagged at the top);
4. ``04-dashboard-idle``: the idle dashboard (Chromium's CPU over 20 s is measured);
5. ``05a-target-typo``, ``05b-target-added``: TargetEncoding's target typed, a typo first;
6. ``06-node-click-form``: a graph node clicked, its form scrolled into view;
7. ``07a-dark-build``, ``07b-dark-cluster``: JupyterLab Dark;
8. ``08a-restore-offer``, ``08b-kernel-stopped``, ``08c-orphan-offer``: after kernel restarts
   (the second one during a Run);
9. ``09a-preview-build``, ``09b-preview-tab``: Preview's "computed on N of M rows";
10. ``10a-embeddings-tables``, ``10b-embeddings-plan``: the Embeddings tab's tables and plan;
11. ``11-refit-threshold``: a Run after editing only ``freq_threshold`` (refinished).

Wall times and CPU measurements go to ``<out>/measurements.json``; the notebook, the Run's
output and the browser profile live in a temporary folder removed at the end, and every process
the script started (JupyterLab, kernels, Dask workers, Chromium) is ended. Not a test: it runs for
many minutes on large data. Run the second Run (item 8) only when the machine allows it
(``--skip-mid-run-restart`` leaves it out).

``python -m benchmarks.studio_screenshots --data PATH --out FOLDER``
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import signal
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import psutil

from tools.lab import CHROMIUM_ARGS, LabPage, LabServer, restart_kernel, set_theme

VIEWPORT = {"width": 1440, "height": 900}
#: Seconds the idle dashboard's browser CPU is measured over.
IDLE_WINDOW_S = 20.0
RUN_TIMEOUT_MS = 1_800_000


def notebook_cells(data: str, output: str, memory_limit: str) -> list[str]:
    """The notebook a user would write: a 2-worker cluster, then the Studio on the data."""
    return [
        "import interactive_recsys as irs\n"
        f"client = irs.start_cluster(2, memory_limit={memory_limit!r}, dashboard=False)\n"
        "import os, json\nprint('workers', json.dumps(sorted(client.run(os.getpid).values())))",
        f"studio = irs.ui.Studio({data!r}, client=client, output={output!r})\nstudio",
    ]


def chromium_processes() -> list[psutil.Process]:
    """Every Chromium process under this script (started through Playwright)."""
    return [p for p in psutil.Process().children(recursive=True)
            if "chrom" in p.name().lower() or "headless_shell" in p.name()]


def cpu_seconds(procs: list[psutil.Process]) -> float:
    """User + system CPU seconds of ``procs`` (processes that exited count nothing)."""
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


class Shots:
    """Drives one Studio page and saves the screenshots; records what was measured."""

    def __init__(self, lab: LabPage, out: Path, data: str, output: str) -> None:
        self.lab, self.page, self.out = lab, lab.page, out
        self.data, self.output = data, output
        self.measured: dict[str, Any] = {}
        self.failed: list[str] = []
        self.workers: list[psutil.Process] = []

    def shot(self, name: str) -> None:
        self.page.wait_for_timeout(400)  # the last trait change painted
        self.lab.screenshot(name)
        print(f"saved {name}.png", flush=True)

    def step(self, name: str, action: Any) -> None:
        """Run one item; a failure is recorded (with a screenshot) and the next item runs."""
        try:
            action()
        except Exception:  # one broken item must not cost the others
            self.failed.append(f"{name}: {traceback.format_exc(limit=3)}")
            print(f"FAILED {name}:\n{traceback.format_exc()}", flush=True)
            try:
                self.lab.screenshot(f"FAILED-{name}")
            except Exception:
                pass

    def tab(self, title: str) -> None:
        self.page.locator(".irs-studio-tabs .lm-TabBar-tab").filter(has_text=title).click()
        self.page.wait_for_timeout(300)

    def top(self, selector: str, offset: int = 60) -> None:
        """Scroll so that ``selector`` starts near the top of the notebook."""
        self.page.locator(selector).first.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.mouse.wheel(0, -offset)
        self.page.wait_for_timeout(300)

    # -- the notebook -------------------------------------------------------------------
    def open(self, name: str, memory_limit: str) -> None:
        self.lab.write_notebook(name, notebook_cells(self.data, self.output, memory_limit))
        self.lab.open_notebook(name)
        self.run_all()

    def shown(self, element: str, key: str, around: str, name: str) -> Any:
        """Wait for the Studio's ``element``, record its text as ``key``, centre ``around``
        in the window and take the screenshot ``name``; returns the element."""
        found = self.page.locator(f".irs-studio {element}")
        found.wait_for(state="visible", timeout=60_000)
        self.measured[key] = found.inner_text()
        self.page.locator(f".irs-studio {around}").first.evaluate(
            "el => el.scrollIntoView({block: 'center'})")
        self.shot(name)
        return found

    def run_all(self) -> None:
        started = time.monotonic()
        self.lab.run_all(timeout=300)
        self.page.locator(".irs-studio .irs-cl-row").nth(39).wait_for(state="attached",
                                                                      timeout=120_000)
        self.measured.setdefault("open_s", []).append(round(time.monotonic() - started, 1))
        text = self.lab.wait_for_output(re.compile(r"workers \[")).inner_text()
        pids = json.loads(text.split("workers", 1)[1].strip().splitlines()[0])
        self.workers = [psutil.Process(pid) for pid in pids]

    # -- 1. Suggest -----------------------------------------------------------------------
    def suggest(self) -> None:
        started = time.monotonic()
        self.page.locator(".irs-studio .irs-btn-suggest").first.click()
        progress = self.page.locator(".irs-studio .irs-suggest-status .irs-run-progress")
        progress.filter(has_text=re.compile(r"rows/s")).first.wait_for(timeout=300_000)
        self.measured["suggest_progress_text"] = progress.first.inner_text()
        self.top(".irs-studio .irs-btn-suggest", 150)
        self.shot("01a-suggest-progress")  # counting in the background, with Cancel
        self.page.locator(".irs-feedback-suggest .irs-msg-success, .irs-feedback-suggest "
                          ".irs-msg-error").first.wait_for(timeout=900_000)
        self.measured["suggest_wall_s"] = round(time.monotonic() - started, 1)
        card = self.page.locator(".irs-studio .irs-suggest-table")
        self.measured["suggest_card"] = card.inner_text()
        self.top(".irs-studio .irs-suggest-loss", 150)
        self.shot("01-suggest")

    # -- 2./3. Run ------------------------------------------------------------------------
    def run(self) -> None:
        page = self.page
        self.top(".irs-studio .irs-builder-actionbar", 200)
        chrome0, workers0 = cpu_seconds(chromium_processes()), cpu_seconds(self.workers)
        started = time.monotonic()
        page.locator(".irs-studio .irs-btn-run").first.click()
        progress = page.locator(".irs-builder-status .irs-run-progress").filter(
            has_text=re.compile(r"about .* left \(phase"))
        progress.wait_for(timeout=600_000)
        self.measured["build_progress_text"] = progress.inner_text()
        self.lab.screenshot("02a-build-progress")  # now: a small dataset's run is short
        self.tab("Cluster")
        header = page.locator(".irs-studio .irs-dashboard-status")
        try:
            header.filter(has_text=re.compile(r"running · .* left \(phase")).wait_for(
                timeout=120_000)
            page.wait_for_timeout(2000)
        except Exception:  # the run ended first (small data): the header as it stands
            self.measured["dashboard_header_missed_run"] = True
        self.measured["dashboard_header_text"] = header.inner_text()
        self.shot("02b-dashboard-header")
        page.locator(".irs-builder-status .irs-run-finished, .irs-builder-status "
                     ".irs-run-error, .irs-builder-status .irs-run-cancelled").first.wait_for(
                         state="attached", timeout=RUN_TIMEOUT_MS)
        self.measured["run_wall_s"] = round(time.monotonic() - started, 1)
        browser = cpu_seconds(chromium_processes()) - chrome0
        workers = cpu_seconds(self.workers) - workers0
        self.measured["run_cpu_s"] = {"browser": round(browser, 1), "workers": round(workers, 1),
                                      "ratio": round(browser / max(workers, 1e-9), 3)}
        self.tab("Build")
        self.measured["build_status_text"] = page.locator(".irs-builder-status").inner_text()
        alert = page.locator(".irs-studio .irs-oov-alert")
        self.measured["oov_alert"] = alert.inner_text() if alert.count() else None
        self.top(".irs-studio .irs-builder", 10)
        self.shot("03-build-after-run")

    # -- 4. the idle dashboard ------------------------------------------------------------
    def idle_dashboard(self) -> None:
        self.tab("Cluster")
        self.top(".irs-studio .irs-dashboard", 10)
        self.page.wait_for_timeout(5000)  # the run's last samples drawn
        procs = chromium_processes()
        before, t0 = cpu_seconds(procs), time.monotonic()
        time.sleep(IDLE_WINDOW_S)
        share = (cpu_seconds(chromium_processes()) - before) / (time.monotonic() - t0)
        self.measured["idle_browser_cpu_of_one_core"] = round(share, 3)
        self.shot("04-dashboard-idle")

    # -- 9. Preview -----------------------------------------------------------------------
    def preview(self) -> None:
        page = self.page
        self.tab("Build")
        started = time.monotonic()
        page.locator(".irs-studio .irs-btn-preview").first.click()
        note = page.locator(".irs-builder-preview .irs-preview-computed-on")
        note.wait_for(timeout=300_000)
        self.measured["preview_wall_s"] = round(time.monotonic() - started, 1)
        self.measured["preview_note"] = note.inner_text()
        self.top(".irs-builder-preview", 220)
        self.shot("09a-preview-build")
        self.tab("Preview")
        page.locator(".irs-preview-rows table tbody tr").first.wait_for(timeout=120_000)
        self.top(".irs-studio-tabs", 10)
        self.shot("09b-preview-tab")
        self.tab("Build")

    # -- 10. the Embeddings tab; 11. a freq_threshold-only refit ---------------------------
    def embeddings(self) -> None:
        self.tab("Embeddings")
        table = self.page.locator(".irs-studio .irs-embedding-view-report table").first
        table.wait_for(timeout=300_000)
        self.measured["embeddings_table"] = table.inner_text()[:2000]
        self.top(".irs-studio-tabs", 10)
        self.shot("10a-embeddings-tables")
        self.page.locator(".irs-studio .irs-embedding-plan-plot").first.evaluate(
            "el => el.scrollIntoView({block: 'center'})")
        self.shot("10b-embeddings-plan")
        self.tab("Build")

    def refit_threshold(self) -> None:
        """Edit only Categorify's freq_threshold, Run again (replace): no data pass for it."""
        page = self.page
        page.locator('.irs-dag g.irs-dag-node[data-id="op:0:0"]').click()
        field = page.locator(".irs-studio .irs-param-freq_threshold input").first
        field.fill(str(int(field.input_value() or 0) + 1))
        page.locator(".irs-builder-messages .irs-msg").filter(
            has_text="is now").first.wait_for(timeout=30_000)
        overwrite = page.locator(".irs-studio .irs-builder-overwrite input")
        if overwrite.count() and not overwrite.first.is_checked():
            overwrite.first.check()
        started = time.monotonic()
        page.locator(".irs-studio .irs-btn-run").first.click()
        page.locator(".irs-builder-status span").filter(  # not the first Run's end
            has_text=re.compile("refinished|error|cancelled")).first.wait_for(
                timeout=RUN_TIMEOUT_MS)
        self.measured["refit_threshold_wall_s"] = round(time.monotonic() - started, 1)
        self.measured["refit_threshold_status"] = page.locator(
            ".irs-builder-status").inner_text()
        self.top(".irs-studio .irs-builder-actionbar", 200)
        self.shot("11-refit-threshold")

    # -- 6. a graph node clicked ----------------------------------------------------------
    def node_click(self) -> None:
        node = self.page.locator('.irs-dag g.irs-dag-node[data-id="op:0:0"]')
        node.scroll_into_view_if_needed()
        self.page.wait_for_timeout(500)
        node.click()
        self.page.locator('.irs-dag g.irs-dag-selected[data-id="op:0:0"]').wait_for(
            state="attached")
        self.page.wait_for_timeout(1500)  # the scroll to the form
        self.shot("06-node-click-form")

    # -- 5. TargetEncoding typed ----------------------------------------------------------
    def target_encoding(self) -> None:
        page = self.page
        page.locator(".irs-studio .irs-btn-new-branch").first.click()
        page.locator(".irs-builder-messages .irs-msg").filter(
            has_text="started").first.wait_for(timeout=30_000)
        for column in ("C1", "label"):
            page.locator(f".irs-studio .irs-col-{column} input[type=checkbox]").check()
        page.locator(".irs-studio .irs-op-TargetEncoding").first.click()
        field = page.locator(".irs-studio .irs-param-target input").first
        field.click()
        field.press_sequentially("lable", delay=150)
        typo = page.locator(".irs-builder-messages .irs-msg").filter(has_text="did you mean")
        typo.first.wait_for(timeout=30_000)
        self.measured["typo_message"] = typo.first.inner_text()
        field.evaluate("el => el.scrollIntoView({block: 'center'})")
        self.shot("05a-target-typo")
        field.fill("")
        field.press_sequentially("label", delay=150)
        page.locator(".irs-builder-messages .irs-msg").filter(
            has_text="Added TargetEncoding").first.wait_for(timeout=30_000)
        field.evaluate("el => el.scrollIntoView({block: 'center'})")
        self.shot("05b-target-added")

    # -- 7. dark theme --------------------------------------------------------------------
    def dark(self) -> None:
        set_theme(self.page, "JupyterLab Dark")
        try:
            self.tab("Build")
            self.top(".irs-studio .irs-builder-actionbar", 200)
            self.shot("07a-dark-build")
            self.page.locator(".irs-studio .irs-dag").first.evaluate(
                "el => el.scrollIntoView({block: 'start'})")
            self.shot("07a2-dark-graph")
            self.tab("Cluster")
            self.page.locator(".irs-studio .irs-dashboard .bk-Figure canvas").first.wait_for(
                timeout=60_000)
            self.top(".irs-studio .irs-dashboard", 10)
            self.page.wait_for_timeout(2000)
            self.shot("07b-dark-cluster")
        finally:
            set_theme(self.page, "JupyterLab Light")
            self.tab("Build")

    # -- 8. restarts ----------------------------------------------------------------------
    def restore(self) -> None:
        restart_kernel(self.lab)
        self.run_all()
        button = self.page.locator(".irs-studio .irs-btn-restore")
        button.wait_for(state="visible", timeout=60_000)
        self.measured["restore_button"] = button.inner_text()
        self.page.locator(".irs-studio .irs-builder-restore").first.evaluate(
            "el => el.scrollIntoView({block: 'center'})")
        self.shot("08a-restore-offer")
        button.click()
        self.page.locator(".irs-builder-messages .irs-msg").filter(
            has_text="Restored the pipeline").first.wait_for(timeout=60_000)

    def mid_run_restart(self) -> None:
        page, root = self.page, Path(self.output).parent
        overwrite = page.locator(".irs-studio .irs-builder-overwrite input")
        if overwrite.count() and not overwrite.first.is_checked():
            overwrite.first.check()
        page.locator(".irs-studio .irs-btn-run").first.click()
        pattern = str(root / f".{Path(self.output).name}.tmp-*")
        deadline = time.monotonic() + 900
        ended = page.locator(".irs-builder-status .irs-run-finished, .irs-builder-status "
                             ".irs-run-error, .irs-builder-status .irs-run-cancelled")
        while True:  # until the run writes its temporary output
            staged = glob.glob(os.path.join(pattern, "*.parquet"))
            if any(os.path.getsize(f) > 64 << 10 for f in staged):
                break
            if ended.count() or time.monotonic() > deadline:
                raise TimeoutError("the second Run ended before it was seen writing")
            time.sleep(0.5)
        restart_kernel(self.lab)
        self.shown(".irs-kernel-stopped", "kernel_stopped_message", ".irs-builder-actionbar",
                   "08b-kernel-stopped")
        self.run_all()
        button = self.shown(".irs-btn-remove-orphans", "orphan_button", ".irs-builder-orphans",
                            "08c-orphan-offer")
        button.click()
        page.locator(".irs-builder-messages .irs-msg").filter(
            has_text="Removed").first.wait_for(timeout=120_000)


def kill_tree(root_pid: int, seen: set[int]) -> None:
    """SIGKILL what is left of the processes this script started (``seen``, recorded along
    the way, plus the live descendants of ``root_pid``), by id."""
    try:
        seen |= {p.pid for p in psutil.Process(root_pid).children(recursive=True)}
    except psutil.Error:
        pass
    for pid in seen:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


#: What the script captures, in order (each a method of :class:`Shots`).
ITEMS = ["suggest", "run", "idle_dashboard", "preview", "embeddings", "refit_threshold",
         "node_click", "target_encoding", "dark", "restore", "mid_run_restart"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the parquet folder the Studio opens")
    parser.add_argument("--out", required=True, help="folder receiving the PNGs")
    parser.add_argument("--memory-limit", default="3GB", help="per Dask worker")
    parser.add_argument("--chromium", default=os.environ.get("IRS_CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--skip-mid-run-restart", action="store_true",
                        help="no second Run (the orphaned-output offer is then not shown)")
    parser.add_argument("--items", nargs="+", choices=ITEMS, default=ITEMS,
                        help="the items to capture, in this order (default: all)")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    base = Path(tempfile.mkdtemp(prefix="irs-studio-shots-"))
    (base / "root").mkdir()
    server = LabServer(base / "root", base / "state", out / "jupyterlab-server.log")
    server.start()
    started: set[int] = set()
    shots = None
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(base / "profile"), executable_path=args.chromium, headless=True,
                args=CHROMIUM_ARGS, viewport=VIEWPORT)
            context.set_default_timeout(60_000)
            lab = LabPage(server, context.new_page(), out)
            output = str(base / "root" / "criteo-processed")
            shots = Shots(lab, out, str(Path(args.data).resolve()), output)
            shots.open("studio-8m.ipynb", args.memory_limit)
            started |= {p.pid for p in psutil.Process(server.proc.pid).children(recursive=True)}
            for name in args.items:
                if name != "mid_run_restart" or not args.skip_mid_run_restart:
                    shots.step(name, getattr(shots, name))
            shots.measured["page_errors"] = lab.errors
            context.close()
    finally:
        if shots is not None:
            shots.measured["failed"] = shots.failed
            (out / "measurements.json").write_text(json.dumps(shots.measured, indent=2))
        if server.proc is not None:
            started |= {p.pid for p in psutil.Process(server.proc.pid).children(recursive=True)}
        server.stop()
        kill_tree(os.getpid(), started)
        shutil.rmtree(base, ignore_errors=True)  # the notebook, its output, the profile
    print(json.dumps(shots.measured if shots else {}, indent=2))
    return 1 if shots is None or shots.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
