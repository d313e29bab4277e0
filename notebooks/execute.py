"""Re-execute tutorial notebooks in place, the way their stored outputs were made.

``python notebooks/execute.py notebooks/02_visual_builder.ipynb [...]`` (default: all).

Runs each notebook top to bottom with nbconvert (widget state stored, so JupyterLab,
nbviewer and ``irs report`` can draw the widgets; only the widgets the outputs show are
kept, not every widget created and closed on the way), then drops the multi-megabyte
inline BokehJS bundle from cells marked ``# NBVAL_IGNORE_OUTPUT`` (nbval ignores those
outputs; the bundle is loaded again whenever the notebook runs), and stores each cell's
stdout and stderr as JupyterLab shows them: one output per stream, a line rewritten with
``\\r`` (a progress line) kept as its last text. Notebooks are written atomically.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
#: An output bigger than this, in a cell whose output nbval ignores, is not stored.
LARGE_OUTPUT_BYTES = 200_000


def strip_large_ignored_outputs(nb: nbformat.NotebookNode) -> int:
    """Empty the outputs of ignored cells whose outputs are large; return how many."""
    stripped = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or "NBVAL_IGNORE_OUTPUT" not in cell.source:
            continue
        if len(nbformat.writes(nbformat.v4.new_notebook(cells=[cell]))) > LARGE_OUTPUT_BYTES:
            cell.outputs = []
            stripped += 1
    return stripped


def collapse_streams(nb: nbformat.NotebookNode) -> int:
    """Merge each cell's outputs of one stream (stdout, stderr) into its first, and keep of
    a line rewritten with carriage returns only what is left on screen; return how many
    outputs were merged away.

    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[
    ...     nbformat.v4.new_output("stream", name="stderr", text="\\rdone 1 of 2"),
    ...     nbformat.v4.new_output("stream", name="stdout", text="rows\\n"),
    ...     nbformat.v4.new_output("stream", name="stderr", text="\\rdone 2 of 2\\rall\\n")])])
    >>> collapse_streams(nb), [o.text for o in nb.cells[0].outputs]
    (1, ['all\\n', 'rows\\n'])
    """
    merged = 0
    for cell in nb.cells:
        kept, first = [], {}
        for out in cell.get("outputs", []):
            if out.get("output_type") != "stream":
                kept.append(out)
            elif out.name in first:
                first[out.name].text += out.text
                merged += 1
            else:
                first[out.name] = out
                kept.append(out)
        for out in first.values():
            out.text = "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1]
                                 for line in out.text.split("\n"))
        if "outputs" in cell:
            cell.outputs = kept
    return merged


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _references(value: Any) -> Iterator[str]:
    """Model ids a widget's state refers to (``"IPY_MODEL_<id>"`` strings, nested)."""
    if isinstance(value, str):
        if value.startswith("IPY_MODEL_"):
            yield value[len("IPY_MODEL_"):]
    elif isinstance(value, dict):
        if isinstance(value.get("model_id"), str):  # a widget shown in an Output widget
            yield value["model_id"]
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)


def prune_widget_state(nb: nbformat.NotebookNode) -> int:
    """Keep only the widgets an output shows (and the models they refer to): nbclient keeps
    every widget ever created, closed ones included. Returns how many were dropped."""
    widgets = nb.metadata.get("widgets", {}).get(WIDGET_STATE)
    if not widgets:
        return 0
    state = widgets["state"]
    todo = [out["data"][WIDGET_VIEW]["model_id"] for cell in nb.cells
            for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
    keep: set[str] = set()
    while todo:
        model_id = todo.pop()
        if model_id in keep or model_id not in state:
            continue
        keep.add(model_id)
        todo.extend(_references(state[model_id].get("state", {})))
    dropped = [k for k in state if k not in keep]
    for model_id in dropped:
        del state[model_id]
    return len(dropped)


def execute(path: Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={
        "metadata": {"path": str(path.parent)}}, store_widget_state=True).execute()
    collapse_streams(nb)
    stripped = strip_large_ignored_outputs(nb)
    pruned = prune_widget_state(nb)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".ipynb.tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.replace(tmp, path)
    print(f"{path.name}: {time.perf_counter() - start:.1f} s, "
          f"{stripped} large ignored output(s) dropped, {pruned} unused widget(s) dropped")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        default=sorted(HERE.glob("[0-9][0-9]_*.ipynb")))
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if not path.is_file():
            sys.exit(f"notebook {path} does not exist")
        execute(path.resolve(), args.timeout)


if __name__ == "__main__":
    main()
