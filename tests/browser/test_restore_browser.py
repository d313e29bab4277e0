"""Nothing lost on a kernel restart, in JupyterLab + headless Chromium at 1440x900:

* a pipeline built by clicking in the Studio is autosaved beside the notebook; after a kernel
  restart and Run All, the new Studio offers "Restore the pipeline saved at HH:MM (3 steps)",
  and the click brings back the same workflow (its exported code);
* a kernel restarted from JupyterLab's menu during a Run: the spinner ends with "The kernel
  stopped during the run: nothing was published; ...", and the run's progress lines (rows/s,
  time left) go with it, and JupyterLab's broken-link mark shows once, not before each inner
  widget; nothing is published, and after Run All the new builder offers to remove the
  run's temporary output, with its size.

Screenshots of the three offers/messages go to the artifacts folder."""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import time

import numpy as np
import pandas as pd
import psutil
from lab import (
    CATS,
    CONTS,
    PREVIEW_ROWS,
    VIEWPORT,
    click_button,
    expected_workflow,
    make_frame,
    restart_kernel,
    wait_message,
)

from interactive_recsys.ui.builder import BuilderModel

#: Prints the builder's exported code, or "empty" for a builder without steps.
CODE_CELL = ("m = {var}.model\nprint(m.export_code() if any(b.steps for b in m.branches) "
             "else 'empty')")


#: The builder's widget views JupyterLab marked disconnected, and how many show its mark.
DISCONNECTED_MARKS_JS = """
() => {
  const root = document.querySelector(".irs-builder");
  const views = [root, ...root.querySelectorAll("*")].filter(
    (el) => el.classList.contains("jupyter-widgets-disconnected"));
  const shown = views.filter((el) => {
    const mark = getComputedStyle(el, "::before");
    return mark.display !== "none" && mark.content !== "none";
  });
  return {disconnected: views.length, shown: shown.length};
}
"""


def run_cell(lab, source: str) -> str:
    """:meth:`LabPage.run_cell`, then remove the empty cell that Shift+Enter added below
    the last one (Run All would wait for it forever)."""
    text = lab.run_cell(source)
    cells = lab.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    last = cells.nth(cells.count() - 1)
    if not last.locator(".cm-content").inner_text().strip():
        n = cells.count()
        last.locator(".jp-InputPrompt").click()
        lab.page.keyboard.press("Escape")
        lab.page.keyboard.press("d")
        lab.page.keyboard.press("d")
        _wait_for(lambda: cells.count() == n - 1, 10, "the empty cell was not removed")
    return text


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"{what} within {timeout:.0f} s")


def _steps_in(path) -> int:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return -1
    return sum(len(b["steps"]) for b in record["branches"])


