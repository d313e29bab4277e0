"""At 1440x900 on the 40-column Criteo data, in JupyterLab + headless Chromium: Suggest shows
its out-of-vocabulary budget per column, and a Run with no cluster gets a local one whose
dashboard, opened 3 s after Run, shows every phase, reaches the end of the run on its time
axis, says "finished", and shows the whole run without an error. Screenshots go to the
artifacts folder."""

from __future__ import annotations

import json
import time

from lab import (
    VIEWPORT,
    Counted,
    assert_in_view,
    open_criteo_studio,
)

from interactive_recsys.ui.dashboard._dashboard import IDLE_AXIS_S

#: The shared time range of the dashboard's figures, as the browser holds it.
#: Seconds any one wait may take: a guard against a hang, not a measure of speed.
PATIENCE_S = 600.0


def _until(what: str, ready):
    """Poll ``ready()`` until it returns something true (at most :data:`PATIENCE_S`)."""
    deadline = time.monotonic() + PATIENCE_S
    while not (value := ready()):
        assert time.monotonic() < deadline, f"waited {PATIENCE_S:.0f} s for {what}"
        time.sleep(0.5)
    return value


RANGE_JS = """
() => {
  const docs = [...(window.Bokeh.documents || [])].reverse();
  for (const doc of docs) {
    const r = doc.get_model_by_name("irs-time-range");
    if (r != null) return {start: r.start, end: r.end};
  }
  return null;
}
"""

#: The host-memory figure's x range end and axis label, as the browser holds them.
MEMORY_AXIS_JS = """
() => {
  const docs = [...(window.Bokeh.documents || [])].reverse();
  for (const doc of docs) {
    const fig = doc.get_model_by_name("irs-memory-figure");
    if (fig != null) return {end: fig.x_range.end, label: fig.below[0].axis_label};
  }
  return null;
}
"""


def _cluster_tab(page):
    return page.locator(".irs-studio-tabs .lm-TabBar-tab").filter(has_text="Cluster")


def test_suggest_budget_and_the_dashboard_through_the_whole_run(lab):
    open_criteo_studio(lab)
    page = lab.page
    clicks = Counted(page)
    clicks.clicks = 1  # "open the Studio"
    clicks.click(".irs-studio .irs-btn-suggest")
    page.locator(".irs-feedback-suggest .irs-msg-success").wait_for(timeout=30_000)
    card = page.locator(".irs-studio .irs-suggest-table")
    rows = card.locator("tbody tr")
    assert rows.count() == 26
    lost = [float(rows.nth(i).locator("td").nth(4).inner_text().rstrip("%"))
            for i in range(26)]  # lookups lost
    assert max(lost) <= 1.0, lost
    assert "within 16 GiB" in card.inner_text()
    card.scroll_into_view_if_needed()
    # compact rows: at least 15 of the 26 in view at once, with the two budget fields
    box = card.locator(".irs-suggest-scroll").bounding_box()
    shown = [b for b in (rows.nth(i).bounding_box() for i in range(26))
             if b["y"] >= box["y"] - 0.5 and b["y"] + b["height"] <= box["y"] + box["height"] + 0.5]
    assert len(shown) >= 15 and all(b["height"] >= 14 for b in shown), (box, shown)
    for field in (".irs-suggest-loss", ".irs-suggest-memory", ".irs-suggest-scroll"):
        assert_in_view(page.locator(f".irs-studio {field}"))
    lab.screenshot("studio-29-suggest-oov-budget")

    clicks.click(".irs-studio .irs-btn-run")  # no cluster: Run starts a local one
    time.sleep(3.0)
    _cluster_tab(page).click()  # opened late: the run so far must be there
    dash = page.locator(".irs-studio .irs-dashboard")
    dash.locator(".bk-Figure canvas").first.wait_for(timeout=PATIENCE_S * 1000)
    # the Build tab is hidden now: the status line is only attached
    page.locator(".irs-builder-status .irs-run-finished").wait_for(
        state="attached", timeout=PATIENCE_S * 1000)
    assert clicks.clicks <= 4 and clicks.keys == 0
    header = dash.locator(".widget-html").first
    header.filter(has_text="finished").wait_for(timeout=PATIENCE_S * 1000)
    # the header is one line: status, Pause, whole run, Close side by side, 28 px buttons
    line = dash.locator(".irs-dashboard-header").first.bounding_box()
    assert line["height"] <= 40, line
    boxes = [dash.locator(".irs-dashboard-header button").nth(i).bounding_box()
             for i in range(3)]
    assert all(abs(b["y"] - boxes[0]["y"]) < 2 for b in boxes), boxes
    assert header.bounding_box()["width"] > 300  # the status text is not squeezed away
    progress = dash.locator(".irs-progress, .widget-vbox").filter(has_text="write").first
    progress.wait_for(timeout=PATIENCE_S * 1000)
    text = dash.inner_text()
    assert "fit" in text and "write" in text, text
    # the last tasks reach the page with the next draw (at most every DRAW_S)
    tasks = lab.wait_for_bokeh_source(
        "irs-tasks", lambda d: {"categorify", "write_part"} <= set(d["group"]),
        timeout=PATIENCE_S)
    shown = page.evaluate(RANGE_JS)
    assert shown["end"] >= max(tasks["stop"]), (shown, max(tasks["stop"]))
    # the axis keeps following the clock after the last phase ended (an idle dashboard moves
    # its axes every IDLE_AXIS_S seconds of its clock; a busy machine may draw later)
    later = _until("the axis to move on", lambda: (r := page.evaluate(RANGE_JS))["end"]
                   > shown["end"] + 1.0 and r)
    assert later["end"] > shown["end"] + 1.0, (shown, later, IDLE_AXIS_S)
    dash.evaluate("el => el.scrollIntoView({block: 'start'})")
    memory = lab.bokeh_source("irs-memory")  # the axis is the bars' scale, limit named
    axis = page.evaluate(MEMORY_AXIS_JS)
    used = max(m + u + s for m, u, s in zip(memory["managed"], memory["unmanaged"],
                                            memory["spilled"], strict=True))
    assert used / axis["end"] > 0.4 or axis["end"] >= min(memory["limit"]), (axis, used)
    assert "limit" in axis["label"], axis
    lab.screenshot("studio-29-dashboard-finished")

    dash.locator("button").filter(has_text="whole run").click()
    # "whole run": from where this run began (its first task) to now
    whole = _until("the whole run on the axis", lambda: (r := page.evaluate(RANGE_JS))[
        "start"] <= min(tasks["start"]) and r)
    assert whole["start"] <= min(tasks["start"]) and whole["end"] >= max(tasks["stop"]), whole
    log = dash.locator(".jp-OutputArea-output")
    assert not any("Error" in t for t in log.all_inner_texts()), log.all_inner_texts()
    lab.screenshot("studio-29-dashboard-whole-run")
    out = lab.run_cell("import json\nprint(json.dumps([p['name'] for p in "
                       "studio.dashboard.monitor.progress()]))\nstudio.close()", timeout=60)
    phases = json.loads(out.strip().splitlines()[0])
    assert any(p.startswith("fit") for p in phases) and "write" in phases, phases
    assert page.viewport_size == VIEWPORT
    assert lab.errors == []
