"""Top-K prediction timed: ``irs.predict_topk`` on 1 and 2 workers vs a single-process loop.

``python -m benchmarks predict [--users 40000] [--items 3000] [--k 100] [--repeats 3] [--quick]``

An EASE model (its scoring is a dense ``[users, items] x [items, items]`` product: compute
bound) is fitted once on synthetic interactions and saved. The default size, 40,000 users x
3,000 items (about 20 s of scoring on one core), keeps the per-worker fixed costs (receiving
the 72 MB of weights, a worker's idle threads) small beside the work, as with the many users
of a real catalogue; at 10,000 users they were about a sixth of a worker's time. The users
(their items: the model's input, excluded from their lists) are written once as parquet
files. Every timed run is a fresh
process that loads the model and produces every user's top-K lists as parquet:

* ``loop``: one process, NumPy on one BLAS thread, the users in blocks (the same code path a
  worker task runs, ``interactive_recsys.models._predict.predict_partition``, on all users at
  once);
* ``irs-1`` / ``irs-2``: ``predict_topk(..., output=...)`` on a LocalCluster of 1 / 2
  single-threaded workers (cluster start-up not timed, including the workers' imports of
  pandas, Dask DataFrame, pyarrow and interactive_recsys: about 1 s of CPU in each fresh
  worker, which the loop's process also pays before its timer starts; timed, it added a
  fixed second to both cluster modes and so capped the 2-worker speed-up).

The users' files are sorted by user (a user may straddle two files, as a writer cutting by
rows leaves them), so ``predict_topk`` groups users by the files' statistics, with no shuffle.

Each run's output is checked against the loop's (same users, items and ranks). Each run also
reports its CPU seconds during the timed part: its own process (with Dask's scheduler, which
a LocalCluster runs there) and each worker's; on a shared machine these are steadier than wall
times, and their sum against the loop's shows what the cluster adds. Alongside each
run the machine's load is recorded: the 1-minute load average and the CPU share used by
processes other than the run's own, because the machine is shared. Results go to
``benchmarks/results/predict.{json,md}`` (``predict-quick`` for ``--quick``), replacing the
previous result.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import report

HELP = "top-K prediction: predict_topk on 1 and 2 workers vs a single-process NumPy loop"
ROOT = Path(__file__).resolve().parent.parent
DATA, WORK, RESULTS = (ROOT / "benchmarks" / d for d in ("data", "work", "results"))
MODES = ("loop", "irs-1", "irs-2")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", type=int, default=40_000)
    parser.add_argument("--items", type=int, default=3_000)
    parser.add_argument("--per-user", type=int, default=50, help="interactions per user")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--files", type=int, default=8, help="parquet files of users")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2000 users, 1000 items, 1 repeat")


def prepare(users: int, items: int, per_user: int, files: int) -> tuple[Path, Path]:
    """Users' interactions as parquet and a fitted EASE model, written once."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from interactive_recsys.models import EASE

    folder = DATA / f"predict-{users}x{items}x{per_user}"
    data, model = folder / "users", folder / "ease"
    if (model / "model.json").exists():
        return data, model
    rng = np.random.default_rng(0)
    weight = 1.0 / np.arange(1, items + 1) ** 0.8
    user_ids = np.repeat(np.arange(users), per_user)
    item_ids = rng.choice(items, len(user_ids), p=weight / weight.sum())
    frame = pd.DataFrame({"user_id": user_ids, "item_id": item_ids}).drop_duplicates()
    data.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), files)):
        pq.write_table(table.take(rows), data / f"part-{i:05d}.parquet")
    EASE(l2=200.0).fit(frame).save(model, overwrite=True)
    return data, model


