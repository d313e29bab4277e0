"""``irs criteo --plan``: the rows, disk, memory and time of a run, known before it starts.

Read from the first :data:`SAMPLE_BYTES` of each input file and the files' sizes (nothing is
written), with a model measured by ``python -m benchmarks criteo-day`` and shipped as
``_criteo_plan_model.json`` (it names its result file and command):

- **rows**: a file's size over the bytes per line of its first megabytes; a file no larger
  than the sample is counted exactly. For a compressed file the sample is decompressed, the
  ratio of text to compressed bytes gives the file's text, and that the rows: an estimate,
  since the ratio varies along a file.
- **disk**: the output, :data:`OUTPUT_BYTES_PER_ROW` bytes a row (labels int32, 13 float32
  counts, 26 int64 ids twice), and the staging at the peak: the model's disk at the peak per
  row beyond the input (``disk_bytes_per_row``, output and staging, sampled every 5 s), less
  what a killed run's kept work already holds; against the free space of the filesystem of
  the output (at its nearest existing folder).
- **memory**: the largest worker's peak as measured at each day size, interpolated in the
  logarithm of the rows (all days together: the fit holds a column's ids over all days) and
  extended along the last segment beyond the largest (the peak still grows with the input).
- **time**: the rows over the measured rows/s per core times the cores this run uses: its
  workers (``--local``: this machine's cores), at most this machine's cores and at most the
  parse tasks (one per 128 MiB of plain text, one per compressed file). Start-up (imports,
  the cluster) is not counted.

A real ``--to torchrec`` run refuses to start when the disk cannot hold it
(:func:`check_space`).
"""

from __future__ import annotations

import bz2
import json
import math
import os
import shutil
import zlib
from dataclasses import asdict, dataclass
from typing import Any

from interactive_recsys.datasets._criteo_resume import resumable
from interactive_recsys.datasets._criteo_tsv import COMPRESSED, RANGE_BYTES, unreadable_input
from interactive_recsys.errors import DatasetError
from interactive_recsys.store._outputs import stale_temporaries

__all__ = ["OUTPUT_BYTES_PER_ROW", "SAMPLE_BYTES", "check_space", "criteo_plan",
           "describe_plan", "free_space", "load_model", "sample_file"]

#: Bytes read from the start of each input file.
SAMPLE_BYTES = 4 << 20
#: Bytes of output per row: labels (int32), 13 dense (float32), sparse and contiguous ids
#: (26 int64 each).
OUTPUT_BYTES_PER_ROW = 4 + 13 * 4 + 2 * 26 * 8
MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_criteo_plan_model.json")


@dataclass
class FileSample:
    """What the first bytes of one input file say: its rows (``exact`` when the sample was
    the whole file), its bytes per line of text and, compressed, its text per compressed
    byte."""

    path: str
    stem: str
    size: int
    rows: int
    exact: bool
    bytes_per_line: float
    text_ratio: float | None


def _decompressed(data: bytes, suffix: str) -> bytes:
    """As much text as the compressed bytes ``data`` (the start of a file) decompress to."""
    out = []
    if suffix in (".gz", ".bz2"):  # every member of a concatenated file, up to the cut
        while data:
            d = zlib.decompressobj(47) if suffix == ".gz" else bz2.BZ2Decompressor()
            out.append(d.decompress(data))
            if not d.eof:
                break
            data = d.unused_data
        return b"".join(out)
    import pyarrow as pa

    codec = {".zst": "zstd", ".lz4": "lz4"}[suffix]
    stream = pa.CompressedInputStream(pa.BufferReader(data), codec)
    try:
        while chunk := stream.read(1 << 16):
            out.append(chunk)
    except OSError:  # the sample ends inside a frame: the text before it
        pass
    return b"".join(out)


