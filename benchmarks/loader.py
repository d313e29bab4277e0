"""Training-loader throughput: ``irs.Loader`` against PyTorch ``DataLoader`` baselines.

``python -m benchmarks loader [--rows 1000000] [--batch-sizes 4096 16384 65536] [--repeats 3]``

The data is synthetic Criteo processed by the standard workflow (26 categorical ids, 13
normalized floats, a label), written as parquet. For every batch size, in alternating
order (A B C, B C A, ...), one shuffled epoch is timed, from the first request for a batch to
the last batch (iterator start-up and the first reads included); the consumer does nothing
but count rows. Samples/s is rows over that time, median of the repeats.

Contenders:

* ``irs.Loader (torch)``: tensors; sparse features jagged with CPU-side metadata;
  ``+ KJT`` also builds a TorchRec ``KeyedJaggedTensor`` per batch;
  ``(numpy)``: NumPy arrays. These read the parquet files (from the page cache).
  ``cache=True, later epochs``: epochs after the first, served from decoded partitions
  kept in memory (the first epoch, which fills the cache, is not timed).
* ``DataLoader, per-row`` -- the common baseline: a map-style ``Dataset`` over the pandas
  frame (already in memory, its columns taken out once as NumPy arrays) whose
  ``__getitem__`` returns one row, ``default_collate`` stacking them; ``num_workers`` 0
  and 2. Its rate does not depend on the data size, so it runs over ``--baseline-rows``.
* ``DataLoader, per-row df.iloc``: the same with ``frame.iloc[i]`` per row (what many
  tutorials do), over ``--naive-rows`` rows, at the smallest batch size only.
* ``DataLoader, batched __getitem__``: a ``BatchSampler`` handing lists of indices to a
  vectorized ``__getitem__`` (one NumPy gather per batch): the strong baseline.

The baselines give dense ``[B, 26]`` id matrices, not jagged batches. A cProfile of the
loader's stages run inline (``readers=0``: one thread, so the profile sees everything) and of
the per-row baseline shows where the time goes. Results: ``benchmarks/results/loader.{json,md}``
(``loader-quick`` for ``--quick``), replacing the previous result.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import pstats
import re
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from . import loader_online, report
from .dlrm import prepare
from .harness import busy_cpu_s, own_cpu_s

HELP = "irs.Loader samples/s vs PyTorch DataLoader baselines (synthetic Criteo), with a profile"
WORK = Path(__file__).resolve().parent / "work" / "loader"
CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of processed data")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[4096, 16384, 65536])
    parser.add_argument("--repeats", type=int, default=3, help="timed epochs per contender")
    parser.add_argument("--baseline-rows", type=int, default=131_072,
                        help="rows the per-row DataLoader baselines run over")
    parser.add_argument("--naive-rows", type=int, default=16_384,
                        help="rows of the df.iloc baseline (smallest batch size only)")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2],
                        help="num_workers of the per-row DataLoader baseline")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 200k rows, one repeat, smaller baselines")
    loader_online.add_arguments(parser)


# ---- baselines --------------------------------------------------------------------------------
def baseline_datasets(frame: Any) -> dict[str, Any]:
    """The map-style datasets of the DataLoader baselines."""
    import torch

    class RowDataset(torch.utils.data.Dataset):
        """One row per __getitem__ from NumPy columns of the frame (the common baseline)."""

        def __init__(self) -> None:
            # writable, row-major copies (pandas hands out read-only, column-major blocks)
            self.dense = np.ascontiguousarray(frame[CONTS].to_numpy(np.float32, copy=True))
            self.cats = np.ascontiguousarray(frame[CATS].to_numpy(np.int64, copy=True))
            self.labels = np.array(frame["label"].to_numpy(np.float32))

        def __len__(self) -> int:
            return len(self.labels)

        def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray, np.float32]:
            return self.dense[i], self.cats[i], self.labels[i]

    class IlocDataset(torch.utils.data.Dataset):
        """``frame.iloc[i]`` per row, as tutorials often write it."""

        def __len__(self) -> int:
            return len(frame)

        def __getitem__(self, i: int) -> tuple[Any, Any, Any]:
            row = frame.iloc[i]
            return (torch.tensor(row[CONTS].to_numpy(np.float32)),
                    torch.tensor(row[CATS].to_numpy(np.int64)),
                    torch.tensor(np.float32(row["label"])))

    class BatchDataset(RowDataset):
        """A list of indices per __getitem__: one gather per column block."""

        def __getitem__(self, idx: list[int]) -> tuple[Any, Any, Any]:  # type: ignore[override]
            i = np.asarray(idx)
            return (torch.from_numpy(np.take(self.dense, i, axis=0)),
                    torch.from_numpy(np.take(self.cats, i, axis=0)),
                    torch.from_numpy(np.take(self.labels, i)))

    return {"row": RowDataset(), "iloc": IlocDataset(), "batched": BatchDataset()}


def dataloader(dataset: Any, batch_size: int, workers: int = 0, batched: bool = False) -> Any:
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler

    g = torch.Generator().manual_seed(0)
    if batched:
        sampler = BatchSampler(RandomSampler(dataset, generator=g), batch_size, drop_last=False)
        return DataLoader(dataset, sampler=sampler, batch_size=None, num_workers=workers)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=g,
                      num_workers=workers, persistent_workers=False)


# ---- timing -----------------------------------------------------------------------------------
def time_epoch(make: Callable[[], Iterable[Any]], limit: int | None = None,
               per_batch: Callable[[Any], Any] | None = None) -> dict[str, float]:
    """Iterate until the end or ``limit`` rows; seconds, rows and other processes' CPU %."""
    busy, own = busy_cpu_s(), own_cpu_s()
    started = time.perf_counter()
    rows = batches = 0
    it = make()
    for batch in it:
        n = len(batch) if hasattr(batch, "sparse") else len(batch[2])
        if per_batch is not None:
            per_batch(batch)
        rows += n
        batches += 1
        if limit is not None and rows >= limit:
            break
    seconds = time.perf_counter() - started
    if hasattr(it, "close"):
        it.close()
    # CPU used by other processes, as a share of the whole machine during the run
    other = (busy_cpu_s() - busy - (own_cpu_s() - own)) / (os.cpu_count() or 1) / seconds
    return {"seconds": seconds, "rows": rows, "batches": batches,
            "samples_per_s": rows / seconds, "other_cpu_pct": round(100 * max(other, 0.0), 1)}


