"""Machine details, the results table, and the results files.

Each benchmark and scenario has one current result file pair in ``benchmarks/results/``,
``<label>.json`` and ``<label>.md``, which a new run of the same scenario replaces (git keeps
the earlier ones). The JSON records the machine, the commit, the command, the data settings,
every run, the medians and the ratios; the documentation's Performance page reads it.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import socket
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGES = ["interactive-recsys", "pandas", "pyarrow", "dask", "distributed", "polars", "numpy",
            "psutil"]


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=RESULTS.parent.parent, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def result_stem(label: str) -> Path:
    """``benchmarks/results/<label>`` (add ``.json`` / ``.md``): one current file per label."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
        raise ValueError(f"Result label {label!r} must use only letters, digits, '.', '_' "
                         "and '-' (it becomes a file name).")
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS / label


def command_line(argv: list[str] | None = None) -> str:
    """The command that is running, as a user would type it: ``python -m benchmarks ...``.

    >>> command_line(["/repo/benchmarks/__main__.py", "criteo", "--rows", "8000000"])
    'python -m benchmarks criteo --rows 8000000'
    """
    argv = sys.argv if argv is None else argv
    return shlex.join(["python", "-m", "benchmarks", *argv[1:]])


def rows_label(sizes: list[int]) -> str:
    """Row counts in a file name: ``[2000000, 8000000]`` -> ``2M-8M``.

    >>> rows_label([200_000, 8_000_000, 100_000_000])
    '200k-8M-100M'
    """
    def one(n: int) -> str:
        for unit, size in (("M", 10**6), ("k", 10**3)):
            if n >= size and n % (size // 10) == 0:
                return f"{n / size:g}{unit}"
        return str(n)
    return "-".join(one(n) for n in sizes)


def git_state() -> dict[str, Any]:
    return {"git_commit": _git("rev-parse", "HEAD"),
            "git_dirty_files": len(_git("status", "--porcelain").splitlines())}


def machine_info() -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "host": socket.gethostname(), "platform": platform.platform(),
        "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
        "cpu_count_physical": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(), "versions": versions,
    }


def _ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value and base else "-"


def _import_s(outcome: Any) -> str:
    times = [r.extra["import_s"] for r in outcome.runs if "import_s" in r.extra]
    return f"{statistics.median(times):.2f}" if times else "-"