def sample_file(path: str, stem: str, sample_bytes: int = SAMPLE_BYTES) -> FileSample:
    """The rows of one input file, from its first ``sample_bytes`` and its size.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "day_0")
    >>> _ = open(path, "w").write("1\\t2\\n" * 1000)
    >>> sample_file(path, "day_0").rows, sample_file(path, "day_0", sample_bytes=100).rows
    (1000, 1000)
    """
    size = os.path.getsize(path)
    suffix = next((s for s in COMPRESSED if path.endswith(s)), None)
    try:
        with open(path, "rb") as f:
            head = f.read(sample_bytes)
        text = head if suffix is None else _decompressed(head, suffix)
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise unreadable_input(path, exc if isinstance(exc, OSError) else OSError(str(exc))
                               ) from None
    whole = len(head) >= size
    ratio = None if suffix is None else len(text) / max(len(head), 1)
    if whole:
        rows = text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)
        return FileSample(path, stem, size, rows, True, len(text) / max(rows, 1), ratio)
    cut = text.rfind(b"\n") + 1
    lines = text[:cut].count(b"\n")
    per_line = cut / lines if lines else float(max(len(text), 1))  # one line longer still
    text_size = size if ratio is None else size * ratio
    return FileSample(path, stem, size, round(text_size / per_line), False, per_line, ratio)


def load_model() -> dict[str, Any]:
    """The model's inputs, as the last ``python -m benchmarks criteo-day`` measured them."""
    with open(MODEL) as f:
        return json.load(f)


def free_space(path: str | os.PathLike) -> tuple[str, int]:
    """The nearest existing folder of ``path`` and the bytes free on its filesystem."""
    folder = os.path.abspath(os.fspath(path))
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder, shutil.disk_usage(folder).free


def _kept_bytes(output: str | os.PathLike) -> int:
    """The disk that the work of a killed run to ``output`` (which the next run takes over)
    already holds."""
    path = os.path.abspath(os.fspath(output))
    total = 0
    for entry in stale_temporaries(path):
        if os.path.dirname(entry) != os.path.dirname(path) or not resumable(entry):
            continue
        for top, _, names in os.walk(entry):
            for name in names:
                try:
                    total += os.lstat(os.path.join(top, name)).st_blocks * 512
                except OSError:
                    pass
    return total


def _peak_mb(points: list[list[int]], rows: int) -> float:
    """The peak at ``rows``: ``points`` (rows, MB) interpolated in log(rows), the smallest
    below them, the last segment extended beyond.

    >>> _peak_mb([[1, 100], [4, 200]], 2), _peak_mb([[1, 100], [4, 200]], 16)
    (150.0, 300.0)
    """
    xs = [math.log(r) for r, _ in points]
    ys = [float(mb) for _, mb in points]
    x = math.log(max(rows, 1))
    if len(points) == 1 or x <= xs[0]:
        return ys[0]
    i = next((i for i in range(1, len(xs)) if x <= xs[i]), len(xs) - 1)
    return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - xs[i - 1]) / (xs[i] - xs[i - 1])


def criteo_plan(files: list[tuple[str, str]], output: str | os.PathLike, *,
                workers: int | None = None, resume: bool = True,
                range_bytes: int | None = None, sample_bytes: int = SAMPLE_BYTES,
                to: str = "torchrec") -> dict[str, Any]:
    """The plan of a run over ``files`` (``(path, stem)`` pairs) into ``output``: rows, disk,
    memory and time (see the module's text). ``workers``: the cluster's (None: tasks on
    threads in this process). Reads the start of each file; writes nothing."""
    if range_bytes is None:
        range_bytes = RANGE_BYTES
    model = load_model()
    samples = [sample_file(f, stem, sample_bytes) for f, stem in files]
    rows = sum(s.rows for s in samples)
    output_bytes = rows * OUTPUT_BYTES_PER_ROW
    staging = rows * max(model["disk_bytes_per_row"] - OUTPUT_BYTES_PER_ROW, 0)
    kept = _kept_bytes(output) if resume else 0
    where, free = free_space(output)
    here = os.cpu_count() or 1
    tasks = sum(1 if s.text_ratio is not None else max(1, math.ceil(s.size / range_bytes))
                for s in samples)
    cores = max(1, min(workers or here, here, tasks))
    rate = model["rows_per_second_per_core"] * cores
    return {"to": to, "output": os.path.abspath(os.fspath(output)), "rows": rows,
            "exact": all(s.exact for s in samples), "sample_bytes": sample_bytes,
            "files": [asdict(s) for s in samples],
            "disk": {"output": output_bytes, "staging": staging, "kept": kept,
                     "need": max(output_bytes + staging - kept, 0), "free": free,
                     "where": where},
            "memory": {"peak_mb_per_worker": round(_peak_mb(model["peak_mb_per_worker"], rows)),
                       "workers": workers},
            "time": {"seconds": rows / rate, "cores": cores, "parse_tasks": tasks,
                     "rows_per_second_per_core": model["rows_per_second_per_core"]},
            "model": model}