def child(args_json: str) -> None:
    """One timed run in a fresh process; prints a JSON line."""
    args = json.loads(args_json)
    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    import interactive_recsys as irs
    from interactive_recsys.models._predict import predict_partition

    model = irs.models.load(args["model"])
    out = Path(args["out"])
    client = None
    if args["mode"] != "loop":
        client = irs.start_cluster(n_workers=int(args["mode"][-1]), threads_per_worker=1,
                                   memory_limit="4GB", gpu=False, dashboard=False)
        client.run(_import_stack)  # part of start-up, like the loop's imports: not timed
    workers_before = _worker_cpu(client)
    cpu_before = _process_cpu()
    started = time.perf_counter()
    if client is None:
        frame = pads.dataset(args["data"], format="parquet").to_table().to_pandas()
        arrays = {"__items__": model.items_, **model.arrays_}
        config = {**model.config(), "k": args["k"], "exclude_seen": True}
        top = predict_partition(frame, config, arrays, "cpu")
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(top, preserve_index=False), out / "part.parquet")
        rows = len(top)
    else:
        rows = irs.predict_topk(model, irs.Dataset(args["data"]), k=args["k"], output=out,
                                overwrite=True)["num_rows"]
    seconds = time.perf_counter() - started
    driver_cpu = _process_cpu() - cpu_before
    workers = _worker_cpu(client)
    worker_cpu = [workers[w] - workers_before[w] for w in sorted(workers)]
    print(json.dumps({"seconds": seconds, "rows": int(rows), "blas_threads": _blas_threads(np),
                      "driver_cpu_s": driver_cpu, "worker_cpu_s": worker_cpu}))
    if client is not None:
        client.close()
        client.cluster.close()


def _import_stack() -> None:
    """Import what a prediction task needs (about 1 s of CPU in a fresh worker, which
    imports nothing until its first task; the loop's process imports it before its timer)."""
    import dask.dataframe  # noqa: F401
    import pyarrow.parquet  # noqa: F401



def _process_cpu() -> float:
    """CPU seconds (user + system, every thread) this process has used so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _worker_cpu(client: Any) -> dict[str, float]:
    return {} if client is None else client.run(_process_cpu)


def _blas_threads(np: Any) -> Any:
    try:
        from threadpoolctl import threadpool_info

        return [i.get("num_threads") for i in threadpool_info()]
    except ImportError:
        return None


def run_once(mode: str, data: Path, model: Path, k: int) -> dict[str, Any]:
    import psutil

    out = WORK / "predict-out" / mode
    payload = json.dumps({"mode": mode, "data": str(data), "model": str(model), "k": k,
                          "out": str(out)})
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    load_before = os.getloadavg()[0]
    psutil.cpu_percent(percpu=False)
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.predict", payload], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps, own_cpu, samples, total_cpu = psutil.Process(proc.pid), {}, 0, 0.0
    while proc.poll() is None:
        try:
            for p in [ps, *ps.children(recursive=True)]:
                own_cpu[p.pid] = sum(p.cpu_times()[:2])
        except psutil.Error:
            pass
        total_cpu += psutil.cpu_percent(interval=0.25)
        samples += 1
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} failed:\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(load_avg=max(load_before, os.getloadavg()[0]),
                  machine_cpu_pct=total_cpu / max(samples, 1), out=str(out))
    return result


def check_same(outputs: dict[str, str]) -> None:
    """Every mode wrote the same (user, rank, item) rows as the loop."""
    import pyarrow.dataset as pads

    def rows(path: str) -> list:
        t = pads.dataset(path, format="parquet").to_table(columns=["user_id", "rank", "item_id"])
        return sorted(zip(*(t[c].to_pylist() for c in t.column_names), strict=True))

    reference = rows(outputs["loop"])
    for mode, path in outputs.items():
        assert rows(path) == reference, f"{mode} differs from the loop"


def run(args: argparse.Namespace) -> None:
    if args.quick:
        args.users, args.items, args.repeats = 2_000, 1_000, 1
    data, model = prepare(args.users, args.items, args.per_user, args.files)
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    for rep in range(args.repeats):
        for mode in MODES:  # interleaved: A B C A B C, so load changes hit every mode alike
            r = run_once(mode, data, model, args.k)
            results[mode].append(r)
            print(f"{mode:>6} run {rep + 1}: {r['seconds']:7.2f} s, CPU {_cpu_text(r)}, load avg "
                  f"{r['load_avg']:.1f}, machine CPU {r['machine_cpu_pct']:.0f}%", flush=True)
        check_same({m: results[m][-1]["out"] for m in MODES})
    write_results(results, args)


def _cpu_text(r: dict[str, Any]) -> str:
    """The run's CPU seconds: its own process (with the scheduler) + each worker."""
    workers = " + ".join(format(w, ".2f") for w in r["worker_cpu_s"])
    return f"{r['driver_cpu_s']:.2f}" + (f" + {workers}" if workers else "") + " s"


