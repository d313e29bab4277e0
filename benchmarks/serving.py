"""Serving: ``Workflow.to_torch()``'s module against ``wf.transform`` on the same batch:
``python -m benchmarks serving``.

``python -m benchmarks serving [--rows 1000000] [--batch-sizes 1 65536] [--repeats 7]
[--buckets N] [--torch-threads 1] [--out DIR]``

Synthetic Criteo of the Kaggle profile (``irs.datasets.synthetic_criteo(profile="kaggle")``)
and the standard workflow as Suggest builds it (Categorify C1..C26 with
``freq_threshold=2``; FillMissing, Clip, LogOp, Normalize on I1..I13; the label tagged with
``AddTags(["target"])``), fitted on ``--rows`` rows in this process. Each batch is cut from
other rows of the same generator (``seed=1``), so it holds values the fit never saw. Per
batch size, timed in one process, in alternating order (A B C D, B C D A, ...), median of
``--repeats``:

* ``wf.transform``: ``wf.transform(frame)`` of the batch as a pandas frame with Arrow dtypes
  (as read from parquet), the in-memory path, ids and floats out;
* ``to_torch (TorchScript)``: ``torch.jit.script(wf.to_torch())`` on the batch as the module
  takes it (tensors, lists of strings, the integer columns' null masks);
* ``numeric part (TorchScript)`` and ``numeric part (torch.export)``: ``module.numeric``
  alone, scripted and exported (``torch.export.export(...).module()``), on the 13 integer
  columns: the string lookups cost the difference;
* ``batch to tensors and lists``: turning the Arrow batch into the module's inputs (what a
  server pays when its request comes as Arrow; not part of the module's time).

Before the timings every output column of the module is compared with ``wf.transform``'s
(ids equal, float32 values within 1 ulp). Results: ``<out>/serving-cpu[-buckets].{json,md}``
(default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

from .harness import busy_cpu_s, own_cpu_s

HELP = "Workflow.to_torch()'s module vs wf.transform per batch (synthetic Criteo, kaggle)"
WORK = Path(__file__).resolve().parent / "work" / "serving"
CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows the workflow is "
                        "fitted on (default 1000000)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 65_536])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--buckets", type=int, default=0, help="Categorify(num_buckets=N): "
                        "out-of-vocabulary strings are hashed into N buckets (default: none)")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch.set_num_threads (default 1, as one serving worker; on a "
                        "shared machine 2 threads stall in each other's barriers)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder of the results files (default: benchmarks/results)")
    parser.add_argument("--work", type=Path, default=WORK, help="folder of the generated data")


def prepare(rows: int, buckets: int, work: Path, largest: int) -> tuple[Any, Any, float]:
    """The fitted workflow and the held-out rows the batches are cut from."""
    import pyarrow.dataset as pads

    import interactive_recsys as irs
    from interactive_recsys import ops

    started = time.perf_counter()
    raw = irs.datasets.synthetic_criteo(rows=rows, seed=0, path=work / f"raw-{rows}",
                                        profile="kaggle", progress=False)
    held_out = irs.datasets.synthetic_criteo(rows=largest, seed=1,
                                             path=work / f"held-out-{largest}",
                                             profile="kaggle", progress=False)
    cats = CATS >> ops.Categorify(freq_threshold=2, num_buckets=buckets or None)
    conts = CONTS >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    wf = irs.Workflow(cats + conts + (["label"] >> ops.AddTags(["target"])),
                      artifacts_dir=str(work / f"workflow-{rows}-{buckets}"))
    wf.fit(irs.Dataset(str(raw)))
    return wf, pads.dataset(str(held_out)).to_table(), time.perf_counter() - started


def module_inputs(table: Any) -> tuple[dict, dict, dict]:
    """An Arrow batch as the module takes it: integer columns as int64 tensors with their
    null masks, strings as lists (None: null); the label is not needed."""
    import pyarrow.compute as pc
    import torch

    tensors, nulls = {}, {}
    for name in CONTS:
        col = table.column(name)
        tensors[name] = torch.from_numpy(pc.fill_null(col, 0).to_numpy().copy())
        nulls[name] = torch.from_numpy(pc.is_null(col).to_numpy())
    strings = {name: table.column(name).to_pylist() for name in CATS}
    return tensors, strings, nulls


def compare(out: dict, want: Any) -> dict[str, Any]:
    """The module's output against ``wf.transform``'s frame: ids equal, float32 within ulps."""
    import numpy as np

    ids_equal, max_ulp, off = True, 0, 0
    for name, got in out.items():
        if name in CATS:
            ids_equal &= got.tolist() == want[name].astype("int64").tolist()
        else:
            a = got.numpy().view(np.int32).astype(np.int64)
            b = want[name].to_numpy(dtype=np.float32).view(np.int32).astype(np.int64)
            d = np.abs(a - b)
            max_ulp, off = max(max_ulp, int(d.max(initial=0))), off + int((d > 0).sum())
    return {"columns": list(out) == [c for c in want.columns if c != "label"],
            "ids_identical": ids_equal, "max_ulp": max_ulp, "values_off_by_1ulp": off}


def timed(fn: Any) -> dict[str, float | None]:
    """Seconds of one call, and the CPU other processes used meanwhile (% of the machine;
    None under 50 ms, too short for the system's CPU counters)."""
    busy, own = busy_cpu_s(), own_cpu_s()
    started = time.perf_counter()
    fn()
    seconds = time.perf_counter() - started
    other = (busy_cpu_s() - busy - (own_cpu_s() - own)) / (os.cpu_count() or 1) / seconds
    return {"seconds": seconds,
            "other_cpu_pct": round(100 * max(other, 0.0), 1) if seconds >= 0.05 else None}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import pandas as pd
    import torch

    from . import report

    warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated")
    torch.set_num_threads(args.torch_threads)
    sizes = sorted(set(args.batch_sizes))
    wf, held_out, prep_s = prepare(args.rows, args.buckets, args.work, max(sizes))
    print(f"data: fitted on {args.rows:,} rows in {prep_s:.1f} s")
    started = time.perf_counter()
    module = torch.jit.script(wf.to_torch())
    script_s = time.perf_counter() - started
    numeric = torch.jit.script(wf.to_torch().numeric)
    per_size: dict[str, Any] = {}
    for size in sizes:
        table = held_out.slice(0, size)
        frame = table.to_pandas(types_mapper=pd.ArrowDtype)
        tensors, strings, nulls = module_inputs(table)
        batch = torch.export.Dim("batch", min=1) if size > 1 else None
        exported = torch.export.export(
            wf.to_torch().numeric, (tensors,), {"nulls": nulls},
            dynamic_shapes=None if batch is None else
            {"tensors": {k: {0: batch} for k in tensors},
             "nulls": {k: {0: batch} for k in nulls}}).module()
        check = compare(module(tensors, strings, nulls), wf.transform(frame))
        exported_out = exported(tensors, nulls=nulls)
        check["export_equals_script"] = all(
            torch.equal(exported_out[k], v) for k, v in numeric(tensors, nulls).items())
        print(f"batch {size:,}: module vs wf.transform: {check}")
        contenders = {
            "wf.transform": lambda frame=frame: wf.transform(frame),
            "to_torch (TorchScript)": lambda t=tensors, s=strings, n=nulls: module(t, s, n),
            "numeric part (TorchScript)": lambda t=tensors, n=nulls: numeric(t, n),
            "numeric part (torch.export)": lambda t=tensors, n=nulls, e=exported: e(t, nulls=n),
            "batch to tensors and lists": lambda table=table: module_inputs(table),
        }
        for fn in contenders.values():  # warm up (TorchScript profiles its first runs)
            fn()
            fn()
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
        names = list(contenders)
        for r in range(args.repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                runs[name].append(timed(contenders[name]))
        seconds = {name: statistics.median(x["seconds"] for x in rs) for name, rs in runs.items()}
        for name, s in seconds.items():
            print(f"  {name:<30} {1000 * s:>10.2f} ms  {size / s:>14,.0f} rows/s")
        per_size[str(size)] = {
            "seconds": seconds, "rows_per_s": {k: size / v for k, v in seconds.items()},
            "ratio_to_transform": {k: v / seconds["wf.transform"] for k, v in seconds.items()},
            "check": check, "runs": runs}
    label = "serving-cpu" + (f"-buckets{args.buckets}" if args.buckets else "")
    out = {"label": label, "device": "cpu",
           "settings": {"fit_rows": args.rows, "batch_sizes": sizes, "repeats": args.repeats,
                        "num_buckets": args.buckets or None, "torch": torch.__version__,
                        "torch_threads": torch.get_num_threads(),
                        "vocabulary_sizes": {c: int(wf.output_schema[c].properties
                                                    ["cardinality"]) for c in CATS},
                        "script_s": round(script_s, 2), "prepare_s": round(prep_s, 1),
                        "load_average": round(os.getloadavg()[0], 1)},
           "command": report.command_line(), "machine": report.machine_info(),
           "code": report.git_state(), "batches": per_size}
    folder = args.out or report.RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / label
    Path(f"{stem}.json").write_text(json.dumps(out, indent=2) + "\n")
    Path(f"{stem}.md").write_text(markdown(out) + "\n")
    print(f"results: {stem}.json and {stem}.md")
    return out


def markdown(out: dict[str, Any]) -> str:
    s, m = out["settings"], out["machine"]
    buckets = f", `num_buckets={s['num_buckets']}`" if s["num_buckets"] else ""
    lines = [f"# Serving: `wf.to_torch()` against `wf.transform`{buckets}", "",
             f"Time per batch (median of {s['repeats']} alternating runs, after two warm-up "
             f"calls) of the standard Criteo workflow fitted on {s['fit_rows']:,} synthetic "
             "rows (kaggle profile), on held-out rows, in one process on the CPU. "
             "`python -m benchmarks serving` (benchmarks/serving.py).", ""]
    for size, b in out["batches"].items():
        c = b["check"]
        lines += [f"## Batch of {int(size):,} rows", "",
                  "| | ms per batch | rows/s | / wf.transform |", "|---|---:|---:|---:|"]
        lines += [f"| {k} | {1000 * v:,.2f} | {b['rows_per_s'][k]:,.0f} | "
                  f"{b['ratio_to_transform'][k]:.3f}x |" for k, v in b["seconds"].items()]
        lines += ["", f"Module vs `wf.transform`: columns as offline: {c['columns']}, ids "
                  f"identical: {c['ids_identical']}, {c['values_off_by_1ulp']} float32 values "
                  f"1 ulp apart (max {c['max_ulp']} ulp); torch.export's numeric part equals "
                  f"TorchScript's: {c['export_equals_script']}.", "",
                  "Each run, ms (other processes' CPU use, % of the machine, for runs of "
                  "50 ms or more): "
                  + "; ".join(f"{k}: " + ", ".join(f"{1000 * r['seconds']:,.2f}" + (
                      "" if r["other_cpu_pct"] is None else f" ({r['other_cpu_pct']}%)")
                                                   for r in rs)
                              for k, rs in b["runs"].items()) + ".", ""]
    sizes = s["vocabulary_sizes"]
    lines += [f"Vocabularies (ids, C1..C26): {min(sizes.values()):,} to "
              f"{max(sizes.values()):,}, {sum(sizes.values()):,} in all. "
              f"`torch.jit.script(wf.to_torch())`: {s['script_s']} s. "
              f"Machine: {m['cpu']}, {m['cpu_count']} CPUs; torch {s['torch']} "
              f"({s['torch_threads']} threads); load average {s['load_average']} at the end. "
              f"Data generation and fit: {s['prepare_s']} s (not timed above). Code: commit "
              + out["code"]["git_commit"][:12] + "."]
    return "\n".join(lines)
