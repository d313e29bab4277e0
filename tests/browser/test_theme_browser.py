"""The Studio in JupyterLab's light and dark themes (JupyterLab + headless Chromium, 1440x900).

A Studio with a two-branch workflow and a one-worker cluster; in each theme the test reads
computed colours from the page:

* every graph node's label contrasts with its fill (WCAG contrast ratio at least 4.5);
* no element of the Studio has a light background in the dark theme (nor a dark one in the
  light theme), the output areas included;
* the dashboard's Bokeh plots follow the theme (their background is dark in the dark theme).

Screenshots of the Build and Cluster tabs in both themes go to the artifacts folder
(``theme-{light,dark}-{build,cluster}.png``)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from lab import set_theme

VIEWPORT = {"width": 1440, "height": 900}

NOTEBOOK = [
    "import interactive_recsys as irs\nfrom interactive_recsys import ops\n"
    "from distributed import Client",
    "client = Client(n_workers=1, threads_per_worker=1, processes=False,\n"
    "                dashboard_address=None)",
    "workflow = irs.Workflow((['C1', 'C2'] >> ops.Categorify(freq_threshold=2))\n"
    "                        + (['I1'] >> ops.FillMissing() >> ops.Normalize()))\n"
    "studio = irs.ui.Studio('clicks.parquet', workflow=workflow, client=client)\nstudio",
]

#: Luminance helpers shared by the checks below (WCAG 2 relative luminance).
_COLOUR_JS = """
window.__irsColour = (() => {
  const parse = (css) => {
    const m = css.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const contrast = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  return { parse, lum, contrast };
})();
"""

#: For each graph node: its label's fill, the rectangle's fill, and their contrast ratio.
_NODE_CONTRAST_JS = """
() => [...document.querySelectorAll('.irs-dag g.irs-dag-node')].map((g) => {
  const C = window.__irsColour;
  const rect = g.querySelector(':scope > rect');
  const label = g.querySelector(':scope > text');
  const fill = C.parse(getComputedStyle(rect).fill);
  const text = C.parse(getComputedStyle(label).fill);
  return { id: g.dataset.id, fill: getComputedStyle(rect).fill,
           text: getComputedStyle(label).fill, ratio: C.contrast(fill, text) };
})
"""

#: Visible elements of the Studio whose own background is opaque and dark (``light``) or
#: light (not ``light``): what would clash with the theme. Coloured buttons (primary,
#: success...) keep their colour in both themes and are left out.
_CLASHING_BACKGROUNDS_JS = """
(light) => {
  const C = window.__irsColour;
  const out = [];
  for (const el of document.querySelectorAll('.irs-studio, .irs-studio *')) {
    if (el.closest('.bk-Figure, .bk-root, svg') || !el.getClientRects().length) continue;
    if (['mod-primary', 'mod-success', 'mod-info', 'mod-warning', 'mod-danger']
        .some((c) => el.classList.contains(c))) continue;
    const box = el.getBoundingClientRect();
    if (box.width < 8 || box.height < 8) continue;
    const bg = C.parse(getComputedStyle(el).backgroundColor);
    if (!bg || bg.a < 0.5) continue;
    const l = C.lum(bg);
    if (light ? l < 0.2 : l > 0.4) out.push(`${el.tagName}.${el.className} ${getComputedStyle(el).backgroundColor}`);
  }
  return out;
}
"""

#: The background colours of the Plot models in the page's Bokeh documents.
_PLOT_BACKGROUNDS_JS = """
() => {
  const B = window.Bokeh;
  if (B === undefined) return [];
  const docs = [...(B.documents || [])];
  const roots = B.index == null ? [] : (B.index.roots || []);
  for (const v of roots) if (v && v.model && v.model.document) docs.push(v.model.document);
  const out = [];
  for (const doc of new Set(docs)) {
    for (const m of doc.all_models) {
      if (m.background_fill_color !== undefined && m.toolbar !== undefined) {
        out.push(String(m.background_fill_color));
      }
    }
  }
  return out;
}
"""


def make_frame(rows: int = 2000) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({
        "label": rng.integers(0, 2, rows),
        "I1": rng.poisson(4, rows).astype("float64"),
        "C1": [f"a{int(v)}" for v in rng.zipf(1.5, rows) % 40],
        "C2": [f"b{int(v)}" for v in rng.integers(0, 8, rows)],
    })


def luminance(hex_colour: str) -> float:
    """WCAG relative luminance of ``#rrggbb``."""
    channels = [int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def open_tab(page, title: str) -> None:
    page.locator(".irs-studio-tabs .lm-TabBar-tab").filter(has_text=title).click()


def check_theme(lab, name: str, light: bool) -> None:
    page = lab.page
    open_tab(page, "Build")
    page.locator(".irs-dag g.irs-dag-op").first.wait_for()
    page.evaluate(_COLOUR_JS)
    nodes = page.evaluate(_NODE_CONTRAST_JS)
    assert len(nodes) >= 8, nodes
    poor = [n for n in nodes if n["ratio"] < 4.5]
    assert poor == [], poor
    clashing = page.evaluate(_CLASHING_BACKGROUNDS_JS, light)
    assert clashing == [], clashing
    page.locator(".irs-studio .irs-dag").scroll_into_view_if_needed()
    lab.screenshot(f"theme-{name}-build")

    open_tab(page, "Cluster")
    page.locator(".irs-studio .irs-dashboard .bk-Figure canvas").first.wait_for(
        timeout=60_000)

    def plots_follow() -> list[str]:
        colours = page.evaluate(_PLOT_BACKGROUNDS_JS)
        ok = colours and all((luminance(c) > 0.5) == light for c in colours
                             if re.fullmatch(r"#[0-9a-fA-F]{6}", c))
        return colours if ok else []

    deadline = 30
    while not plots_follow() and deadline > 0:
        page.wait_for_timeout(500)
        deadline -= 0.5
    assert plots_follow(), page.evaluate(_PLOT_BACKGROUNDS_JS)
    page.evaluate(_COLOUR_JS)
    clashing = page.evaluate(_CLASHING_BACKGROUNDS_JS, light)
    assert clashing == [], clashing
    page.wait_for_timeout(1000)  # the canvas repainted
    lab.screenshot(f"theme-{name}-cluster")


def test_studio_follows_light_and_dark_theme(lab):
    page = lab.page
    page.set_viewport_size(VIEWPORT)
    make_frame().to_parquet(lab.server.root_dir / "clicks.parquet")
    name = lab.write_notebook("theme.ipynb", NOTEBOOK)
    lab.open_notebook(name)
    lab.run_all(timeout=120)
    page.locator(".irs-studio .irs-dag g.irs-dag-op").first.wait_for(timeout=60_000)
    try:
        set_theme(page, "JupyterLab Light")
        check_theme(lab, "light", light=True)
        set_theme(page, "JupyterLab Dark")
        check_theme(lab, "dark", light=False)
    finally:
        set_theme(page, "JupyterLab Light")  # the theme is a user setting: leave it light
    assert lab.errors == [], lab.errors
