"""Fixtures of the browser tests: one JupyterLab server and one headless Chromium per session.

* ``lab_server``: ``jupyter lab`` on 127.0.0.1 (free port, token, own config/settings/
  workspaces, ``BOKEH_RESOURCES=inline``) serving a temporary root directory;
* ``browser_context``: Playwright's Chromium (``/usr/bin/chromium`` or ``$IRS_CHROMIUM``)
  with a fresh profile and no network but loopback;
* ``lab``: a new page per test, a :class:`lab.LabPage` (``copy_notebook``, ``open_notebook``,
  ``run_all``, ``wait_for_output``, ``bokeh_source``, ``screenshot``); at the end of the test
  its kernels are shut down and the root directory emptied; a failing test leaves a
  screenshot ``FAILED-<test>.png``.

Screenshots go to ``tests/artifacts/`` or ``$IRS_TEST_ARTIFACTS``. Without Chromium or
Playwright the tests are skipped, except in CI (``$CI`` set) where they fail.
Run browser test files one at a time: they share two CPU cores with a kernel and its cluster.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from lab import CHROMIUM_ARGS, LabPage, LabServer, clear_dir

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where screenshots go: ``$IRS_TEST_ARTIFACTS`` or ``tests/artifacts``."""
    path = Path(os.environ.get("IRS_TEST_ARTIFACTS") or REPO / "tests" / "artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    """Path of the Chromium binary; skip without it locally, fail in CI."""
    path = os.environ.get("IRS_CHROMIUM", "/usr/bin/chromium")
    problem = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problem = "the playwright package is not installed (pip install -e '.[test]')"
    if problem is None and not os.access(path, os.X_OK):
        problem = (f"Chromium not found at {path} (apt-get install chromium "
                   "fonts-dejavu-core, or set IRS_CHROMIUM)")
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests need a browser in CI: {problem}")
        pytest.skip(problem)
    return path


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path,
               chromium_executable: str) -> Iterator[LabServer]:
    """A JupyterLab server for the whole session; stopped with SIGTERM at the end."""
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "root"
    root.mkdir()
    server = LabServer(root, base / "state", artifacts_dir / "jupyterlab-server.log")
    server.log_path.write_text("")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def playwright_driver(chromium_executable: str) -> Iterator[Any]:
    """The session's one Playwright driver (its sync API cannot be started twice at once):
    for ``browser_context`` and for tests that drive a Chromium of their own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory, chromium_executable: str,
                    playwright_driver: Any) -> Iterator[Any]:
    """Playwright's persistent Chromium context with a fresh profile."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    context = playwright_driver.chromium.launch_persistent_context(
        str(profile), executable_path=chromium_executable, headless=True,
        args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def lab(request: pytest.FixtureRequest, lab_server: LabServer, browser_context: Any,
        artifacts_dir: Path) -> Iterator[LabPage]:
    """A fresh page on the session's JupyterLab (see :class:`lab.LabPage`)."""
    page = browser_context.new_page()
    helper = LabPage(lab_server, page, artifacts_dir)
    try:
        yield helper
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
            try:
                helper.screenshot(f"FAILED-{name}")
            except Exception as exc:  # the page may be gone; the failure is what matters
                print(f"no failure screenshot: {exc}", file=sys.stderr)
        page.close()
        lab_server.shutdown_kernels()
        clear_dir(lab_server.root_dir)


@pytest.fixture(scope="session")
def notebooks_dir() -> Path:
    """The repository's ``notebooks/`` folder."""
    return NOTEBOOKS
