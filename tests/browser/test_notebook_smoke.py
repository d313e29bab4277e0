"""Smoke test: the quick-start notebook runs in JupyterLab in headless Chromium and its
outputs render (schema tables, the processed rows, the save/load check)."""

from __future__ import annotations

import re


def test_quickstart_runs_and_renders(lab, notebooks_dir):
    name = lab.copy_notebook(notebooks_dir / "01_quickstart.ipynb")  # outputs cleared
    lab.open_notebook(name)
    assert lab.outputs().count() == 0
    lab.run_all(timeout=120)
    prompts = lab.prompts()
    assert prompts and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts), prompts
    # Printed text and rich HTML tables produced by this run.
    lab.wait_for_output(re.compile(r"200,000 rows"))
    lab.wait_for_output(selector="table")
    lab.wait_for_output(re.compile(r"200,000 rows in \d+ files"))
    # The last cell compares a reloaded workflow with the fitted one.
    last = lab.page.locator(".jp-NotebookPanel .jp-CodeCell").last
    assert last.locator(".jp-OutputArea-output").inner_text().strip() == "True"
    # No stderr output, no JavaScript errors.
    stderr = lab.outputs().locator("[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert lab.errors == []
    path = lab.screenshot("01_quickstart")
    assert path.stat().st_size > 10_000
