"""Suggest in the background, at 1440x900 in JupyterLab + headless Chromium, on the 40-column
Criteo data: a click shows the progress line under the button (rows counted of the total)
with a Cancel beside it and the button disabled; a cell runs in the notebook meanwhile (the
kernel is free); then the card and the success message, the progress line and Cancel gone.

The counting is held by a gate set in the kernel (a slow function patched in at the edge), so
that the page is read while it counts however fast the machine is. Screenshots go to the
artifacts folder."""

from __future__ import annotations

import re

from lab import CRITEO_ROWS, open_criteo_studio

#: Run in the kernel before the click: every counting task waits for ``gate``.
HOLD_COUNTING = """import threading
import interactive_recsys.stats._counting as counting
gate, _count = threading.Event(), counting.count_partition
def held(*args, **kwargs):
    gate.wait(300)
    return _count(*args, **kwargs)
counting.count_partition = held
print("held")"""


def test_suggest_counts_in_the_background_with_progress_then_shows_the_card(lab):
    open_criteo_studio(lab)
    page = lab.page
    assert "held" in lab.run_cell(HOLD_COUNTING)
    c1 = page.locator(".irs-studio .irs-col-C1").first
    assert " est." in c1.inner_text()  # the sample's estimate, marked as one
    button = page.locator(".irs-studio .irs-btn-suggest").first
    button.click()
    line = page.locator(".irs-studio .irs-suggest-status .irs-run-progress")
    pattern = re.compile(
        rf"count values: about [\d.]+k? of {CRITEO_ROWS / 1000:.1f}k rows \(\d+%\)"
    )
    line.filter(has_text=pattern).first.wait_for(timeout=60_000)
    assert line.first.inner_text().startswith("Counting · ")
    cancel = page.locator(".irs-studio .irs-btn-cancel-suggest").first
    assert cancel.is_visible() and button.is_disabled()
    busy = page.locator(".irs-feedback-suggest .irs-msg-busy")
    assert f"over all {CRITEO_ROWS:,} rows" in busy.inner_text()
    lab.screenshot("suggest-1-counting")

    # the kernel is free while Suggest counts: a cell runs, then lets the counting go on
    text = lab.run_cell(
        "print(studio.builder.model.suggesting, studio.builder.model.measured)\ngate.set()"
    )
    assert "True None" in text, text

    page.locator(".irs-feedback-suggest .irs-msg-success").wait_for(timeout=120_000)
    card = page.locator(".irs-studio .irs-suggest-table")
    card.locator("table.irs-suggest-vocab").wait_for(timeout=30_000)
    assert f"every value counted over all {CRITEO_ROWS:,} rows" in card.inner_text()
    message = page.locator(".irs-feedback-suggest .irs-msg-success").inner_text()
    assert message.startswith("Suggested: 26 column(s) -> Categorify"), message
    page.locator(".irs-studio .irs-suggest-status .irs-run-progress").wait_for(
        state="detached", timeout=30_000
    )
    assert not cancel.is_visible() and button.is_enabled()
    # one number per fact: the column list now shows Suggest's exact count, as the card does
    exact = re.search(r"([\d,]+) exact", c1.inner_text())
    assert exact and " est." not in c1.inner_text(), c1.inner_text()
    assert exact.group(1) in card.inner_text()
    button.evaluate("el => el.scrollIntoView({block: 'start'})")  # the card below it
    lab.screenshot("suggest-2-card")
