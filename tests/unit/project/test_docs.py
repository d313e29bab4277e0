"""The documentation site builds with warnings as errors, every cross-reference resolved,
writes nothing into ``docs/``, and covers the public API.

One build (``python -m sphinx -W -n -b html docs OUT``, README's command, run by CI through
the test suite) into a temporary folder; the tests then read the built pages.
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


def snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and folder under ``folder``: (mode, size, modification time in ns)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts:  # Python's own, when it imports docs/_ext
            continue
        info = path.lstat()
        out[str(path.relative_to(folder))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return out


#: ``docs/`` before and after the build (see ``test_the_build_writes_nothing_into_docs``).
DOCS_STATES: list[dict[str, tuple[int, int, int]]] = []


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    DOCS_STATES[:] = [snapshot(DOCS)]
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html",
         "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    DOCS_STATES.append(snapshot(DOCS))
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stdout}\n{proc.stderr}"
    return out / "html"


def test_the_build_writes_nothing_into_docs(site):
    """Issue 51: a read-only checkout builds the docs. Generated pages live under the build
    folder or in memory, so no file or folder under ``docs/`` is added, removed or touched
    by the build. (A snapshot, not a ``chmod a-w`` copy: CI runs as root, who writes
    anywhere, and the build also reads ``notebooks/`` and ``benchmarks/`` beside ``docs/``.)"""
    before, after = DOCS_STATES
    assert sorted(set(after) - set(before)) == [], "the build created these under docs/"
    assert sorted(set(before) - set(after)) == [], "the build removed these from docs/"
    assert [p for p in before if before[p] != after[p]] == [], "the build changed these"
    assert (site / "api" / "generated").is_dir() and (site / "tutorials" / "generated").is_dir()


def toctree_entries(page: Path) -> list[str]:
    """The entries of every ``{toctree}`` of a MyST page, options left out."""
    blocks = re.findall(r"```\{toctree\}\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return [line.strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.strip().startswith(":")]


def test_no_toctree_uses_a_glob_and_each_section_lists_its_pages_once():
    """Issue 52: every page is placed by hand, in reading order; a new page that is not
    listed fails here (and the build warns that it is in no toctree)."""
    for page in sorted(DOCS.rglob("*.md")):
        assert ":glob:" not in page.read_text(encoding="utf-8"), page
    for section in ("guide", "develop"):
        entries = toctree_entries(DOCS / section / "index.md")
        pages = sorted(p.stem for p in (DOCS / section).glob("*.md") if p.stem != "index")
        assert sorted(entries) == pages, section
        assert len(entries) == len(set(entries)), section
    assert "develop/index" in toctree_entries(DOCS / "index.md")


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
    for page in sorted([*(DOCS / "guide").glob("*.md"), *(DOCS / "develop").glob("*.md")]):
        assert (site / page.parent.name / f"{page.stem}.html").exists(), page.name
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


def test_tutorial_pages_show_the_widgets_pictures(site):
    """Each widget of a tutorial is its picture on the page (``tools/doc_images.py``)."""
    from tools import doc_images

    notebooks = doc_images.widget_notebooks()
    assert notebooks
    for notebook in notebooks:
        page = (site / "tutorials" / "generated" / f"{notebook.stem}.html").read_text()
        images = re.findall(r'<img[^>]+src="([^"]+)"', page)
        assert len(images) >= len(doc_images.widget_cells(notebook)), notebook.name
        for src in images:
            assert (site / "tutorials" / "generated" / src).resolve().exists(), src


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
