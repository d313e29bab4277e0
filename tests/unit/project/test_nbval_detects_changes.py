"""nbval really compares stored outputs: the quick-start notebook passes as stored and
fails once one stored value (a cardinality in the embedding sizes) is changed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NOTEBOOK = REPO / "notebooks" / "01_quickstart.ipynb"
SANITIZE = REPO / "notebooks" / "sanitize.cfg"


def _alter_embedding_sizes(nb: dict) -> tuple[str, str]:
    """Add 1 to the first cardinality in the ``embedding_sizes`` cell's stored result."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "embedding_sizes" in "".join(cell["source"]):
            for out in cell["outputs"]:
                if out.get("output_type") == "execute_result":
                    text = "".join(out["data"]["text/plain"])
                    number = re.search(r"\((\d+),", text).group(1)
                    altered = text.replace(f"({number},", f"({int(number) + 1},", 1)
                    out["data"]["text/plain"] = altered
                    return text, altered
    raise AssertionError(f"{NOTEBOOK.name} has no stored embedding_sizes result to alter")


def _nbval(path: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=",
         "--nbval", "--nbval-sanitize-with", str(SANITIZE), "-q", path.name],
        cwd=path.parent, capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_nbval_fails_when_a_stored_output_changes(tmp_path):
    nb = json.loads(NOTEBOOK.read_text())
    n_code = sum(c["cell_type"] == "code" for c in nb["cells"])
    (tmp_path / "as_stored.ipynb").write_text(json.dumps(nb))
    original, altered = _alter_embedding_sizes(nb)
    (tmp_path / "altered.ipynb").write_text(json.dumps(nb))

    rc, out = _nbval(tmp_path / "as_stored.ipynb")
    assert rc == 0 and f"{n_code} passed" in out, out[-3000:]

    rc, out = _nbval(tmp_path / "altered.ipynb")
    assert rc == 1, out[-3000:]
    assert f"1 failed, {n_code - 1} passed" in out, out[-3000:]
    assert "mismatch 'text/plain'" in out, out[-3000:]
    # The report shows the stored (altered) value against the recomputed one.
    assert altered[:12] in out and original[:12] in out, out[-3000:]
