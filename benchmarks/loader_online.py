"""The online transform against the pre-processed loader: ``python -m benchmarks loader --online``.

``python -m benchmarks loader --online [--rows 2000000] [--batch-sizes 65536] [--repeats 3]
[--device cpu|cuda] [--out DIR]`` (the largest of ``--batch-sizes`` is used)

Synthetic Criteo of the Kaggle profile (``irs.datasets.synthetic_criteo(profile="kaggle")``)
and the standard workflow (Categorify C1..C26 with ``freq_threshold=2``; FillMissing, Clip,
LogOp, Normalize on I1..I13), fitted once in this process. Three loaders, each with
``cache=True`` (the partitions decoded once, in memory) and timed on the epochs after the
first, shuffled, at one batch size, in alternating order (A B C, B C A, ...), in one process:

* ``pre-processed``: ``irs.Loader(processed)``, the output of ``wf.transform(ds)`` written
  as parquet (the offline copy);
* ``online transform``: ``irs.Loader(raw, workflow=wf)``, the workflow applied to each batch
  on ``--device`` (on a GPU: after the copy, on the copy stream);
* ``no preprocessing (bound)``: the online loader with its transform switched off: the same
  raw columns read, batched and copied (string ids as hashes, counters as int32 where they
  fit), nothing computed on them; no preprocessing can go faster than this;
* on a GPU also ``online, transform_at='read'``: the same transform on the CPU, in the
  reader threads, before the cache (what ``"auto"`` picks on the CPU).

An epoch is timed from the first request for a batch until the last batch is ready (on a
GPU: ``torch.cuda.synchronize()`` after the last one); the consumer does nothing else.
Samples/s is rows over that time, median of the repeats; the ratios are online /
pre-processed and online / bound. Before the timings the first batches of the online and
pre-processed loaders are compared (same ids, float32 values within 1 ulp). Results:
``<out>/loader-online-<device kind>.{json,md}`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from .harness import busy_cpu_s, own_cpu_s

HELP = "online transform vs pre-processed loader (synthetic Criteo, kaggle profile)"
WORK = Path(__file__).resolve().parent / "work" / "loader-online"
#: the online loader with its transform on the CPU, at read (before the cache), on a GPU
READ = "online, transform_at='read'"
CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``--online`` (``--rows``, ``--batch-sizes``, ``--repeats`` are the
    loader benchmark's)."""
    parser.add_argument("--online", action="store_true",
                        help="the online transform vs the pre-processed loader "
                        "(benchmarks/loader_online.py)")
    parser.add_argument("--device", default="cpu", help="--online: cpu, cuda or cuda:N")
    parser.add_argument("--out", type=Path, default=None,
                        help="--online: folder of the results files (default: benchmarks/results)")
    parser.add_argument("--work", type=Path, default=WORK,
                        help="--online: folder of the generated data")
    parser.add_argument("--rows-per-file", type=int, default=500_000)


def prepare(rows: int, work: Path, rows_per_file: int) -> tuple[Path, Path, Any, float]:
    """Raw data, the fitted workflow and the processed copy (generated once, in ``work``)."""
    import interactive_recsys as irs
    from interactive_recsys import ops

    started = time.perf_counter()
    raw = irs.datasets.synthetic_criteo(rows=rows, seed=0, path=work / f"raw-{rows}",
                                        rows_per_file=rows_per_file, profile="kaggle")
    ds = irs.Dataset(str(raw), tags={"label": ["target"]})
    cats = CATS >> ops.Categorify(freq_threshold=2)
    conts = CONTS >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    wf = irs.Workflow(cats + conts + ["label"], artifacts_dir=str(work / f"workflow-{rows}"))
    wf.fit(ds)
    processed = work / f"processed-{rows}"
    wf.transform(ds).to_parquet(str(processed), overwrite=True)
    return raw, processed, wf, time.perf_counter() - started


def _sync(device: Any) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_epoch(loader: Any, device: Any) -> dict[str, float]:
    """One epoch: seconds, rows, samples/s and the CPU other processes used meanwhile (% of
    the machine)."""
    busy, own = busy_cpu_s(), own_cpu_s()
    started = time.perf_counter()
    rows = 0
    for batch in loader:
        rows += len(batch)
    _sync(device)
    seconds = time.perf_counter() - started
    other = (busy_cpu_s() - busy - (own_cpu_s() - own)) / (os.cpu_count() or 1) / seconds
    return {"seconds": seconds, "rows": rows, "samples_per_s": rows / seconds,
            "other_cpu_pct": round(100 * max(other, 0.0), 1)}


