"""``python -m benchmarks criteo-torchrec``: raw Criteo day files to TorchRec's npy files.

Four contenders on the same generated day files (``synthetic_criteo(profile="kaggle")``
written as raw TSV), each a whole process timed from outside, its peak memory the largest sum
of the RSS of the process and its children (sampled every 0.2 s):

* ``irs``: ``irs criteo IN OUT --frequency-threshold T`` on a local cluster, and
  ``irs-local``: the same with ``--local`` (in the process, a thread per core);
* ``torchrec``: TorchRec's own ``BinaryCriteoUtils.tsv_to_npys`` per day, then
  ``sparse_to_contiguous`` over all days (what ``npy_preproc_criteo.py`` and
  ``contiguous_preproc_criteo.py`` call; the latter insists on 24 days, so the functions are
  called directly);
* ``polars``: the same job written with polars (eager, in memory like TorchRec's): each day
  read with ``pl.read_csv`` (tab, no header, the ids as strings parsed with
  ``str.to_integer(base=16)``), missing values 0, ``x - m + 2`` in int32 (``m`` the day's
  minimum count) and its float32 log with numpy (polars' differs in the last bit), the ids
  of each column counted over all days, those below the threshold 1 and the others
  numbered from 2 (by descending count, ties by ascending id), written as the same
  ``.npy`` files;
* ``floor``: a pyarrow CSV read of each day and ``np.save`` of arrays of the same dtypes and
  shapes as the four output files (no hex parsing, no frequencies).

The outputs of ``irs``, ``irs-local`` and ``polars`` are checked against ``torchrec``'s
(and polars' against ``irs-local``'s): dense, sparse and labels byte for byte, the
contiguous ids one-to-one per column. The result goes to
``benchmarks/results/criteo-torchrec.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from typing import Any

import numpy as np

HELP = "irs criteo --to torchrec vs TorchRec's own scripts vs polars vs the pyarrow floor"
RESULTS = os.path.join(os.path.dirname(__file__), "results")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TORCHREC = """
import sys
from torchrec.datasets.criteo import BinaryCriteoUtils as U
src, out, days, t = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for d in range(days):
    U.tsv_to_npys(f"{src}/day_{d}",
                  *(f"{out}/day_{d}_{k}.npy" for k in ("dense", "sparse", "labels")))
U.sparse_to_contiguous([f"{out}/day_{d}_sparse.npy" for d in range(days)], out,
                       frequency_threshold=t)
"""

POLARS = """
import sys
import numpy as np, polars as pl
src, out, days, t = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
dense_cols = [f"I{i}" for i in range(1, 14)]
cats = [f"C{i}" for i in range(1, 27)]
names = ["label"] + dense_cols + cats
schema = {n: pl.Int64 for n in names[:14]} | {n: pl.String for n in cats}
sparse = []
for d in range(days):
    df = pl.read_csv(f"{src}/day_{d}", separator="\t", has_header=False, schema=schema,
                     quote_char=None).fill_null(0)
    df = df.with_columns([pl.col(c).str.to_integer(base=16).fill_null(0) for c in cats]
                         + [pl.col(c).cast(pl.Int32) for c in names[:14]])
    m = df.select(pl.min_horizontal(pl.col(dense_cols).min())).item()
    # x - m + 2 in int32 in polars; the float32 log in numpy, as TorchRec's (polars' own
    # float32 log differs from numpy's in the last bit of most values)
    shifted = df.select(pl.col(c) - (m - 2) for c in dense_cols).to_numpy()
    np.save(f"{out}/day_{d}_dense.npy", np.log(np.ascontiguousarray(shifted), dtype=np.float32))
    np.save(f"{out}/day_{d}_sparse.npy", np.ascontiguousarray(df.select(cats).to_numpy()))
    np.save(f"{out}/day_{d}_labels.npy", df["label"].to_numpy().reshape(-1, 1))
    sparse.append(df.select(cats))
everything = pl.concat(sparse)
lookups = {}
for c in cats:
    counts = everything[c].value_counts(name="n").filter(pl.col("n") >= t)
    counts = counts.sort(["n", c], descending=[True, False])
    lookups[c] = (counts[c], pl.int_range(2, len(counts) + 2, eager=True))
for d, day in enumerate(sparse):
    contig = day.select(pl.col(c).replace_strict(*lookups[c], default=1, return_dtype=pl.Int64)
                        for c in cats)
    np.save(f"{out}/day_{d}_sparse_contig_freq.npy", np.ascontiguousarray(contig.to_numpy()))
