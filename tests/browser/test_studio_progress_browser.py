"""Progress a user can read, at 1440x900 in JupyterLab + headless Chromium:

* during a Run on the 40-column Criteo data, the Build tab's action bar shows the whole Run's
  time left once (with the phase it is in and those to come) and, under it, the phase's
  rows/s; the dashboard header shows the same time left; the header never says "finished"
  before the Build tab does (the run's last phase);
* a click on a graph node brings its edit form (far above the graph) into view, its first
  field focused; its help texts wrap at a text line's height, not a widget row's;
* a Run that ends while the page is hidden puts "✓ Run finished" in the page title until the
  page is visible again (no notification permission), or shows a desktop notification (with
  it); permission is asked on the first Run click, not when the page loads.

Screenshots go to the artifacts folder."""

from __future__ import annotations

import re
import time

from lab import (
    VIEWPORT,
    assert_in_view,
    make_frame,
    open_criteo_studio,
    wait_run_finished,
)

import interactive_recsys as irs

#: Records every text the dashboard header shows, with whether the Build tab's status said
#: "finished" at that moment (checked after the run).
HEADER_LOG_JS = """
() => {
  window.__irsHeaderLog = [];
  const record = () => {
    const header = document.querySelector(".irs-studio .irs-dashboard-status");
    if (!header) return;
    window.__irsHeaderLog.push({
      text: header.innerText,
      runFinished: !!document.querySelector(".irs-builder-status .irs-run-finished")});
  };
  new MutationObserver(record).observe(document.body,
    {childList: true, subtree: true, characterData: true});
}
"""

#: A stand-in for the browser's Notification API (headless Chromium has no desktop to show
#: one on): records permission requests and notifications shown.
FAKE_NOTIFICATION_JS = """
() => {
  window.__irsAsked = 0;
  window.__irsShown = [];
  class FakeNotification {
    constructor(title, options) { window.__irsShown.push({title, body: options.body}); }
    close() {}
    static requestPermission() { window.__irsAsked += 1; return Promise.resolve("default"); }
  }
  FakeNotification.permission = "default";
  window.Notification = FakeNotification;
}
"""

#: Makes the page report itself hidden (``true``) or visible, and tells its listeners.
VISIBILITY_JS = """
(hidden) => {
  Object.defineProperty(document, "visibilityState",
    {configurable: true, get: () => hidden ? "hidden" : "visible"});
  Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
  document.dispatchEvent(new Event("visibilitychange"));
}
"""


#: For each element: the distances between the tops of its successive line boxes (px).
LINE_PITCHES_JS = """
(els) => els.map((el) => {
  const tops = [...new Set([...el.getClientRects()].map((r) => Math.round(r.top)))];
  return tops.slice(1).map((t, i) => t - tops[i]);
})
"""


#: Milliseconds any one wait of the progress test may take: a guard against a hang, not a
#: measure of speed (on a busy machine its Suggest and Run on 3.6M rows take minutes).
PATIENCE_MS = 900_000


def _suggest(page) -> None:
    page.locator(".irs-studio .irs-btn-suggest").first.click()
    page.locator(".irs-feedback-suggest .irs-msg-success").wait_for(timeout=PATIENCE_MS)


def _wait_for_text(locator, pattern: re.Pattern, ended) -> str:
    """The first text of ``locator``'s elements that ``pattern`` finds, read in one go (the
    progress line changes every second: a second read may find another text); fails once
    ``ended`` (a locator) is on the page."""
    deadline = time.monotonic() + PATIENCE_MS / 1000
    while True:
        texts = locator.all_inner_texts()
        found = [t for t in texts if pattern.search(t)]
        if found:
            return found[0]
        assert not ended.count(), f"the run ended before {pattern.pattern!r} showed: {texts}"
        assert time.monotonic() < deadline, (pattern.pattern, texts)
        time.sleep(0.2)


#: Rows of the progress test's data, in 6 files (6 partitions, so that a phase advances in
#: steps a user can follow): enough for a run of several seconds, longer than the
#: dashboard's drawing interval.
PROGRESS_ROWS = 3_600_000


