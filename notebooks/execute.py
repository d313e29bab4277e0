"""Re-execute tutorial notebooks in place, the way their stored outputs were made.

``python notebooks/execute.py notebooks/02_visual_builder.ipynb [...]`` (default: all).

Runs each notebook top to bottom with nbconvert (widget state stored, so JupyterLab and
``irs report`` can draw the widgets), then drops the multi-megabyte inline BokehJS bundle
from cells marked ``# NBVAL_IGNORE_OUTPUT`` (nbval ignores those outputs; the bundle is
loaded again whenever the notebook runs). Notebooks are written atomically.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

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


def execute(path: Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={
        "metadata": {"path": str(path.parent)}}, store_widget_state=True).execute()
    stripped = strip_large_ignored_outputs(nb)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".ipynb.tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    os.replace(tmp, path)
    print(f"{path.name}: {time.perf_counter() - start:.1f} s, "
          f"{stripped} large ignored output(s) dropped")


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
