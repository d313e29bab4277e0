"""The live dashboard stops drawing while its BROWSER tab is hidden (the Page Visibility API:
``document.visibilityState``, ``visibilitychange``) and catches up once it is shown again.

How the page is hidden, and why not through the ``lab`` fixture: every page Playwright
opens, or attaches to with its defaults, gets ``Emulation.setFocusEmulationEnabled`` from
Playwright's own CDP session, and with it Chromium keeps ``document.visibilityState`` at
``"visible"`` whatever happens to the tab or the window. With Chromium 156 that held for
another tab in front (``bring_to_front``), a minimized window and
``Page.setWebLifecycleState``, also with the emulation turned off from a second CDP session
(it is per session). So this test starts headless Chromium itself
(``--remote-debugging-port``) and connects with ``connect_over_cdp(no_defaults=True)``,
which leaves the emulation off; the page then runs as in a user's browser. The browser
hides it the way it does for a user, with no script override of ``document.hidden``:

1. another tab of the same window opened and brought to the front, then the JupyterLab tab
   brought back;
2. the browser window minimized (CDP ``Browser.setWindowBounds``), then restored.

Each time ``document.visibilityState`` becomes ``"hidden"`` and ``visibilitychange`` fires.
The kernel records, in a file the test reads while the page stays hidden (no cell runs), the
monitor's samples, the dashboard's draws (calls of ``Dashboard.update``) and the visibility
the browser reported. While hidden the monitor keeps sampling and nothing is drawn, in the
kernel or in the page's Bokeh data; once shown, one catch-up draw reaches past the hidden
stretch and drawing goes on. Screenshot at 1440x900: ``dashboard-page-visibility-resumed``.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lab import CHROMIUM_ARGS, LabPage, LabServer, clear_dir, find_free_port

#: Seconds the page stays hidden each time, and the margin around a visibility change
#: within which a draw already under way may still finish.
HIDDEN_S, MARGIN_S = 8.0, 0.5
#: The kernel's record of samples, draws and visibility, in the notebook's folder.
RECORD = "visibility-record.json"

CELLS = [
    """import json, os, time
from bokeh.io import output_notebook
from bokeh.resources import INLINE
import interactive_recsys as irs
output_notebook(INLINE, hide_banner=True)""",
    """client = irs.start_cluster(n_workers=1, memory_limit="1GB", dashboard=False)
dash = irs.ui.Dashboard(client, interval_ms=250)
dash""",
    f"""record = {{"t0": dash.monitor.t0, "samples": [], "draws": [], "visible": []}}
draw = dash.update

def counted(*args, **kwargs):  # every draw: its (wall) time, and whether it was hidden
    record["draws"].append([time.time(), dash.hidden])
    return draw(*args, **kwargs)

def on_sample(monitor, sample, tasks):  # every sample, then the record to the file
    record["samples"].append(sample["time"])
    with open("{RECORD}.tmp", "w") as f:
        json.dump(record, f)
    os.replace("{RECORD}.tmp", "{RECORD}")

