"""Without Chromium the browser tests are skipped on a workstation but FAIL in CI, so that a
CI image that lost its browser cannot pass silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import HANG_S

HERE = Path(__file__).parent


def _run_without_chromium(tmp_path: Path, ci: bool) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["IRS_CHROMIUM"] = str(tmp_path / "no-chromium")
    env["IRS_TEST_ARTIFACTS"] = str(tmp_path / "artifacts")
    if ci:
        env["CI"] = "true"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=",
         "--import-mode=importlib", f"--confcutdir={HERE}", "-rsE", "-q",
         str(HERE / "test_lab_fixtures.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("ci", [False, True], ids=["workstation", "ci"])
def test_missing_chromium_skips_locally_and_fails_in_ci(tmp_path, ci):
    rc, out = _run_without_chromium(tmp_path, ci)
    assert "no-chromium" in out, out[-2000:]  # the message names the path it looked at
    if ci:
        assert rc == 1 and "1 error" in out, out[-2000:]
        assert "browser tests need a browser in CI" in out
    else:
        assert rc == 0 and "1 skipped" in out, out[-2000:]
    assert not (tmp_path / "artifacts" / "jupyterlab-server.log").exists()  # no server started
