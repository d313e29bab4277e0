"""The Criteo benchmark's bookkeeping: ratios, import times, GPU contenders, 1TB extrapolation
(the timings themselves live in benchmarks/results, never in tests)."""

from __future__ import annotations

import json

import pytest

from benchmarks import harness, report
from benchmarks.harness import Outcome, Run


def outcome(name: str, rows: int, seconds: list[float], import_s: float = 0.5) -> Outcome:
    runs = [Run(s, s + 1, 100.0, extra={"import_s": import_s}) for s in seconds]
    return Outcome(name, rows, runs=runs)


def test_table_ratios_are_medians_over_the_references():
    outcomes = [outcome("pandas", 100, [8.0, 10.0, 9.0]), outcome("polars", 100, [4.0, 5.0, 6.0]),
                outcome("pyarrow-floor", 100, [2.0, 2.0, 2.0]),
                outcome("irs-local", 100, [3.0, 3.0, 30.0], import_s=0.7)]
    lines = report.table(outcomes, []).splitlines()
    ours = next(line for line in lines if line.startswith("| irs-local"))
    cells = [c.strip() for c in ours.strip("|").split("|")]
    # whole process (work + 1 s here) 4.00 (median), work 3.00, 25 rows/s, import 0.70,
    # 4/10 pandas, 4/6 polars, 4/3 floor
    assert cells == ["irs-local", "100", "4.00", "3.00", "25", "100", "0.70", "0.40", "0.67",
                     "1.33"]


def test_skipped_and_failed_contenders_keep_their_row():
    skipped = [Outcome("irs-gpu", 0, "SKIPPED", "no GPU")]
    failed = Outcome("dask", 100, "ERROR", "boom")
    lines = report.table([failed], skipped).splitlines()
    assert lines[2].startswith("| dask | 100 | ERROR |")
    assert lines[3].startswith("| irs-gpu | - | SKIPPED |")
    assert all(line.count("|") == lines[0].count("|") for line in lines)


def test_gpu_contenders_are_skipped_with_a_reason_without_a_gpu(monkeypatch):
    monkeypatch.setattr(harness, "gpu_here", lambda: False)
    chosen, skipped = harness.available(["irs-local", "irs-gpu", "dask-cudf"])
    assert [c.name for c in chosen] == ["irs-local"]
    assert [(o.contender, o.status, o.detail) for o in skipped] == [
        ("irs-gpu", "SKIPPED", "no GPU"), ("dask-cudf", "SKIPPED", "no GPU")]


def test_criteo_1tb_extrapolates_from_the_largest_size():
    outcomes = [outcome("irs-gpu", 10**6, [1.0]), outcome("irs-gpu", 10**8, [24.0]),
                outcome("irs-local", 10**8, [100.0])]
    line = report.criteo_1tb(outcomes, ["irs-gpu"])
    # whole process 25 s: 4,373,472,329 rows at 4,000,000 rows/s = 1093.4 s = 18.2 min
    assert "irs-gpu 18.2 min (4,000,000 rows/s at 100,000,000 rows" in line
    assert "irs-local" not in line and "13 min" in line
    assert report.criteo_1tb(outcomes, ["dask-cudf"]) == ""


@pytest.mark.parametrize("name", ["irs-gpu", "dask-cudf"])
def test_gpu_contenders_run_on_a_cuda_cluster_and_are_not_default(name):
    contender = harness.CONTENDERS[name]
    assert contender.gpu and contender.cluster and not contender.default
    assert "cudf" in contender.imports


def test_criteo_benchmark_defaults_to_the_kaggle_profile():
    from benchmarks.__main__ import parse_args

    assert parse_args(["criteo"]).profile == "kaggle"
    assert parse_args(["criteo", "--profile", "default"]).profile == "default"


def test_results_have_one_stable_file_per_scenario(tmp_path, monkeypatch):
    """Labels name the scenario (never a date, host or commit), so a new run of a scenario
    replaces its file; write() records the command."""
    from benchmarks import __main__ as cli
    from benchmarks import scaling

    assert cli.criteo_label(cli.parse_args(["criteo", "--rows", "8000000"])) == "criteo-kaggle-8M"
    assert cli.criteo_label(cli.parse_args(
        ["criteo", "--quick", "--layout", "pyarrow", "--profile", "default"])) == \
        "criteo-quick-default-pyarrow-200k"
    assert report.rows_label([2_000_000, 8_000_000]) == "2M-8M"
    assert report.rows_label([1_500_000, 123]) == "1.5M-123"
    settings = {"ooc_rows": 32_000_000, "ooc_memory": "3GB", "curve_modes": ["local"]}
    assert scaling.results_label(["out-of-core"], "kaggle", settings) == \
        "scaling-out-of-core-32M-3GB-kaggle"
    assert scaling.results_label(["out-of-core"], "kaggle", {**settings, "ooc_memory": None}) \
        == "scaling-out-of-core-32M-1.5GB-kaggle"
    assert scaling.results_label(["curve"], "kaggle", settings) == "scaling-curve-local-kaggle"
    assert scaling.results_label(["curve"], "kaggle", {"curve_modes": ["cluster", "local"]}) \
        == "scaling-curve-kaggle"
    with pytest.raises(ValueError, match="must use only"):
        report.result_stem("criteo/../x")

    monkeypatch.setattr(report, "RESULTS", tmp_path)
    monkeypatch.setattr("sys.argv", ["benchmarks/__main__.py", "criteo", "--rows", "8000000"])
    machine = report.machine_info()
    results = {"machine": machine, "code": {"git_commit": "0" * 40, "git_dirty_files": 0,
                                            "sha256": "x"},
               "settings": {"sizes": [8_000_000], "repeats": 1, "poll_s": 0.05,
                            "sample_rows": 10, "rtol": 1e-4, "atol": 1e-5},
               "outcomes": []}
    for _ in range(2):  # the second run replaces the first
        json_path, md_path = report.write(dict(results), "| t |", "criteo-kaggle-8M")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["criteo-kaggle-8M.json",
                                                          "criteo-kaggle-8M.md"]
    written = json.loads(json_path.read_text())
    assert written["command"] == "python -m benchmarks criteo --rows 8000000"
    assert "`python -m benchmarks criteo --rows 8000000`" in md_path.read_text()
