"""The MovieLens example graph (:func:`interactive_recsys.datasets.movielens_workflow`) timed.

``python -m benchmarks movielens [--ratings 1000000 5000000] [--repeats 3] [--quick]``

For each data set (synthetic ratings of the given sizes, and the real MovieLens releases in
``/work/shared/data`` when present) the ratings are written once as parquet files (untimed).
Every run is a fresh process that opens them as a Dataset, fits the graph (Categorify, genres,
JoinGroupby, TargetEncoding: one Dask computation per phase) and writes the per-user
histories (a key shuffle by user, Groupby, ListSlice) as parquet. Its peak RSS, with all its
children (the Dask workers in ``cluster`` mode), is polled every 50 ms. Results go to
``benchmarks/results/movielens.{json,md}`` (``movielens-quick`` for ``--quick``), replacing
the previous result.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import report

HELP = "the MovieLens example graph (ids, genres, popularity, target encoding, user histories)"
ROOT = Path(__file__).resolve().parent.parent
DATA, WORK, RESULTS = (ROOT / "benchmarks" / d for d in ("data", "work", "results"))
REAL = Path(os.environ.get("IRS_SHARED_DATA", "/work/shared/data"))
REAL_SETS = ("movielens_100k", "movielens_latest_small", "movielens_1m_sample")
HISTORY = 20
POLL_S = 0.05


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ratings", type=int, nargs="+", default=[1_000_000, 5_000_000],
                        help="synthetic data sizes in ratings (default: 1000000 5000000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per data set and mode")
    parser.add_argument("--modes", nargs="+", choices=["local", "cluster"],
                        default=["local", "cluster"], help="Dask's threaded scheduler in the "
                        "process (local) or a 2-worker LocalCluster (cluster)")
    parser.add_argument("--part-size", default="32MB", help="Dataset partition size")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 200k synthetic ratings, 1 repeat, local mode")


def synthetic_sizes(ratings: int) -> dict[str, int]:
    """Users and items for a synthetic data set: about 150 ratings per user (ml-1m: 165)."""
    return {"n_users": max(50, ratings // 150), "n_items": max(100, ratings // 250),
            "n_ratings": ratings}


def prepare(name: str, ratings: int | None, files: int = 8) -> tuple[Path, dict[str, Any]]:
    """Write a data set once as parquet files; return its folder and its description."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from interactive_recsys.datasets import read_movielens, synthetic_movielens

    folder = DATA / f"movielens-{name}"
    info_path = folder / "_info.json"
    if info_path.exists():
        return folder, json.loads(info_path.read_text())
    if ratings is None:
        df = read_movielens(REAL / name)
        source = f"{REAL / name} (read_movielens)"
    else:
        sizes = synthetic_sizes(ratings)
        df = synthetic_movielens(**sizes, seed=0)
        source = f"synthetic_movielens({', '.join(f'{k}={v}' for k, v in sizes.items())}, seed=0)"
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    for i, rows in enumerate(np.array_split(np.arange(len(df)), files)):
        pq.write_table(table.take(rows), tmp / f"part-{i:05d}.parquet")
    info = {"name": name, "source": source, "ratings": len(df),
            "users": int(df["user_id"].nunique()), "items": int(df["item_id"].nunique()),
            "files": files}
    (tmp / "_info.json").write_text(json.dumps(info))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder, info


def child(args_json: str) -> None:
    """One timed run (in its own process): fit, then transform and write the histories."""
    args = json.loads(args_json)
    import dask

    import interactive_recsys as irs
    from interactive_recsys.datasets import movielens_workflow

    client = None
    if args["mode"] == "cluster":
        import distributed

        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           dashboard_address=None, memory_limit="4GB")
        client = distributed.Client(cluster)
    else:
        dask.config.set(scheduler="threads", num_workers=2)
    started = time.perf_counter()
    ds = irs.Dataset(args["src"], part_size=args["part_size"], backend="cpu")
    wf = movielens_workflow(history=HISTORY)
    wf.fit(ds)
    fitted = time.perf_counter()
    summary = wf.transform(ds, training=True).to_parquet(args["out"], overwrite=True)
    done = time.perf_counter()
    print(json.dumps({"seconds": done - started, "fit_s": fitted - started,
                      "transform_s": done - fitted, "partitions": ds.npartitions,
                      "users_out": int(summary.get("num_rows", -1)) if isinstance(summary, dict)
                      else -1}))
    if client is not None:
        client.close()
        cluster.close()


def run_once(src: Path, out: Path, mode: str, part_size: str,
             timeout: float = 1800) -> dict[str, Any]:
    """A fresh process for one run; its result and the peak RSS of it and its children."""
    import psutil

    payload = json.dumps({"src": str(src), "out": str(out), "mode": mode,
                          "part_size": part_size})
    begin, load_before = time.perf_counter(), os.getloadavg()[0]
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.movielens", payload],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            tree = [ps, *ps.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(POLL_S)
        if time.perf_counter() - begin > timeout:
            proc.kill()
            raise TimeoutError(f"run on {src} ({mode}) took over {timeout} s")
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"run on {src} ({mode}) failed:\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(peak_rss_mb=peak / 2**20, process_s=time.perf_counter() - begin,
                  load_avg=max(load_before, os.getloadavg()[0]))
    return result


