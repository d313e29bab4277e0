"""``.ci/run`` runs README's two commands exactly as README prints them, and nothing a newcomer
would not run (no pip upgrade): it reads them from README.md's marked ```bash blocks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import HANG_S

REPO = Path(__file__).resolve().parents[3]
CI = REPO / ".ci" / "run"
MARKER = re.compile(r"^<!-- \.ci/run runs this block as printed: (\w+) -->\n```bash\n(.*?)\n```$",
                    re.MULTILINE | re.DOTALL)


def _readme_blocks(text: str) -> dict[str, str]:
    blocks = {}
    for name, body in MARKER.findall(text):
        assert name not in blocks, f"README.md marks two blocks {name!r}"
        blocks[name] = body
    return blocks


def _ci(tmp: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(tmp / ".ci" / "run"), *args], cwd=tmp, capture_output=True,
                          text=True, timeout=HANG_S, env=env)


def _fake_checkout(tmp: Path, readme: str) -> Path:
    (tmp / ".ci").mkdir()
    shutil.copy2(CI, tmp / ".ci" / "run")
    (tmp / "README.md").write_text(readme)
    return tmp


def test_readme_marks_the_main_and_the_test_command():
    blocks = _readme_blocks((REPO / "README.md").read_text())
    assert set(blocks) == {"main", "test"}
    main, test = blocks["main"], blocks["test"]
    assert main.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e . ")
    assert main.endswith("&& irs demo")
    assert 'pip install -e ".[test,torchrec]"' in test
    assert test.endswith('&& python -m pytest -m "not gpu"')
    for block in (main, test):
        assert "--upgrade pip" not in block and "-U pip" not in block


def test_ci_prints_exactly_the_commands_readme_prints():
    blocks = _readme_blocks((REPO / "README.md").read_text())
    out = subprocess.run([str(CI), "--print"], capture_output=True, text=True, check=True,
                         timeout=HANG_S).stdout
    assert out == f"{blocks['main']}\n{blocks['test']}\n"


def test_ci_runs_nothing_but_readme_commands_and_ruff():
    """Every command line of .ci/run (outside the README reader and --print) is one of: running
    a README block, the sudo shim, or ruff; no pip of its own."""
    code = [ln.strip() for ln in CI.read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]
    assert not [ln for ln in code if re.search(r"\bpip\b", ln)], "no pip step outside README"
    assert 'bash -c "$MAIN"' in code and 'bash -c "$TEST"' in code
    assert code[-1] == ".venv/bin/ruff check ."


def test_ci_runs_the_marked_blocks_in_order_then_ruff(tmp_path):
    """Runs .ci/run for real on a README whose blocks leave a trace, with a ruff stand-in."""
    sudo = "sudo true && " if os.getuid() == 0 else ""  # as root, README's sudo runs its command
    readme = (
        "# A project\n\n```bash\necho unmarked >> trace\n```\n\n"
        "<!-- .ci/run runs this block as printed: test -->\n```bash\n"
        f"{sudo}echo \"test $(cat trace | wc -l)\" >> trace && mkdir -p .venv/bin && "
        "printf '#!/bin/sh\\necho ruff \"$*\" >> trace\\n' > .venv/bin/ruff && "
        "chmod +x .venv/bin/ruff\n```\n\n"
        "<!-- .ci/run runs this block as printed: main -->\n```bash\necho main >> trace\n```\n")
    checkout = _fake_checkout(tmp_path, readme)
    done = _ci(checkout)
    assert done.returncode == 0, done.stderr
    assert (checkout / "trace").read_text().split("\n") == ["main", "test 1", "ruff check .", ""]


@pytest.mark.parametrize("readme, name", [
    ("no markers\n", "main"),
    ("<!-- .ci/run runs this block as printed: main -->\n```bash\ntrue\n```\n", "test"),
    ("<!-- .ci/run runs this block as printed: main -->\n\n```bash\ntrue\n```\n"
     "<!-- .ci/run runs this block as printed: test -->\n```bash\ntrue\n```\n", "main"),
    ("<!-- .ci/run runs this block as printed: main -->\n```bash\ntrue\n```\n"
     "<!-- .ci/run runs this block as printed: test -->\n```bash\ntrue\n", "test"),
])
def test_ci_refuses_a_readme_without_both_blocks(tmp_path, readme, name):
    """A missing marker, a marker not right above the fence, or an unclosed fence: .ci/run
    stops before running anything and names the block."""
    checkout = _fake_checkout(tmp_path, readme)
    done = _ci(checkout)
    assert done.returncode == 2
    assert f"after its '{name}' marker" in done.stderr
    assert not (checkout / ".venv").exists()
