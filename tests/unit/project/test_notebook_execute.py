"""notebooks/execute.py keeps the widget state of what the outputs show, and nothing else."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

SPEC = importlib.util.spec_from_file_location(
    "execute", Path(__file__).resolve().parents[3] / "notebooks" / "execute.py")
execute = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(execute)


def model(name: str, **state) -> dict:
    return {"model_name": name, "model_module": "@jupyter-widgets/controls", "state": state}


def test_prune_widget_state_keeps_what_outputs_reach():
    state = {
        "box": model("VBoxModel", children=["IPY_MODEL_text", "IPY_MODEL_out"],
                     layout="IPY_MODEL_lay"),
        "lay": model("LayoutModel"),
        "text": model("TextModel", value="a"),
        "out": model("OutputModel", outputs=[{"output_type": "display_data", "data": {
            execute.WIDGET_VIEW: {"model_id": "inner", "version_major": 2}}}]),
        "inner": model("HTMLModel", value="x"),
        "closed": model("TextModel", value="gone"),
        "closed_layout": model("LayoutModel"),
    }
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {execute.WIDGET_STATE: {"state": state, "version_major": 2}}
    nb.cells.append(nbformat.v4.new_code_cell("box", outputs=[nbformat.v4.new_output(
        "display_data", data={execute.WIDGET_VIEW: {"model_id": "box"}, "text/plain": "B"})]))
    assert execute.prune_widget_state(nb) == 2
    kept = nb.metadata["widgets"][execute.WIDGET_STATE]["state"]
    assert set(kept) == {"box", "lay", "text", "out", "inner"}
    assert execute.prune_widget_state(nbformat.v4.new_notebook()) == 0