def test_autosave_and_restore_after_a_kernel_restart(lab):
    lab.page.set_viewport_size(VIEWPORT)
    page = lab.page
    make_frame().to_parquet(lab.server.root_dir / "clicks.parquet")
    name = lab.write_notebook("features.ipynb", [
        "import interactive_recsys as irs",
        f"studio = irs.ui.Studio('clicks.parquet', preview_rows={PREVIEW_ROWS})\nstudio",
        CODE_CELL.format(var="studio.builder"),
    ])
    lab.open_notebook(name)
    lab.run_all(timeout=90)
    page.locator(".irs-studio .irs-builder-columns").wait_for(timeout=30_000)
    assert not page.locator(".irs-studio .irs-btn-restore").is_visible()  # nothing saved yet

    for column in CATS:  # C1, C2 >> Categorify(freq_threshold=2); I1, I2 >> FillMissing >> Normalize
        page.locator(f".irs-col-{column} input[type=checkbox]").check()
    click_button(page, "irs-op-Categorify")
    wait_message(page, "Added Categorify")
    field = page.locator(".irs-param-freq_threshold input")
    field.fill("2")
    wait_message(page, "Step 1 of branch 1 is now Categorify(freq_threshold=2)")
    click_button(page, "irs-btn-new-branch")
    wait_message(page, "Branch 2 started")
    for column in CONTS:
        page.locator(f".irs-col-{column} input[type=checkbox]").check()
    click_button(page, "irs-op-FillMissing")
    wait_message(page, "Added FillMissing")
    click_button(page, "irs-op-Normalize")
    wait_message(page, "Added Normalize")

    autosave = lab.server.root_dir / ".features.irs-pipeline.json"  # beside the notebook
    _wait_for(lambda: _steps_in(autosave) == 3, 20, f"no autosave of 3 steps in {autosave}")
    root = lab.server.root_dir  # the notebook opened 'clicks.parquet' in its folder
    expected = BuilderModel.from_workflow(expected_workflow(), str(root / "clicks.parquet")
                                          ).export_code().replace(f"{root}/", "")
    assert "dataset = irs.Dataset('clicks.parquet')" in expected  # the whole job
    before = run_cell(lab, CODE_CELL.format(var="studio.builder"))
    assert before.strip() == expected.strip()

    restart_kernel(lab)
    lab.run_all(timeout=90)  # the same notebook again: a new Studio in the same folder
    button = page.locator(".irs-studio .irs-btn-restore")
    button.wait_for(state="visible", timeout=30_000)
    assert re.fullmatch(r"Restore the pipeline saved at \d\d:\d\d \(3 steps\)",
                        button.inner_text().strip()), button.inner_text()
    shown = [t.strip() for t in lab.outputs().all_inner_texts()]
    assert shown.count("empty") == 2, shown  # both code cells: not restored silently
    page.locator(".irs-studio .irs-builder-restore").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -60)")
    lab.screenshot("restore-offer")
    button.click()
    wait_message(page, "Restored the pipeline autosaved in")
    page.locator(".irs-dag svg g.irs-dag-op").nth(2).wait_for(timeout=30_000)
    assert page.locator(".irs-dag svg g.irs-dag-op").count() == 3
    assert not button.is_visible()
    after = run_cell(lab, CODE_CELL.format(var="studio.builder"))
    assert after.strip() == expected.strip()
    assert lab.errors == []


def _big_dataset(folder, parts: int = 30, rows: int = 100_000) -> None:
    """Parquet files for a Run read through :data:`SLOW_DISK` (each phase at least 6 s)."""
    rng = np.random.default_rng(0)
    part = pd.DataFrame({"C1": rng.integers(0, 50_000, rows), "C2": rng.integers(0, 1000, rows),
                         "I1": rng.normal(size=rows), "I2": rng.normal(size=rows)})
    folder.mkdir()
    for i in range(parts):
        part.to_parquet(folder / f"part{i:02d}.parquet")


#: The kernel reads from a slow disk: each parquet piece takes 0.4 s more, two at a time, so
#: that a Run's fit and write last at least 6 s each however fast the machine (the test acts
#: while it runs). A fake only at the edge: the engine's reads, timed.
SLOW_DISK = """import time
import dask
import interactive_recsys.io._parquet_pieces as pieces
_read = pieces.read_parquet_table
def _slow_read(*args, **kwargs):
    time.sleep(0.4)
    return _read(*args, **kwargs)
pieces.read_parquet_table = _slow_read
dask.config.set(num_workers=2)"""


def _start_run(lab, root, writing: bool = True) -> list[str]:
    """Tick C1, C2, click Categorify and Run; return the run's hidden temporary once it is
    writing there (``writing=False``: return ``[]`` once the spinner shows)."""
    page = lab.page
    page.locator(".irs-builder .irs-builder-columns").wait_for(timeout=30_000)
    for column in ("C1", "C2"):
        page.locator(f".irs-col-{column} input[type=checkbox]").check()
    page.locator(".irs-builder .irs-op-Categorify").click()
    wait_message(page, "Added Categorify")
    page.locator(".irs-builder .irs-btn-run").click()
    page.locator(".irs-builder .irs-spinner").first.wait_for(timeout=30_000)
    assert page.locator(".irs-builder .irs-run-running").count() == 1
    if not writing:
        return []
    staged = _wait_for(lambda: glob.glob(str(root / ".big-processed.tmp-*")), 60,
                       "the run did not start writing")
    _wait_for(lambda: any(os.path.getsize(f) > 64 << 10 for f in glob.glob(
        os.path.join(staged[0], "*.parquet"))), 60, "the run wrote no file")  # data, not a folder
    return staged


