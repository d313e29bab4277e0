"""Helpers of the browser tests, imported by the fixtures (``conftest.py``) and the test
modules as ``lab``: the JupyterLab + Chromium driver from :mod:`tools.lab` (``LabServer``,
``LabPage``, ``CHROMIUM_ARGS``, ``restart_kernel``, ``set_theme``...), and what several
test modules share: the small Studio data and its expected workflow, the 40-column Criteo
Studio, clicks and messages of the Studio, the click budget's counter.

Test modules import helpers from here, never from another test module.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # tools/ is a folder of the repository, not an installed package
    sys.path.insert(0, str(REPO))

import interactive_recsys as irs  # noqa: E402
from interactive_recsys import ops  # noqa: E402
from tools.lab import (  # noqa: E402
    CHROMIUM_ARGS,
    LAB_SETTINGS,
    LabPage,
    LabServer,
    bokeh_source,
    clear_dir,
    find_free_port,
    restart_kernel,
    set_theme,
)

__all__ = ["CHROMIUM_ARGS", "LAB_SETTINGS", "LabPage", "LabServer", "bokeh_source",
           "clear_dir", "find_free_port", "restart_kernel", "set_theme"]

ROWS, PREVIEW_ROWS = 3000, 300
VIEWPORT = {"width": 1440, "height": 900}
CRITEO_ROWS = 100_000
CATS, CONTS = ["C1", "C2"], ["I1", "I2"]


def make_frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({
        "label": rng.integers(0, 2, ROWS),
        "I1": rng.poisson(4, ROWS).astype("float64"),
        "I2": rng.normal(10, 3, ROWS),
        "C1": [f"a{int(v)}" for v in rng.zipf(1.5, ROWS) % 50],
        "C2": [f"b{int(v)}" for v in rng.integers(0, 8, ROWS)],
    })
    frame.loc[rng.random(ROWS) < 0.1, "I1"] = np.nan
    return frame


def expected_workflow() -> irs.Workflow:
    return irs.Workflow((CATS >> ops.Categorify(freq_threshold=2))
                        + (CONTS >> ops.FillMissing() >> ops.Normalize()))


def click_button(page, css: str) -> None:
    page.locator(f".irs-studio .{css}").first.click()


def wait_message(page, text: str | re.Pattern) -> None:
    page.locator(".irs-builder-messages .irs-msg").filter(has_text=text).first.wait_for(
        timeout=30_000)


class Counted:
    """Clicks and keystrokes made through it, counted (the click budget)."""

    def __init__(self, page) -> None:
        self.page, self.clicks, self.keys = page, 0, 0

    def click(self, selector: str, **kwargs) -> None:
        self.page.locator(selector).first.click(**kwargs)
        self.clicks += 1

    def key(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.keys += 1


def open_criteo_studio(lab) -> str:
    """The 40-column data in the server's root and a notebook showing the Studio on it (the
    run of that cell is the budget's click "open the Studio"); returns the data path."""
    lab.page.set_viewport_size(VIEWPORT)
    path = irs.datasets.synthetic_criteo(rows=CRITEO_ROWS, seed=0,
                                         path=lab.server.root_dir / "criteo")
    name = lab.write_notebook("criteo.ipynb", [
        "import interactive_recsys as irs\nstudio = irs.ui.Studio('criteo')\nstudio"])
    lab.open_notebook(name)
    lab.run_all(timeout=120)
    lab.page.locator(".irs-studio .irs-cl-row").nth(39).wait_for(state="attached",
                                                                  timeout=60_000)
    return str(path)


def assert_in_view(locator, near=None, within: float = 400) -> None:
    """``locator`` is on screen (inside the 1440x900 viewport), and within ``within`` px
    (vertically) of the control ``near`` when given: feedback next to its cause."""
    box = locator.bounding_box()
    assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= VIEWPORT["height"], box
    if near is not None:
        cause = near.bounding_box()
        assert abs(box["y"] - cause["y"]) <= within, (box, cause)


def wait_run_finished(page, timeout: float = 240) -> None:
    status = page.locator(".irs-builder-status span")
    status.filter(has_text=re.compile("finished|error|cancelled")).first.wait_for(
        timeout=timeout * 1000)
    assert page.locator(".irs-builder-status .irs-run-finished").count() == 1, \
        status.inner_text()