dash.update = counted
dash.signal.on_change(lambda visible: record["visible"].append([time.time(), visible]))
dash.monitor.subscribe(on_sample)
print("recording")""",
]


def _wait_for_devtools(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Chromium exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=2):
                return f"http://127.0.0.1:{port}"
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise TimeoutError(f"Chromium's DevTools endpoint on port {port} did not answer")


def _window_to_viewport(page: Any, width: int, height: int) -> None:
    """Size the window so that the page gets ``width`` x ``height`` (headless Chromium
    keeps room for its tab strip and toolbar); no viewport emulation."""
    cdp = page.context.new_cdp_session(page)
    window = cdp.send("Browser.getWindowForTarget")["windowId"]
    dw, dh = page.evaluate("[outerWidth - innerWidth, outerHeight - innerHeight]")
    cdp.send("Browser.setWindowBounds", {"windowId": window, "bounds": {
        "width": width + dw, "height": height + dh}})
    cdp.detach()


@pytest.fixture
def lab_tabs(lab_server: LabServer, chromium_executable: str, playwright_driver: Any,
             artifacts_dir: Path, tmp_path: Path) -> Iterator[LabPage]:
    """A :class:`LabPage` in a headless Chromium this test starts, connected without
    Playwright's focus emulation, so that hiding the tab or the window hides the page."""
    port = find_free_port()
    proc = subprocess.Popen(
        [chromium_executable, *CHROMIUM_ARGS, f"--remote-debugging-port={port}",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1440,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        browser = playwright_driver.chromium.connect_over_cdp(
            _wait_for_devtools(port, proc), no_defaults=True)
        context = browser.contexts[0]
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(30_000)
        _window_to_viewport(page, 1440, 900)
        try:
            yield LabPage(lab_server, page, artifacts_dir)
        finally:
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        lab_server.shutdown_kernels()
        clear_dir(lab_server.root_dir)


def _record(lab: LabPage) -> dict[str, Any]:
    return json.loads((lab.server.root_dir / RECORD).read_text())


def _wait_for_kernel_visibility(lab: LabPage, visible: bool, after: float,
                                timeout: float = 15.0) -> float:
    """The kernel's time of the first visibility report ``visible`` after ``after``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = [t for t, v in _record(lab)["visible"] if v is visible and t > after]
        if seen:
            return seen[0]
        time.sleep(0.2)
    raise TimeoutError(f"the kernel heard no visible={visible} after {after:.1f}; "
                       f"reports: {_record(lab)['visible']}")


def _utilization_end(lab: LabPage) -> float:
    """The time the page's CPU-utilization line reaches (seconds since the monitor start)."""
    data = lab.bokeh_source("irs-utilization")
    assert data is not None and data["time"], data
    return max(data["time"])


def _hidden_round(lab: LabPage, hide: Callable[[], None], show: Callable[[], None],
                  how: str) -> dict[str, float]:
    """Hide the page with ``hide`` for :data:`HIDDEN_S`, show it with ``show``, and check
    the kernel and the page; returns what was measured."""
    page = lab.page
    start = time.time()
    line_before = _utilization_end(lab)
    hide()
    assert page.evaluate("[document.visibilityState, document.hidden]") == ["hidden", True], how
    hidden_at = _wait_for_kernel_visibility(lab, False, start)
    time.sleep(MARGIN_S)  # a draw under way when the page hid has reached it
    data_hidden = lab.bokeh_source("irs-utilization")
    time.sleep(HIDDEN_S)
    assert lab.bokeh_source("irs-utilization") == data_hidden, f"{how}: the page drew"
    shown_from = time.time()
    show()
    assert page.evaluate("document.visibilityState") == "visible", how
    shown_at = _wait_for_kernel_visibility(lab, True, shown_from)
    time.sleep(1.0)
    rec = _record(lab)
    samples = [t for t in rec["samples"] if hidden_at < t < shown_at]
    # the dashboard learns of the change before this record does: the catch-up draw on
    # showing may come a moment before ``shown_at``
    draws = [t for t, _ in rec["draws"] if hidden_at + MARGIN_S < t < shown_at - MARGIN_S]
    caught_up = [t for t, _ in rec["draws"] if shown_at - MARGIN_S <= t < shown_at + 1.0]
    assert len(samples) >= HIDDEN_S * 4 * 0.5, f"{how}: the monitor stopped sampling"
    assert draws == [], f"{how}: {len(draws)} draws while hidden"
    assert caught_up, f"{how}: no catch-up draw when shown again"
    line_after = _utilization_end(lab)
    # the line reaches past the hidden stretch at once: the samples taken meanwhile are drawn
    assert line_after >= line_before + HIDDEN_S, (how, line_before, line_after)
    assert line_after >= shown_at - rec["t0"] - 2.0, (how, line_after, shown_at - rec["t0"])
    return {"hidden_s": shown_at - hidden_at, "samples": len(samples), "draws": len(draws)}


def _draws_between(lab: LabPage, begin: float, end: float) -> int:
    return sum(begin < t < end for t, _ in _record(lab)["draws"])


def _wait_for_draws(lab: LabPage, count: int, timeout: float = 30.0) -> None:
    """Wait for ``count`` draws from now on: the dashboard draws every DRAW_S (4 s) while it
    can be seen (a loaded machine may delay one, so no fixed window is assumed)."""
    since, deadline = time.time(), time.monotonic() + timeout
    while _draws_between(lab, since, time.time() + 1) < count:
        assert time.monotonic() < deadline, (f"fewer than {count} draws in {timeout:.0f} s "
                                             "while visible", _record(lab)["draws"][-5:])
        time.sleep(0.5)


def test_dashboard_stops_drawing_while_the_browser_tab_is_hidden(lab_tabs: LabPage) -> None:
    lab, page = lab_tabs, lab_tabs.page
    assert page.evaluate("[innerWidth, innerHeight]") == [1440, 900]
    assert page.evaluate("document.visibilityState") == "visible"
    name = lab.write_notebook("dashboard_page_visibility.ipynb", CELLS)
    lab.open_notebook(name)
    lab.run_all(timeout=180)
    lab.wait_for_output("recording")
    lab.wait_for_output("live", selector=".irs-dashboard")
    page.locator(".irs-dashboard .bk-Figure canvas").first.scroll_into_view_if_needed()
    lab.wait_for_bokeh_source("irs-utilization", lambda d: len(d["time"]) > 0)
    _wait_for_draws(lab, 2)  # it draws while visible

    # 1. another tab of the window in front: opening it is what hides the JupyterLab tab
    tabs: list[Any] = []

    def other_tab_in_front() -> None:
        tabs.append(page.context.new_page())
        tabs[0].goto("about:blank")
        tabs[0].bring_to_front()
        time.sleep(0.5)

    def lab_tab_in_front() -> None:
        page.bring_to_front()
        time.sleep(0.5)

    tab = _hidden_round(lab, other_tab_in_front, lab_tab_in_front, "another tab in front")
    tabs[0].close()

    # 2. the window minimized
    cdp = page.context.new_cdp_session(page)
    window = cdp.send("Browser.getWindowForTarget")["windowId"]

    def window_state(state: str) -> Callable[[], None]:
        def apply() -> None:
            cdp.send("Browser.setWindowBounds",
                     {"windowId": window, "bounds": {"windowState": state}})
            time.sleep(0.5)
        return apply

    minimized = _hidden_round(lab, window_state("minimized"), window_state("normal"),
                              "window minimized")
    print(f"\nanother tab in front: {tab}\nwindow minimized: {minimized}")

    # shown again, it goes on drawing as before
    _wait_for_draws(lab, 2)
    assert [t for t, hidden in _record(lab)["draws"] if hidden] == []  # none, ever, hidden
    page.locator(".irs-dashboard .bk-Figure canvas").first.scroll_into_view_if_needed()
    lab.screenshot("dashboard-page-visibility-resumed")
    assert lab.errors == []
