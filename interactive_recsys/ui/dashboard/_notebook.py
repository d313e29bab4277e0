"""The dashboard's place in a notebook: BokehJS on the page, one set of dashboards per cell
(re-running the cell disposes of the ones it made), and the link to Dask's own dashboard.

Outside IPython every function here does nothing (or answers ``None``):

>>> load_bokehjs(); hook_cells(); current_cell() is None
True
"""

from __future__ import annotations

import weakref
from typing import Any

from interactive_recsys.ui._bokehjs import BOKEHJS
from interactive_recsys.ui._bokehjs import load_bokehjs as _load_bokehjs


def load_bokehjs() -> None:
    """Put BokehJS on the notebook page once (inline: works offline; one copy, see
    :mod:`interactive_recsys.ui._bokehjs`)."""
    _load_bokehjs()


# ---- re-running a cell disposes of the dashboards it made ----------------------------------
_BY_CELL: dict[str, list[weakref.ref]] = {}
_CURRENT_CELL: list[str | None] = [None]
_HOOKED: list[bool] = [False]


def hook_cells() -> None:
    """Once per kernel: before a cell runs, dispose of the dashboards it made last time."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or _HOOKED[0]:
        return

    def pre_run_cell(info: Any) -> None:
        cell = getattr(info, "cell_id", None)
        _CURRENT_CELL[0] = cell
        for ref in _BY_CELL.pop(cell, []) if cell else []:
            dash = ref()
            if dash is not None:
                dash.dispose()

    shell.events.register("pre_run_cell", pre_run_cell)
    _HOOKED[0] = True


def current_cell() -> str | None:
    """The id of the notebook cell running now (JupyterLab sends it with each execution)."""
    try:
        from IPython import get_ipython

        kernel = get_ipython().kernel
        parent = kernel.get_parent("shell") if hasattr(kernel, "get_parent") else {}
        return (parent.get("metadata") or {}).get("cellId") or _CURRENT_CELL[0]
    except Exception:
        return _CURRENT_CELL[0]


def made_in_cell(dashboard: Any) -> None:
    """Remember that the cell running now made ``dashboard`` (weakly): re-running the cell
    disposes of it."""
    cell = current_cell()
    if cell:
        _BY_CELL.setdefault(cell, []).append(weakref.ref(dashboard))


def client_dashboard_link(client: Any) -> str | None:
    """Dask's own dashboard address, when the cluster serves one (the scheduler's HTTP
    server may run without the dashboard pages: the link is only given if they answer)."""
    import urllib.request

    try:
        if "dashboard" not in client.scheduler_info().get("services", {}):
            return None
        link = client.dashboard_link
        with urllib.request.urlopen(link, timeout=1.0) as response:
            return link if response.status == 200 else None
    except Exception:
        return None


__all__ = ["BOKEHJS", "client_dashboard_link", "current_cell", "hook_cells", "load_bokehjs",
           "made_in_cell"]