"""

FLOOR = """
import sys
import numpy as np, pyarrow as pa, pyarrow.csv as c
src, out, days = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = ["label"] + [f"I{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)]
types = {n: pa.int64() for n in names[:14]} | {n: pa.string() for n in names[14:]}
for d in range(days):
    t = c.read_csv(f"{src}/day_{d}", read_options=c.ReadOptions(column_names=names),
                   parse_options=c.ParseOptions(delimiter="\\t", quote_char=False),
                   convert_options=c.ConvertOptions(column_types=types))
    n = t.num_rows
    dense = np.column_stack([t.column(f"I{i}").fill_null(0).to_numpy() for i in range(1, 14)])
    np.save(f"{out}/day_{d}_dense.npy", dense.astype(np.float32))
    labels = t.column("label").fill_null(0).to_numpy().astype(np.int32).reshape(-1, 1)
    np.save(f"{out}/day_{d}_labels.npy", labels)
    sparse = np.zeros((n, 26), np.int64)
    np.save(f"{out}/day_{d}_sparse.npy", sparse)
    np.save(f"{out}/day_{d}_sparse_contig_freq.npy", sparse)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--days", type=int, default=4, help="day files (default 4)")
    p.add_argument("--rows", type=int, default=250_000, help="rows per day (default 250k)")
    p.add_argument("--frequency-threshold", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-limit", default="3GB")
    p.add_argument("--contenders", nargs="+",
                   default=["irs", "irs-local", "irs-local-1day", "torchrec", "polars",
                            "floor"],
                   choices=["irs", "irs-local", "irs-local-1day", "torchrec", "polars",
                            "floor"],
                   help="irs-local-1day: irs --local on the first day only (its peak memory "
                   "against irs-local's: flat in the number of days)")
    p.add_argument("--workdir", default=os.path.join(ROOT, "benchmarks", "work",
                                                     "criteo-torchrec"))


def _measure(cmd: list[str], timeout: float = 3600) -> dict[str, Any]:
    import resource

    import psutil

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = 0
    parent = psutil.Process(proc.pid)
    while proc.poll() is None:
        rss = 0
        try:
            for p in [parent, *parent.children(recursive=True)]:
                try:
                    rss += p.memory_info().rss
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        peak = max(peak, rss)
        if time.perf_counter() - start > timeout:
            proc.kill()
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    if proc.returncode:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}):\n{output[-3000:]}")
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "peak_rss_mb": round(peak / 2**20), "load_average_1min": round(load, 2),
            "load_average_1min_after": round(os.getloadavg()[0], 2)}


def _generate(folder: str, days: int, rows: int) -> None:
    from interactive_recsys.datasets import synthetic_criteo
    from interactive_recsys.datasets._criteo_tsv import write_criteo_tsv

    os.makedirs(folder, exist_ok=True)
    for d in range(days):
        path = os.path.join(folder, f"day_{d}")
        if os.path.exists(path):
            continue
        pq = synthetic_criteo(rows, seed=d, path=os.path.join(folder, f".pq{d}"),
                              profile="kaggle")
        write_criteo_tsv(pq, path + ".tmp")
        os.replace(path + ".tmp", path)
        shutil.rmtree(pq)