def _kernel_pid(lab) -> int:
    """The process of the notebook's kernel (found by its connection file)."""
    (kernel,) = lab.server.api("GET", "kernels")
    (proc,) = [p for p in psutil.process_iter(["cmdline"])
               if any(f"kernel-{kernel['id']}.json" in a for a in p.info["cmdline"] or [])]
    return proc.pid


def _assert_spinner_ended(lab) -> None:
    page = lab.page
    message = page.locator(".irs-builder .irs-kernel-stopped")
    message.wait_for(state="visible", timeout=30_000)
    assert message.inner_text().startswith(
        "The kernel stopped during the run: nothing was published; re-run"), message.inner_text()
    assert page.locator(".irs-builder .irs-spinner").count() == 0
    assert "Running" not in page.locator(".irs-builder .irs-builder-actionbar").inner_text()


def test_a_kernel_restart_mid_run_ends_the_spinner_and_offers_to_remove_its_output(lab):
    lab.page.set_viewport_size(VIEWPORT)
    page = lab.page
    root = lab.server.root_dir
    _big_dataset(root / "big")
    name = lab.write_notebook("run.ipynb", [
        "import interactive_recsys as irs\n" + SLOW_DISK,
        "builder = irs.ui.PipelineBuilder('big', output='big-processed')\nbuilder",
    ])
    lab.open_notebook(name)
    lab.run_all(timeout=90)
    assert not page.locator(".irs-builder .irs-btn-remove-orphans").is_visible()

    # 1. Kernel -> Restart Kernel during the Run's fit (long before it could publish),
    # while its progress lines show rows/s
    _start_run(lab, root, writing=False)
    progress = page.locator(".irs-builder .irs-run-progress-more")
    progress.filter(has_text="rows/s").first.wait_for(timeout=30_000)
    restart_kernel(lab)
    _assert_spinner_ended(lab)
    # none is left behind, frozen under the message
    assert not any(progress.nth(i).is_visible() for i in range(progress.count()))
    # JupyterLab marks every widget view disconnected (in its own time, after the kernel
    # restarted): one broken-link mark shows, not dozens
    page.wait_for_function(f"() => ({DISCONNECTED_MARKS_JS.strip()})().disconnected > 10",
                           timeout=30_000)
    marks = page.evaluate(DISCONNECTED_MARKS_JS)
    assert marks["shown"] <= 1, marks
    page.locator(".irs-builder .irs-builder-actionbar").scroll_into_view_if_needed()
    lab.screenshot("kernel-stopped-message")
    assert not (root / "big-processed").exists()  # nothing was published

    # 2. the kernel dies during the Run (killed, as by the out-of-memory killer): the
    # server starts a new one; its temporary output stays behind
    lab.run_all(timeout=90)
    page.locator(".irs-builder .irs-btn-restore").wait_for(state="visible", timeout=30_000)
    page.locator(".irs-builder .irs-btn-restore-dismiss").click()
    staged = _start_run(lab, root)
    os.kill(_kernel_pid(lab), signal.SIGKILL)
    _assert_spinner_ended(lab)
    dialog = page.locator(".jp-Dialog").filter(has_text="appears to have died")
    dialog.wait_for(timeout=30_000)  # JupyterLab's own note; the builder's stays below it
    dialog.locator(".jp-mod-accept").click()
    lab.wait_for_kernel(60)
    assert not (root / "big-processed").exists()
    assert all(os.path.exists(p) for p in staged)

    lab.run_all(timeout=90)  # a new builder on the same output
    button = page.locator(".irs-builder .irs-btn-remove-orphans")
    button.wait_for(state="visible", timeout=30_000)
    assert re.fullmatch(r"Remove the temporary output \(\d+\.\d (KiB|MiB)\)",
                        button.inner_text().strip()), button.inner_text()
    note = page.locator(".irs-builder .irs-orphan-note").inner_text()
    assert "big-processed" in note and ".big-processed.tmp-" in note, note
    page.locator(".irs-builder .irs-builder-orphans").scroll_into_view_if_needed()
    lab.screenshot("orphan-offer")
    button.click()
    wait_message(page, re.compile(r"Removed 1 temporary output\(s\) of a stopped run"))
    assert glob.glob(str(root / ".big-processed.tmp-*")) == []
    assert not button.is_visible()
    assert lab.errors == []