def contenders(path: str, frame: Any, batch_size: int, args: argparse.Namespace,
               smallest: bool) -> dict[str, tuple[Callable[[], Iterable[Any]], int | None,
                                                  Callable[[Any], Any] | None]]:
    import interactive_recsys as irs

    datasets = baseline_datasets(frame)
    out: dict[str, Any] = {
        "irs.Loader (torch)": (lambda: irs.Loader(path, batch_size, output="torch"), None, None),
        "irs.Loader (numpy)": (lambda: irs.Loader(path, batch_size, output="numpy"), None, None),
    }
    cached = irs.Loader(path, batch_size, output="torch", cache=True)  # each iter: next epoch
    for _ in cached:  # the first epoch fills the cache (untimed)
        pass
    out["irs.Loader (torch), cache=True, later epochs"] = (lambda: cached, None, None)
    try:
        import torchrec  # noqa: F401

        out["irs.Loader (torch) + KJT"] = (lambda: irs.Loader(path, batch_size, output="torch"),
                                           None, lambda b: b.sparse.to_torchrec())
    except ImportError:
        pass
    for w in args.workers:
        out[f"DataLoader, per-row, {w} workers"] = (
            lambda w=w: dataloader(datasets["row"], batch_size, w), args.baseline_rows, None)
    out["DataLoader, batched __getitem__"] = (
        lambda: dataloader(datasets["batched"], batch_size, batched=True), None, None)
    if smallest:
        out["DataLoader, per-row df.iloc"] = (
            lambda: dataloader(datasets["iloc"], batch_size), args.naive_rows, None)
    return out


# ---- profile ----------------------------------------------------------------------------------
def profile(make: Callable[[], Iterable[Any]], limit: int | None, top: int = 15) -> str:
    """cProfile of one run, the ``top`` entries by own time, as text."""
    prof = cProfile.Profile()
    prof.enable()
    time_epoch(make, limit)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).sort_stats("tottime")
    stats.print_stats(top)
    text = buf.getvalue()
    text = re.sub(r"/\S*/site-packages/", "", text)
    text = text.replace(str(Path(__file__).resolve().parent.parent) + "/", "")
    return "\n".join(line.rstrip() for line in text.splitlines()
                     if line.strip() and not line.strip().startswith(("Ordered by",
                                                                      "List reduced")))


