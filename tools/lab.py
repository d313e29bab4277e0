"""A real JupyterLab server and a headless Chromium page driving it.

:class:`LabServer` starts ``jupyter lab`` on 127.0.0.1 with its own configuration, settings
and workspaces (no news pop-up, Bokeh resources inline) in a root directory of its own.
:class:`LabPage` drives one Playwright page: open a notebook, Run All, wait for outputs, read
Bokeh data sources by name, take screenshots; :func:`restart_kernel` and :func:`set_theme`
do what a user does from JupyterLab's menus. The browser tests (``tests/browser/lab.py``
and its fixtures), the benchmarks that measure or photograph the browser
(``benchmarks/dashboard_cpu.py``, ``benchmarks/studio_screenshots.py``) and docs tools
import it from here; it imports nothing from ``tests``.

>>> find_free_port() > 0
True
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

#: Chromium's arguments: headless, no network but loopback (``--host-resolver-rules``
#: stops even the DNS look-ups Chromium makes for Google hosts).
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]

#: JupyterLab settings of the test server: every cell stays in the DOM (no windowing), so
#: prompts and outputs of cells below the fold can be read.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}

_PROMPT_DONE = re.compile(r"^\[\d+\]:?$")


def find_free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """``jupyter lab`` serving ``root_dir`` on 127.0.0.1, isolated under ``state_dir``.

    Parameters
    ----------
    root_dir
        Directory the server serves; tests copy or write notebooks into it.
    state_dir
        Directory for the server's own configuration, settings, workspaces and runtime files.
    log_path
        File receiving the server's output (read it when a test fails).
    """

    def __init__(self, root_dir: Path, state_dir: Path, log_path: Path) -> None:
        self.root_dir = Path(root_dir)
        self.state_dir = Path(state_dir)
        self.log_path = Path(log_path)
        self.token = os.urandom(16).hex()
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8888``."""
        return f"http://127.0.0.1:{self.port}"

    def _write_config(self) -> dict[str, Path]:
        dirs = {name: self.state_dir / name
                for name in ("config", "settings", "workspaces", "runtime")}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        labconfig = dirs["config"] / "labconfig"
        labconfig.mkdir(exist_ok=True)
        page_config = {"disabledExtensions": {
            "@jupyterlab/apputils-extension:announcements": True}}
        (labconfig / "page_config.json").write_text(json.dumps(page_config))
        for rel, value in LAB_SETTINGS.items():
            plugin, _, fname = rel.rpartition("/")
            target = dirs["settings"] / plugin
            target.mkdir(parents=True, exist_ok=True)
            (target / fname).write_text(json.dumps(value))
        return dirs

    def start(self, timeout: float = 60.0) -> None:
        """Start the server and wait until ``GET /api/status`` answers 200."""
        dirs = self._write_config()
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(dirs["config"]),
               "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]), "BOKEH_RESOURCES": "inline",
               "PYTHONUNBUFFERED": "1"}
        env.pop("JUPYTER_TOKEN", None)
        for attempt in range(3):
            self.port = find_free_port()
            cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                   f"--port={self.port}", "--port-retries=0",
                   f"--IdentityProvider.token={self.token}",
                   f"--ServerApp.root_dir={self.root_dir}", "--allow-root",
                   f"--LabApp.workspaces_dir={dirs['workspaces']}",
                   f"--LabApp.user_settings_dir={dirs['settings']}",
                   "--LabApp.news_url=None"]
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(cmd, cwd=self.root_dir, env=env, stdout=log,
                                             stderr=subprocess.STDOUT)
            if self._wait_ready(timeout):
                return
            self.stop()
            if attempt == 2:
                break
        raise RuntimeError(f"JupyterLab did not start (port {self.port}); its log:\n"
                           f"{self.log_tail()}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                if self.api("GET", "status", timeout=2) is not None:
                    return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)
        return False

    def api(self, method: str, path: str, timeout: float = 10) -> Any:
        """Call the server's REST API (``/api/<path>``) and return the decoded JSON."""
        req = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else {}

    def shutdown_kernels(self) -> None:
        """Delete every session and kernel (their Dask clusters end with them)."""
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}", timeout=30)
        for kernel in self.api("GET", "kernels"):
            self.api("DELETE", f"kernels/{kernel['id']}", timeout=30)

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the server's log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the server (it shuts its kernels down), SIGKILL if it does not exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


