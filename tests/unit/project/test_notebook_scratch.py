"""The notebooks leave nothing behind in the temporary folder: their scratch folder is a
``tempfile.TemporaryDirectory`` removed when the kernel stops, and so are the workflows'
temporary artifacts. One notebook is run for real with its own ``TMPDIR``."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import HANG_S

NOTEBOOKS = sorted((Path(__file__).resolve().parents[3] / "notebooks").glob("*.ipynb"))


def code(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                     if c["cell_type"] == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebooks_scratch_folder_goes_when_its_kernel_stops(path: Path) -> None:
    source = code(path)
    assert "mkdtemp" not in source, f"{path.name}: a mkdtemp folder stays after the notebook"
    if "tempfile" in source:
        assert "tempfile.TemporaryDirectory(" in source, path.name


def test_running_a_notebook_leaves_the_temporary_folder_as_it_was(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # the kernel's tempfile.gettempdir()
    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    assert "01_quickstart" in NOTEBOOKS[0].name
    client = NotebookClient(notebook, timeout=HANG_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # the kernel is shut down at the end, as nbval and JupyterLab do
    assert sorted(p.name for p in scratch.iterdir()) == []