def test_progress_with_rows_per_second_in_the_action_bar_and_the_header(lab):
    lab.page.set_viewport_size(VIEWPORT)
    irs.datasets.synthetic_criteo(rows=PROGRESS_ROWS, seed=0, rows_per_file=PROGRESS_ROWS // 6,
                                  path=lab.server.root_dir / "criteo")
    name = lab.write_notebook("criteo.ipynb", [
        "import interactive_recsys as irs\nstudio = irs.ui.Studio('criteo')\nstudio"])
    lab.open_notebook(name, timeout=PATIENCE_MS / 1000)
    lab.run_all(timeout=PATIENCE_MS / 1000)
    page = lab.page
    page.locator(".irs-studio .irs-cl-row").nth(39).wait_for(state="attached",
                                                              timeout=PATIENCE_MS)
    _suggest(page)
    page.evaluate(HEADER_LOG_JS)
    page.locator(".irs-studio .irs-btn-run").first.click()  # no cluster: a local one starts
    status = page.locator(".irs-builder-status")
    text = _wait_for_text(status, re.compile(r"about [\d hmins]+ left \(phase"),
                          page.locator(".irs-builder-status .irs-run-finished"))
    # one time left, for the whole Run (its phases: fit, then the write), then the phase
    assert re.search(r"Running · about [\d hmins]+ left \(phase \d of \d: (fit \d/\d|write)",
                     text), text
    assert re.search(r"(fit \d/\d|write): about [\d.]+[kM]? of 3\.6M rows \(\d+%\), "
                     r"[\d.]+[kM]? rows/s", text), text
    assert len(re.findall(r"\bleft\b", text)) == 1, text
    bar = page.locator(".irs-studio .irs-builder-actionbar")
    assert_in_view(bar)
    lab.screenshot("progress-1-action-bar-during-run")

    page.locator(".irs-studio-tabs .lm-TabBar-tab").filter(has_text="Cluster").click()
    header = page.locator(".irs-studio .irs-dashboard-status")
    running = header.filter(has_text=re.compile(r"running · about [\d hmins]+ left \(phase"))
    try:
        running.wait_for(timeout=60_000)
        lab.screenshot("progress-2-dashboard-header-during-run")
        seen_running = True
    except Exception:  # the run ended first on a fast machine: the log below still holds
        seen_running = False
    wait_finished = page.locator(".irs-builder-status .irs-run-finished")
    wait_finished.wait_for(state="attached", timeout=PATIENCE_MS)
    header.filter(has_text="finished").wait_for(timeout=PATIENCE_MS)
    lab.screenshot("progress-3-dashboard-header-finished")
    log = page.evaluate("window.__irsHeaderLog")
    # never "finished" between fit and write: no "running" after a "finished" (the header
    # may say "finished" a moment before the Build tab, which polls the job)
    first = next((i for i, e in enumerate(log) if "finished" in e["text"]), len(log))
    again = [e["text"] for e in log[first:] if "running" in e["text"]]
    assert again == [], again[:3]
    assert seen_running or any("rows/s" in e["text"] for e in log), log[-5:]
    assert page.viewport_size == VIEWPORT
    assert lab.errors == []


