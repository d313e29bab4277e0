"""Refit after an edit: the 40-column Criteo workflow fitted once, one continuous step edited,
then fitted again with ``reuse=`` the first fit (what the Studio's Run does after an edit).

``python -m benchmarks refit [--rows 8000000] [--data DIR] [--quick] [--cluster]
[--suffix=-TEXT]``

One fresh process (Dask's threaded scheduler, as ``irs-local`` in ``python -m benchmarks
criteo``; with ``--cluster`` a 2-worker ``irs.cluster.start_cluster``, what the Studio's
Cluster tab starts) opens the kaggle-profile data and times, each with its wall time and the
CPU time of the process and its children:

1. the first fit of the standard workflow (``C1..C26`` Categorify; ``I1..I13`` FillMissing ->
   Clip(0) -> LogOp -> Normalize);
2. the refit after ``Normalize`` -> ``NormalizeMinMax`` with ``reuse=`` the first fit;
3. the refit after ``Clip(min_value=0)`` -> ``Clip(min_value=1)`` (upstream of the Normalize);
4. the Studio's Run (``BuilderModel.run``, fit only) after the same ``NormalizeMinMax`` edit,
   its model holding the first fit;
5. a fit of the edited workflow from scratch, whose states must equal the refit's;
6. a fit of the edited branch alone (``I1..I13`` only): what any refit must at least do;
7. the refit after ``Categorify()`` -> ``Categorify(freq_threshold=3)`` with ``reuse=`` the
   first fit: the vocabularies cut again from the saved counts (refinished), no data read;
8. a fit of that workflow from scratch, whose states must equal step 7's.

Steps 2-4 and 7 run ``--repeats`` times each (the median is reported, every run is kept).
Step 7 has its own target, :data:`THRESHOLD_TARGET` of the first fit. ``--threshold-only``
runs steps 1, 7 and 8 alone. Then, on
the first file (one partition), the CPU milliseconds of each part of the continuous branch
(:func:`partition_ms`: read, FillMissing, Clip, LogOp, the moments, and the three operators as
the plan runs them, one chain; the least of 15 runs), steadier than whole fits on a shared
machine; and the branch's fit on every file in one thread, two threads and two processes
(:func:`parallel_s`): what the second CPU gives it.

The machine is shared: CPU seconds are reported beside wall seconds, with the share of the
machine's CPU that other processes used during each step. Results go to
``benchmarks/results/refit[-cluster]-<profile><suffix>.{json,md}``, replacing the previous
result of the same scenario.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .harness import busy_cpu_s, tree_cpu_s

HELP = "refit after editing one continuous step: reuse of the unchanged steps (Criteo, 40 columns)"
ROOT = Path(__file__).resolve().parent.parent
WORK, RESULTS = ROOT / "benchmarks" / "work" / "refit", ROOT / "benchmarks" / "results"
TARGET = 0.15  # the refit may take at most this share of the first fit's time
THRESHOLD = 3  # step 7's freq_threshold (the first fit's is 0)
THRESHOLD_TARGET = 0.3  # the freq_threshold-only refit: at most this share of the first fit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=8_000_000, help="data size (default 8M)")
    parser.add_argument("--profile", choices=["kaggle", "default"], default="kaggle",
                        help="synthetic_criteo profile (default: kaggle)")
    parser.add_argument("--data", default=None, help="an existing folder of the data "
                        "(default: benchmarks/data/criteo-<rows>-<profile>, made if missing)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each refit (median reported; default 3)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 200k rows")
    parser.add_argument("--cluster", action="store_true",
                        help="run every fit on irs.cluster.start_cluster(n_workers=2) (what the "
                        "Studio's Cluster tab starts) instead of Dask's threaded scheduler")
    parser.add_argument("--suffix", default="", help="appended to the results' file names "
                        "(e.g. --suffix=-continuous-ops: a scenario of its own)")
    parser.add_argument("--threshold-only", action="store_true",
                        help="only the first fit and the freq_threshold-only refit (steps 1, "
                        "7 and 8), into refit-threshold-<profile>.{json,md}")


def workflow(normalize: str = "Normalize", clip_min: int = 0, artifacts: str | None = None,
             categorical: bool = True, freq_threshold: int = 0):
    import interactive_recsys as irs
    from interactive_recsys import ops

    cats = [f"C{i}" for i in range(1, 27)] >> ops.Categorify(freq_threshold=freq_threshold)
    conts = ([f"I{i}" for i in range(1, 14)] >> ops.FillMissing(0)
             >> ops.Clip(min_value=clip_min) >> ops.LogOp() >> getattr(ops, normalize)())
    return irs.Workflow((cats + conts + ["label"]) if categorical else conts,
                        artifacts_dir=artifacts)


def timed(name: str, work: Any) -> tuple[Any, dict[str, Any]]:
    """``work()`` with its wall and CPU seconds, and the CPU share other processes used."""
    busy, cpu, started = busy_cpu_s(), tree_cpu_s(), time.perf_counter()
    result = work()
    wall, own = time.perf_counter() - started, tree_cpu_s() - cpu
    others = max(0.0, (busy_cpu_s() - busy - own) / ((os.cpu_count() or 1) * wall))
    print(f"{name:>28}: {wall:8.2f} s wall, {own:8.2f} s CPU, others "
          f"{100 * others:3.0f}% of the machine", flush=True)
    return result, {"step": name, "wall_s": wall, "cpu_s": own, "others_cpu_pct": 100 * others}


def _steps(wf: Any) -> dict[str, bool]:
    return {s.node_id: s.reused for s in wf.fitted_steps()}


def _refinished(wf: Any) -> list[str]:
    return [s.node_id for s in wf.fitted_steps() if s.refinished]


def branch_ops() -> list[Any]:
    """The continuous branch's per-value operators before Normalize, as :func:`workflow`
    builds them (Clip at its default minimum, 0)."""
    from interactive_recsys import ops

    return [ops.FillMissing(0), ops.Clip(min_value=0), ops.LogOp()]


def partition_ms(path: str, repeats: int = 15) -> dict[str, float]:
    """CPU milliseconds (the least of ``repeats`` runs) of each part of the continuous branch
    on one file read as one partition: the read of ``I1..I13``, FillMissing(0),
    Clip(min_value=0), LogOp, Normalize's moments (each on the previous one's output), and the
    five in a row."""
    import pyarrow.parquet as pq

    from interactive_recsys import ops
    from interactive_recsys.backend import get_backend
    from interactive_recsys.io._parquet_pieces import ParquetPiece, _PieceReader
    from interactive_recsys.tables._context import OpContext

    cols = [f"I{i}" for i in range(1, 14)]
    md = pq.read_metadata(path)
    piece = ParquetPiece(path, tuple(range(md.num_row_groups)), md.num_rows)
    reader, b = _PieceReader("cpu", pq.read_schema(path)), get_backend("cpu")
    ctx = OpContext(b, [tuple(cols)], "partition")
    chain = branch_ops()
    moments = ops.Normalize()

    def least(work: Any) -> tuple[float, Any]:
        times = []
        for _ in range(repeats):
            started = time.process_time()
            out = work()
            times.append(1000 * (time.process_time() - started))
        return min(times), out

    def whole() -> Any:
        df = reader(piece, cols)
        for op in chain:
            df = op.transform(df, None, ctx)
        return moments.fit_partition(df, ctx)

    result = {}
    result["read"], df = least(lambda: reader(piece, cols))
    read = df
    for op in chain:
        result[type(op).__name__], df = least(lambda op=op, df=df: op.transform(df, None, ctx))
    result["moments"], _ = least(lambda: moments.fit_partition(df, ctx))
    result["all five in a row"], _ = least(whole)
    steps = [op.elementwise(None, cols[0]) for op in chain]
    result["FillMissing -> Clip -> LogOp as one chain"], _ = least(
        lambda: b.with_columns(read, {c: b.elementwise(b.column(read, c), steps) for c in cols}))
    return result


def _branch(path: str) -> None:
    """The continuous branch's fit on one file: read I1..I13, the chain, Normalize's moments."""
    import pyarrow.parquet as pq

    from interactive_recsys import ops
    from interactive_recsys.backend import get_backend
    from interactive_recsys.tables._context import OpContext

    cols = [f"I{i}" for i in range(1, 14)]
    b = get_backend("cpu")
    df = b.from_arrow(pq.read_table(path, columns=cols))
    steps = [op.elementwise(None, cols[0]) for op in branch_ops()]
    df = b.with_columns(df, {c: b.elementwise(b.column(df, c), steps) for c in cols})
    ops.Normalize().fit_partition(df, OpContext(b, [tuple(cols)], "branch"))


def parallel_s(paths: list[str], repeats: int = 3) -> dict[str, float]:
    """Wall seconds (the least of ``repeats``) of the continuous branch's fit on every file:
    in one thread, in two threads (as Dask's threaded scheduler runs it) and in two forked
    processes (as two Dask workers would): how much the second CPU gives each."""
    import multiprocessing
    from concurrent.futures import ThreadPoolExecutor

    def least(work: Any) -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
        return min(times)

    with ThreadPoolExecutor(2) as threads, multiprocessing.get_context("fork").Pool(2) as procs:
        procs.map(_branch, paths[:2])  # warm: imports in the children
        return {"1 thread": least(lambda: [_branch(p) for p in paths]),
                "2 threads": least(lambda: list(threads.map(_branch, paths))),
                "2 processes": least(lambda: procs.map(_branch, paths, chunksize=1))}


def child(args_json: str) -> None:
    """The timed steps, in one process (the module docstring)."""
    import interactive_recsys as irs

    args = json.loads(args_json)
    work = Path(args["work"])
    ds = irs.Dataset(args["src"], backend="cpu")
    rows = []

    def record(name: str, work: Any, repeats: int = 1) -> Any:
        runs = []
        for _ in range(repeats):
            wf, row = timed(name, work)
            runs.append(row)
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        rows.append({"step": name, "wall_s": wall, "cpu_s": cpu, "runs": runs,
                     "others_cpu_pct": statistics.median(r["others_cpu_pct"] for r in runs),
                     "phases": len(wf.fit_stats["phases"]), "steps": _steps(wf),
                     "refinished": _refinished(wf)})
        return wf

    with (irs.cluster.start_cluster(n_workers=2, dashboard=False,
                                    local_directory=str(work / "dask-scratch"))
          if args["cluster"] else contextlib.nullcontext()) as client, \
            (client.cluster if client is not None else contextlib.nullcontext()):
        if args.get("threshold_only"):
            first = record("first fit", lambda: workflow(artifacts=str(work / "first")).fit(ds))
            fresh = studio = None
        else:
            first, fresh, studio = _timed_steps(ds, work, args["repeats"], record)
        same_threshold = _threshold_steps(ds, first, args["repeats"], record)
    import pyarrow.parquet as pq
    out = {"rows": ds.num_rows, "npartitions": ds.npartitions, "files": len(ds.files),
           "steps": rows, "threshold_states_equal_fresh_fit": same_threshold,
           "partition_rows": pq.read_metadata(ds.files[0]).num_rows}
    if fresh is not None:
        out["states_equal_fresh_fit"] = {s.node_id: s.state for s in fresh.fitted_steps()} == {
            s.node_id: s.state for s in studio.fitted_steps()}
        out["partition_ms"] = partition_ms(ds.files[0])
        out["branch_parallel_s"] = parallel_s(ds.files)
    print(json.dumps(out))


def _threshold_steps(ds: Any, first: Any, repeats: int, record: Any) -> bool:
    """Steps 7 and 8: the freq_threshold-only refit and a fit of its workflow from scratch;
    whether their states (and the output's ids on the first file) are equal."""
    refit = record(f"refit, Categorify(freq_threshold={THRESHOLD})",
                   lambda: workflow(freq_threshold=THRESHOLD).fit(ds, reuse=first), repeats)
    fresh = record(f"fresh fit, freq_threshold={THRESHOLD}",
                   lambda: workflow(freq_threshold=THRESHOLD).fit(ds))
    states = [{s.node_id: s.state for s in wf.fitted_steps()} for wf in (refit, fresh)]
    outputs = [wf.transform(ds.files[0]).compute() for wf in (refit, fresh)]
    return states[0] == states[1] and outputs[0].equals(outputs[1])


def _timed_steps(ds: Any, work: Path, repeats: int, record: Any) -> tuple[Any, Any, Any]:
    """Steps 1-6 of the module docstring; the first fit's, the fresh fit's and the Studio
    refit's workflows."""
    from interactive_recsys.ui.builder.model._model import BuilderModel

    first = record("first fit", lambda: workflow(artifacts=str(work / "first")).fit(ds))
    record("refit, NormalizeMinMax",
           lambda: workflow("NormalizeMinMax").fit(ds, reuse=first), repeats)
    record("refit, Clip(min_value=1)", lambda: workflow(clip_min=1).fit(ds, reuse=first),
           repeats)

    def studio_run() -> Any:  # a Studio holding the first fit; one continuous step edited
        model = BuilderModel.from_workflow(first, ds)
        conts = next(k for k, b in enumerate(model.branches) if "I1" in b.columns)
        model.update_step(conts, len(model.branches[conts].steps) - 1, op="NormalizeMinMax")
        wf = model.run(None).result()
        model.wait_run(timeout=60)
        return wf

    studio = record("Studio Run, NormalizeMinMax", studio_run, repeats)
    fresh = record("fresh fit, NormalizeMinMax", lambda: workflow("NormalizeMinMax").fit(ds))
    record("the edited branch alone", lambda: workflow("NormalizeMinMax",
                                                       categorical=False).fit(ds))
    return first, fresh, studio


def run(args: argparse.Namespace) -> None:
    import shutil

    from . import report
    from .harness import prepare_data

    rows = 200_000 if args.quick else args.rows
    src = Path(args.data) if args.data else prepare_data(rows, 500_000, args.profile)
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    load_before = os.getloadavg()
    payload = json.dumps({"src": str(src), "work": str(WORK), "repeats": args.repeats,
                          "cluster": args.cluster, "threshold_only": args.threshold_only})
    proc = subprocess.run([sys.executable, "-m", "benchmarks.refit", payload], cwd=ROOT,
                          capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise RuntimeError(f"the refit run failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    steps = result["steps"]
    first = steps[0]

    def ratio_of(step: dict[str, Any]) -> dict[str, float]:
        return {"wall": step["wall_s"] / first["wall_s"], "cpu": step["cpu_s"] / first["cpu_s"]}

    threshold = ratio_of(next(s for s in steps if "freq_threshold" in s["step"]
                              and s["step"].startswith("refit")))
    results = {"benchmark": "refit", "date": datetime.date.today().isoformat(),
               "data": str(src), "profile": args.profile, "repeats": args.repeats, **result,
               "mode": ("2-worker cluster (irs.cluster.start_cluster)" if args.cluster
                        else "Dask's threaded scheduler in one process"),
               "threshold_ratio": threshold, "threshold_target": THRESHOLD_TARGET,
               "threshold_meets_target": threshold["wall"] <= THRESHOLD_TARGET,
               "load_avg_before": load_before, "load_avg_after": os.getloadavg(),
               "machine": report.machine_info(), "git": report.git_state(),
               "command": report.command_line()}
    if not args.threshold_only:
        ratio = ratio_of(steps[1])
        studio_ratio = ratio_of(next(s for s in steps if s["step"].startswith("Studio")))
        results.update({"ratio": ratio, "studio_ratio": studio_ratio, "target": TARGET,
                        "meets_target": max(ratio["wall"], studio_ratio["wall"]) <= TARGET})
    write_results(results, "refit" + ("-threshold" if args.threshold_only else "")
                  + ("-cluster" if args.cluster else "")
                  + ("-quick" if args.quick else f"-{args.profile}"), args.suffix)


def write_results(results: dict[str, Any], label: str, suffix: str = "") -> None:
    from . import report

    stem = report.result_stem(f"{label}{suffix}")
    Path(f"{stem}.json").write_text(json.dumps(results, indent=2, default=str))
    what = ("editing one continuous step" if "ratio" in results
            else f"a freq_threshold-only edit of Categorify (0 -> {THRESHOLD})")
    lines = [f"# Refit after {what}, {results['date']}, vm", "",
             f"Command: `{results['command']}`", "",
             f"{results['rows']:,} rows ({results['profile']} profile, {results['files']} "
             f"files, {results['npartitions']} partitions), the 40-column Criteo workflow, "
             f"{results.get('mode', 'Dask threaded scheduler in one process')}. Each step: wall "
             "seconds, CPU seconds of the process and its children (all threads; the workers on "
             "a cluster), and the share of the machine's CPU that other processes "
             "used meanwhile (the machine is shared: compare CPU seconds when that is high); "
             f"refits: median of {results['repeats']} runs (all in the JSON).",
             "", "| step | wall s | CPU s | others' CPU % | phases | reused steps |",
             "|---|---:|---:|---:|---:|---|"]
    for s in results["steps"]:
        reused = [k for k, v in s["steps"].items() if v]
        refinished = s.get("refinished", [])
        computed = [k for k, v in s["steps"].items() if not v and k not in refinished]
        shown = (f"{len(reused)} of {len(s['steps'])} (computed: {', '.join(computed) or '-'}"
                 + (f"; refinished: {', '.join(refinished)}" if refinished else "") + ")"
                 if reused or refinished else "none")
        lines.append(f"| {s['step']} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | "
                     f"{s['others_cpu_pct']:.0f} | {s['phases']} | {shown} |")
    lines.append("")
    if "ratio" in results:
        r, st = results["ratio"], results["studio_ratio"]
        lines += [f"Refit / first fit: {100 * r['wall']:.1f}% of the wall time, "
                  f"{100 * r['cpu']:.1f}% of the CPU time (the Studio's Run: "
                  f"{100 * st['wall']:.1f}% and {100 * st['cpu']:.1f}%); target <= "
                  f"{100 * results['target']:.0f}%: "
                  f"{'met' if results['meets_target'] else 'NOT met'}. The fresh fit's states "
                  f"{'equal' if results['states_equal_fresh_fit'] else 'DIFFER from'} the "
                  "Studio refit's.", ""]
    th = results.get("threshold_ratio")
    if th:
        equal = "equal" if results["threshold_states_equal_fresh_fit"] else "DIFFER from"
        lines += [f"Refit after a freq_threshold-only edit (Categorify refinished from the "
                  f"saved counts) / first fit: {100 * th['wall']:.1f}% of the wall time, "
                  f"{100 * th['cpu']:.1f}% of the CPU time; target <= "
                  f"{100 * results['threshold_target']:.0f}%: "
                  f"{'met' if results['threshold_meets_target'] else 'NOT met'}. Its states "
                  f"and output {equal} a fresh fit's.", ""]
    lines += [*_partition_lines(results.get("partition_ms"), results.get("partition_rows")),
              *_parallel_lines(results.get("branch_parallel_s"), results["files"]),
              f"Load average before {results['load_avg_before']}, after "
              f"{results['load_avg_after']}. Machine: {results['machine']}. Code: "
              f"{results['git']}.", ""]
    Path(f"{stem}.md").write_text("\n".join(lines))
    print(f"wrote {stem}.json and .md")


def _partition_lines(ms: dict[str, float] | None, rows: int | None) -> list[str]:
    if not ms:
        return []
    return [f"The continuous branch on one partition (the first file, {rows:,} rows), CPU ms, "
            "the least of 15 runs: " + ", ".join(f"{k} {v:.1f}" for k, v in ms.items()) + ".",
            ""]


def _parallel_lines(seconds: dict[str, float] | None, files: int) -> list[str]:
    if not seconds:
        return []
    one = seconds["1 thread"]
    return [f"The continuous branch's fit (read, chain, moments) on all {files} files, wall s, "
            "the least of 3: " + ", ".join(f"{k} {v:.2f} ({one / v:.2f}x)"
                                          for k, v in seconds.items()) + ".", ""]


if __name__ == "__main__":
    child(sys.argv[1])
