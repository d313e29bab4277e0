"""Scaling benchmarks of our standard workflow: data size, out of core, high cardinality.

``python -m benchmarks scaling [--profile kaggle|default] [--scenarios size out-of-core
cardinality] [--prepare-only]``

The data come from ``synthetic_criteo(profile=...)`` (``--profile``, ``kaggle`` by default as
for ``criteo``: the per-column widths and skew of the real Criteo Kaggle logs, whose widest
columns grow with the row count), in ``data/criteo-<rows>[-<profile>]``.

* ``size``: the standard Criteo workflow (:mod:`.contenders`) at ``--rows`` (8M and 32M)
  on ``irs.cluster.start_cluster(n_workers=2)``, sizes alternating run by run; reports
  time(largest)/time(smallest) per repeat and the peak RSS of the whole process tree;
* ``out-of-core``: the same workflow on ``--ooc-rows`` rows with 2 workers limited to
  ``--ooc-memory`` each, the decoded data several times the workers' total limit (kaggle:
  24M rows, 9.7 GB decoded, 2 x 1.5 GB = 3.2x; 1 GB workers are restarted over and over there,
  the Categorify fit of the widest columns peaking above 95% of 1 GB; default: 1 GB);
* ``cardinality``: Categorify alone with 2 workers limited to ``--card-memory``. On the
  ``kaggle`` profile: of the widest columns (``--card-columns``, C3 C12 C21 C16 C4) of the
  kaggle data at ``--card-rows`` rows, whose distinct counts follow from the row count (about
  5.1M, 4.8M, 4.2M, 3.3M and 1.6M at 24M rows; the measured counts are printed and written
  with the results). On the ``default`` profile: of one column ``item`` with ``--distinct``
  distinct values (every one present, plus power-law repeats and nulls) from a dedicated
  generator, in ``data/cardinality-<rows>-<distinct>``.

Every run is checked before its time counts against an independent pyarrow/pandas
computation: the whole vocabulary written (values, counts and ids) equals value counts of
the input sorted by descending count then ascending value, and on sampled rows the output
ids equal that vocabulary's ids of the input values (nulls 1) and the normalized
continuous columns equal pandas' (float32 ``log1p`` of the clipped values, population std).
These expectations are cached next to the data (``<data>-expected``); ``--prepare-only``
writes the data and those caches without timing anything. Runs use :mod:`.jobs` in a fresh
process each; the code under test is a snapshot (as for ``criteo``); results go to
``results/<label>.{json,md}`` (see :func:`results_label`), replacing the previous result of
the same scenario.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dask.utils import parse_bytes

from . import report, scaling_curve
from .contenders import CATS, CONTS, FIRST_INDEX, NULL_INDEX, log_counts, parquet_files
from .harness import (
    DATA,
    RTOL,
    WORK,
    Run,
    busy_cpu_s,
    own_cpu_s,
    prepare_data,
    read_rows,
    sample_positions,
    snapshot_code,
    wait_quiet,
    watch_process,
)

HELP = ("scaling: 8M vs 32M rows, out of core (4x the workers' memory), wide vocabularies "
        "(kaggle profile by default)")
SCENARIOS = ("size", "out-of-core", "cardinality")
#: scenarios run only when asked for
EXTRA_SCENARIOS = ("curve",)
CURVE_ROWS = [2_000_000, 8_000_000, 16_000_000, 32_000_000]
PROFILES = ("kaggle", "default")
#: the widest columns of the kaggle profile (real Criteo Kaggle: 10.1M, 8.4M, 7.0M, 5.5M, 2.2M
#: distinct values over 45.8M rows)
KAGGLE_WIDEST = ["C3", "C12", "C21", "C16", "C4"]
#: the out-of-core scenario's default memory limit per worker, by profile
OOC_MEMORY = {"kaggle": "1.5GB", "default": "1GB"}
POLL_S = 0.05


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS + EXTRA_SCENARIOS,
                        default=list(SCENARIOS),
                        help="curve (not run by default): the standard workflow at --curve-rows, "
                        "a cost model per phase and its extrapolation to Criteo 1TB")
    parser.add_argument("--curve-rows", type=int, nargs="+", default=CURVE_ROWS)
    parser.add_argument("--curve-modes", nargs="+", choices=["local", "cluster"],
                        default=["local", "cluster"],
                        help="in-process (threaded scheduler) and/or the 2-worker cluster")
    parser.add_argument("--profile", choices=PROFILES, default="kaggle",
                        help="synthetic_criteo profile: kaggle (real Criteo Kaggle widths, the "
                        "default) or default (narrower columns)")
    parser.add_argument("--rows", type=int, nargs="+", default=[8_000_000, 32_000_000],
                        help="sizes of the size scenario (default: 8000000 32000000)")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per size")
    parser.add_argument("--ooc-rows", type=int, default=24_000_000)
    parser.add_argument("--ooc-memory", default=None,
                        help="memory limit of each worker (default: 1.5GB on the kaggle "
                        "profile, 1GB on the default profile)")
    parser.add_argument("--card-rows", type=int, default=24_000_000)
    parser.add_argument("--card-columns", nargs="+", default=KAGGLE_WIDEST,
                        help="kaggle profile: the columns Categorify encodes "
                        "(default: the five widest)")
    parser.add_argument("--distinct", type=int, default=None,
                        help="default profile only: distinct values of the generated column "
                        "(default 20000000)")
    parser.add_argument("--card-memory", default="2GB", help="memory limit of each worker")
    parser.add_argument("--sample", type=int, default=20_000, help="rows checked per run")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per run")
    parser.add_argument("--quiet-wait", type=float, default=30,
                        help="before each run, wait up to this many seconds for other "
                        "processes to use under 15%% of the machine")
    parser.add_argument("--report", action="store_true",
                        help="write a Dask performance report per run (benchmarks/work/)")
    parser.add_argument("--py-spy", action="store_true",
                        help="sample every worker (the job's process when in-process) with "
                        "py-spy into collapsed stacks, benchmarks/work/scaling/*-py-spy-*.txt "
                        "(read them with python -m benchmarks.profile_phases)")
    parser.add_argument("--code", choices=["head", "worktree"], default="head")
    parser.add_argument("--prepare-only", action="store_true",
                        help="write the data and the expected value counts, time nothing")


# ---- one job in its own process ---------------------------------------------------------------
def run_job(spec: dict, timeout: float, quiet_wait: float, code: Path) -> Run:
    """Run :mod:`.jobs` with ``spec`` in a fresh process; poll the tree's RSS."""
    out = Path(spec["out"])
    for path in (out, Path(f"{out}-artifacts"), Path(f"{out}-dask-scratch")):
        shutil.rmtree(path, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    spec_path, result_path = Path(f"{out}-spec.json"), Path(spec["result"])
    spec_path.write_text(json.dumps(spec))
    result_path.unlink(missing_ok=True)
    waited = wait_quiet(quiet_wait) if quiet_wait > 0 else 0.0
    load_start = os.getloadavg()
    busy, own = busy_cpu_s(), own_cpu_s()
    process_s, peak, returncode = watch_process(
        [sys.executable, "-m", "benchmarks.jobs", str(spec_path)], code, f"{out}.log", timeout)
    other = max(0.0, busy_cpu_s() - busy - (own_cpu_s() - own))
    cpu_s = own_cpu_s() - own
    if returncode != 0 or not result_path.exists():
        tail = Path(f"{out}.log").read_text()[-1500:]
        raise RuntimeError(f"exit code {returncode}; log tail:\n{tail}")
    extra = json.loads(result_path.read_text())
    for package in extra.pop("package", []):
        if not Path(package).resolve().is_relative_to(code.resolve()):
            raise RuntimeError(f"imported interactive_recsys from {package}, not from {code}")
    extra["loadavg_start"] = load_start
    other_pct = 100 * other / (process_s * (os.cpu_count() or 1))
    return Run(extra.pop("seconds"), process_s, peak / 2**20, cpu_s, other_pct, waited, extra)


# ---- independent expectations -----------------------------------------------------------------
def expected_vocabulary(src: Path, column: str) -> pa.Table:
    """``value, count, index`` of a column by pyarrow value counts (cached next to the data)."""
    cache = Path(f"{src}-expected") / f"{column}.parquet"
    if cache.exists():
        return pq.read_table(cache)
    values = pa.concat_arrays([chunk for f in parquet_files(str(src))
                               for chunk in pq.read_table(f, columns=[column])[column].chunks])
    counts = pc.value_counts(values)
    table = pa.table({"value": counts.field("values"), "count": counts.field("counts")})
    table = table.filter(pc.is_valid(table["value"]))
    table = table.take(pc.sort_indices(table, sort_keys=[("count", "descending"),
                                                         ("value", "ascending")]))
    table = table.append_column("index", pa.array(
        np.arange(FIRST_INDEX, FIRST_INDEX + table.num_rows), pa.int64()))
    cache.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, cache)
    return table