def check_output(out: Path, info: dict[str, Any]) -> None:
    """The written histories: one row per user, every rating counted, lists at most 20 long."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    table = pads.dataset(out, format="parquet").to_table(
        columns=["user_id", "rating_count", "item_id_list"])
    lengths = pc.list_value_length(table["item_id_list"])
    assert table.num_rows == info["users"], (table.num_rows, info["users"])
    assert pc.sum(table["rating_count"]).as_py() == info["ratings"]
    assert pc.max(lengths).as_py() <= HISTORY
    assert pc.count_distinct(table["user_id"]).as_py() == info["users"]


def run(args: argparse.Namespace) -> None:
    if args.quick:
        args.ratings, args.repeats, args.modes = [200_000], 1, ["local"]
    sets: list[tuple[str, int | None]] = [(f"synthetic-{n}", n) for n in args.ratings]
    skipped = []
    for name in REAL_SETS:
        try:
            sets.append((name, None)) if _readable(name) else skipped.append(name)
        except Exception as exc:  # a sample without a ratings file
            skipped.append(f"{name} ({exc})")
    rows = []
    for name, ratings in sets:
        src, info = prepare(name, ratings)
        for mode in args.modes:
            runs = []
            for k in range(args.repeats):
                out = WORK / "movielens-out" / f"{name}-{mode}"
                result = run_once(src, out, mode, args.part_size)
                check_output(out, info)
                runs.append(result)
                print(f"{name:>24} {mode:>7} run {k + 1}: {result['seconds']:7.2f} s "
                      f"(fit {result['fit_s']:.2f}, histories {result['transform_s']:.2f}), "
                      f"peak {result['peak_rss_mb']:,.0f} MB", flush=True)
            rows.append({**info, "mode": mode, "runs": runs,
                         "seconds": statistics.median(r["seconds"] for r in runs),
                         "fit_s": statistics.median(r["fit_s"] for r in runs),
                         "transform_s": statistics.median(r["transform_s"] for r in runs),
                         "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
                         "load_avg": max(r["load_avg"] for r in runs),
                         "partitions": runs[0]["partitions"]})
    write_results(rows, skipped, args)


def _readable(name: str) -> bool:
    from interactive_recsys.datasets import read_movielens

    if not (REAL / name).is_dir():
        return False
    read_movielens(REAL / name)
    return True


def write_results(rows: list[dict], skipped: list[str], args: argparse.Namespace) -> None:
    import dask
    import pandas as pd
    import pyarrow as pa

    import interactive_recsys as irs

    date = datetime.date.today().isoformat()
    stem = report.result_stem("movielens-quick" if args.quick else "movielens")
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
               f"Python {platform.python_version()}, interactive-recsys {irs.__version__} "
               f"(commit {commit}), pandas {pd.__version__}, pyarrow {pa.__version__}, "
               f"dask {dask.__version__}")
    stem.with_suffix(".json").write_text(json.dumps(
        {"date": date, "command": report.command_line(), "commit": commit,
         "machine": machine, "history": HISTORY, "repeats": args.repeats,
         "part_size": args.part_size, "results": rows, "skipped": skipped}, indent=2))
    lines = [f"# MovieLens example graph, {date}, vm", "", f"Command: `{report.command_line()}`",
             "",
             f"`movielens_workflow(history={HISTORY})`: Categorify user/item ids, Categorify "
             "genres (multi-hot), JoinGroupby item popularity, TargetEncoding of the item on "
             "rating >= 4 (out-of-fold), Groupby user (shuffled by key, sorted by time) into "
             f"history lists, ListSlice last {HISTORY}; written as parquet. Median of "
             f"{args.repeats} run(s) (each column its own median), each a fresh process; wall "
             "time from opening the data to the last file written (no interpreter or cluster "
             "start-up). Peak RSS: the process and its Dask workers, polled every 50 ms. "
             "Every run's output was checked (one row per user, every rating counted, lists "
             "at most 20 long).", "",
             "| data | ratings | users | mode | partitions | fit s | histories s | total s "
             "| ratings/s | peak RSS MB | load avg |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['ratings']:,} | {r['users']:,} | {r['mode']} | "
                     f"{r['partitions']} | {r['fit_s']:.2f} | {r['transform_s']:.2f} | "
                     f"{r['seconds']:.2f} | {r['ratings'] / r['seconds']:,.0f} | "
                     f"{r['peak_rss_mb']:,.0f} | {r['load_avg']:.1f} |")
    lines += ["", f"Machine: {machine}. Load avg: the highest 1-minute load average seen at "
              "the start or end of a run; the machine is shared, and a load above its 2 CPUs "
              "means other processes competed for them.", ""]
    if skipped:
        lines += [f"Not run: {', '.join(skipped)}.", ""]
    stem.with_suffix(".md").write_text("\n".join(lines))
    print(f"wrote {stem}.json and .md")


if __name__ == "__main__":
    child(sys.argv[1])
