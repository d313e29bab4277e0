"""The one-large-day benchmark's parts (its timings live in benchmarks/results): the day is
generated in parts into one file of exactly the rows asked for, the memory sampler finds the
largest child process, and a day the disk cannot hold is refused before anything is written."""

from __future__ import annotations

import argparse
import sys

import pytest

from benchmarks import criteo_day


def test_a_day_generated_in_parts_has_every_row_once(tmp_path) -> None:
    day = tmp_path / "day_0"
    criteo_day._generate_day(str(day), 2_500, part_rows=1_000)
    lines = day.read_bytes().splitlines()
    assert len(lines) == 2_500
    assert all(line.count(b"\t") == 39 for line in lines)
    assert len(set(lines)) > 2_400  # three parts of different seeds, not one part repeated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day_0"]  # no part left behind


def test_the_sampler_reports_the_largest_child_apart_from_the_command(tmp_path) -> None:
    child = "import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.5)"
    parent = ("import subprocess, sys, time; print('parse:   0%', end='\\r', flush=True); "
              "time.sleep(0.6); print('map:   0%', flush=True); "
              f"subprocess.run([sys.executable, '-c', {child!r}], check=True); "
              "print('Wrote 5 rows'); print('  phases: parse 1 s')")
    result = criteo_day._measure([sys.executable, "-c", parent], str(tmp_path))
    assert result["peak_rss_mb_largest_worker"] >= 300
    assert result["peak_rss_mb_command"] < 200
    by_phase = result["peak_rss_mb_largest_worker_by_phase"]
    assert list(by_phase) == ["parse", "map"]  # the child ran in the map phase, not before
    assert by_phase["map"] >= 300 and by_phase["parse"] == 0
    assert result["summary"] == ["Wrote 5 rows", "phases: parse 1 s"]


def test_a_day_larger_than_the_free_disk_is_refused_first(tmp_path) -> None:
    args = argparse.Namespace(rows=[10, 10**12], part_rows=10, frequency_threshold=3,
                              workers=1, memory_limit="1GB", workdir=str(tmp_path / "w"))
    with pytest.raises(SystemExit, match=r"--rows 1,000,000,000,000 needs about .* GB of disk"):
        criteo_day.run(args)
    assert not (tmp_path / "w").exists()


def test_the_plan_model_in_the_package_is_the_committed_result() -> None:
    """``irs criteo --plan`` reads its model from the package (benchmarks/ is not in the
    wheel); it must be what the committed criteo-day result gives."""
    import json
    import os

    from interactive_recsys.datasets._criteo_plan import load_model

    with open(os.path.join(criteo_day.RESULTS, "criteo-day.json")) as f:
        report = json.load(f)
    assert load_model() == criteo_day.plan_model(report)
    assert load_model()["disk_bytes_per_row"] > 472  # the output's bytes, and staging