def test_a_graph_click_brings_the_steps_form_into_view(lab):
    open_criteo_studio(lab)
    page = lab.page
    _suggest(page)
    node = page.locator('.irs-dag g.irs-dag-node[data-id="op:0:0"]')
    node.scroll_into_view_if_needed()
    form = page.locator(".irs-studio .irs-builder-params")
    before = form.bounding_box()
    assert before["y"] + before["height"] < 0 or before["y"] > VIEWPORT["height"], before
    node.click()
    page.locator('.irs-dag g.irs-dag-selected[data-id="op:0:0"]').wait_for(state="attached")
    deadline = time.monotonic() + 10
    while True:
        box = form.bounding_box()
        inside = box["y"] >= 0 and box["y"] + min(box["height"], 60) <= VIEWPORT["height"]
        focused = page.evaluate("() => !!document.activeElement.closest('.irs-builder-params')")
        if (inside and focused) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert inside, (before, box)
    assert focused, page.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
    assert_in_view(form.locator("input, select").first)
    # its help texts wrap at one text line a line, not the 28 px of a widget row
    pitches = form.locator("small").evaluate_all(LINE_PITCHES_JS)
    assert any(p for p in pitches), pitches  # some help wraps in this 1440 px page
    assert all(16 <= d <= 22 for p in pitches for d in p), pitches
    # an empty message (stacked in a column) takes no room
    empty = page.evaluate("() => [...document.querySelectorAll('.irs-studio .widget-html')]"
                          ".filter((el) => el.innerText.trim() === '' && getComputedStyle("
                          "el.parentElement).flexDirection === 'column')"
                          ".map((el) => [el.getBoundingClientRect().height, el.className])")
    assert len(empty) >= 3 and max(e[0] for e in empty) == 0, [e for e in empty if e[0]]
    lab.screenshot("progress-4-form-scrolled-into-view")
    assert lab.errors == []


def test_a_run_ending_in_a_hidden_tab_marks_the_title_or_notifies(lab):
    lab.page.set_viewport_size(VIEWPORT)
    make_frame().to_parquet(lab.server.root_dir / "clicks.parquet")
    name = lab.write_notebook("studio.ipynb", [
        "import interactive_recsys as irs\nstudio = irs.ui.Studio('clicks.parquet')\nstudio"])
    lab.open_notebook(name)
    page = lab.page
    page.evaluate(FAKE_NOTIFICATION_JS)
    lab.run_all(timeout=90)
    page.locator(".irs-studio .irs-builder-columns").wait_for(timeout=30_000)
    page.locator(".irs-studio .irs-run-notice").wait_for(state="attached", timeout=30_000)
    _suggest(page)
    assert page.evaluate("window.__irsAsked") == 0  # never on load
    title = page.title()

    page.locator(".irs-studio .irs-btn-run").first.click()
    assert page.evaluate("window.__irsAsked") == 1  # on the first Run click
    page.evaluate(VISIBILITY_JS, True)  # the user went to another tab
    page.locator(".irs-builder-status .irs-run-finished").wait_for(state="attached",
                                                                   timeout=240_000)
    # the status and the notice are two widgets' messages: on a loaded machine the second
    # can come seconds after the first
    page.wait_for_function("() => document.title.startsWith('✓ Run finished')",
                           timeout=30_000)
    assert page.title() == f"✓ Run finished · {title}"
    assert page.evaluate("window.__irsShown") == []  # no permission: the title only
    page.evaluate(VISIBILITY_JS, False)  # back: the title is the page's own again
    page.wait_for_function(f"() => document.title === {title!r}", timeout=5_000)

    # allowed: a notification with the run's summary, the title left alone
    page.evaluate("() => { window.Notification.permission = 'granted'; }")
    page.locator(".irs-studio .irs-builder-overwrite input").check()
    # the first run's end may still be reported to the Studio's listeners for a moment,
    # during which Run is refused ("A run is in progress"): click again once it is over
    refused = page.locator(".irs-studio .irs-builder-actionbar").filter(
        has_text="A run is in progress")
    page.evaluate(VISIBILITY_JS, True)  # hidden before the run, which may end at once
    for _ in range(20):
        page.locator(".irs-studio .irs-btn-run").first.click()
        page.wait_for_timeout(500)
        if refused.count() == 0:
            break
    assert page.evaluate("window.__irsAsked") == 1  # asked once only
    page.wait_for_function("() => window.__irsShown.length === 1", timeout=240_000)
    shown = page.evaluate("window.__irsShown")[0]
    assert shown["title"] == "✓ Run finished" and shown["body"].startswith("Run finished in"), \
        shown
    assert page.title() == title
    page.evaluate(VISIBILITY_JS, False)
    wait_run_finished(page)
    assert lab.errors == []