def _check(ours: str, theirs: str, days: int) -> dict[str, Any]:
    same = all(open(f"{ours}/day_{d}_{k}.npy", "rb").read()
               == open(f"{theirs}/day_{d}_{k}.npy", "rb").read()
               for d in range(days) for k in ("dense", "sparse", "labels"))
    a = np.concatenate([np.load(f"{ours}/day_{d}_sparse_contig_freq.npy") for d in range(days)])
    b = np.concatenate([np.load(f"{theirs}/day_{d}_sparse_contig_freq.npy")
                        for d in range(days)])
    one_to_one = a.shape == b.shape and a.dtype == b.dtype and all(
        len(np.unique(a[:, j])) == len(np.unique(b[:, j]))
        == len(np.unique(a[:, j] * (int(b[:, j].max()) + 1) + b[:, j]))
        for j in range(a.shape[1]))
    return {"dense_sparse_labels_identical": bool(same),
            "contig_one_to_one_per_column": bool(one_to_one),
            "contig_infrequent_equal": bool(a.shape == b.shape and np.array_equal(a == 1, b == 1))}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = os.path.abspath(args.workdir)
    src = os.path.join(work, f"tsv-{args.days}x{args.rows}")
    _generate(src, args.days, args.rows)
    rows = args.days * args.rows
    one_day = os.path.join(work, f"tsv-1x{args.rows}")
    os.makedirs(one_day, exist_ok=True)
    if not os.path.exists(os.path.join(one_day, "day_0")):
        os.link(os.path.join(src, "day_0"), os.path.join(one_day, "day_0"))
    cmds = {
        "irs": [sys.executable, "-m", "interactive_recsys.cli", "criteo", src, "{out}",
                "--frequency-threshold", str(args.frequency_threshold), "--workers",
                str(args.workers), "--memory-limit", args.memory_limit, "--quiet"],
        "irs-local": [sys.executable, "-m", "interactive_recsys.cli", "criteo", src, "{out}",
                      "--frequency-threshold", str(args.frequency_threshold), "--local",
                      "--quiet"],
        "irs-local-1day": [sys.executable, "-m", "interactive_recsys.cli", "criteo", one_day,
                           "{out}", "--frequency-threshold", str(args.frequency_threshold),
                           "--local", "--quiet"],
        "torchrec": [sys.executable, "-W", "ignore", "-c", TORCHREC, src, "{out}",
                     str(args.days), str(args.frequency_threshold)],
        "polars": [sys.executable, "-c", POLARS, src, "{out}", str(args.days),
                   str(args.frequency_threshold)],
        "floor": [sys.executable, "-c", FLOOR, src, "{out}", str(args.days)],
    }
    results: dict[str, Any] = {}
    for name in args.contenders:
        out = os.path.join(work, f"out-{name}")
        shutil.rmtree(out, ignore_errors=True)
        if not name.startswith("irs"):
            os.makedirs(out)
        print(f"{name} ...", flush=True)
        results[name] = _measure([c.replace("{out}", out) for c in cmds[name]])
        results[name]["rows_per_second"] = round(
            (args.rows if name.endswith("1day") else rows) / results[name]["seconds"])
        print(f"  {results[name]}", flush=True)
    check = {ours: _check(os.path.join(work, f"out-{ours}"), os.path.join(work, "out-torchrec"),
                          args.days)
             for ours in ("irs", "irs-local", "polars")
             if {ours, "torchrec"} <= set(args.contenders)}
    if {"polars", "irs-local"} <= set(args.contenders):
        check["polars_vs_irs-local"] = _check(os.path.join(work, "out-polars"),
                                              os.path.join(work, "out-irs-local"), args.days)
    ratios = {}
    for ours in ("irs", "irs-local"):
        for other in ("torchrec", "polars", "floor"):
            if ours in results and other in results:
                for kind in ("seconds", "cpu_seconds"):
                    ratios[f"{ours}_{kind}_vs_{other}"] = round(
                        results[ours][kind] / results[other][kind], 3)
    import platform

    import psutil

    from .report import command_line, git_state

    report = {"benchmark": "criteo-torchrec", "command": command_line(),
              "date": time.strftime("%Y-%m-%d"), "code": git_state(),
              "days": args.days, "rows_per_day": args.rows,
              "rows": rows, "frequency_threshold": args.frequency_threshold,
              "irs_cluster": f"{args.workers} workers x {args.memory_limit}",
              "machine": f"{platform.processor() or platform.machine()}, "
                         f"{psutil.cpu_count()} CPUs (shared)",
              "results": results, "ratios": ratios, "outputs_checked": check}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "criteo-torchrec.json"), "w") as f:
        json.dump(report, f, indent=2)
    lines = [f"# irs criteo --to torchrec: {args.days} days x {args.rows:,} rows "
             f"(kaggle profile, frequency threshold {args.frequency_threshold})", "",
             "Whole process, one run each: wall seconds, CPU seconds (user + system of the "
             "process and its children) and peak memory (the largest summed RSS of the "
             "process tree). The load average (1 min) of the machine before and after each "
             "contender says how much others used it: wall seconds on a loaded machine are "
             "larger, CPU seconds hardly change.", "",
             f"Machine: {report['machine']}; irs on {report['irs_cluster']}.", "",
             "| contender | seconds | CPU seconds | rows/s | peak MB | load before, after |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {k} | {v['seconds']} | {v['cpu_seconds']} | {v['rows_per_second']:,} | "
              f"{v['peak_rss_mb']:,} | {v['load_average_1min']}, "
              f"{v['load_average_1min_after']} |" for k, v in results.items()]
    lines += ["", "Ratios (irs / other; below 1 means irs took less):", ""]
    lines += [f"- {k}: {v}" for k, v in ratios.items()]
    lines += ["", "Outputs checked (against TorchRec's, and polars' against irs-local's): "
              f"{check}", "",
              textwrap.dedent(f"""\
              Command: `python -m benchmarks criteo-torchrec --days {args.days} --rows {args.rows}
              --frequency-threshold {args.frequency_threshold} --workers {args.workers}
              --memory-limit {args.memory_limit}`""").replace("\n", " ")]
    with open(os.path.join(RESULTS, "criteo-torchrec.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return report
