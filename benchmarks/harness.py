"""Run the contenders on synthetic Criteo data, check their output, time them, report.

For every size: generate the data once, write our reference output (an untimed irs-local
run that also warms the page cache), then run the contenders in turn, repeat after repeat
(A B C A B C ...), each in its own process whose peak RSS (with all its children, e.g. Dask
workers) is polled every 50 ms. A run counts only if its output matches the reference on a
sample of rows; a contender that differs is reported WRONG and not run again for that size.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import report
from .contenders import CATS, CONTENDERS, CONTS, LABEL, Contender, parquet_files

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
DATA, WORK = BENCH / "data", BENCH / "work"
ROW_ID = "_row_id"
RTOL, ATOL = 1e-4, 1e-5
POLL_S = 0.05


@dataclass
class Run:
    seconds: float  # work time reported by the contender process
    process_s: float  # the whole process: start-up, imports, cluster start-up included
    peak_rss_mb: float
    cpu_s: float = 0.0  # CPU time of the contender's process tree
    other_cpu_pct: float = 0.0  # CPU used by other processes, % of the machine during the run
    waited_s: float = 0.0  # time waited for the machine to be quiet before the run
    extra: dict = field(default_factory=dict)


@dataclass
class Outcome:
    """All runs of one contender at one size."""

    contender: str
    rows: int
    status: str = "ok"  # ok | WRONG | ERROR | SKIPPED | n/a
    detail: str = ""
    runs: list[Run] = field(default_factory=list)

    @property
    def wall_s(self) -> float | None:
        """What a user pays: the whole process (interpreter, imports, cluster start-up,
        work, shutdown), median over the runs."""
        return statistics.median(r.process_s for r in self.runs) if self.runs else None

    @property
    def work_s(self) -> float | None:
        """First read to last write (the contender's own clock), median over the runs."""
        return statistics.median(r.seconds for r in self.runs) if self.runs else None

    @property
    def peak_rss_mb(self) -> float | None:
        return max(r.peak_rss_mb for r in self.runs) if self.runs else None


# ---- data -------------------------------------------------------------------------------------
def prepare_data(rows: int, rows_per_file: int, profile: str = "default",
                 layout: str = "generator") -> Path:
    """The data of one size (generated once). ``layout="pyarrow"``: 1M-row files rewritten
    with ``pq.write_table``'s defaults (one row group per file), as other tools write them,
    instead of the generator's 128Ki-row groups."""
    from interactive_recsys.datasets import synthetic_criteo

    if layout == "pyarrow":
        rows_per_file = 1_000_000
    name = f"criteo-{rows}" + ("" if rows_per_file == 500_000 else f"-f{rows_per_file}")
    name += "" if profile == "default" else f"-{profile}"
    name += "" if layout == "generator" else f"-{layout}"
    started = time.perf_counter()
    done = DATA / name / "_layout_done"
    if layout == "pyarrow" and done.exists():  # re-laid out: the generator's record of
        path = DATA / name                      # its file sizes no longer matches them
    else:
        path = synthetic_criteo(rows=rows, seed=0, path=DATA / name,
                                rows_per_file=rows_per_file, profile=profile)
    if layout == "pyarrow" and not done.exists():
        for f in parquet_files(str(path)):
            pq.write_table(pq.read_table(f), f"{f}.tmp")
            os.replace(f"{f}.tmp", f)
        done.write_text("pq.write_table defaults\n")
    print(f"data: {path} ({len(parquet_files(str(path)))} files, "
          f"{time.perf_counter() - started:.1f} s)", flush=True)
    return path


# ---- the code under test ---------------------------------------------------------------------
def snapshot_code(dest: Path, source: str = "head") -> dict:
    """Copy the package (from git HEAD, or the working tree) and the contenders to ``dest``.

    Every run uses that copy (its working directory), so edits made to the repository during
    a long benchmark neither mix versions nor break runs half-way.
    """
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    if source == "head":
        archive = subprocess.run(["git", "archive", "HEAD", "interactive_recsys"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    else:
        shutil.copytree(ROOT / "interactive_recsys", dest / "interactive_recsys",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (dest / "benchmarks").mkdir()
    for name in ("__init__.py", "contenders.py"):
        shutil.copy2(BENCH / name, dest / "benchmarks" / name)
    digest = hashlib.sha256()
    for path in sorted(dest.rglob("*.py")):
        digest.update(str(path.relative_to(dest)).encode() + path.read_bytes())
    git = report.git_state()
    if source == "head":
        git["git_dirty_files"] = 0  # uncommitted edits are not in the copy
    return {"path": str(dest), "source": source, "sha256": digest.hexdigest()[:16], **git}


# ---- machine load -----------------------------------------------------------------------------
def busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (all processes, all cores)."""
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


def own_cpu_s() -> float:
    """CPU seconds of this process and of its waited-for descendants."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def tree_cpu_s() -> float:
    """CPU seconds of this process and its live descendants (e.g. Dask workers), all threads."""
    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def wait_quiet(max_wait: float, threshold: float = 0.15) -> float:
    """Wait (at most ``max_wait`` s) until other processes use under ``threshold`` of the
    machine over one second; return the time waited."""
    started = time.perf_counter()
    while time.perf_counter() - started < max_wait:
        busy, own = busy_cpu_s(), own_cpu_s()
        time.sleep(1.0)
        load = (busy_cpu_s() - busy - (own_cpu_s() - own)) / (os.cpu_count() or 1)
        if load < threshold:
            break
    return time.perf_counter() - started


# ---- one run in its own process ---------------------------------------------------------------
def _tree_rss(proc: psutil.Process, tree: list[psutil.Process]) -> int:
    total = 0
    for p in [proc, *tree]:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def watch_process(cmd: list[str], cwd: Path, log_path: Path | str,
                  timeout: float) -> tuple[float, int, int]:
    """Run ``cmd``, logging to ``log_path``; return (seconds, peak RSS bytes of the process
    tree, exit code). Kills the tree and raises RuntimeError after ``timeout`` seconds."""
    started = time.perf_counter()
    peak, tree, polls = 0, [], 0
    with open(log_path, "w") as log:
        popen = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        proc = psutil.Process(popen.pid)
        while popen.poll() is None:
            if polls % 5 == 0:  # refresh the process tree every 250 ms
                try:
                    tree = proc.children(recursive=True)
                except psutil.NoSuchProcess:
                    tree = []
            peak = max(peak, _tree_rss(proc, tree))
            polls += 1
            if time.perf_counter() - started > timeout:
                for p in [*tree, proc]:
                    with contextlib.suppress(psutil.Error):
                        p.kill()
                popen.wait()
                raise RuntimeError(f"timed out after {timeout:.0f} s")
            time.sleep(POLL_S)
    return time.perf_counter() - started, peak, popen.returncode


def run_once(contender: Contender, src: Path, out: Path, timeout: float,
             quiet_wait: float = 0.0, code: Path = ROOT) -> Run:
    """Run one contender in a fresh process; raise RuntimeError when it fails."""
    for path in (out, Path(f"{out}-artifacts"), Path(f"{out}-dask-scratch")):
        shutil.rmtree(path, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    result_path, log_path = Path(f"{out}-result.json"), Path(f"{out}.log")
    result_path.unlink(missing_ok=True)
    python = str(ROOT / contender.venv / "bin" / "python") if contender.venv else sys.executable
    cmd = [python, "-m", "benchmarks.contenders", contender.name, str(src.resolve()),
           str(out.resolve()), str(result_path.resolve())]
    waited = wait_quiet(quiet_wait) if quiet_wait > 0 else 0.0
    busy, own = busy_cpu_s(), own_cpu_s()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    process_s, peak, returncode = watch_process(cmd, code, log_path, timeout)
    other = max(0.0, busy_cpu_s() - busy - (own_cpu_s() - own))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - kids.ru_utime - kids.ru_stime
    if returncode != 0 or not result_path.exists():
        tail = log_path.read_text()[-1500:]
        raise RuntimeError(f"exit code {returncode}; log tail:\n{tail}")
    extra = json.loads(result_path.read_text())
    for package in extra.pop("package", []):
        if not Path(package).resolve().is_relative_to(Path(code).resolve()):
            raise RuntimeError(f"imported interactive_recsys from {package}, not from {code}")
    other_pct = 100 * other / (process_s * (os.cpu_count() or 1))
    return Run(extra.pop("seconds"), process_s, peak / 2**20, cpu_s, other_pct, waited, extra)


# ---- correctness gate -------------------------------------------------------------------------
def sample_positions(rows: int, size: int) -> np.ndarray:
    """Sorted row positions to compare: random ones plus the first and last rows."""
    rng = np.random.default_rng(0)
    picked = rng.choice(rows, size=min(size, rows), replace=False)
    ends = np.r_[np.arange(min(5, rows)), np.arange(max(0, rows - 5), rows)]
    return np.unique(np.r_[picked, ends])


def read_rows(directory: Path, positions: np.ndarray) -> tuple[dict[str, np.ndarray], int]:
    """Columns at ``positions`` (row order of the files, or the ``_row_id`` column when there
    is one) and the total number of rows; columns are numpy arrays, nulls as NaN."""
    files = parquet_files(str(directory))
    if not files:
        raise ValueError(f"no parquet files in {directory}")
    total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    by_id = ROW_ID in pq.ParquetFile(files[0]).schema_arrow.names
    pieces, start = [], 0
    for f in files:
        table = pq.read_table(f)
        if by_id:
            table = table.filter(pc.is_in(table[ROW_ID], value_set=pa.array(positions)))
        else:
            n = table.num_rows
            local = positions[(positions >= start) & (positions < start + n)]
            table, start = table.take(local - start), start + n
        pieces.append(table)
    table = pa.concat_tables(pieces, promote_options="permissive")
    if by_id:
        table = table.take(pc.sort_indices(table[ROW_ID]))
    cols = {n: table[n].to_numpy(zero_copy_only=False) for n in table.column_names}
    cols.pop(ROW_ID, None)
    return cols, total


def compare(ref: dict[str, np.ndarray], got: dict[str, np.ndarray], positions: np.ndarray,
            rows: int, got_rows: int) -> list[str]:
    """What differs between two outputs on the sampled rows (empty: they match)."""
    if got_rows != rows:
        return [f"{got_rows:,} rows instead of {rows:,}"]
    if set(got) != set(ref):
        return [f"columns differ: missing {sorted(set(ref) - set(got))}, extra "
                f"{sorted(set(got) - set(ref))}"]
    if len(next(iter(got.values()))) != len(positions):
        return [f"{len(next(iter(got.values())))} of the {len(positions)} sampled rows found"]
    problems = []
    for name, a in ref.items():
        b = got[name]
        if name in CONTS:
            bad = ~np.isclose(b.astype(np.float64), a.astype(np.float64), rtol=RTOL, atol=ATOL)
        else:
            bad = np.asarray(b != a)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            problems.append(f"{name}: {int(bad.sum())}/{len(a)} sampled rows differ, e.g. row "
                            f"{positions[i]}: expected {a[i].item()!r}, got {b[i].item()!r}")
    return problems


def id_frequencies(directory: Path, column: str) -> dict[int, int]:
    """How many rows carry each id of a categorical output column (whole output)."""
    table = pa.concat_tables(pq.read_table(f, columns=[column])
                             for f in parquet_files(str(directory)))
    counts = pc.value_counts(table[column].combine_chunks())
    return dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(),
                    strict=True))


def same_up_to_ties(ref_dir: Path, out: Path, column: str, a: np.ndarray,
                    b: np.ndarray) -> bool:
    """Ids that differ only in the order of equally frequent values: the reserved ids (< 3)
    equal, ids ordered by descending frequency, the sampled ids map one to one, and each
    maps to an id of the same frequency."""
    reserved = (a < 3) | (b < 3)
    if not np.array_equal(a[reserved], b[reserved]):
        return False
    pairs = set(zip(a[~reserved].tolist(), b[~reserved].tolist(), strict=True))
    if len({x for x, _ in pairs}) != len(pairs) or len({y for _, y in pairs}) != len(pairs):
        return False
    ref_freq, got_freq = id_frequencies(ref_dir, column), id_frequencies(out, column)
    ordered = [got_freq[i] for i in sorted(i for i in got_freq if i is not None and i >= 3)]
    if any(x < y for x, y in itertools.pairwise(ordered)):
        return False  # a more frequent value got a larger id: not the documented layout
    return all(ref_freq[x] == got_freq[y] for x, y in pairs)


def check_output(out: Path, ref: dict[str, np.ndarray], positions: np.ndarray, rows: int,
                 ref_dir: Path | None = None, ties_unordered: bool = False) -> list[str]:
    """The correctness gate of one run: what differs from the reference (empty: nothing).
    With ``ties_unordered``, categorical ids may differ within equally frequent values."""
    try:
        got, got_rows = read_rows(out, positions)
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        return [f"unreadable output: {exc}"]
    problems = compare(ref, got, positions, rows, got_rows)
    if ties_unordered and ref_dir is not None:
        problems = [p for p in problems
                    if not (p.split(":")[0] in CATS and same_up_to_ties(
                        ref_dir, out, p.split(":")[0], ref[p.split(":")[0]],
                        got[p.split(":")[0]]))]
    return problems


# ---- the benchmark ----------------------------------------------------------------------------
def gpu_here() -> bool:
    from interactive_recsys.backend import gpu_available

    return gpu_available()


def available(names: list[str]) -> tuple[list[Contender], list[Outcome]]:
    """Contenders that can run here, and SKIPPED outcomes (rows=0) for the others."""
    chosen, skipped = [], []
    for name in names:
        contender = CONTENDERS[name]
        if contender.venv and not (ROOT / contender.venv / "bin" / "python").exists():
            print(f"skipping {name}: no venv at {contender.venv} (see benchmarks/README.md)")
            skipped.append(Outcome(name, 0, "SKIPPED", f"no venv at {contender.venv}"))
            continue
        if contender.gpu and not gpu_here():
            print(f"skipping {name}: no working NVIDIA GPU with cuDF here (install "
                  "'.[gpu]' on a GPU machine)")
            skipped.append(Outcome(name, 0, "SKIPPED", "no GPU"))
            continue
        chosen.append(contender)
    return chosen, skipped


def bench_size(rows: int, contenders: list[Contender], repeats: int, rows_per_file: int,
               sample: int, timeout: float, quiet_wait: float, code: Path,
               profile: str = "default", layout: str = "generator") -> list[Outcome]:
    src = prepare_data(rows, rows_per_file, profile, layout)
    work = WORK / f"criteo-{rows}-{profile}-{layout}"
    reference = work / "reference"
    started = time.perf_counter()
    run_once(CONTENDERS["irs-local"], src, reference, timeout, code=code)
    positions = sample_positions(rows, sample)
    ref_cols, ref_rows = read_rows(reference, positions)
    expected = [*CATS, *CONTS, LABEL]
    if ref_rows != rows or sorted(ref_cols) != sorted(expected):
        raise RuntimeError(f"reference output is malformed: {ref_rows} rows, {sorted(ref_cols)}")
    print(f"reference: {reference} ({time.perf_counter() - started:.1f} s)", flush=True)
    outcomes = {c.name: Outcome(c.name, rows, "ok" if c.workflow else "n/a") for c in contenders}
    for repeat in range(repeats):
        for contender in contenders:
            outcome = outcomes[contender.name]
            if outcome.status not in ("ok", "n/a"):
                continue
            out = work / contender.name
            try:
                run = run_once(contender, src, out, timeout, quiet_wait, code)
            except RuntimeError as exc:
                outcome.status, outcome.detail = "ERROR", str(exc)
                print(f"  {contender.name}: ERROR {exc}", flush=True)
                continue
            if contender.workflow:
                problems = check_output(out, ref_cols, positions, rows, reference,
                                        contender.ties_unordered)
                if problems:
                    outcome.status, outcome.detail = "WRONG", "; ".join(problems)
                    print(f"  {contender.name}: WRONG {outcome.detail}", flush=True)
                    continue
            outcome.runs.append(run)
            print(f"  [{repeat + 1}/{repeats}] {contender.name:13s} {run.seconds:8.2f} s  "
                  f"peak {run.peak_rss_mb:7,.0f} MB  cpu {run.cpu_s:6.1f} s  process "
                  f"{run.process_s:6.1f} s  others {run.other_cpu_pct:3.0f}%"
                  + (f"  (waited {run.waited_s:.0f} s)" if run.waited_s > 1.5 else ""),
                  flush=True)
            for path in (out, Path(f"{out}-artifacts")):
                shutil.rmtree(path, ignore_errors=True)
    return list(outcomes.values())


def run_benchmark(sizes: list[int], names: list[str], repeats: int, rows_per_file: int,
                  sample: int, timeout: float, quiet_wait: float, label: str,
                  code_source: str = "head", profile: str = "default",
                  layout: str = "generator") -> dict:
    contenders, skipped = available(names)
    started, load_before = time.time(), os.getloadavg()
    code = snapshot_code(WORK / "code", code_source)
    print(f"code under test: {code['path']} ({code_source}: commit {code['git_commit'][:12]}"
          + (f" + {code['git_dirty_files']} uncommitted files" if code["git_dirty_files"] else "")
          + f", sha256 {code['sha256']})", flush=True)
    outcomes: list[Outcome] = []
    for rows in sizes:
        print(f"== {rows:,} rows ==", flush=True)
        outcomes += bench_size(rows, contenders, repeats, rows_per_file, sample, timeout,
                               quiet_wait, Path(code["path"]), profile, layout)
    results = {
        "benchmark": "criteo", "label": label, "started": time.strftime(
            "%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": round(time.time() - started, 1),
        "settings": {"sizes": sizes, "repeats": repeats, "rows_per_file": rows_per_file,
                     "sample_rows": sample, "rtol": RTOL, "atol": ATOL, "poll_s": POLL_S,
                     "quiet_wait_s": quiet_wait, "profile": profile, "layout": layout},
        "load_average": {"before": [round(x, 2) for x in load_before],
                         "after": [round(x, 2) for x in os.getloadavg()]},
        "machine": report.machine_info(), "code": code,
        "contenders": {c.name: c.description for c in contenders},
        "outcomes": [asdict(o) | {"wall_s": o.wall_s, "work_s": o.work_s,
                                  "peak_rss_mb": o.peak_rss_mb}
                     for o in outcomes + skipped],
    }
    table = report.table(outcomes, skipped)
    extrapolation = report.criteo_1tb(outcomes, [c.name for c in contenders if c.gpu])
    table += f"\n\n{extrapolation}" if extrapolation else ""
    print()
    print(table)
    json_path, md_path = report.write(results, table, label)
    print(f"\nresults: {json_path}\n         {md_path}")
    return results