def stage_seconds(make: Callable[[], Iterable[Any]]) -> dict[str, float]:
    """Cumulative seconds of each loader stage, from a cProfile of an inline run."""
    prof = cProfile.Profile()
    prof.enable()
    total = time_epoch(make)["seconds"]
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    wanted = {"read parquet row groups": ("reader.py", "read"),
              "Arrow -> NumPy blocks": ("block.py", "block_from_table"),
              "shuffle windows (sorted gathers)": ("collate.py", "_shuffled_window"),
              "cut batches (jagged values, lengths, offsets)": ("block.py", "to_batch"),
              "NumPy -> torch (zero-copy)": ("batch.py", "to_torch")}
    out = {}
    for label, (file, func) in wanted.items():
        out[label] = round(sum(v[3] for (f, _, name), v in stats.items()
                               if f.endswith(file) and name == func), 3)
    out["total (one thread)"] = round(total, 3)
    return out


# ---- report -----------------------------------------------------------------------------------
def table(results: list[dict[str, Any]], batch_sizes: list[int]) -> str:
    names = list(dict.fromkeys(r["contender"] for r in results))
    base_name = next((n for n in names if n.startswith("DataLoader, per-row, 0")), None)
    lines = ["| contender | " + " | ".join(f"B={b:,}" for b in batch_sizes) + " |",
             "|---|" + "---:|" * len(batch_sizes)]
    med = {(r["contender"], r["batch_size"]): r["samples_per_s"] for r in results}
    for name in names:
        cells = []
        for b in batch_sizes:
            v = med.get((name, b))
            base = med.get((base_name, b))
            cells.append("-" if v is None else f"{v:,.0f}"
                         + (f" ({v / base:.1f}x)" if base and name != base_name else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_results(results: dict[str, Any], md_table: str) -> tuple[Path, Path]:
    date = datetime.date.today().isoformat()
    stem = report.result_stem(results["label"])
    results.setdefault("command", report.command_line())
    json_path, md_path = Path(f"{stem}.json"), Path(f"{stem}.md")
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    m, s, code = results["machine"], results["settings"], results["code"]
    worst = {id(r): max(x["other_cpu_pct"] for x in r["runs"]) for r in results["results"]}
    noisy = [f"{r['contender']} B={r['batch_size']:,}: {worst[id(r)]}%"
             for r in results["results"] if worst[id(r)] > 25]
    stages = "\n".join(f"| {k} | {v:.2f} |" for k, v in results["stages"].items())
    lines = [
        f"# loader benchmark, {date}, {m['host']}", "", f"Command: `{results['command']}`", "",
        f"Samples/s over one shuffled epoch of {s['rows']:,} processed synthetic Criteo rows "
        f"(26 categorical, 13 continuous, label; {s['files']} parquet files, "
        f"{s['row_groups']} row groups), median of {s['repeats']} alternating runs; in "
        "brackets: times the per-row DataLoader baseline (0 workers) at the same batch size. "
        f"Per-row baselines run over {s['baseline_rows']:,} rows (df.iloc: "
        f"{s['naive_rows']:,} rows, smallest batch size only). The loader reads the parquet "
        "files every epoch; the baselines start from the frame already in memory (reading it and "
        f"taking out its NumPy arrays took {s['frame_load_s']:.1f} s, not counted). The "
        "batched baseline is the fastest when the data fits in memory and is loaded first: "
        "one gather per batch from RAM, no parquet decoding, no jagged layout.", "",
        md_table, "",
        f"Machine: {m['cpu']}, {m['cpu_count']} CPUs, {m['memory_gb']} GB, no GPU; shared "
        f"with other jobs (load average {s['load_average']} at the start). Python "
        f"{m['python']}, torch {s['torch']}, torchrec {s['torchrec']}, pyarrow "
        f"{m['versions']['pyarrow']}, numpy {m['versions']['numpy']}; torch threads "
        f"{s['threads']}. Code: commit {code['git_commit'][:12]}"
        + (f" + {code['git_dirty_files']} uncommitted files" if code["git_dirty_files"] else "")
        + ".", "",
        f"## Where the time goes (irs.Loader, B={s['profile_batch_size']:,}, one epoch, "
        "stages inline in one thread)", "",
        "| stage | cumulative s |", "|---|---:|", stages, "",
        "cProfile, top entries by own time:", "", "```", results["profile_loader"], "```", "",
        f"## The per-row DataLoader baseline (B={s['profile_batch_size']:,}, "
        f"{s['baseline_rows']:,} rows)", "", "```", results["profile_baseline"], "```"]
    if noisy:
        lines += ["", "Runs during which other processes used over 25% of the machine's CPU "
                  "(worst repeat; the machine is shared, so medians and ratios measured in "
                  "the same rounds are what to read):", "", "* " + "\n* ".join(noisy)]
    md_path.write_text("\n".join(lines) + "\n")
    return json_path, md_path


def run(args: argparse.Namespace) -> dict[str, Any]:
    import pandas as pd
    import pyarrow.parquet as pq
    import torch

    import interactive_recsys as irs

    if args.online:
        return loader_online.run(args)
    if args.quick:
        args.rows, args.repeats = 200_000, 1
        args.baseline_rows, args.naive_rows = min(args.baseline_rows, 32_768), 4096
    torch.set_num_threads(args.threads)
    processed = prepare(args.rows, WORK, files=max(1, args.rows // 250_000))
    path = str(processed)
    started = time.perf_counter()
    frame = pd.read_parquet(path)
    baseline_datasets(frame)  # what the baselines pay once, before their first batch
    frame_load_s = time.perf_counter() - started
    files = sorted(processed.glob("part.*.parquet"))
    row_groups = sum(pq.ParquetFile(f).metadata.num_row_groups for f in files)
    load = os.getloadavg()[0]
    print(f"data: {path} ({len(frame):,} rows, {len(files)} files, {row_groups} row groups); "
          f"load average {load:.1f}")
    results = []
    smallest = min(args.batch_sizes)
    for b in args.batch_sizes:
        cands = contenders(path, frame, b, args, b == smallest)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in cands}
        names = list(cands)
        for r in range(args.repeats):  # alternating, each repeat starting one further
            for name in names[r % len(names):] + names[:r % len(names)]:
                make, limit, per_batch = cands[name]
                runs[name].append(time_epoch(make, limit, per_batch))
        for name, rs in runs.items():
            rate = statistics.median(r["samples_per_s"] for r in rs)
            results.append({"contender": name, "batch_size": b, "samples_per_s": rate,
                            "runs": rs})
            print(f"B={b:>6,}  {name:<36} {rate:>12,.0f} samples/s")
    big = max(args.batch_sizes)
    inline = lambda: irs.Loader(path, big, output="torch", readers=0)  # noqa: E731
    stages = stage_seconds(inline)
    prof_loader = profile(inline, None)
    row_ds = baseline_datasets(frame)["row"]
    prof_base = profile(lambda: dataloader(row_ds, big), args.baseline_rows)
    try:
        import torchrec

        torchrec_version = getattr(torchrec, "__version__", "installed")
    except ImportError:
        torchrec_version = None
    settings = {"rows": len(frame), "files": len(files), "row_groups": row_groups,
                "batch_sizes": args.batch_sizes, "repeats": args.repeats,
                "baseline_rows": args.baseline_rows, "naive_rows": args.naive_rows,
                "workers": args.workers, "threads": args.threads, "profile_batch_size": big,
                "load_average": round(load, 1), "frame_load_s": round(frame_load_s, 2),
                "torch": torch.__version__,
                "torchrec": torchrec_version}
    out = {"label": "loader-quick" if args.quick else "loader", "settings": settings,
           "machine": report.machine_info(), "code": report.git_state(), "results": results,
           "stages": stages, "profile_loader": prof_loader, "profile_baseline": prof_base,
           "date": datetime.date.today().isoformat()}
    md_table = table(results, args.batch_sizes)
    json_path, md_path = write_results(out, md_table)
    print(md_table)
    print(f"results: {json_path} and {md_path}")
    return out
