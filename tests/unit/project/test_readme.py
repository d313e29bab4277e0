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
