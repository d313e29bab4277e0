"""End to end in JupyterLab + headless Chromium at 1440x900.

* a two-branch workflow built in the Studio by clicking, a step edited from the DAG, preview,
  run, and the preview rows and embedding statistics read from the page;
* on the 40-column Criteo data (``synthetic_criteo(rows=100_000)``): every row of the column
  list readable, separate and clickable; shift-click ranges and the filter box;
* the click budgets: the standard Criteo workflow written to disk in at most 4 clicks with
  Suggest (open the Studio, Suggest, Run) and at most 12 clicks and no keystroke by hand;
  then one continuous step edited and Run again: the graph marks the reused Categorify and
  the computed Normalize.

Screenshots go to the artifacts folder."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from lab import (
    CATS,
    CONTS,
    CRITEO_ROWS,
    PREVIEW_ROWS,
    VIEWPORT,
    Counted,
    assert_in_view,
    click_button,
    expected_workflow,
    make_frame,
    open_criteo_studio,
    wait_message,
    wait_run_finished,
)

import interactive_recsys as irs
from interactive_recsys import ops

CRITEO_CATS = [f"C{i}" for i in range(1, 27)]
CRITEO_CONTS = [f"I{i}" for i in range(1, 14)]


#: Records the graph's tooltip (display, text) as each redraw of the graph ends.
TOOLTIP_AT_EACH_REDRAW = """() => {
  const canvas = document.querySelector('.irs-studio .irs-dag-canvas');
  const tip = document.querySelector('.irs-studio .irs-dag-tooltip');
  window.irsTooltips = [];
  new MutationObserver(() => window.irsTooltips.push([tip.style.display, tip.textContent]))
    .observe(canvas, {childList: true});
}"""

#: Set an input's text and send the event typing sends, without focusing (or scrolling to) it.
TYPE_IN_PLACE = """(input, text) => {
  input.value = text;
  input.dispatchEvent(new Event('input', {bubbles: true}));
}"""


def test_studio_build_preview_run(lab):
    lab.page.set_viewport_size(VIEWPORT)
    frame = make_frame()
    frame.to_parquet(lab.server.root_dir / "clicks.parquet")
    name = lab.write_notebook("studio.ipynb", [
        "import interactive_recsys as irs",
        f"studio = irs.ui.Studio('clicks.parquet', preview_rows={PREVIEW_ROWS})\nstudio",
    ])
    lab.open_notebook(name)
    lab.run_all(timeout=90)
    page = lab.page
    page.locator(".irs-studio .irs-builder-columns").wait_for(timeout=30_000)

    # Branch 1: tick C1, C2; Categorify; Add.
    for column in CATS:
        page.locator(f".irs-col-{column} input[type=checkbox]").check()
    click_button(page, "irs-op-Categorify")  # added to the ticked columns at once
    wait_message(page, "Added Categorify")
    page.locator(".irs-param-freq_threshold input").wait_for()
    page.locator(".irs-studio .irs-builder-palette").scroll_into_view_if_needed()
    lab.screenshot("studio-0-columns-palette-form")
    # Branch 2: New branch; tick I1, I2; FillMissing, Add; Normalize, Add.
    click_button(page, "irs-btn-new-branch")
    wait_message(page, "Branch 2 started")
    for column in CONTS:
        page.locator(f".irs-col-{column} input[type=checkbox]").check()
    click_button(page, "irs-op-FillMissing")
    wait_message(page, "Added FillMissing")
    page.locator(".irs-param-fill_val input").wait_for()
    click_button(page, "irs-op-Normalize")
    wait_message(page, "Added Normalize")

    # The DAG draws columns -> operators -> outputs with predicted dtypes.
    ops_nodes = page.locator(".irs-dag svg g.irs-dag-op")
    ops_nodes.nth(2).wait_for()
    assert ops_nodes.count() == 3
    assert page.locator(".irs-dag g.irs-dag-column").count() == 4
    outputs = page.locator(".irs-dag g.irs-dag-output").all_text_contents()
    assert sorted(outputs) == sorted(["C1 int64", "C2 int64", "I1 float32", "I2 float32"])

    # Click the Categorify node, change one parameter, Update.
    node = page.locator('.irs-dag g.irs-dag-node[data-id="op:0:0"]')
    node.hover()
    tooltip = page.locator(".irs-dag-tooltip")
    tooltip.wait_for(state="visible")
    assert "freq_threshold = 0" in tooltip.inner_text()  # hover shows the parameters
    tip, box = tooltip.bounding_box(), node.bounding_box()  # next to the node, not far away
    assert abs(tip["y"] - (box["y"] + box["height"] / 2)) < 40
    node.click()
    page.locator('.irs-dag g.irs-dag-selected[data-id="op:0:0"]').wait_for()
    field = page.locator(".irs-param-freq_threshold input")
    field.fill("2")  # applied as typed
    wait_message(page, "Step 1 of branch 1 is now Categorify(freq_threshold=2)")
    field.press("Tab")
    click_button(page, "irs-btn-update")
    wait_message(page, "Updated step 1 of branch 1: Categorify")
    page.locator(".irs-builder-steps option").filter(
        has_text="Categorify(freq_threshold=2)").wait_for()
    page.locator('.irs-dag g[data-id="op:0:0"]').filter(has_text="freq_threshold=2").wait_for()
    page.locator('.irs-dag g[data-id="op:1:0"]').hover()
    page.locator('.irs-dag g[data-id="op:0:0"]').hover()  # the tooltip follows the new value
    assert "freq_threshold = 2" in tooltip.inner_text()
    # An edit typed while the tooltip is open (the pointer stays on the node): the redraw
    # itself gives the tooltip the new value (recorded as each redraw ends), rather than
    # leaving the old one until a mouse event over the new node.
    page.evaluate(TOOLTIP_AT_EACH_REDRAW)
    # typed in place: focusing the field (as fill does) would scroll the page when the form
    # and the graph do not both fit the window, and move the node from under the pointer
    field.evaluate(TYPE_IN_PLACE, "3")
    wait_message(page, "Step 1 of branch 1 is now Categorify(freq_threshold=3)")
    shown = page.evaluate("window.irsTooltips")
    assert shown and all("freq_threshold = 3" in text for display, text in shown
                         if display != "none"), shown
    assert tooltip.is_visible() and "freq_threshold = 3" in tooltip.inner_text()
    field.evaluate(TYPE_IN_PLACE, "2")
    wait_message(page, "Step 1 of branch 1 is now Categorify(freq_threshold=2)")
    assert "freq_threshold = 2" in tooltip.inner_text()
    lab.screenshot("studio-1-built")

    # Preview: the output first; it equals a real fit on the sample.
    click_button(page, "irs-btn-preview")
    wait_message(page, re.compile(rf"Preview: fitted and transformed {PREVIEW_ROWS} sample"))
    table = page.locator(".irs-builder-preview table.irs-preview-output")
    headers = table.locator("thead th").all_inner_texts()
    assert headers == [*CATS, *CONTS]
    expected = expected_workflow().fit_transform(frame.head(PREVIEW_ROWS))
    shown = [row.locator("td").all_inner_texts() for row in table.locator("tbody tr").all()]
    assert len(shown) == 10
    for i, cells in enumerate(shown):
        assert [int(c) for c in cells[:2]] == expected.loc[i, CATS].tolist()
        assert np.allclose([float(c) for c in cells[2:]], expected.loc[i, CONTS].astype(float),
                           atol=1e-5)
    lab.screenshot("studio-2-preview")

    # Run in the background; then the Embeddings tab shows the fitted vocabularies.
    click_button(page, "irs-btn-run")
    page.locator(".irs-builder-status .irs-run-finished").wait_for(timeout=60_000)
    page.locator(".irs-studio-tabs .lm-TabBar-tab", has_text="Embeddings").click()
    report = page.locator(".irs-embedding-view .irs-embedding-view-report")
    report.wait_for(timeout=30_000)
    text = report.inner_text()
    fitted = expected_workflow().fit(frame)
    for column in CATS:
        cardinality = fitted.output_schema[column].cardinality
        assert re.search(rf"\b{column}\b[^\n]*\b{cardinality}\b", text), (column, text)
    page.locator(".irs-embedding-view .irs-embedding-plots").wait_for()
    coverage = lab.wait_for_bokeh_source("irs-embedding-coverage", lambda d: len(d["xs"]) > 0
                                         if "xs" in d else bool(d))
    assert coverage
    # Tables people read: numbers right-aligned as drawn, each column explained under it.
    aligned = report.locator("table.irs-table td.irs-num").first.evaluate(
        "el => getComputedStyle(el).textAlign")
    assert aligned == "right"
    assert report.locator(".irs-table-legend li").count() >= 3
    assert report.locator("table.irs-table svg.irs-spark").count() >= len(CATS)
    lab.screenshot("studio-3-embeddings")

    # The Preview tab: paging view of the workflow fitted by the run.
    page.locator(".irs-studio-tabs .lm-TabBar-tab", has_text="Preview").click()
    rows = page.locator(".irs-preview-rows table tbody tr")
    rows.first.wait_for(timeout=30_000)
    assert rows.count() > 0
    tab = page.locator(".irs-studio .irs-preview-rows").first
    assert tab.locator("td.irs-num").first.evaluate(
        "el => getComputedStyle(el).textAlign") == "right"
    legend = " ".join(page.locator(".irs-studio .irs-table-legend").all_inner_texts())
    assert "null ids" in legend and "non-null lookups" in legend, legend
    lab.screenshot("studio-4-preview-tab")

    stderr = lab.outputs().locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert page.locator(".irs-builder-messages .irs-msg-error").count() == 0
    assert page.locator(".irs-studio-messages .irs-msg-error").count() == 0


# ---- 40 columns at 1440x900 ------------------------------------------------------------------
def count_text(page) -> str:
    return page.locator(".irs-studio .irs-builder-count").inner_text()


def wait_count(page, text: str) -> None:
    page.locator(".irs-studio .irs-builder-count").filter(has_text=text).wait_for(
        timeout=30_000)


def assert_run_in_view(lab, data: str) -> None:
    """Run and its output path (the data's ``-processed`` folder) are on screen as the page
    stands, above the 40-node graph: no scrolling before the click."""
    page = lab.page
    assert page.locator(".irs-dag g.irs-dag-node").count() >= 40
    output = page.locator(".irs-studio .irs-builder-output input")
    shown = Path(lab.server.root_dir, output.input_value())  # relative to the kernel's cwd
    assert shown.resolve() == Path(data + "-processed").resolve(), shown
    for control in (page.locator(".irs-studio .irs-btn-run"), output):
        assert_in_view(control)
    run_top = page.locator(".irs-studio .irs-btn-run").bounding_box()["y"]
    assert run_top < page.locator(".irs-studio .irs-builder-dag").bounding_box()["y"]


def read_output(path) -> tuple[pd.DataFrame, dict]:
    import json

    assert (path / "_SUCCESS").exists(), sorted(p.name for p in path.iterdir())
    schema = json.loads((path / "_schema.json").read_text())
    return pd.read_parquet(path), schema


_ANCESTORS_JS = """
(el) => { const out = []; for (let e = el; e && out.length < 8; e = e.parentElement) {
  const s = getComputedStyle(e);
  out.push([e.className, e.clientWidth, e.scrollWidth, s.display, s.overflowX, s.minWidth]); }
  return out; }
"""

_ROW_CHECK_JS = """
(row) => {
  const name = row.querySelector('.irs-cl-name');
  const box = name.getBoundingClientRect();
  const body = row.closest('.irs-cl-body').getBoundingClientRect();
  const x = box.left + Math.min(box.width / 2, 10), y = box.top + box.height / 2;
  const hit = document.elementFromPoint(x, y);
  return {text: name.textContent, clipped: name.scrollWidth > name.clientWidth,
          height: box.height, font: parseFloat(getComputedStyle(name).fontSize),
          inside: box.top >= body.top - 0.5 && box.bottom <= body.bottom + 0.5,
          hit: hit !== null && row.contains(hit)};
}
"""


def test_forty_columns_are_readable_and_clickable(lab):
    open_criteo_studio(lab)
    page = lab.page
    rows = page.locator(".irs-studio .irs-cl-row")
    names = ["label", *CRITEO_CONTS, *CRITEO_CATS]
    assert rows.count() == 40
    assert count_text(page) == "0 of 40 selected"
    chips = page.locator(".irs-studio .irs-chip").all_inner_texts()
    assert chips == ["categorical (26)", "continuous (13)", "label (1)"]
    boxes = []
    for i, name in enumerate(names):
        row = rows.nth(i)
        row.scroll_into_view_if_needed()
        seen = row.evaluate(_ROW_CHECK_JS)
        assert seen["text"] == name and not seen["clipped"], seen
        assert seen["height"] >= 12 and seen["font"] >= 12, seen
        assert seen["inside"] and seen["hit"], seen  # visible in the list, not covered
        details = row.locator("span").all_inner_texts()  # dtype, role, null %, distinct
        assert details[0] == name and details[2] in ("label", "continuous", "categorical")
        assert details[1] in ("int64", "string") and details[3].endswith("%"), details
        boxes.append(row.bounding_box())
        row.click()  # clickable: each click ticks one more
        wait_count(page, f"{i + 1} of 40 selected")
    for a, b in itertools.pairwise(boxes):  # rows of one height, no overlaps (in list order)
        assert a["height"] == b["height"] >= 20
    for i, name in enumerate(names[:14]):  # the first 14 rows share one scroll position
        assert rows.nth(i).locator("input").is_checked(), name
    page.locator(".irs-studio .irs-cl-body").evaluate("el => el.scrollTop = 0")
    top = [rows.nth(i).bounding_box() for i in range(14)]
    for a, b in itertools.pairwise(top):
        assert b["y"] >= a["y"] + a["height"] - 0.5, (a, b)
    lab.screenshot("studio-5-forty-columns-ticked")

    page.locator(".irs-studio .irs-btn-clear").click()
    wait_count(page, "0 of 40 selected")
    rows.nth(1).click()                         # I1
    rows.nth(13).click(modifiers=["Shift"])     # ... to I13
    wait_count(page, "13 of 40 selected")
    checked = [n for i, n in enumerate(names) if rows.nth(i).locator("input").is_checked()]
    assert checked == CRITEO_CONTS
    page.locator(".irs-studio .irs-builder-name-filter input").fill("C2")
    wait_count(page, "13 of 40 selected · 8 shown")
    visible = [n for i, n in enumerate(names) if rows.nth(i).is_visible()]
    assert visible == ["C2", *[f"C{i}" for i in range(20, 27)]]
    page.locator(".irs-studio .irs-btn-select-shown").click()
    wait_count(page, "8 of 40 selected")
    msg = page.locator(".irs-studio .irs-feedback-columns .irs-msg")
    # the message syncs after the count (its own trait): wait for it, do not read it at once
    msg.filter(has_text="ticked the 8 shown columns matching 'C2'").wait_for(timeout=30_000)
    assert_in_view(msg, near=page.locator(".irs-studio .irs-btn-select-shown"), within=120)
    page.locator(".irs-studio .irs-builder-name-filter input").fill("")
    page.locator(".irs-studio .irs-builder-columns").scroll_into_view_if_needed()
    lab.screenshot("studio-6-forty-columns-filtered")


def test_click_budget_with_suggest(lab):
    data = open_criteo_studio(lab)
    page = lab.page
    clicks = Counted(page)
    clicks.clicks = 1  # "open the Studio": the run of its cell
    clicks.click(".irs-studio .irs-btn-suggest")
    page.locator(".irs-feedback-suggest .irs-msg-success").wait_for(timeout=30_000)
    page.locator(".irs-dag g.irs-dag-op").nth(3).wait_for()
    lab.screenshot("studio-7-suggested")
    page.locator(".irs-studio .irs-builder-steps").evaluate(
        "el => el.scrollIntoView({block: 'start'})")
    page.locator(".irs-studio .irs-builder-path").evaluate(
        "el => el.scrollIntoView({block: 'start'})")  # back to the Studio's top
    assert_run_in_view(lab, data)
    clicks.click(".irs-studio .irs-btn-run")
    wait_run_finished(page)
    assert clicks.clicks <= 4 and clicks.keys == 0
    page.locator(".irs-builder-status").filter(has_text="output written to").wait_for()
    lab.screenshot("studio-8-suggested-run")
    # Preview in the Build tab: the output first, scrolling sideways inside its own box
    page.locator(".irs-studio .irs-btn-preview").click()
    table = page.locator(".irs-builder-preview table.irs-preview-output")
    table.wait_for(timeout=60_000)
    # cells padded: adjacent integer columns do not run together
    pad = table.locator("td").first.evaluate(
        "el => parseFloat(getComputedStyle(el).paddingLeft)"
        " + parseFloat(getComputedStyle(el).paddingRight)")
    assert pad >= 16, pad
    scroll = page.locator(".irs-builder-preview .irs-preview-scroll")
    assert scroll.evaluate("el => el.scrollWidth > el.clientWidth + 100")
    builder_box = page.locator(".irs-studio .irs-builder").bounding_box()
    box = scroll.bounding_box()
    assert box["x"] >= builder_box["x"] and box["x"] + box["width"] <= \
        builder_box["x"] + builder_box["width"] + 4  # inside the builder (a widget margin)
    assert page.locator(".irs-builder-preview table.irs-preview-input").count() == 0
    scroll.scroll_into_view_if_needed()
    lab.screenshot("studio-10-preview-output-first")
    # the Preview tab (filled by the run): the same, with paging
    page.locator(".irs-studio-tabs .lm-TabBar-tab", has_text="Preview").click()
    tab_scroll = page.locator(".irs-preview-rows .irs-preview-scroll")
    tab_scroll.wait_for(timeout=60_000)
    assert tab_scroll.evaluate("el => el.scrollWidth > el.clientWidth + 100"), \
        tab_scroll.evaluate(_ANCESTORS_JS)
    studio_box = page.locator(".irs-studio").bounding_box()
    box = tab_scroll.bounding_box()
    assert box["x"] + box["width"] <= studio_box["x"] + studio_box["width"] + 4
    out, schema = read_output(Path(data + "-processed"))
    assert len(out) == CRITEO_ROWS and sorted(out.columns) == sorted(
        ["label", *CRITEO_CONTS, *CRITEO_CATS])
    written = irs.Schema.from_dict(schema["schema"])
    assert "target" in written["label"].tags
    for name in CRITEO_CONTS:  # FillMissing -> Clip -> LogOp -> Normalize
        assert abs(out[name].mean()) < 1e-3 and out[name].std(ddof=0) == \
            pytest.approx(1, abs=1e-3)
    for name in CRITEO_CATS:
        assert out[name].dtype.kind == "i" and out[name].min() >= 1


def edit_from_the_graph(page, node: str, param: str, value: str, said: str) -> None:
    """Click the graph's ``node``, type ``value`` into its form's ``param`` and wait until
    the step says so (``said``, a pattern), as a user edits a step."""
    page.locator(f'.irs-dag g.irs-dag-node[data-id="{node}"]').click()
    page.locator(f'.irs-dag g.irs-dag-selected[data-id="{node}"]').wait_for()
    field = page.locator(f".irs-studio .irs-param-{param} input")
    field.fill(value)
    wait_message(page, re.compile(said))
    field.press("Tab")


def test_click_budget_by_hand(lab):
    data = open_criteo_studio(lab)
    page = lab.page
    clicks = Counted(page)
    clicks.clicks = 1  # "open the Studio"
    clicks.click(".irs-studio .irs-chip-categorical")
    wait_count(page, "26 of 40 selected")
    clicks.click(".irs-studio .irs-op-Categorify")
    wait_message(page, "Added Categorify")
    assert_in_view(page.locator(".irs-feedback-palette .irs-msg"),
                   near=page.locator(".irs-studio .irs-op-Categorify"), within=300)
    clicks.click(".irs-studio .irs-chip-continuous")
    wait_count(page, "13 of 40 selected")
    clicks.click(".irs-studio .irs-op-FillMissing")
    wait_message(page, "Added FillMissing")
    clicks.click(".irs-studio .irs-op-Clip")  # counters: min_value=0 from the profile
    wait_message(page, "Added Clip")
    assert page.locator(".irs-studio .irs-param-min_value input").input_value() == "0"
    for op in ("LogOp", "Normalize"):
        clicks.click(f".irs-studio .irs-op-{op}")
        wait_message(page, f"Added {op}")
    clicks.click(".irs-studio .irs-chip-label")
    wait_count(page, "1 of 40 selected")
    clicks.click(".irs-studio .irs-op-AddTags")  # the label: tags=["target"], no typing
    wait_message(page, "Added AddTags")
    lab.screenshot("studio-9-by-hand")
    assert_run_in_view(lab, data)  # the page was never scrolled
    clicks.click(".irs-studio .irs-btn-run")
    wait_run_finished(page)
    assert clicks.clicks <= 12 and clicks.keys == 0, (clicks.clicks, clicks.keys)
    out, _ = read_output(Path(data + "-processed"))
    frame = pd.read_parquet(data)
    expected = irs.Workflow(
        (CRITEO_CATS >> ops.Categorify())
        + (CRITEO_CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp()
           >> ops.Normalize()) + (["label"] >> ops.AddTags(tags=["target"]))
    ).fit_transform(frame)
    assert list(out.columns) == list(expected.columns)
    for name in [*CRITEO_CATS, "label"]:
        assert out[name].tolist() == expected[name].tolist(), name
    for name in CRITEO_CONTS:
        assert np.allclose(out[name].astype(float), expected[name].astype(float), atol=1e-5)

    # One continuous step edited (Clip's minimum), Run again: the 26 vocabularies are reused,
    # only the Normalize after the edit is computed; the graph and the status line say so.
    page.locator(".irs-dag g.irs-dag-computed").nth(1).wait_for()  # the first Run computed
    assert page.locator(".irs-dag g.irs-dag-computed").count() == 2  # both statistics
    edit_from_the_graph(page, "op:1:1", "min_value", "1", r"is now Clip\(min_value=1")
    assert page.locator(".irs-dag g.irs-dag-computed").count() == 0  # not fitted as it is
    page.locator(".irs-studio .irs-builder-overwrite input").check()
    page.locator(".irs-studio .irs-btn-run").click()
    page.locator(".irs-builder-status span").filter(  # not the first Run's "reused 0 of 2"
        has_text=re.compile("reused 1 of 2|error|cancelled")).wait_for(timeout=240_000)
    status = page.locator(".irs-builder-status").inner_text()
    assert "reused 1 of 2 fitted steps; computed Normalize (step 4 of branch 2)" in status, \
        status
    reused = page.locator('.irs-dag g.irs-dag-reused[data-id="op:0:0"]')
    reused.wait_for()
    assert reused.locator(".irs-dag-badge").text_content() == "reused"
    computed = page.locator('.irs-dag g.irs-dag-computed[data-id="op:1:3"]')
    assert computed.locator(".irs-dag-badge").text_content() == "computed"
    assert page.locator(".irs-dag g.irs-dag-reused").count() == 1
    assert page.locator(".irs-dag g.irs-dag-computed").count() == 1
    page.locator(".irs-builder-status").evaluate("el => el.scrollIntoView({block: 'center'})")
    lab.screenshot("studio-26-refit-status")
    reused.hover()
    assert "reused: its state was kept" in page.locator(".irs-dag-tooltip").inner_text()
    lab.screenshot("studio-26a-refit-reused-step")
    page.mouse.move(2, 2)  # no tooltip over the next view
    computed.evaluate("el => el.scrollIntoView({block: 'center'})")  # the continuous branch
    lab.screenshot("studio-26b-refit-computed-step")
    out, _ = read_output(Path(data + "-processed"))
    clipped = irs.Workflow(CRITEO_CONTS >> ops.FillMissing() >> ops.Clip(min_value=1)
                           >> ops.LogOp() >> ops.Normalize()).fit_transform(frame)
    for name in CRITEO_CONTS:
        assert np.allclose(out[name].astype(float), clipped[name].astype(float), atol=1e-5)
    for name in CRITEO_CATS:
        assert out[name].tolist() == expected[name].tolist(), name

    # Only Categorify's freq_threshold edited, Run again: its vocabularies are cut again from
    # the saved counts (no data read for it); the ids equal a fresh fit with the new value.
    edit_from_the_graph(page, "op:0:0", "freq_threshold", "3",
                        r"is now Categorify\(freq_threshold=3")
    page.locator(".irs-studio .irs-btn-run").click()
    page.locator(".irs-builder-status span").filter(
        has_text=re.compile("refinished Categorify|error|cancelled")).wait_for(timeout=240_000)
    status = page.locator(".irs-builder-status").inner_text()
    assert "refinished Categorify (step 1 of branch 1) from the saved counts" in status, status
    refinished = page.locator('.irs-dag g.irs-dag-refinished[data-id="op:0:0"]')
    refinished.wait_for()
    assert refinished.locator(".irs-dag-badge").text_content() == "refinished"
    refinished.evaluate("el => el.scrollIntoView({block: 'center'})")
    lab.screenshot("studio-27-refinished-step")
    out, _ = read_output(Path(data + "-processed"))
    fresh = irs.Workflow(CRITEO_CATS >> ops.Categorify(freq_threshold=3)).fit_transform(frame)
    for name in CRITEO_CATS:
        assert out[name].tolist() == fresh[name].tolist(), name
