"""Overhead of the live Monitor + Dashboard on a workflow run: the same run with and without.

One local cluster (2 workers) runs the standard Criteo workflow (fit, then transform + write)
``--repeats`` times with a Dashboard sampling every ``--interval-ms`` and as many times
without, alternating which goes first in each pair; the overhead is the median wall time
with over the median without, minus one (also given per pair). The Dashboard is the real
widget (ipywidgets' comm without a frontend): every sample is drawn into its Bokeh sources
and serialized as document patches, as in a notebook.

``python -m benchmarks monitor-overhead [--rows N] [--repeats R] [--interval-ms MS]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import psutil

from .harness import busy_cpu_s, tree_cpu_s

HELP = "overhead of the live Monitor + Dashboard on a workflow run (with vs without)"
WORK = Path(__file__).resolve().parent / "work" / "monitor-overhead"
DATA = Path(__file__).resolve().parent / "data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows (default 1000000)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="pairs of runs, one with and one without the dashboard")
    parser.add_argument("--interval-ms", type=int, default=500, help="sampling period")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="3GB", help="per worker")


def _workflow(artifacts: Path) -> Any:
    import interactive_recsys as irs
    from interactive_recsys import ops

    cats = [f"C{i}" for i in range(1, 27)] >> ops.Categorify(freq_threshold=2)
    conts = ([f"I{i}" for i in range(1, 14)]
             >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
    return irs.Workflow(cats + conts + ["label"], artifacts_dir=str(artifacts))


def _one_run(client: Any, data: Path, with_dashboard: bool, interval_ms: int,
             index: int) -> dict[str, Any]:
    import interactive_recsys as irs

    out = WORK / f"out-{index}"
    shutil.rmtree(out, ignore_errors=True)
    dash = None
    if with_dashboard:
        dash = irs.ui.Dashboard(client, interval_ms=interval_ms)
    busy, own = busy_cpu_s(), tree_cpu_s()
    started = time.perf_counter()
    ds = irs.Dataset(str(data))
    wf = _workflow(WORK / f"artifacts-{index}").fit(ds)
    summary = wf.transform(ds).to_parquet(out)
    wall = time.perf_counter() - started
    other = (busy_cpu_s() - busy) - (tree_cpu_s() - own)
    run: dict[str, Any] = {"dashboard": with_dashboard, "wall_s": wall,
                           "cpu_s": tree_cpu_s() - own,
                           "rows": summary["num_rows"],
                           "other_cpu_pct": max(0.0, 100 * other / wall / (psutil.cpu_count()
                                                                           or 1))}
    if dash is not None:
        run["monitor"] = dash.monitor.overhead()
        run["samples"] = len(dash.monitor.samples)
        run["tasks_drawn"] = len(dash.sources["tasks"].data["start"])
        run["errors"] = list(dash.monitor.errors)
        dash.close()
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(WORK / f"artifacts-{index}", ignore_errors=True)
    return run


def run(args: argparse.Namespace) -> None:
    import interactive_recsys as irs

    from .report import command_line, git_state, machine_info, result_stem

    WORK.mkdir(parents=True, exist_ok=True)
    data = irs.datasets.synthetic_criteo(rows=args.rows, seed=0,
                                         path=DATA / f"criteo-{args.rows}",
                                         rows_per_file=500_000)
    client = irs.start_cluster(args.workers, memory_limit=args.memory_limit, dashboard=False,
                               gpu=False)
    runs: list[dict[str, Any]] = []
    try:
        _one_run(client, data, False, args.interval_ms, -1)  # warm-up, not counted
        for i in range(args.repeats):
            order = (True, False) if i % 2 == 0 else (False, True)
            for with_dashboard in order:
                runs.append(_one_run(client, data, with_dashboard, args.interval_ms, len(runs)))
                r = runs[-1]
                print(f"pair {i + 1}: {'with' if r['dashboard'] else 'without'} dashboard "
                      f"{r['wall_s']:.2f} s (other processes {r['other_cpu_pct']:.0f}% CPU)",
                      flush=True)
    finally:
        client.close()
        client.cluster.close()
    with_s = [r["wall_s"] for r in runs if r["dashboard"]]
    without_s = [r["wall_s"] for r in runs if not r["dashboard"]]
    cpu_with = [r["cpu_s"] for r in runs if r["dashboard"]]
    cpu_without = [r["cpu_s"] for r in runs if not r["dashboard"]]
    pairs = [runs[2 * i:2 * i + 2] for i in range(args.repeats)]
    paired = [next(r["wall_s"] for r in p if r["dashboard"])
              / next(r["wall_s"] for r in p if not r["dashboard"]) - 1 for p in pairs]
    summary = {"median_with_s": statistics.median(with_s),
               "median_without_s": statistics.median(without_s),
               "overhead_pct": 100 * (statistics.median(with_s) / statistics.median(without_s)
                                      - 1),
               "median_paired_overhead_pct": 100 * statistics.median(paired),
               "median_cpu_with_s": statistics.median(cpu_with),
               "median_cpu_without_s": statistics.median(cpu_without),
               "cpu_overhead_pct": 100 * (statistics.median(cpu_with)
                                          / statistics.median(cpu_without) - 1),
               "sample_mean_ms": statistics.median(r["monitor"]["mean_ms"] for r in runs
                                                   if r["dashboard"]),
               "target_pct": 3.0}
    results = {"benchmark": "monitor-overhead", "summary": summary, "runs": runs,
               "settings": {"rows": args.rows, "repeats": args.repeats,
                            "interval_ms": args.interval_ms, "workers": args.workers,
                            "memory_limit": args.memory_limit},
               "machine": machine_info(), "code": git_state(), "command": command_line(),
               "date": datetime.date.today().isoformat()}
    date = datetime.date.today().isoformat()
    stem = result_stem("monitor-overhead")
    Path(f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    Path(f"{stem}.md").write_text(_markdown(results, date))
    print(f"CPU overhead {summary['cpu_overhead_pct']:+.1f}%; wall-time overhead "
          f"{summary['overhead_pct']:+.1f}% (median paired "
          f"{summary['median_paired_overhead_pct']:+.1f}%); results: {stem}.md")


def _markdown(results: dict[str, Any], date: str) -> str:
    s, m, settings = results["summary"], results["machine"], results["settings"]
    lines = [f"# monitor-overhead benchmark, {date}, {m['host']}", "",
             f"The standard Criteo workflow (fit, then transform + write) on {settings['rows']:,} "
             f"rows, on a local cluster of {settings['workers']} workers "
             f"({settings['memory_limit']} each), {settings['repeats']} pairs of runs alternating "
             f"with and without a live Dashboard sampling every {settings['interval_ms']} ms "
             "(the real widget: samples drawn into Bokeh sources and serialized as patches). "
             "Wall time of the work only (no cluster start-up).", "",
             "| | median wall s | median CPU s (this process + workers) | runs |",
             "|---|---:|---:|---:|",
             f"| without dashboard | {s['median_without_s']:.2f} | "
             f"{s['median_cpu_without_s']:.2f} | {settings['repeats']} |",
             f"| with dashboard | {s['median_with_s']:.2f} | {s['median_cpu_with_s']:.2f} | "
             f"{settings['repeats']} |", "",
             f"**CPU overhead: {s['cpu_overhead_pct']:+.1f}%** (CPU seconds of the client, "
             "scheduler, monitor and workers, which other processes on a shared machine do "
             f"not inflate). **Wall-time overhead: {s['overhead_pct']:+.1f}%** (median with / "
             f"median without - 1); median of the per-pair overheads "
             f"{s['median_paired_overhead_pct']:+.1f}%."
             f" Target: under {s['target_pct']:.0f}%. One sample (scheduler memory state + "
             f"task stream + drawing) took {s['sample_mean_ms']:.1f} ms on average.", "",
             "| run | dashboard | wall s | CPU s | other processes' CPU % |",
             "|---:|---|---:|---:|---:|"]
    lines += [f"| {i + 1} | {'yes' if r['dashboard'] else 'no'} | {r['wall_s']:.2f} | "
              f"{r['cpu_s']:.2f} | {r['other_cpu_pct']:.0f} |"
              for i, r in enumerate(results["runs"])]
    v = m["versions"]
    lines += ["", f"Machine: {m['cpu']}, {m['cpu_count']} CPUs, {m['memory_gb']} GB, "
              f"{m['platform']} (shared with other work: see the CPU column). Python "
              f"{m['python']}, dask {v['dask']}, distributed {v['distributed']}. Code: commit "
              f"{results['code']['git_commit'][:12]}."]
    return "\n".join(lines) + "\n"
