"""``irs criteo --plan`` (issue 54): the rows estimated from the first bytes of each day file
against the real row count, the output's disk against the files a run writes, nothing written
by ``--plan``, and a run refused when the (faked) free space cannot hold it."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import interactive_recsys
from interactive_recsys.cli._main import main
from interactive_recsys.datasets import _criteo_plan as plans
from interactive_recsys.datasets import criteo_to_torchrec, synthetic_criteo
from interactive_recsys.datasets._criteo_input import criteo_input_files
from interactive_recsys.datasets._criteo_tsv import write_criteo_tsv
from interactive_recsys.errors import DatasetError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(interactive_recsys.__file__)))
ROWS = (3000, 5000)


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> Path:
    """Two generated day files (kaggle profile: about 0.7 and 1.2 MB), plain."""
    root = tmp_path_factory.mktemp("plan")
    folder = root / "in"
    folder.mkdir()
    for d, rows in enumerate(ROWS):
        write_criteo_tsv(synthetic_criteo(rows, seed=d, path=str(root / f"pq{d}"),
                                          profile="kaggle"), str(folder / f"day_{d}"))
    return folder


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


@pytest.mark.parametrize("compress", [False, True])
def test_rows_estimated_from_the_first_bytes_are_within_2_percent(days, tmp_path, compress):
    folder = tmp_path / "in"
    shutil.copytree(days, folder)
    if compress:
        for d in range(len(ROWS)):
            with open(folder / f"day_{d}", "rb") as src, \
                    gzip.open(folder / f"day_{d}.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(folder / f"day_{d}")
    files = criteo_input_files(folder)
    for (path, stem), rows in zip(files, ROWS, strict=True):
        assert _lines(days / stem) == rows  # the real count, independent of the estimate
        sample = plans.sample_file(path, stem, sample_bytes=64 << 10)  # a tenth of a file
        assert not sample.exact
        assert abs(sample.rows - rows) <= 0.02 * rows, (stem, sample.rows, rows)
        assert (sample.text_ratio is not None) == compress
        whole = plans.sample_file(path, stem)  # the file fits the sample: counted
        assert whole.exact and whole.rows == rows
    plan = plans.criteo_plan(files, tmp_path / "out", sample_bytes=64 << 10)
    assert abs(plan["rows"] - sum(ROWS)) <= 0.02 * sum(ROWS)


def test_the_output_disk_is_what_a_run_writes(days, tmp_path):
    files = criteo_input_files(days)
    plan = plans.criteo_plan(files, tmp_path / "out", workers=64)
    assert plan["exact"] and plan["rows"] == sum(ROWS)
    criteo_to_torchrec(days, tmp_path / "out", progress=False)
    npy = [p for p in (tmp_path / "out").iterdir() if p.suffix == ".npy"]
    header = 128  # numpy's .npy header of these arrays
    assert plan["disk"]["output"] == sum(p.stat().st_size - header for p in npy)
    model = plans.load_model()
    assert plan["disk"]["staging"] == sum(ROWS) * (model["disk_bytes_per_row"] - 472)
    assert plan["disk"]["need"] == plan["disk"]["output"] + plan["disk"]["staging"]
    # two files within one 128 MiB range each: 2 parse tasks, however many workers
    assert plan["time"]["cores"] == min(2, os.cpu_count())
    assert plan["time"]["seconds"] == pytest.approx(
        sum(ROWS) / (model["rows_per_second_per_core"] * plan["time"]["cores"]))
    measured = dict(map(tuple, model["peak_mb_per_worker"]))
    assert plan["memory"]["peak_mb_per_worker"] == measured[min(measured)]  # below: smallest


def test_plan_prints_and_writes_nothing(days, tmp_path):
    """Run from an empty folder with an empty TMPDIR: every folder under the test's temporary
    folder and the input's has the same entries and times after (only those two: other
    tests' folders beside them may still change, under threads those tests left)."""
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    out = tmp_path / "new" / "out"

    def entries() -> list[tuple[str, int]]:
        return sorted((str(p), p.stat().st_mtime_ns)
                      for root in (tmp_path, days.parent) for p in [root, *root.rglob("*")])

    before = entries()
    done = subprocess.run(
        [sys.executable, "-m", "interactive_recsys.cli", "criteo", str(days), str(out),
         "--plan"], cwd=scratch, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert f"rows: about {sum(ROWS):,}, counted" in text
    assert "disk: about" in text and "(472 bytes a row)" in text and "-> enough" in text
    assert "MB at the peak per worker" in text and "rows/s per core" in text
    assert "benchmarks/results/criteo-day.json" in text
    assert not out.parent.exists() and list(scratch.iterdir()) == []
    assert entries() == before


def test_a_run_the_disk_cannot_hold_is_refused_with_the_numbers(days, tmp_path, monkeypatch,
                                                                capsys):
    monkeypatch.setattr(plans, "free_space", lambda path: ("/fake/disk", 1000))
    out = tmp_path / "out"
    assert main(["criteo", str(days), str(out), "--local", "--quiet"]) == 2
    err = capsys.readouterr().err
    need = sum(ROWS) * plans.load_model()["disk_bytes_per_row"]
    assert f"needs about {plans._size(need)}" in err and "1.0 KB are free" in err
    assert "'/fake/disk'" in err and "--no-space-check" in err and "another disk" in err
    assert not out.exists() and [p for p in tmp_path.iterdir()] == []
    with pytest.raises(DatasetError, match="Not enough disk"):
        criteo_to_torchrec(days, out, progress=False)
    assert main(["criteo", str(days), str(out), "--plan"]) == 0
    assert "NOT ENOUGH: the run would refuse" in capsys.readouterr().out
    assert main(["criteo", str(days), str(out), "--local", "--quiet", "--no-space-check"]) == 0
    assert (out / "day_1_sparse_contig_freq.npy").exists()