class LabPage:
    """One Chromium page on a :class:`LabServer`, with notebook helpers.

    Parameters
    ----------
    server
        The running server.
    page
        A Playwright ``Page``.
    artifacts
        Directory receiving screenshots.
    """

    def __init__(self, server: LabServer, page: Any, artifacts: Path) -> None:
        self.server = server
        self.page = page
        self.artifacts = Path(artifacts)
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        page.on("console", self._on_console)

    def _on_console(self, msg: Any) -> None:
        if msg.type == "error":
            self.errors.append(f"console: {msg.text}")

    # -- notebooks in the server's root directory ------------------------------------------
    def copy_notebook(self, source: str | os.PathLike, name: str | None = None,
                      clear_outputs: bool = True) -> str:
        """Copy a notebook into the server's root; by default without its stored outputs,
        so that what the page shows afterwards was produced by the run. Returns its name."""
        import nbformat

        source = Path(source)
        nb = nbformat.read(source, as_version=4)
        if clear_outputs:
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = []
                    cell.execution_count = None
            nb.metadata.pop("widgets", None)
        name = name or source.name
        nbformat.write(nb, self.server.root_dir / name)
        return name

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """Write a notebook of code cells (a cell starting with ``#md`` is markdown)."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        for src in cells:
            if src.startswith("#md"):
                nb.cells.append(nbformat.v4.new_markdown_cell(src[3:].lstrip()))
            else:
                nb.cells.append(nbformat.v4.new_code_cell(src))
        nbformat.write(nb, self.server.root_dir / name)
        return name

    # -- driving JupyterLab -----------------------------------------------------------------
    def open_notebook(self, name: str, timeout: float = 60.0) -> None:
        """Open ``name`` (relative to the server's root) in a fresh workspace."""
        page = self.page
        page.goto(f"{self.server.url}/lab/tree/{name}?reset&token={self.server.token}",
                  timeout=timeout * 1000)
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=timeout * 1000)
        self.wait_for_kernel(timeout)

    def kernel_name(self) -> str:
        """The kernel name the notebook toolbar shows (``No Kernel`` before one exists)."""
        loc = self.page.locator(".jp-NotebookPanel-toolbar .jp-Toolbar-kernelName").first
        return loc.inner_text().strip() if loc.count() else ""

    def wait_for_kernel(self, timeout: float = 60.0) -> None:
        """Wait until the toolbar names a real kernel and the kernel is idle."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            name = self.kernel_name()
            if name and "no kernel" not in name.lower() and name.lower() != "kernel":
                status = self.page.locator(
                    ".jp-NotebookPanel-toolbar .jp-Toolbar-kernelStatus").first
                title = status.get_attribute("title") if status.count() else ""
                if not title or "idle" in title.lower():
                    return
            time.sleep(0.25)
        raise TimeoutError(f"no kernel after {timeout:.0f} s (toolbar says {self.kernel_name()!r})"
                           f"\nserver log:\n{self.server.log_tail()}")

    def prompts(self) -> list[str]:
        """The input prompts of the code cells, e.g. ``["[1]:", "[*]:", "[ ]:"]``."""
        return [p.strip() for p in self.page.locator(
            ".jp-NotebookPanel .jp-CodeCell .jp-InputPrompt").all_inner_texts()]

    def menu(self, menu: str, item: str) -> None:
        """Click ``item`` in the menu bar's ``menu`` (e.g. ``"Run"``, ``"Run All Cells"``)."""
        self.page.locator(".lm-MenuBar-itemLabel",
                          has_text=re.compile(f"^{re.escape(menu)}$")).click()
        self.page.locator(".lm-Menu-itemLabel",
                          has_text=re.compile(f"^{re.escape(item)}$")).click()

    def run_all(self, timeout: float = 120.0, attempts: int = 3) -> None:
        """Menu Run -> Run All Cells; retried until the first prompt leaves ``[ ]``; then
        wait until every code cell has run. Raises with the error outputs if a cell fails.
        Stored outputs and prompts are cleared first, so that what follows is this run's."""
        self.wait_for_kernel()
        if any(p != "[ ]:" for p in self.prompts()):
            self.menu("Edit", "Clear Outputs of All Cells")
            deadline = time.monotonic() + 10
            while any(p != "[ ]:" for p in self.prompts()) and time.monotonic() < deadline:
                time.sleep(0.2)
        for attempt in range(attempts):
            self.menu("Run", "Run All Cells")
            started = time.monotonic()
            while time.monotonic() - started < 5:
                first = (self.prompts() or ["[ ]:"])[0]
                if first.startswith("[*]") or _PROMPT_DONE.match(first):
                    return self.wait_until_executed(timeout)
                time.sleep(0.2)
            if attempt < attempts - 1:
                self.page.keyboard.press("Escape")
        raise RuntimeError(f"Run All did not start a run; prompts: {self.prompts()}")

    def wait_until_executed(self, timeout: float = 120.0) -> None:
        """Wait until every code cell shows an execution count; raise on an error output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            errors = self.page.locator(".jp-NotebookPanel .jp-OutputArea-output").filter(
                has_text=re.compile(r"Traceback|Error:|---------------------------"))
            prompts = self.prompts()
            if all(_PROMPT_DONE.match(p) for p in prompts):
                return
            if not any(p.startswith("[*]") for p in prompts) and errors.count():
                raise AssertionError("a cell failed:\n" + "\n".join(errors.all_inner_texts()))
            time.sleep(0.3)
        raise TimeoutError(f"cells still running after {timeout:.0f} s: {self.prompts()}")

    def run_cell(self, source: str, timeout: float = 60.0) -> str:
        """Add a code cell below the last one, run it (Shift+Enter) and wait until it ran;
        returns the text of its outputs. Raises if it failed."""
        cells = self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        n = cells.count()
        cells.nth(n - 1).locator(".jp-InputPrompt").click()  # selects it
        self.page.keyboard.press("Escape")  # command mode
        self.page.keyboard.press("b")  # a new code cell below, selected
        cell = cells.nth(n)
        cell.wait_for(timeout=10_000)
        cell.locator(".cm-content").click()
        self.page.keyboard.insert_text(source)  # as text: no auto-indent or auto-brackets
        self.page.keyboard.press("Shift+Enter")
        prompt = cell.locator(".jp-InputPrompt")
        deadline = time.monotonic() + timeout
        while not _PROMPT_DONE.match(prompt.inner_text().strip()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell still running after {timeout:.0f} s: {source!r}")
            time.sleep(0.2)
        text = "\n".join(cell.locator(".jp-OutputArea-output").all_inner_texts())
        if "Traceback" in text or "Error" in text:
            raise AssertionError(f"cell {source!r} failed:\n{text}")
        return text

    def outputs(self) -> Any:
        """Locator of all rendered outputs (text searches belong here, not in the sources)."""
        return self.page.locator(".jp-NotebookPanel .jp-OutputArea-output")

    def wait_for_output(self, text: str | re.Pattern | None = None, selector: str | None = None,
                        timeout: float = 30.0) -> Any:
        """Wait for an output containing ``text`` and/or matching the CSS ``selector``
        (searched inside outputs only); returns the first match's locator."""
        loc = self.outputs()
        if selector is not None:
            loc = loc.locator(selector)
        if text is not None:
            loc = loc.filter(has_text=text)
        loc.first.wait_for(state="visible", timeout=timeout * 1000)
        return loc.first

    # -- Bokeh ------------------------------------------------------------------------------
    def bokeh_source(self, name: str) -> dict[str, list] | None:
        """The columns of the Bokeh model called ``name`` (e.g. a ColumnDataSource with
        ``name="memory"``) as the browser has them, or None if no document has it."""
        return bokeh_source(self.page, name)

    def wait_for_bokeh_source(self, name: str, predicate: Any = bool,
                              timeout: float = 30.0) -> dict[str, list]:
        """Poll :meth:`bokeh_source` until ``predicate(data)`` is true; return the data."""
        deadline = time.monotonic() + timeout
        data = None
        while time.monotonic() < deadline:
            data = self.bokeh_source(name)
            if data is not None and predicate(data):
                return data
            time.sleep(0.3)
        raise TimeoutError(f"Bokeh source {name!r} did not satisfy the condition in "
                           f"{timeout:.0f} s; last value: {data!r}")

    # -- artifacts --------------------------------------------------------------------------
    def screenshot(self, name: str) -> Path:
        """Save a PNG of the page as ``<artifacts>/<name>.png`` and return its path."""
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