def table(outcomes: list, skipped: list) -> str:
    """Markdown table: one line per contender and size. ``wall s`` is the whole process as a
    user pays it (imports and cluster start-up included); ratios are wall / reference wall;
    ``work s`` is first read to last write."""
    lines = ["| contender | rows | wall s, whole process (median) | work s | rows/s | peak RSS MB "
             "| import s | vs pandas | vs polars | vs pyarrow-floor |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for rows in sorted({o.rows for o in outcomes}):
        at = {o.contender: o for o in outcomes if o.rows == rows}
        bases = [at[name].wall_s if name in at else None
                 for name in ("pandas", "polars", "pyarrow-floor")]
        for o in at.values():
            if o.wall_s is None:
                lines.append(f"| {o.contender} | {rows:,} | {o.status} |" + " - |" * 7)
                continue
            lines.append(f"| {o.contender} | {rows:,} | {o.wall_s:.2f} | {o.work_s:.2f} "
                         f"| {rows / o.wall_s:,.0f} "
                         f"| {o.peak_rss_mb:,.0f} | {_import_s(o)} | "
                         + " | ".join(_ratio(o.wall_s, base) for base in bases) + " |")
    lines += [f"| {o.contender} | - | {o.status} |" + " - |" * 7 for o in skipped]
    return "\n".join(lines)


#: Rows of the Criteo 1TB click logs (24 days), and NVTabular's published time for its
#: preprocessing on one V100 GPU.
CRITEO_1TB_ROWS = 4_373_472_329
NVTABULAR_V100_MINUTES = 13.0


def criteo_1tb(outcomes: list, names: list[str]) -> str:
    """One line per contender in ``names``: the Criteo 1TB job at its measured rows/s (at
    its largest size), next to NVTabular's published 13 minutes on one V100.

    >>> from types import SimpleNamespace as O
    >>> line = criteo_1tb([O(contender="g", rows=10**8, wall_s=50.0)], ["g"])
    >>> "g 36.4 min (2,000,000 rows/s at 100,000,000 rows" in line
    True
    """
    lines = []
    for name in names:
        runs = [o for o in outcomes if o.contender == name and o.wall_s]
        if not runs:
            continue
        largest = max(runs, key=lambda o: o.rows)
        rate = largest.rows / largest.wall_s
        lines.append(f"{name} {CRITEO_1TB_ROWS / rate / 60:.1f} min ({rate:,.0f} rows/s at "
                     f"{largest.rows:,} rows; NVTabular's published time on one V100: "
                     f"{NVTABULAR_V100_MINUTES:.0f} min)")
    if not lines:
        return ""
    return (f"Criteo 1TB ({CRITEO_1TB_ROWS:,} rows) extrapolated from measured rows/s: "
            + "; ".join(lines) + ".")


def write(results: dict[str, Any], table_md: str, label: str) -> tuple[Path, Path]:
    """Write ``<label>.json`` and ``<label>.md`` (replacing the previous result of ``label``)."""
    date = datetime.date.today().isoformat()
    stem = result_stem(label)
    results.setdefault("command", command_line())
    json_path, md_path = Path(f"{stem}.json"), Path(f"{stem}.md")
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    m, s, code = results["machine"], results["settings"], results["code"]
    v = m["versions"]
    notes = [f"# {label} benchmark, {date}, {m['host']}", "",
             f"Command: `{results['command']}`", "",
             f"{s['sizes']} rows (synthetic_criteo profile {s.get('profile', 'default')!r}), "
             f"{s['repeats']} repeat(s). Wall: the median of the whole process as a user pays "
             "it (interpreter start-up, library imports and Dask cluster start-up included); "
             "work s: first read to last write; import s: the imports, timed apart. "
             "Peak RSS: the contender process and all its children (Dask workers), polled "
             f"every {int(s['poll_s'] * 1000)} ms. Ratios: wall / wall of pandas, polars "
             "or pyarrow-floor (above 1 is slower). Every timed run matched the irs-local output "
             f"on {s['sample_rows']:,} sampled rows (ids equal, floats within rtol "
             f"{s['rtol']}, atol {s['atol']}).", "", table_md, "",
             f"Machine: {m['cpu']}, {m['cpu_count']} CPUs, {m['memory_gb']} GB, "
             f"{m['platform']}. Python {m['python']}, pandas {v['pandas']}, pyarrow "
             f"{v['pyarrow']}, dask {v['dask']}, distributed {v['distributed']}, polars "
             f"{v['polars']}, numpy {v['numpy']}. Code: commit {code['git_commit'][:12]}"
             + (f" + {code['git_dirty_files']} uncommitted files" if code["git_dirty_files"]
                else "") + f", snapshot sha256 {code['sha256']} (every run used this copy)."]
    if "load_average" in results:
        load = results["load_average"]
        notes += ["", f"Machine load (1/5/15-min load average): before {load['before']}, "
                  f"after {load['after']}."]
    noisy = [f"{o['contender']} ({o['rows']:,} rows, run {i + 1}): {r['other_cpu_pct']:.0f}%"
             for o in results["outcomes"] for i, r in enumerate(o["runs"])
             if r["other_cpu_pct"] > 10]
    if noisy:
        notes += ["", "Runs during which other processes used over 10% of the machine's CPU "
                  "(shared machine; medians damp this):", "", "* " + "\n* ".join(noisy)]
    problems = [o for o in results["outcomes"] if o["detail"]]
    if problems:
        notes += ["", "Problems:", ""] + [f"* {o['contender']} ({o['rows']:,} rows): "
                                          f"{o['status']}: {o['detail'][:600]}"
                                          for o in problems]
    md_path.write_text("\n".join(notes) + "\n")
    return json_path, md_path
