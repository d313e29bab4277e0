"""The refit guide's measured table is the refit benchmark's result files, row by row: a
number on the page comes from the file it names (``benchmarks/results/refit-threshold-*``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GUIDE = (ROOT / "docs" / "guide" / "refit.md").read_text()
ROW = re.compile(r"^\| ([\d,]+) \| ([\d.]+) s \| ([\d.]+) s \| (\d+)% \| `(benchmarks/results/"
                 r"refit-threshold-[\w-]+)\.md` \|$", re.M)


def medians(result: Path) -> tuple[int, float, float, float]:
    data = json.loads(result.read_text())
    first, refit = data["steps"][0], data["steps"][1]
    assert first["step"] == "first fit" and refit["step"].startswith("refit"), result
    return data["rows"], first["wall_s"], refit["wall_s"], data["threshold_ratio"]["wall"]


def test_the_guide_s_refit_numbers_are_the_result_files():
    rows = ROW.findall(GUIDE)
    assert len(rows) >= 2
    for count, first, refit, share, name in rows:
        n, first_s, refit_s, ratio = medians(ROOT / f"{name}.json")
        assert int(count.replace(",", "")) == n, name
        assert (float(first), float(refit)) == (round(first_s, 2), round(refit_s, 2)), name
        assert int(share) == round(ratio * 100), name


def test_the_guide_s_cluster_sentence_is_its_result_file():
    said = re.search(r"2M rows: ([\d.]+) s\s+against ([\d.]+) s \((\d+)%\)", GUIDE)
    assert said, "the refit guide no longer gives the cluster's figures"
    _, first_s, refit_s, ratio = medians(
        ROOT / "benchmarks" / "results" / "refit-threshold-cluster-kaggle.json")
    assert (float(said[1]), float(said[2]), int(said[3])) == \
        (round(refit_s, 2), round(first_s, 2), round(ratio * 100))