#: Reads a named model's columns. Documents are searched newest first (a view sent whole
#: again, like the Dashboard's once displayed, leaves its older document on the page).
#: ``Bokeh.index`` is a Proxy whose ``ownKeys`` lists root ids: once a root was rendered
#: twice the ids repeat and ``Object.values`` throws "'ownKeys' on proxy: trap returned
#: duplicate entries", so its views are read from ``roots``. Columns are read with the data
#: source's own ``columns()`` / ``get_column()`` (``data`` is a Map or a plain object).
_BOKEH_SOURCE_JS = """
(name) => {
  const B = window.Bokeh;
  if (B === undefined) return null;
  const docs = [...(B.documents || [])];
  const roots = B.index == null ? [] : (B.index.roots || []);
  for (const v of roots) if (v && v.model && v.model.document) docs.push(v.model.document);
  const plain = (x) => (typeof x === "object" && x !== null && x.length !== undefined)
    ? Array.from(x, plain) : x;
  for (const doc of [...new Set(docs)].reverse()) {
    const model = doc.get_model_by_name(name);
    if (model == null) continue;
    if (typeof model.columns !== "function") return null;
    const out = {};
    for (const k of model.columns()) out[k] = plain(model.get_column(k));
    return out;
  }
  return null;
}
"""


def bokeh_source(page: Any, name: str) -> dict[str, list] | None:
    """The columns of the Bokeh model called ``name`` in any Bokeh document of ``page``
    (a JupyterLab page or a standalone HTML file), or None."""
    return page.evaluate(_BOKEH_SOURCE_JS, name)


def clear_dir(path: Path) -> None:
    """Empty ``path`` (used between tests on the server's root)."""
    for child in Path(path).iterdir():
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def restart_kernel(lab: LabPage) -> None:
    """Kernel -> Restart Kernel... -> Restart, as a user does; wait for the new kernel."""
    lab.menu("Kernel", "Restart Kernel…")
    lab.page.locator(".jp-Dialog .jp-mod-accept").filter(has_text="Restart").click()
    time.sleep(1.0)
    lab.wait_for_kernel(60)


def set_theme(page: Any, theme: str) -> None:
    """Settings > Theme > ``theme``; wait until the page's body says so."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Theme$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(theme)}$")).click()
    light = "false" if "Dark" in theme else "true"
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'",
                           timeout=30_000)
    page.wait_for_timeout(1500)  # the theme's stylesheet is applied, then painted
