"""The scaling benchmark's correctness gate and options (the timings live in
benchmarks/results, never in tests): a real job on generated kaggle-profile data passes the
independent pyarrow/pandas check, and a wrong vocabulary or id is caught."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import categorify_ids, jobs, profile_phases, scaling, scaling_curve
from benchmarks.contenders import CATS, CONTS
from interactive_recsys.datasets import synthetic_criteo

ROWS = 6_000


@pytest.fixture(scope="module")
def kaggle_data(tmp_path_factory) -> Path:
    return synthetic_criteo(ROWS, seed=3, path=tmp_path_factory.mktemp("d") / "criteo",
                            rows_per_file=2_500, profile="kaggle")


def run_job(src: Path, out: Path, kind: str) -> dict:
    spec = {"kind": kind, "columns": ["C3", "C12"], "keep": ["label"], "n_workers": 0,
            "src": str(src), "out": str(out), "result": str(out) + "-result.json"}
    return jobs.run(spec)


@pytest.mark.parametrize("kind", ["categorify", "criteo"])
def test_a_correct_run_passes_the_check(kaggle_data, tmp_path, kind):
    out = tmp_path / "out"
    result = run_job(kaggle_data, out, kind)
    cats, conts = (CATS, CONTS) if kind == "criteo" else (["C3", "C12"], [])
    assert set(result["vocabularies"]) == set(cats)
    assert scaling.check_run(kaggle_data, out, ROWS, cats, conts, 500,
                             result["vocabularies"]) == []


def test_a_wrong_vocabulary_or_id_is_reported(kaggle_data, tmp_path):
    out = tmp_path / "out"
    folders = run_job(kaggle_data, out, "categorify")["vocabularies"]
    # the most frequent C3 value counted once more: the vocabulary no longer matches
    (vocab_file,) = (out.parent / "out-artifacts" / folders["C3"]).glob("part.*.parquet")
    table = pq.read_table(vocab_file)
    counts = table["count"].to_numpy().copy()
    counts[0] += 1
    pq.write_table(table.set_column(table.schema.get_field_index("count"), "count",
                                    pa.array(counts)), vocab_file)
    # every C12 id shifted by one in the output files
    for f in sorted(out.glob("*.parquet")):
        t = pq.read_table(f)
        ids = t["C12"].to_numpy() + 1
        pq.write_table(t.set_column(t.schema.get_field_index("C12"), "C12",
                                    pa.array(ids.astype(t["C12"].type.to_pandas_dtype()))), f)
    problems = scaling.check_run(kaggle_data, out, ROWS, ["C3", "C12"], [], 500, folders)
    assert len(problems) == 2
    assert problems[0].startswith("C3: the vocabulary")
    assert problems[1].startswith("C12: ") and "sampled ids differ" in problems[1]
    missing = scaling.check_run(kaggle_data, out, ROWS, ["C3"], [], 500, {})
    assert missing and missing[0].startswith("C3: no vocabulary")


def test_whole_column_id_check_agrees_with_pandas_and_finds_one_changed_id(
        kaggle_data, tmp_path, capsys):
    out = tmp_path / "out"
    result = run_job(kaggle_data, out, "criteo")
    assert result["table_cache"][0]["hits"] > 0  # the transform found the fit's tables
    assert categorify_ids.main([str(kaggle_data), str(out), str(out)]) == 0
    assert "columns differing: []" in capsys.readouterr().out
    changed = tmp_path / "changed"
    changed.mkdir()
    files = sorted(out.glob("*.parquet"))
    for f in files:
        t = pq.read_table(f)
        if f == files[-1]:  # the last row's C7 id moved to the next id
            ids = t["C7"].to_numpy().copy()
            ids[-1] += 1
            t = t.set_column(t.schema.get_field_index("C7"), "C7", pa.array(ids, t["C7"].type))
        pq.write_table(t, changed / f.name)
    report = tmp_path / "ids.md"
    assert categorify_ids.main([str(kaggle_data), str(out), str(changed),
                                "--report", str(report)]) == 1
    lines = report.read_text().splitlines()
    assert "C7 | 6,000 | " in lines[9] and lines[9].endswith("| True, False | False")
    assert "columns differing: ['C7']" in lines[-2]


def test_expected_vocabulary_is_the_value_counts_in_the_documented_order(kaggle_data):
    table = scaling.expected_vocabulary(kaggle_data, "C3")
    values = pq.read_table(kaggle_data, columns=["C3"])["C3"].to_pandas().dropna()
    counts = values.value_counts()
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert table["value"].to_pylist() == [v for v, _ in order]
    assert table["count"].to_pylist() == [n for _, n in order]
    assert table["index"].to_pylist() == list(range(3, 3 + len(order)))


def options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    scaling.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_kaggle_is_the_default_profile_and_names_the_results():
    args = options()
    assert args.profile == "kaggle" and args.card_columns == scaling.KAGGLE_WIDEST
    assert scaling.results_label(args.scenarios, args.profile) == "scaling-kaggle"
    assert scaling.results_label(["size"], "default") == "scaling-size-default"


@pytest.mark.parametrize(("argv", "message"), [
    (["--distinct", "100"], "--distinct applies to --profile default only"),
    (["--card-columns", "C3", "I1"], "--card-columns ['I1']"),
])
def test_bad_cardinality_options_are_refused(argv, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        scaling.scenario_runs(options("--scenarios", "cardinality", *argv))


def test_the_summary_says_which_data_each_number_comes_from():
    run = {"seconds": 10.0, "process_s": 12.5, "cpu_s": 18.0, "peak_rss_mb": 900.0,
           "extra": {"npartitions": 4, "fit_s": 6.0, "loadavg_start": [1.0, 1.0, 1.0]}}
    configs = [{"scenario": "cardinality", "rows": 1000, "kind": "categorify", "n_workers": 2,
                "columns": ["C3", "C12"], "data": "synthetic_criteo profile 'kaggle'",
                "decoded_gb": 0.1, "memory_limit": "2GB", "distinct": {"C3": 700, "C12": 650},
                "runs": [run], "problems": []}]
    md = scaling.summary({"configs": configs})
    header, _, row = md.splitlines()[:3]
    assert header.count("|") == row.count("|")
    assert "| cardinality | synthetic_criteo profile 'kaggle' | C3 C12 | 1,000 |" in row
    assert "C3 700, C12 650" in md
    assert "| 12.5 | 10.0 | 6.0 |" in row  # whole process, then work, then fit
    json.dumps(configs)  # the configuration is what results.json stores


def test_the_summary_shows_the_workers_peak_in_the_fit_beside_the_whole_job():
    run = {"seconds": 10.0, "process_s": 12.5, "cpu_s": 18.0, "peak_rss_mb": 3900.0,
           "extra": {"npartitions": 4, "fit_s": 6.0, "loadavg_start": [1.0, 1.0, 1.0],
                     "client_peak_mb": 879.0, "worker_peak_mb": [1792.0, 1857.4],
                     "fit_worker_peak_mb": [1100.2, 1210.0], "workers_restarted": 0}}
    configs = [{"scenario": "out-of-core", "rows": 1000, "kind": "criteo", "n_workers": 2,
                "data": "synthetic", "decoded_gb": 0.1, "memory_limit": "3GB",
                "runs": [run], "problems": []}]
    header, _, row = scaling.summary({"configs": configs}).splitlines()[:3]
    assert header.count("|") == row.count("|")
    assert "| 879 / 1,857 (fit 1,210; 0 restarted) |" in row


def _curve_config(mode: str, rows: int, distinct: int) -> dict:
    """A measured size whose phases follow a known cost model exactly."""
    fit = 2e-6 * rows + 4e-6 * distinct + 1.0
    work = fit + 3e-6 * rows + 0.5
    run = {"seconds": work, "process_s": work + 4.0, "cpu_s": 2 * work, "peak_rss_mb": 500.0,
           "extra": {"npartitions": 4, "fit_s": fit, "loadavg_start": [1.0, 1.0, 1.0]}}
    return {"scenario": "curve", "mode": mode, "rows": rows, "kind": "criteo", "n_workers":
            0 if mode == "local" else 2, "data": "synthetic", "decoded_gb": 1.0,
            "memory_limit": None, "distinct_total": distinct, "runs": [run], "problems": []}


def test_curve_recovers_a_known_cost_model_and_extrapolates_to_criteo_1tb():
    sizes = [(2_000_000, 1_500_000), (8_000_000, 5_000_000), (16_000_000, 9_000_000),
             (32_000_000, 16_000_000)]
    configs = [_curve_config("local", r, d) for r, d in sizes]
    md = scaling.summary({"configs": configs})
    assert "| fit | 2.00 | 4.00 | 1.0 | 0%, 0%, 0%, 0% |" in md
    assert "| transform + write | 3.00 | 0.00 | 0.5 | 0%, 0%, 0%, 0% |" in md
    assert "| start-up | 0.00 | 0.00 | 4.0 | 0%, 0%, 0%, 0% |" in md
    # CPU = 2 x work = 10e-6 rows + 8e-6 distinct + 3
    assert "| CPU, whole job | 10.00 | 8.00 | 3.0 | 0%, 0%, 0%, 0% |" in md
    # 1 worker: fit = 2e-6 * 4,373,472,329 + 4e-6 * 187,767,399 + 1 = 9,498.0 s = 158.3 min
    rows, distinct = scaling_curve.CRITEO_1TB_ROWS, sum(scaling_curve.CRITEO_1TB_CARDINALITIES)
    assert distinct == 187_767_399
    fit_min = (2e-6 * rows + 4e-6 * distinct + 1.0) / 60
    assert f"| 1 | 0.1 | {fit_min:,.1f} |" in md
    assert f"| 64 | 0.1 | {(fit_min * 60 - 1.0) / 64 / 60 + 1 / 60:,.1f} |" in md
    # 8M -> 32M in-process: whole process (4x the rows) and fit ratios
    fit_8, fit_32 = (2e-6 * r + 4e-6 * d + 1.0 for r, d in (sizes[1], sizes[3]))
    assert f"fit {fit_32 / fit_8:.2f}" in md and "curve, in-process: time(32,000,000)" in md


def test_profile_phases_groups_collapsed_stacks(tmp_path):
    profile = tmp_path / "p.txt"
    profile.write_text("main (a.py:1);CpuBackend.write_parquet (b.py:2);write_table (c:3) 3\n"
                       "main (a.py:1);_sum_split (c.py:1);sum_counts (d.py:2) 1\n")
    lines = profile_phases.table([profile]).splitlines()
    assert lines[0] == "| phase | p.txt: % (4 samples) |"
    assert "| fit: merge of counts (Acero group_by or keyed) | 25.0 (1) |" in lines
    assert "| output writer | 75.0 (3) |" in lines
    assert np.isclose(sum(float(line.split("|")[2].split()[0]) for line in lines[2:]), 100.0)