def _load_note(loads: list[float], cpu: list[float]) -> str:
    """What the machine's load says about these numbers (the CPU share includes the runs)."""
    where = (f"the 1-minute load average was {min(loads):.1f} to {max(loads):.1f} on "
             f"{os.cpu_count()} CPUs and the whole machine's CPU use averaged "
             f"{statistics.mean(cpu):.0f}% (100% = every core busy, the runs' own included)")
    if max(loads) <= 0.75 * (os.cpu_count() or 1) + 1:
        return f"Quiet machine: {where}."
    return (f"**The machine was shared with other jobs**: {where}, so a second worker often "
            "found no free core; the speed-up measures that contention as much as the code.")


def write_results(results: dict[str, list[dict]], args: argparse.Namespace) -> None:
    import dask
    import numpy as np

    import interactive_recsys as irs

    median = {m: statistics.median(r["seconds"] for r in runs) for m, runs in results.items()}
    date = datetime.date.today().isoformat()
    stem = report.result_stem("predict-quick" if args.quick else "predict")
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
               f"Python {platform.python_version()}, interactive-recsys {irs.__version__} "
               f"(commit {commit}), numpy {np.__version__}, dask {dask.__version__}")
    loads = [r["load_avg"] for runs in results.values() for r in runs]
    cpu = [r["machine_cpu_pct"] for runs in results.values() for r in runs]
    stem.with_suffix(".json").write_text(json.dumps(
        {"date": date, "command": report.command_line(), "commit": commit,
         "machine": machine, "users": args.users, "items": args.items,
         "per_user": args.per_user, "k": args.k, "repeats": args.repeats, "median_s": median,
         "speedup_2_vs_1": median["irs-1"] / median["irs-2"],
         "irs_1_vs_loop": median["irs-1"] / median["loop"], "results": results}, indent=2))
    lines = [f"# Top-K prediction, {date}, vm", "", f"Command: `{report.command_line()}`", "",
             f"EASE on {args.users:,} users x {args.items:,} items ({args.per_user} "
             f"interactions per user), top-{args.k} per user with seen items excluded, written "
             f"as parquet. Median of {args.repeats} run(s), each a fresh process, modes "
             "interleaved; time from the call to the last file written (model loading and "
             "cluster start-up not timed). Every run's rows equal the loop's.", "",
             "| mode | median s | runs s | vs loop | CPU s (driver + workers), first run "
             "| max load avg | machine CPU % |",
             "|---|---:|---|---:|---|---:|---:|"]
    for mode, runs in results.items():
        each = ", ".join(format(r["seconds"], ".2f") for r in runs)
        lines.append(f"| {mode} | {median[mode]:.2f} | {each} | "
                     f"{median[mode] / median['loop']:.2f}x | {_cpu_text(runs[0])} | "
                     f"{max(r['load_avg'] for r in runs):.1f} | "
                     f"{statistics.mean(r['machine_cpu_pct'] for r in runs):.0f} |")
    lines += ["", f"Speed-up of 2 workers over 1: **{median['irs-1'] / median['irs-2']:.2f}x**; "
              f"1 worker vs the single-process loop: **{median['irs-1'] / median['loop']:.2f}x** "
              "the loop's time.", "",
              f"Machine: {machine}. " + _load_note(loads, cpu), ""]
    stem.with_suffix(".md").write_text("\n".join(lines))
    print(f"wrote {stem}.json and .md")


if __name__ == "__main__":
    child(sys.argv[1])
