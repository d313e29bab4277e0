"""``python -m benchmarks criteo-day --rows 1000000 8000000 32000000``: one Criteo day file at
growing sizes, out of core.

``irs criteo IN OUT --to torchrec`` on a cluster of ``--workers`` workers with
``--memory-limit`` each, on one generated day file (``synthetic_criteo(profile="kaggle")``
written as raw TSV in parts of ``--part-rows`` rows, so the generator never holds the day),
one size after the other: if the largest worker's peak memory levels off as the day grows, it
is bounded by the task sizes and the workers' limits, not by the size of the day. Measured
from outside, whole process: wall seconds, CPU seconds, rows/s, the peak RSS of the command's
own process and of its largest worker process, overall and per phase (sampled every 0.2 s),
the largest disk use of the work folder. The day files and outputs are deleted after.
The result goes to ``benchmarks/results/criteo-day.json`` and ``.md``, and the model that
``irs criteo --plan`` reads (:func:`plan_model`) to the package's
``datasets/_criteo_plan_model.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Any

HELP = "irs criteo --to torchrec on one large day file: rows/s and peak memory per worker"
RESULTS = os.path.join(os.path.dirname(__file__), "results")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TSV_BYTES_PER_ROW = 243  # the kaggle profile's raw TSV
OUTPUT_BYTES_PER_ROW = 26 * 8 * 2 + 13 * 4 + 4  # sparse, contiguous (int64), dense, labels
PLAN_MODEL = os.path.join(ROOT, "interactive_recsys", "datasets", "_criteo_plan_model.json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 8_000_000, 32_000_000],
                   help="rows of the day, one run per size (default 1M 8M 32M)")
    p.add_argument("--part-rows", type=int, default=4_000_000,
                   help="rows generated at a time")
    p.add_argument("--frequency-threshold", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-limit", default="3GB")
    p.add_argument("--workdir", default=os.path.join(ROOT, "benchmarks", "work", "criteo-day"))


def _generate_day(path: str, rows: int, part_rows: int) -> None:
    """A ``rows``-row TSV day at ``path``, generated and appended ``part_rows`` at a time."""
    from interactive_recsys.datasets import synthetic_criteo
    from interactive_recsys.datasets._criteo_tsv import write_criteo_tsv

    folder = os.path.dirname(path)
    with open(path + ".tmp", "wb") as day:
        for part, start in enumerate(range(0, rows, part_rows)):
            pq = synthetic_criteo(min(part_rows, rows - start), seed=1000 + part,
                                  path=os.path.join(folder, ".part-pq"), profile="kaggle")
            write_criteo_tsv(pq, os.path.join(folder, ".part.tsv"))
            with open(os.path.join(folder, ".part.tsv"), "rb") as text:
                shutil.copyfileobj(text, day, 16 << 20)
            os.remove(os.path.join(folder, ".part.tsv"))
            shutil.rmtree(pq)
    os.replace(path + ".tmp", path)


def _folder_bytes(folder: str) -> int:
    total = 0
    for top, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(top, name))
            except OSError:
                pass
    return total


PHASES = ("parse", "dense", "fit", "map")


def _phase_starts(stream: Any, starts: dict[str, float], lines: list[str]) -> None:
    """Read the command's output as it comes: the time each phase's progress bar first shows
    (tqdm redraws a line with carriage returns) and the output's lines."""
    buffer = b""
    while chunk := stream.read1(1 << 16):
        buffer += chunk
        *done, buffer = buffer.replace(b"\r", b"\n").split(b"\n")
        for raw in done:
            line = raw.decode(errors="replace")
            phase = line.split(":", 1)[0]
            if phase in PHASES and phase not in starts:
                starts[phase] = time.perf_counter()
            lines.append(line)
    if buffer:
        lines.append(buffer.decode(errors="replace"))