def _size(n: float) -> str:
    """Bytes in words, decimal units.

    >>> _size(950), _size(12_345_678), _size(3.2e12)
    ('950 B', '12.3 MB', '3.2 TB')
    """
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def describe_plan(plan: dict[str, Any]) -> str:
    """The plan in lines, as ``irs criteo --plan`` prints it."""
    files, disk, model, t = plan["files"], plan["disk"], plan["model"], plan["time"]
    text = sum(f["size"] for f in files)
    compressed = [f for f in files if f["text_ratio"] is not None]
    how = ("counted (each file is within the sample)" if plan["exact"] else
           f"estimated from the bytes per line in the first "
           f"{plan['sample_bytes'] / 2**20:g} MiB of each file")
    lines = [f"Plan of irs criteo --to {plan['to']} into {plan['output']} (nothing written):",
             f"  input: {len(files)} file(s), {_size(text)} "
             f"({files[0]['stem']}{' ... ' + files[-1]['stem'] if len(files) > 1 else ''})",
             f"  rows: about {plan['rows']:,}, {how}"]
    if compressed and not plan["exact"]:
        ratio = sum(f["text_ratio"] for f in compressed) / len(compressed)
        lines.append(f"        {len(compressed)} compressed file(s): their text estimated "
                     f"from a decompressed sample ({ratio:.1f} bytes of text per byte), "
                     "an estimate: the ratio varies along a file")
    if plan["to"] != "torchrec":
        lines.append("  disk, memory and time: the model is measured for --to torchrec only")
        return "\n".join(lines)
    verdict = "enough" if disk["need"] <= disk["free"] else "NOT ENOUGH: the run would refuse"
    lines += [f"  disk: about {_size(disk['output'] + disk['staging'])} at the peak: output "
              f"{_size(disk['output'])} ({OUTPUT_BYTES_PER_ROW} bytes a row) + staging "
              f"{_size(disk['staging'])} "
              f"({model['disk_bytes_per_row'] - OUTPUT_BYTES_PER_ROW} bytes a row, measured)"]
    if disk["kept"]:
        lines.append(f"        {_size(disk['kept'])} of it already held by a killed run's "
                     "work, which this run takes over")
    lines += [f"        free: {_size(disk['free'])} on the filesystem of {disk['where']} -> "
              f"{verdict}",
              f"  memory: about {plan['memory']['peak_mb_per_worker']:,} MB at the peak per "
              "worker (the largest worker measured: " + ", ".join(
                  f"{mb:,} MB at {r / 1e6:g}M rows" for r, mb in model["peak_mb_per_worker"])
              + ")",
              f"  time: about {_duration(t['seconds'])} of work on {t['cores']} core(s) at "
              f"{t['rows_per_second_per_core']:,} rows/s per core, start-up not counted "
              f"({t['parse_tasks']} parse task(s))",
              f"  model: {model['source']}, measured on {model['measured_rows']:,} rows on "
              f"{model['cluster']} ({model['machine']}): {model['command']}"]
    return "\n".join(lines)


def check_space(plan: dict[str, Any]) -> None:
    """Refuse a run whose estimated disk (output and staging at the peak, less the work a
    killed run kept) exceeds the free space of the output's filesystem, naming the numbers
    and the fixes."""
    disk = plan["disk"]
    if disk["need"] <= disk["free"]:
        return
    kept = f", less {_size(disk['kept'])} a killed run's work holds" if disk["kept"] else ""
    raise DatasetError(
        f"Not enough disk for irs criteo into {plan['output']!r}: it needs about "
        f"{_size(disk['need'])} (output {_size(disk['output'])} + staging "
        f"{_size(disk['staging'])} at the peak{kept}, for about {plan['rows']:,} rows) and "
        f"{_size(disk['free'])} are free on the filesystem of {disk['where']!r}. Free space "
        "there, write the output to another disk, or pass --no-space-check "
        "(space_check=False) to start anyway; irs criteo INPUT OUTPUT --plan shows the "
        "estimate.")