def compare_first_batch(online: Any, processed: Any) -> dict[str, Any]:
    """Ids equal, float32 values within ``max_ulp`` ulp (first batch of each, same seed)."""
    import torch

    a, b = next(iter(processed)), next(iter(online))
    same_ids = bool(torch.equal(a.sparse.values.cpu(), b.sparse.values.cpu()))
    da, db = a.dense.cpu(), b.dense.cpu()
    nan_same = bool(torch.equal(torch.isnan(da), torch.isnan(db)))
    ulp = (da.view(torch.int32).long() - db.view(torch.int32).long()).abs()
    ulp = torch.where(torch.isnan(da), torch.zeros_like(ulp), ulp)
    return {"ids_identical": same_ids, "nan_identical": nan_same,
            "max_ulp": int(ulp.max()), "values_off_by_1ulp": int((ulp > 0).sum()),
            "values": int(ulp.numel()),
            "labels_identical": bool(torch.equal(a.labels.cpu(), b.labels.cpu()))}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    import interactive_recsys as irs

    from . import report

    device, b = args.device, max(args.batch_sizes)
    kind = torch.device(device).type
    if kind == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here")
    raw, processed, wf, prep_s = prepare(args.rows, args.work, args.rows_per_file)
    print(f"data: {args.rows:,} rows, generated, fitted and written in {prep_s:.1f} s")
    dev = None if kind == "cpu" else device
    loaders = {
        "pre-processed": irs.Loader(str(processed), b, cache=True, device=dev),
        "online transform": irs.Loader(str(raw), b, workflow=wf, cache=True, device=dev),
        "no preprocessing (bound)": irs.Loader(str(raw), b, workflow=wf, cache=True,
                                               device=dev),
    }
    if kind != "cpu":  # the same transform on the CPU, in the reader threads
        loaders[READ] = irs.Loader(str(raw), b, workflow=wf, cache=True, device=dev,
                                   transform_at="read")
    bound = loaders["no preprocessing (bound)"]
    bound.online.apply = lambda batch: batch  # its transform (per batch) off
    bound.transform_at = "batch"
    check = compare_first_batch(irs.Loader(str(raw), b, workflow=wf, device=dev),
                                irs.Loader(str(processed), b, device=dev))
    print(f"first batch, online vs pre-processed: {check}")
    for loader in loaders.values():  # the first epoch fills the cache (untimed)
        time_epoch(loader, device)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in loaders}
    names = list(loaders)
    for r in range(args.repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            runs[name].append(time_epoch(loaders[name], device))
    rates = {name: statistics.median(x["samples_per_s"] for x in rs) for name, rs in runs.items()}
    for name, rate in rates.items():
        print(f"{name:<32} {rate:>14,.0f} samples/s")
    ratios = {"online / pre-processed": rates["online transform"] / rates["pre-processed"],
              "online / bound": rates["online transform"] / rates["no preprocessing (bound)"],
              "pre-processed / bound": rates["pre-processed"] / rates["no preprocessing (bound)"]}
    if READ in rates:
        ratios["online at read / pre-processed"] = rates[READ] / rates["pre-processed"]
    for name, value in ratios.items():
        print(f"{name:<32} {value:.3f}x")
    device_name = (torch.cuda.get_device_name(torch.device(device)) if kind == "cuda"
                   else "cpu")
    out = {"label": f"loader-online-{kind}", "device": device_name,
           "settings": {"rows": args.rows, "batch_size": b, "repeats": args.repeats,
                        "rows_per_file": args.rows_per_file, "torch": torch.__version__,
                        "torch_threads": torch.get_num_threads(),
                        "load_average": round(os.getloadavg()[0], 1),
                        "prepare_s": round(prep_s, 1)},
           "command": report.command_line(),
           "machine": report.machine_info(), "code": report.git_state(),
           "samples_per_s": rates, "ratios": ratios, "first_batch_check": check, "runs": runs}
    folder = args.out or report.RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / out["label"]
    Path(f"{stem}.json").write_text(json.dumps(out, indent=2) + "\n")
    Path(f"{stem}.md").write_text(markdown(out) + "\n")
    print(f"results: {stem}.json and {stem}.md")
    return out


def markdown(out: dict[str, Any]) -> str:
    s, m = out["settings"], out["machine"]
    lines = [f"# The online transform on {out['device']}", "",
             f"Samples/s of one shuffled epoch (median of {s['repeats']} alternating runs, "
             f"each loader with cache=True, timed after its first epoch) of {s['rows']:,} "
             f"synthetic Criteo rows (kaggle profile), batch {s['batch_size']:,}, in one "
             "process. `python -m benchmarks loader --online` "
             f"(benchmarks/loader_online.py).", "",
             "| loader | samples/s |", "|---|---:|"]
    lines += [f"| {k} | {v:,.0f} |" for k, v in out["samples_per_s"].items()]
    lines += ["", "| ratio | |", "|---|---:|"]
    lines += [f"| {k} | {v:.3f}x |" for k, v in out["ratios"].items()]
    c = out["first_batch_check"]
    lines += ["", f"First batch, online vs pre-processed: ids identical: {c['ids_identical']}, "
              f"labels identical: {c['labels_identical']}, NaN identical: {c['nan_identical']}, "
              f"{c['values_off_by_1ulp']} of {c['values']} float32 values 1 ulp apart (max "
              f"{c['max_ulp']} ulp).", "",
              "Samples/s of each run (other processes' CPU use, % of the machine): "
              + "; ".join(f"{k}: " + ", ".join(f"{r['samples_per_s']:,.0f} "
                                               f"({r['other_cpu_pct']}%)" for r in rs)
                          for k, rs in out["runs"].items()) + ".", "",
              f"Machine: {m['cpu']}, {m['cpu_count']} CPUs; torch {s['torch']} "
              f"({s['torch_threads']} threads); load average {s['load_average']} at the end. "
              f"Data generation, fit and offline transform: {s['prepare_s']} s (not timed "
              "above). Code: commit " + out["code"]["git_commit"][:12] + "."]
    return "\n".join(lines)