def expected_moments(src: Path) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population std of the float32 log1p of the clipped counts (pandas)."""
    cache = Path(f"{src}-expected") / "moments.json"
    if cache.exists():
        saved = json.loads(cache.read_text())
        return np.array(saved["mean"]), np.array(saved["std"])
    n, total, sumsq = 0, np.zeros(len(CONTS)), np.zeros(len(CONTS))
    for f in parquet_files(str(src)):
        x = log_counts(pd.read_parquet(f, columns=CONTS, dtype_backend="pyarrow"))
        n, total, sumsq = n + len(x), total + x.sum(0), sumsq + np.square(x).sum(0)
    mean = total / n
    std = np.sqrt(np.maximum(sumsq / n - mean * mean, 0.0))
    std = np.where(std > 0, std, 1.0)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"mean": mean.tolist(), "std": std.tolist()}))
    return mean, std


def written_vocabulary(out: Path, column: str, folder: str | None) -> pa.Table:
    """The vocabulary the run wrote for ``column`` (``folder``: relative to the artifacts)."""
    files = glob.glob(f"{out}-artifacts/{folder}/part.*.parquet") if folder else []
    if not files:
        raise ValueError(f"no vocabulary of {column} under {out}-artifacts ({folder})")
    table = pa.concat_tables(pq.read_table(f) for f in files)
    return table.take(pc.sort_indices(table, sort_keys=[("index", "ascending")]))


def check_run(src: Path, out: Path, rows: int, cats: list[str], conts: list[str],
              sample: int, vocabularies: dict[str, str]) -> list[str]:
    """What differs from the independent expectations (empty: the run is correct);
    ``vocabularies``: column -> vocabulary folder, as the job reported it."""
    problems = []
    positions = sample_positions(rows, sample)
    try:
        got, got_rows = read_rows(out, positions)
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        return [f"unreadable output: {exc}"]
    if got_rows != rows:
        return [f"{got_rows:,} rows instead of {rows:,}"]
    given, _ = read_rows(src, positions)
    for c in cats:
        expected = expected_vocabulary(src, c)
        try:
            written = written_vocabulary(out, c, vocabularies.get(c))
        except (OSError, ValueError, pa.ArrowException) as exc:
            problems.append(f"{c}: {exc}")
            continue
        if not written.select(["value", "count", "index"]).equals(expected):
            problems.append(f"{c}: the vocabulary ({written.num_rows:,} values) differs from "
                            f"the value counts of the input ({expected.num_rows:,} values)")
            continue
        idx = pc.index_in(pa.array(given[c], from_pandas=True), value_set=expected["value"])
        ids = np.asarray(pc.fill_null(pc.add(idx, FIRST_INDEX), NULL_INDEX))
        bad = ids != got[c]
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            problems.append(f"{c}: {int(bad.sum())}/{len(ids)} sampled ids differ, e.g. row "
                            f"{positions[i]}: expected {ids[i]}, got {got[c][i]}")
    if conts:
        mean, std = expected_moments(src)
        raw = np.stack([np.nan_to_num(given[c].astype(np.float64), nan=0.0) for c in CONTS], 1)
        logs = np.log1p(np.maximum(raw, 0.0)).astype(np.float32).astype(np.float64)
        x = ((logs - mean) / std).astype(np.float32)
        for j, c in enumerate(CONTS):
            bad = ~np.isclose(got[c].astype(np.float64), x[:, j], rtol=RTOL, atol=1e-5)
            if bad.any():
                problems.append(f"{c}: {int(bad.sum())} sampled values differ")
    return problems


# ---- data for the cardinality scenario ------------------------------------------------------
def hex_ids(ids: np.ndarray) -> pa.Array:
    """8 hex characters per id, through a bijective 32-bit mix (ids < 2**32)."""
    x = ids.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    x = (x * np.uint64(0x9E3779B1)) & np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(15)
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    shifts = np.arange(28, -1, -4, dtype=np.uint64)
    chars = digits[((x[:, None] >> shifts) & np.uint64(15)).astype(np.intp)]
    offsets = np.arange(0, 8 * len(ids) + 1, 8, dtype=np.int32)
    return pa.StringArray.from_buffers(len(ids), pa.py_buffer(offsets),
                                       pa.py_buffer(np.ascontiguousarray(chars)))


def cardinality_data(rows: int, distinct: int, rows_per_file: int = 2_000_000,
                     seed: int = 0) -> Path:
    """``item``: every one of ``distinct`` ids once, the other rows power-law repeats of
    popular ids or nulls (1 in 20), all shuffled; ``label``: int8."""
    if rows < distinct:
        raise ValueError(f"--card-rows ({rows}) must be at least --distinct ({distinct})")
    path = DATA / f"cardinality-{rows}-{distinct}"
    if (path / "_SUCCESS").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    extra = rows - distinct
    repeats = np.floor(rng.pareto(1.0, extra)).astype(np.int64) % distinct
    ids = np.concatenate([np.arange(distinct, dtype=np.int64), repeats])
    ids[distinct + np.flatnonzero(rng.random(extra) < 0.05)] = -1
    ids = ids[rng.permutation(rows)]
    for i, start in enumerate(range(0, rows, rows_per_file)):
        part = ids[start:start + rows_per_file]
        item = pc.if_else(pa.array(part >= 0), hex_ids(np.maximum(part, 0)), pa.nulls(
            len(part), pa.string()))
        label = pa.array(rng.integers(0, 2, len(part)).astype(np.int8))
        pq.write_table(pa.table({"item": item, "label": label}),
                       path / f"part-{i:05d}.parquet", row_group_size=128 * 1024)
    (path / "_SUCCESS").write_text("")
    return path


def decoded_gb(src: Path) -> float:
    """Bytes in memory of the whole data (pyarrow), from the first file times the files."""
    files = parquet_files(str(src))
    first = pq.read_table(files[0])
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    return first.nbytes / first.num_rows * rows / 1e9


# ---- scenarios ----------------------------------------------------------------------------------
def scenario_runs(args: argparse.Namespace) -> list[dict]:
    """Every configuration to run: scenario, rows, data (directory and description), job
    settings."""
    if args.profile == "kaggle" and args.distinct is not None:
        raise ValueError("--distinct applies to --profile default only: on the kaggle profile "
                         "the distinct counts follow from --card-rows (choose the columns with "
                         "--card-columns)")
    unknown = sorted(set(args.card_columns) - set(CATS))
    if unknown:
        raise ValueError(f"--card-columns {unknown}: not Criteo categorical columns "
                         f"(C1..C26)")
    profile = f"synthetic_criteo profile {args.profile!r}"
    configs = []
    if "size" in args.scenarios:
        for rows in args.rows:
            configs.append({"scenario": "size", "rows": rows, "data": profile,
                            "src": prepare_data(rows, 500_000, args.profile), "kind": "criteo",
                            "n_workers": 2, "memory_limit": None})
    if "curve" in args.scenarios:
        for mode in args.curve_modes:
            for rows in args.curve_rows:
                configs.append({"scenario": "curve", "mode": mode, "rows": rows, "data": profile,
                                "src": prepare_data(rows, 500_000, args.profile),
                                "kind": "criteo", "n_workers": 2 if mode == "cluster" else 0,
                                "memory_limit": None})
    if "out-of-core" in args.scenarios:
        configs.append({"scenario": "out-of-core", "rows": args.ooc_rows, "data": profile,
                        "src": prepare_data(args.ooc_rows, 500_000, args.profile),
                        "kind": "criteo", "n_workers": 2, "memory_limit": args.ooc_memory
                        or OOC_MEMORY[args.profile]})
    if "cardinality" in args.scenarios:
        config = {"scenario": "cardinality", "rows": args.card_rows, "kind": "categorify",
                  "n_workers": 2, "memory_limit": args.card_memory}
        if args.profile == "kaggle":
            config.update(src=prepare_data(args.card_rows, 500_000, "kaggle"), data=profile,
                          columns=list(args.card_columns), keep=["label"])
        else:
            distinct = args.distinct or 20_000_000
            config.update(src=cardinality_data(args.card_rows, distinct), columns=["item"],
                          keep=["label"], data=f"cardinality generator, {distinct:,} distinct")
        configs.append(config)
    return configs


def distinct_counts(config: dict) -> dict[str, int]:
    """Distinct non-null values of the columns a configuration encodes (from the cached
    expected vocabularies)."""
    columns = CATS if config["kind"] == "criteo" else config["columns"]
    return {c: expected_vocabulary(Path(config["src"]), c).num_rows for c in columns}


def prepare(configs: list[dict]) -> None:
    """Decoded size, the expected vocabularies (cached) and moments of every configuration."""
    for c in configs:
        started = time.perf_counter()
        c["decoded_gb"] = round(decoded_gb(c["src"]), 2)
        counts = distinct_counts(c)
        widest = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
        c["distinct"] = dict(widest)
        c["distinct_total"] = sum(counts.values())
        if c["kind"] == "criteo":
            expected_moments(Path(c["src"]))
        limit = c["memory_limit"]
        ratio = (f", {c['decoded_gb'] * 1e9 / (c['n_workers'] * parse_bytes(limit)):.1f}x "
                 "the workers' total memory limit" if limit else "")
        print(f"{c['scenario']} {c['rows']:,} rows ({c['data']}): {c['decoded_gb']} GB "
              f"decoded{ratio}; widest columns: "
              + ", ".join(f"{k} {v:,}" for k, v in widest)
              + f" distinct (expectations ready in {time.perf_counter() - started:.0f} s)",
              flush=True)


def run(args: argparse.Namespace) -> dict | None:
    started = time.time()
    configs = scenario_runs(args)
    prepare(configs)
    if args.prepare_only:
        return None
    label = results_label(args.scenarios, args.profile, args)
    code = snapshot_code(WORK / f"code-{label}", args.code)
    shutil.copy2(Path(__file__).with_name("jobs.py"), Path(code["path"]) / "benchmarks")
    print(f"code under test: {code['path']} (commit {code['git_commit'][:12]}, "
          f"sha256 {code['sha256']})", flush=True)
    for c in configs:
        c["runs"], c["problems"] = [], []
    repeats = {"size": args.repeats, "curve": args.repeats, "out-of-core": 1, "cardinality": 1}
    for repeat in range(max(repeats.values())):
        for c in configs:
            if repeat >= repeats[c["scenario"]] or c["problems"]:
                continue
            out = WORK / "scaling" / f"{c['scenario']}-{c.get('mode', 'cluster')}-{c['rows']}-" \
                f"{args.profile}"
            spec = {k: c.get(k) for k in ("kind", "columns", "keep", "n_workers",
                                          "memory_limit")}
            spec.update(src=str(Path(c["src"]).resolve()), out=str(out.resolve()),
                        result=str(Path(f"{out}-result.json").resolve()))
            if args.report:
                spec["report"] = str(Path(f"{out}-report-{repeat}.html").resolve())
            if args.py_spy:
                spec["py_spy"] = str(Path(f"{out}-py-spy-{repeat}").resolve())
            try:
                r = run_job(spec, args.timeout, args.quiet_wait, Path(code["path"]))
            except RuntimeError as exc:
                c["problems"].append(f"ERROR: {exc}")
                print(f"  {c['scenario']} {c['rows']:,}: ERROR {exc}", flush=True)
                continue
            checked = time.perf_counter()
            cats = CATS if c["kind"] == "criteo" else c["columns"]
            problems = check_run(Path(c["src"]), out, c["rows"], cats,
                                 CONTS if c["kind"] == "criteo" else [], args.sample,
                                 r.extra.pop("vocabularies", {}))
            if problems:
                c["problems"] += [f"WRONG: {p}" for p in problems]
                print(f"  {c['scenario']} {c['rows']:,}: WRONG {problems}", flush=True)
                continue
            c["runs"].append(r)
            print(f"  [{repeat + 1}] {c['scenario']:11s} {c['rows']:>11,} rows {r.seconds:8.1f} s"
                  f" (fit {r.extra['fit_s']:.1f})  peak {r.peak_rss_mb:7,.0f} MB  cpu "
                  f"{r.cpu_s:6.1f} s  others {r.other_cpu_pct:3.0f}%  load "
                  f"{r.extra['loadavg_start'][0]:.1f}  workers restarted "
                  f"{r.extra.get('workers_restarted', '-')}  (checked in "
                  f"{time.perf_counter() - checked:.0f} s)", flush=True)
            shutil.rmtree(out, ignore_errors=True)
    results = {"benchmark": "scaling", "started": time.strftime(
        "%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(time.time() - started, 1),
        "settings": {k: v for k, v in vars(args).items() if k != "benchmark"},
        "machine": report.machine_info(), "code": code,
        "configs": [{**{k: str(v) if k == "src" else v for k, v in c.items() if k != "runs"},
                     "runs": [asdict(r) for r in c["runs"]]} for c in configs]}
    md = summary(results)
    print("\n" + md)
    write(results, md)
    return results


# ---- results ------------------------------------------------------------------------------------
def _median(runs: list[dict], key: str) -> float | None:
    return statistics.median(r[key] for r in runs) if runs else None


def _process_peaks(runs: list[dict]) -> str:
    client = [r["extra"].get("client_peak_mb") for r in runs]
    workers = [max(r["extra"].get("worker_peak_mb") or [0]) for r in runs]
    if None in client:
        return "-"
    restarts = [r["extra"]["workers_restarted"] for r in runs
                if "workers_restarted" in r["extra"]]
    fit = [max(r["extra"].get("fit_worker_peak_mb") or [0]) for r in runs]
    notes = ([f"fit {max(fit):,.0f}"] if max(fit) else []) + \
        ([f"{max(restarts)} restarted"] if restarts else [])
    return f"{max(client):,.0f} / {max(workers):,.0f}" + (f" ({'; '.join(notes)})" if notes else "")


def summary(results: dict) -> str:
    lines = ["| scenario | data | columns encoded | rows | decoded GB | workers x limit | "
             "partitions | runs | wall s, whole process (median) | work s | fit s | "
             "CPU s (median) | rows/s | peak RSS MB | "
             "client / worker peak MB (worker's in the fit) | load avg (1 min) at start | check |",
             "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for c in results["configs"]:
        runs = c["runs"]
        limit = c["memory_limit"] or "auto"
        workers = f"2 x {limit}" if c["n_workers"] else "in-process, 2 threads"
        head = (f"| {c['scenario']} | {c.get('data', '-')} | {_encoded(c)} | {c['rows']:,} | "
                f"{c['decoded_gb']} | {workers} |")
        if not runs:
            problems = "; ".join(c["problems"])[:300].replace("\n", " ")
            lines.append(f"{head} - | 0 | - | - | - | - | - | - | - | - | {problems} |")
            continue
        wall = _median(runs, "process_s")
        loads = ", ".join(f"{r['extra']['loadavg_start'][0]:.1f}" for r in runs)
        lines.append(f"{head} {runs[0]['extra']['npartitions']} | {len(runs)} | {wall:.1f} | "
                     f"{_median(runs, 'seconds'):.1f} | "
                     f"{statistics.median(r['extra']['fit_s'] for r in runs):.1f} | "
                     f"{_median(runs, 'cpu_s'):.1f} | "
                     f"{c['rows'] / wall:,.0f} | {max(r['peak_rss_mb'] for r in runs):,.0f} | "
                     f"{_process_peaks(runs)} | {loads} | ok |")
    groups = [[c for c in results["configs"] if c["scenario"] == "size" and c["runs"]]]
    groups += [[c for c in results["configs"] if c["scenario"] == "curve" and c["runs"]
                and c["mode"] == mode] for mode in ("local", "cluster")]
    for sizes in groups:
        lines += _ratios(sizes)
    lines.append(scaling_curve.report(results["configs"]))
    seen = set()
    for c in results["configs"]:
        if c.get("distinct") and (c["scenario"], c["rows"]) not in seen:
            seen.add((c["scenario"], c["rows"]))
            lines += ["", f"Distinct values, {c['scenario']} {c['rows']:,} rows (widest "
                      "columns, pyarrow value counts of the input): "
                      + ", ".join(f"{k} {v:,}" for k, v in c["distinct"].items()) + "."]
    return "\n".join(lines)


def _ratios(sizes: list[dict]) -> list[str]:
    """time(large) / time(small) of one group of sizes: 8M and 32M rows when both were
    measured, else the smallest and the largest; whole process, work, fit and CPU."""
    if len(sizes) < 2:
        return []
    by_rows = {c["rows"]: c for c in sizes}
    small, large = (by_rows[8_000_000], by_rows[32_000_000]) if {8_000_000, 32_000_000} \
        <= by_rows.keys() else (sizes[0], sizes[-1])
    mode = {0: "in-process"}.get(small["n_workers"], f"{small['n_workers']} workers")
    pairs = [b["process_s"] / a["process_s"]
             for a, b in zip(small["runs"], large["runs"], strict=False)]
    ratio = {key: _median(large["runs"], key) / _median(small["runs"], key)
             for key in ("process_s", "seconds", "cpu_s")}
    fit = (statistics.median(r["extra"]["fit_s"] for r in large["runs"])
           / statistics.median(r["extra"]["fit_s"] for r in small["runs"]))
    rss = (max(r["peak_rss_mb"] for r in large["runs"])
           / max(r["peak_rss_mb"] for r in small["runs"]))
    return ["", f"{small['scenario']}, {mode}: time({large['rows']:,}) / "
            f"time({small['rows']:,}), whole process: " + ", ".join(f"{p:.2f}" for p in pairs)
            + f" (per alternating repeat), median {ratio['process_s']:.2f}; work "
            f"{ratio['seconds']:.2f}; fit {fit:.2f}; CPU {ratio['cpu_s']:.2f}; peak RSS "
            f"{rss:.2f} (data ratio {large['rows'] / small['rows']:.0f})."]


def _encoded(config: dict) -> str:
    """The categorical columns a configuration encodes, for the table."""
    if config["kind"] == "criteo":
        return "C1..C26 (+ 13 continuous)"
    return " ".join(config["columns"])


def results_label(scenarios: list[str], profile: str, settings: Any = None) -> str:
    """``scaling-<profile>`` for every scenario, else ``scaling-<scenario>-...-<profile>``
    (the result files' name, the snapshot's folder). With the run's ``settings`` (the parsed
    arguments or the results' ``settings``), a run of the out-of-core scenario alone names its
    rows and memory limit (``scaling-out-of-core-32M-3GB-kaggle``) and one of the curve alone
    in fewer modes than both names them (``scaling-curve-local-kaggle``): one current file
    per scenario.
    """
    chosen = [] if sorted(scenarios) == sorted(SCENARIOS) else list(scenarios)
    get = (settings.get if isinstance(settings, dict)
           else (lambda k, d=None: getattr(settings, k, d)))
    if settings is not None and chosen == ["out-of-core"]:
        chosen += [report.rows_label([get("ooc_rows")]),
                   get("ooc_memory") or OOC_MEMORY[profile]]
    if settings is not None and chosen == ["curve"] and sorted(get("curve_modes") or []) != [
            "cluster", "local"]:
        chosen += list(get("curve_modes"))
    return "-".join(["scaling", *chosen, profile])


def write(results: dict, md: str) -> None:
    settings = results["settings"]
    stem = report.result_stem(results_label(settings["scenarios"], settings["profile"],
                                            settings))
    results.setdefault("command", report.command_line())
    Path(f"{stem}.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    m, code = results["machine"], results["code"]
    v = m["versions"]
    text = [f"# scaling benchmark, {results['started'][:10]}, {m['host']}", "",
            f"Data: `synthetic_criteo(profile={results['settings']['profile']!r})` (the `data` "
            "column says which data each number comes from). "
            "Our standard Criteo workflow on `irs.cluster.start_cluster(n_workers=2)` (1 thread "
            "per worker) or in-process (Dask's threaded scheduler, 2 threads) as the "
            "`workers x limit` column says, and Categorify alone for the cardinality scenario. "
            "Wall: the whole process as a user pays it (interpreter, imports, cluster start-up, "
            "work, shutdown); work: first read to last write. Peak RSS: the job process and "
            "all its children (Dask workers), polled every 50 ms. Every run counted was checked "
            "against independent pyarrow/pandas value counts and moments (whole vocabularies, "
            "sampled rows). The machine is shared (2 CPUs): the load average at the start of "
            "each run is listed.", "", f"Command: `{results['command']}`", "", md, "",
            f"Machine: {m['cpu']}, {m['cpu_count']} CPUs, {m['memory_gb']} GB, {m['platform']}. "
            f"Python {m['python']}, pandas {v['pandas']}, pyarrow {v['pyarrow']}, dask "
            f"{v['dask']}, distributed {v['distributed']}, numpy {v['numpy']}. Code: commit "
            f"{code['git_commit'][:12]} ({code['source']}), snapshot sha256 {code['sha256']}."]
    problems = [f"* {c['scenario']} {c['rows']:,}: {p[:600]}" for c in results["configs"]
                for p in c["problems"]]
    if problems:
        text += ["", "Problems:", "", *problems]
    Path(f"{stem}.md").write_text("\n".join(text) + "\n")
    print(f"results: {stem}.json, {stem}.md")