def _phase_peaks(samples: list[tuple[float, int]], starts: dict[str, float], end: float
                 ) -> dict[str, int]:
    """The largest worker RSS sampled in each phase's window (from its start to the next's).

    >>> _phase_peaks([(0.5, 10), (1.5, 30), (2.5, 20)], {"parse": 1.0, "map": 2.0}, 3.0)
    {'parse': 30, 'map': 20}
    """
    order = sorted(starts.items(), key=lambda kv: kv[1])
    bounds = [(name, t, order[i + 1][1] if i + 1 < len(order) else end)
              for i, (name, t) in enumerate(order)]
    return {name: max((rss for t, rss in samples if lo <= t < hi), default=0)
            for name, lo, hi in bounds}


def _measure(cmd: list[str], work: str) -> dict[str, Any]:
    """Wall and CPU seconds of ``cmd``, the peak RSS of its process and of its largest child
    (a worker), overall and in each phase, and the peak bytes under ``work``."""
    import resource
    import threading

    import psutil

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    starts: dict[str, float] = {}
    lines: list[str] = []
    reader = threading.Thread(target=_phase_starts, args=(proc.stdout, starts, lines))
    reader.start()
    parent = psutil.Process(proc.pid)
    peaks: dict[int, int] = {}
    samples: list[tuple[float, int]] = []  # (time, the largest child's RSS)
    disk, tick = 0, 0
    while proc.poll() is None:
        try:
            tree = [parent, *parent.children(recursive=True)]
        except psutil.Error:
            tree = []
        now = 0
        for p in tree:
            try:
                rss = p.memory_info().rss
            except psutil.Error:
                continue
            peaks[p.pid] = max(peaks.get(p.pid, 0), rss)
            if p.pid != proc.pid:
                now = max(now, rss)
        samples.append((time.perf_counter(), now))
        if tick % 25 == 0:
            disk = max(disk, _folder_bytes(work))
        tick += 1
        time.sleep(0.2)
    end = time.perf_counter()
    reader.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}):\n" + "\n".join(lines[-30:]))
    children = [v for pid, v in peaks.items() if pid != proc.pid]
    return {"seconds": round(end - start, 1),
            "cpu_seconds": round(after.ru_utime + after.ru_stime
                                 - before.ru_utime - before.ru_stime, 1),
            "peak_rss_mb_command": round(peaks.get(proc.pid, 0) / 2**20),
            "peak_rss_mb_largest_worker": round(max(children, default=0) / 2**20),
            "peak_rss_mb_largest_worker_by_phase": {
                k: round(v / 2**20) for k, v in _phase_peaks(samples, starts, end).items()},
            "processes": len(peaks), "peak_disk_gb": round(disk / 1e9, 1),
            "summary": [line.strip() for line in lines
                        if line.startswith(("Wrote ", "  phases:"))]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = os.path.abspath(args.workdir)
    need = max(args.rows) * (TSV_BYTES_PER_ROW * 2 + OUTPUT_BYTES_PER_ROW)
    free = shutil.disk_usage(os.path.dirname(work) if not os.path.exists(work) else work).free
    if need > free:
        raise SystemExit(f"--rows {max(args.rows):,} needs about {need / 1e9:.0f} GB of disk "
                         f"(input, staging and output); {free / 1e9:.0f} GB are free. Use "
                         "fewer rows.")
    results: dict[str, Any] = {}
    for rows in args.rows:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(os.path.join(work, "in"))
        start = time.perf_counter()
        _generate_day(os.path.join(work, "in", "day_0"), rows, args.part_rows)
        print(f"{rows:,} rows generated in {time.perf_counter() - start:.0f} s", flush=True)
        cmd = [sys.executable, "-m", "interactive_recsys.cli", "criteo",
               os.path.join(work, "in"), os.path.join(work, "out"), "--to", "torchrec",
               "--frequency-threshold", str(args.frequency_threshold),
               "--workers", str(args.workers), "--memory-limit", args.memory_limit]
        result = _measure(cmd, work)
        result["rows"] = rows
        result["rows_per_second"] = round(rows / result["seconds"])
        results[f"{rows:,} rows"] = result
        print(f"  {result}", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    _report(args, results)
    return results


def plan_model(report: dict[str, Any]) -> dict[str, Any]:
    """The inputs of ``irs criteo --plan``'s model (:mod:`interactive_recsys.datasets.
    _criteo_plan`), from a criteo-day result: the wall rows/s of the largest day per core
    used (the workers, at most the machine's CPUs), the disk at the peak per row beyond the
    input (output and staging), and the largest worker's peak memory at each size.

    >>> report = {"command": "c", "machine": "x86_64, 2 CPUs (shared), 24 GiB",
    ...           "cluster": "2 workers x 3GB", "results": {"a": {
    ...               "rows": 10**6, "rows_per_second": 200_000, "peak_disk_gb": 1.0,
    ...               "peak_rss_mb_largest_worker": 700}}}
    >>> model = plan_model(report)
    >>> model["rows_per_second_per_core"], model["disk_bytes_per_row"]
    (100000, 757)
    """
    runs = sorted(report["results"].values(), key=lambda r: r["rows"])
    big = runs[-1]
    cores = min(int(re.search(r"(\d+) CPUs", report["machine"])[1]),
                int(re.match(r"(\d+) workers", report["cluster"])[1]))
    return {"source": "benchmarks/results/criteo-day.json", "command": report["command"],
            "machine": report["machine"], "cluster": report["cluster"], "cores": cores,
            "measured_rows": big["rows"],
            "rows_per_second_per_core": round(big["rows_per_second"] / cores),
            "input_bytes_per_row": TSV_BYTES_PER_ROW,
            "disk_bytes_per_row": round(big["peak_disk_gb"] * 1e9 / big["rows"])
            - TSV_BYTES_PER_ROW,
            "peak_mb_per_worker": [[r["rows"], r["peak_rss_mb_largest_worker"]] for r in runs]}


def _report(args: argparse.Namespace, results: dict[str, Any]) -> None:
    import platform

    import psutil

    from .report import command_line, git_state

    machine = (f"{platform.processor() or platform.machine()}, {psutil.cpu_count()} CPUs "
               f"(shared), {psutil.virtual_memory().total / 2**30:.0f} GiB")
    big = results[f"{max(args.rows):,} rows"]
    report = {"benchmark": "criteo-day", "command": command_line(),
              "date": time.strftime("%Y-%m-%d"), "code": git_state(),
              "cluster": f"{args.workers} workers x {args.memory_limit}", "machine": machine,
              "frequency_threshold": args.frequency_threshold, "results": results,
              "criteo_1tb_day_hours_at_this_rate": round(195_841_983 / big["rows_per_second"]
                                                         / 3600, 2)}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "criteo-day.json"), "w") as f:
        json.dump(report, f, indent=2)
    with open(PLAN_MODEL, "w") as f:
        json.dump(plan_model(report), f, indent=1)
        f.write("\n")
    sizes = ", ".join(f"{r:,}" for r in args.rows)
    lines = [f"# irs criteo --to torchrec on one day file of {sizes} rows (kaggle profile)", "",
             f"Machine: {machine}; irs on {report['cluster']}, frequency threshold "
             f"{args.frequency_threshold}. Whole process; peak memory sampled every 0.2 s.", "",
             "| day | seconds | CPU seconds | rows/s | peak MB, command | peak MB, largest "
             "worker | largest worker by phase (MB) | peak disk GB |",
             "|---|---:|---:|---:|---:|---:|---|---:|"]
    lines += [f"| {k} | {v['seconds']} | {v['cpu_seconds']} | {v['rows_per_second']:,} | "
              f"{v['peak_rss_mb_command']:,} | {v['peak_rss_mb_largest_worker']:,} | "
              + ", ".join(f"{p} {mb:,}" for p, mb in
                          v["peak_rss_mb_largest_worker_by_phase"].items())
              + f" | {v['peak_disk_gb']} |" for k, v in results.items()]
    lines += ["", f"At this rate a Criteo 1TB day (195,841,983 rows) takes about "
              f"{report['criteo_1tb_day_hours_at_this_rate']} h on this machine; its input, "
              "staging and output need about "
              f"{195_841_983 * (TSV_BYTES_PER_ROW * 2 + OUTPUT_BYTES_PER_ROW) / 1e9:.0f} GB "
              "of disk.", "",
              f"Command: `python -m benchmarks criteo-day --rows {' '.join(map(str, args.rows))} "
              f"--workers {args.workers} --memory-limit {args.memory_limit}`"]
    with open(os.path.join(RESULTS, "criteo-day.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
