"""The documentation site builds with warnings as errors and covers the public API.

One build (``python -m sphinx -W -b html docs OUT``, as CI runs it) into a temporary folder;
the tests then read the built pages.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(DOCS / "_ext"))

import irs_api  # noqa: E402
import irs_performance  # noqa: E402
import irs_tutorials  # noqa: E402

import interactive_recsys as irs  # noqa: E402
from interactive_recsys.ops import OPERATORS  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stdout}\n{proc.stderr}"
    return out / "html"


def text_of(page: Path) -> str:
    body = page.read_text(encoding="utf-8")
    body = body[body.find("<article"):body.find("</article>")]
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def test_every_public_name_and_operator_has_an_api_page(site):
    pages = {p.stem for p in (site / "api" / "generated").glob("*.html")}
    wanted = {f"interactive_recsys.{name}" for name in irs.__all__}
    wanted |= {f"interactive_recsys.{name}" for name in ("Loader", "predict_topk", "ui", "models")}
    wanted |= {f"interactive_recsys.ops.{name}" for name in OPERATORS}
    assert len(OPERATORS) >= 20 and len(irs.__all__) >= 20
    assert sorted(wanted - pages) == []
    assert sorted(set(irs_api.expected_pages()) - pages) == []
    for name in irs.__all__:  # each page documents its object, not just a title
        text = text_of(site / "api" / "generated" / f"interactive_recsys.{name}.html")
        assert name in text and len(text.split()) > 8, name


def test_operator_pages_have_the_declared_parameters_table(site):
    for name, op in OPERATORS.items():
        page = (site / "api" / "generated" / f"interactive_recsys.ops.{name}.html")
        source = page.read_text(encoding="utf-8")
        if not op.params:
            assert "takes no parameters" in text_of(page)
            continue
        table = source[source.find("irs-param-table"):]
        table = html.unescape(re.sub(r"<[^>]+>", " ", table[:table.find("</table>")]))
        for param, spec in op.params.items():
            assert param in table, (name, param)
            assert spec.describe() in " ".join(table.split()), (name, param)
        # the docstring's own Parameters section is left out: one table per page
        assert source.count("Parameters") == 1, name


def test_the_guide_pages_and_tutorials_are_in_the_site(site):
    for page in sorted((DOCS / "guide").glob("*.md")):
        assert (site / "guide" / f"{page.stem}.html").exists(), page.name
    if (DOCS / "getting-started.md").exists():
        assert (site / "getting-started.html").exists()
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 9
    assert any(irs_tutorials.bokeh_version(n.read_text()) for n in notebooks)
    for notebook in notebooks:
        page = site / "tutorials" / "generated" / f"{notebook.stem}.html"
        assert page.exists(), notebook.name
        stored = [o for c in json.loads(notebook.read_text())["cells"]
                  for o in c.get("outputs", []) if o.get("output_type") == "stream"]
        version = irs_tutorials.bokeh_version(notebook.read_text())
        assert (f"cdn.bokeh.org/bokeh/release/bokeh-{version}.min.js" in page.read_text()) \
            == (version is not None), notebook.name  # its plots draw on the page
        if stored:  # rendered from the stored outputs, not re-executed
            first = "".join(stored[0]["text"]).strip().splitlines()[0].strip()
            assert first[:40] in " ".join(text_of(page).split()), (notebook.name, first)


def test_the_performance_page_shows_every_current_result(site):
    text = " ".join(text_of(site / "performance.html").split())
    labels = sorted(p.stem for p in RESULTS.glob("*.json"))
    assert labels
    for label in labels:
        result = json.loads((RESULTS / f"{label}.json").read_text())
        assert label in text
        assert result["command"] in text, label
        assert irs_performance.commit_of(result) in text, label


def test_the_performance_page_shows_readmes_table(site):
    """README's headline numbers are on the page it links to, row by row."""
    from benchmarks.headline import headline_table

    text = " ".join(text_of(site / "performance.html").split())
    rows = [line for line in headline_table().splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 3
    for row in rows:
        cells = [c.strip().strip("*") for c in row.strip("|").split("|") if c.strip()]
        assert " ".join(cells) in text, row


def test_one_current_result_file_per_scenario():
    """No dated copies or commit hashes in names; each JSON has its report and records what
    the Performance page needs."""
    names = sorted(p.name for p in RESULTS.iterdir())
    assert not [n for n in names if re.search(r"\d{4}-\d{2}-\d{2}|-[0-9a-f]{7}\b", n)]
    assert {Path(n).suffix for n in names} <= {".json", ".md"}
    for label in sorted(p.stem for p in RESULTS.glob("*.json")):
        assert (RESULTS / f"{label}.md").exists(), label
        result = json.loads((RESULTS / f"{label}.json").read_text())
        assert result["command"].startswith("python -m benchmarks "), label
        assert result.get("machine"), label
        assert irs_performance.commit_of(result) != "not recorded", label
