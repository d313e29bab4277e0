"""``widgets/code_export.js`` run by Node.js with a stand-in page: what Copy and Insert do
and say in each case (clipboard given or refused; the notebook reachable or not, the Studio's
cell found or not). The same clicks in a real JupyterLab: ``tests/browser/test_export_browser.py``."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from interactive_recsys.ui._assets import widget_asset

pytestmark = pytest.mark.skipif(shutil.which("node") is None,
                                reason="Node.js runs the widget's module")

#: A stand-in for the page and the widget's model; prints what each click left.
DRIVER = r"""
const make = (tag) => ({ tag, className: "", textContent: "", title: "", style: {},
  dataset: {}, children: [], listeners: {}, classList: { add() {} },
  addEventListener(type, f) { this.listeners[type] = f; },
  append(...kids) { this.children.push(...kids); } });
globalThis.document = { createElement: make };
const scenario = JSON.parse(process.argv[2]);
globalThis.window = { isSecureContext: true };
const selected = [];
const area = { value: scenario.area, focus() {}, select() { selected.push(this.value); } };
Object.defineProperty(globalThis, "navigator", { configurable: true, value: { clipboard: {
  writeText: async (text) => { if (scenario.refuse) throw new Error("denied"); return text; },
} } });
const inserted = [];
const cells = scenario.cells.map((ids) => ({ toJSON: () => ({ outputs: ids.map((id) => (
  { output_type: "display_data",
    data: { "application/vnd.jupyter.widget-view+json": { model_id: id } } })) }) }));
const shared = { cells, insertCell: (i, cell) => inserted.push([i, cell]) };
const manager = scenario.notebook ? { context: { model: { sharedModel: shared } } } : {};
const traits = { code: "x = 1\n", hosts: ["studio-id"] };
const model = { get: (k) => traits[k], on() {}, off() {}, widget_manager: manager };
const el = make("div");
el.closest = (sel) => (scenario.area === null ? null
                       : { querySelector: () => area });
const { default: widget } = await import(process.argv[3]);
widget.render({ model, el });
const [copy, insert, note] = el.children;
const out = {};
await copy.listeners.click();
out.copy = [el.dataset.lastAction, note.textContent, selected];
insert.listeners.click();
out.insert = [el.dataset.lastAction, note.textContent, inserted];
console.log(JSON.stringify(out));
"""


def run(tmp_path, **scenario) -> dict:
    base = {"refuse": False, "area": "x = 1\n", "notebook": True, "cells": [[], ["studio-id"]]}
    module = tmp_path / "code_export.mjs"
    module.write_text(widget_asset("code_export.js").read_text())
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    done = subprocess.run(["node", str(driver), json.dumps(base | scenario), module.as_uri()],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_copy_and_insert_below_the_studio_cell(tmp_path):
    out = run(tmp_path)
    assert out["copy"] == ["copied", "Copied", []]
    assert out["insert"] == ["inserted", "Inserted as cell 3, below the Studio (not run)",
                             [[2, {"cell_type": "code", "source": "x = 1\n", "metadata": {}}]]]


def test_a_refused_clipboard_selects_the_code(tmp_path):
    action, text, selected = run(tmp_path, refuse=True)["copy"]
    assert action == "selected" and "press Ctrl+C" in text and selected == ["x = 1\n"]
    action, text, selected = run(tmp_path, refuse=True, area=None)["copy"]
    assert action == "refused" and "refused the clipboard (denied)" in text and not selected


def test_insert_says_why_it_cannot(tmp_path):
    action, text, inserted = run(tmp_path, notebook=False)["insert"]
    assert action == "refused" and not inserted
    assert text.startswith("This page gives widgets no access to the notebook")
    assert "builder.insert_code_cell()" in text
    action, text, inserted = run(tmp_path, cells=[["other-id"]])["insert"]
    assert action == "refused" and not inserted
    assert text.startswith("The Studio's cell was not found in this notebook")
