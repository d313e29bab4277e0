"""End to end in JupyterLab + headless Chromium: build a two-branch workflow in the Studio by
clicking, edit a step from the DAG, preview, run, and read the preview rows and the embedding
statistics from the page. Screenshots go to the artifacts folder."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops

ROWS, PREVIEW_ROWS = 3000, 300
CATS, CONTS = ["C1", "C2"], ["I1", "I2"]


def make_frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({
        "label": rng.integers(0, 2, ROWS),
        "I1": rng.poisson(4, ROWS).astype("float64"),
        "I2": rng.normal(10, 3, ROWS),
        "C1": [f"a{int(v)}" for v in rng.zipf(1.5, ROWS) % 50],
        "C2": [f"b{int(v)}" for v in rng.integers(0, 8, ROWS)],
    })
    frame.loc[rng.random(ROWS) < 0.1, "I1"] = np.nan
    return frame


def expected_workflow() -> irs.Workflow:
    return irs.Workflow((CATS >> ops.Categorify(freq_threshold=2))
                        + (CONTS >> ops.FillMissing() >> ops.Normalize()))


def click_button(page, css: str) -> None:
    page.locator(f".irs-studio .{css}").first.click()


def wait_message(page, text: str | re.Pattern) -> None:
    page.locator(".irs-builder-messages .irs-msg").filter(has_text=text).first.wait_for(
        timeout=30_000)


def test_studio_build_preview_run(lab):
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
    click_button(page, "irs-op-Categorify")
    page.locator(".irs-param-freq_threshold input").wait_for()
    click_button(page, "irs-btn-add")
    wait_message(page, "Added Categorify")
    page.locator(".irs-studio .irs-builder-palette").scroll_into_view_if_needed()
    lab.screenshot("studio-0-columns-palette-form")
    # Branch 2: New branch; tick I1, I2; FillMissing, Add; Normalize, Add.
    click_button(page, "irs-btn-new-branch")
    wait_message(page, "Branch 2 started")
    for column in CONTS:
        page.locator(f".irs-col-{column} input[type=checkbox]").check()
    click_button(page, "irs-op-FillMissing")
    page.locator(".irs-param-fill_val input").wait_for()
    click_button(page, "irs-btn-add")
    wait_message(page, "Added FillMissing")
    click_button(page, "irs-op-Normalize")
    click_button(page, "irs-btn-add")
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
    field.fill("2")
    field.press("Tab")
    click_button(page, "irs-btn-update")
    wait_message(page, "Updated step 1 of branch 1: Categorify")
    page.locator(".irs-builder-steps option").filter(
        has_text="Categorify(freq_threshold=2)").wait_for()
    page.locator('.irs-dag g[data-id="op:0:0"]').filter(has_text="freq_threshold=2").wait_for()
    page.locator('.irs-dag g[data-id="op:1:0"]').hover()
    page.locator('.irs-dag g[data-id="op:0:0"]').hover()  # the tooltip follows the new value
    assert "freq_threshold = 2" in tooltip.inner_text()
    lab.screenshot("studio-1-built")

    # Preview: input and output side by side; the output equals a real fit on the sample.
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
    lab.screenshot("studio-3-embeddings")

    # The Preview tab: paging view of the workflow fitted by the run.
    page.locator(".irs-studio-tabs .lm-TabBar-tab", has_text="Preview").click()
    rows = page.locator(".irs-preview-rows table tbody tr")
    rows.first.wait_for(timeout=30_000)
    assert rows.count() > 0
    lab.screenshot("studio-4-preview-tab")

    stderr = lab.outputs().locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert page.locator(".irs-builder-messages .irs-msg-error").count() == 0
    assert page.locator(".irs-studio-messages .irs-msg-error").count() == 0
