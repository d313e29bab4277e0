"""README.md is the front page: short, its links resolve, its quick start runs as printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")

#: Markdown links and images with a relative target: ``[text](target)``, ``![alt](target)``.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _fenced(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", TEXT, re.S | re.M)


def test_readme_is_short() -> None:
    assert len(TEXT.splitlines()) <= 150


def test_readme_has_the_two_commands() -> None:
    commands = [block.strip() for block in _fenced("bash")]
    assert len(commands) == 2, commands
    demo, tests = commands
    assert "\n" not in demo and demo.endswith("irs demo")
    assert "\n" not in tests and tests.endswith('python -m pytest -m "not gpu"')


@pytest.mark.parametrize("target", sorted({t for t in LINK.findall(TEXT)
                                            if not re.match(r"[a-z]+://", t)}))
def test_readme_relative_links_resolve(target: str) -> None:
    path = ROOT / target.split("#")[0]
    assert path.exists(), f"README.md links to {target!r}, which is not in the repository"


def test_readme_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (code,) = [block for block in _fenced("python") if "irs.Workflow(" in block]
    assert len(code.strip("\n").splitlines()) <= 15
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})  # the repository's own text

    raw = pd.read_parquet(tmp_path / "criteo", columns=["C1", "label"])
    out = pd.read_parquet(tmp_path / "out")
    assert out.shape == (len(raw), 40)
    assert (out["label"].to_numpy() == raw["label"].to_numpy()).all()  # input order kept
    # Categorify(freq_threshold=2): 0 padding, 1 null, 2 out of vocabulary, then every value
    # seen at least twice by descending count, ties by ascending value.
    counts = raw["C1"].value_counts()
    kept = counts[counts >= 2].sort_index().sort_values(ascending=False, kind="stable")
    cardinality = 3 + len(kept)
    assert printed.getvalue().startswith(f"({cardinality}, ")
    assert out["C1"].max() == cardinality - 1
    assert (out["C1"][raw["C1"].isna()] == 1).all()
    assert (out["C1"][raw["C1"].isin(counts[counts < 2].index)] == 2).all()
    assert (out["C1"][raw["C1"] == kept.index[0]] == 3).all()
    assert pq.read_schema(next((tmp_path / "out").glob("*.parquet"))).field("I1").type == "float"

    # Run twice, as a reader pasting it again would: the output is replaced whole.
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, "README.md", "exec"), {})
    assert pd.read_parquet(tmp_path / "out").equals(out)


def test_readme_performance_table_is_the_one_made_from_the_result_files() -> None:
    from benchmarks.headline import headline_table, readme_block

    assert readme_block(TEXT) == headline_table(), (
        "README.md's performance table drifted from benchmarks/results: "
        "run `python -m benchmarks headline`")


@pytest.mark.parametrize("rows, label", [("8M", "criteo-kaggle-8M"),
                                          ("32M", "criteo-kaggle-32M")])
def test_readme_performance_numbers_are_the_reports_medians(rows: str, label: str) -> None:
    """Read the other way: each README number is the wall-time median in the harness's own
    Markdown report (the table the Performance page shows), rounded to 0.1 s."""
    report = (ROOT / "benchmarks" / "results" / f"{label}.md").read_text()
    header, _, *body = [line for line in report.splitlines() if line.startswith("|")]
    names = [c.strip() for c in header.strip("|").split("|")]
    wall = names.index("wall s, whole process (median)")
    medians = {cells[0]: float(cells[wall].replace(",", ""))
               for cells in ([c.strip() for c in line.strip("|").split("|")] for line in body)}
    (row,) = [line for line in TEXT.splitlines() if line.startswith(f"| {rows} |")]
    cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
    order = ["irs-local", "irs-cluster", "polars", "pyarrow-floor"]
    shown = [float(cell.removesuffix(" s")) for cell in cells[1:5]]
    # the report rounds to 0.01 s and README to 0.1 s: equal within both roundings
    assert shown == pytest.approx([medians[name] for name in order], abs=0.051)
    assert float(cells[5]) == pytest.approx(medians["irs-local"] / medians["pyarrow-floor"],
                                            abs=0.006)


def test_readme_out_of_core_numbers_are_the_reports_medians() -> None:
    (row,) = [line for line in TEXT.splitlines() if line.startswith("| out of core")]
    for rows, label in [("32M", "scaling-out-of-core-32M-3GB-kaggle"),
                        ("100M", "scaling-out-of-core-100M-3GB-kaggle")]:
        report = (ROOT / "benchmarks" / "results" / f"{label}.md").read_text()
        header, _, first = [line for line in report.splitlines() if line.startswith("|")][:3]
        names = [c.strip() for c in header.strip("|").split("|")]
        cells = [c.strip() for c in first.strip("|").split("|")]
        wall = float(cells[names.index("wall s, whole process (median)")].replace(",", ""))
        shown = float(row.split(f"{rows}: ")[1].split(" s")[0])
        assert shown == pytest.approx(wall, abs=0.051), (label, row)


NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve"]


def test_the_notebook_count_said_is_the_folders() -> None:
    """README and the getting-started page say how many notebooks ``notebooks/`` holds."""
    count = len(list((ROOT / "notebooks").glob("*.ipynb")))
    started = (ROOT / "docs" / "getting-started.md").read_text()
    for name, text in (("README.md", TEXT), ("docs/getting-started.md", started)):
        said = re.findall(rf"\b({'|'.join(NUMBER_WORDS)}) notebooks(?:,| in )", text, re.I)
        assert said, f"{name} no longer says how many notebooks there are"
        assert {NUMBER_WORDS.index(w.lower()) for w in said} == {count}, (name, said, count)
