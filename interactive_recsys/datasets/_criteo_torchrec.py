"""Raw Criteo day files to the files TorchRec's DLRM reads, out of core.

:func:`criteo_to_torchrec` writes, for each input file ``STEM`` (``day_0`` ... ``day_23``, or
Kaggle's ``train``), what TorchRec's ``npy_preproc_criteo.py`` and
``contiguous_preproc_criteo.py`` write:

* ``STEM_dense.npy``: float32 (n, 13), ``log(x - m + 2)`` with ``m`` the minimum of the
  file's 13 count columns, missing counts 0 (int32 arithmetic, as TorchRec's);
* ``STEM_sparse.npy``: int64 (n, 26), the hex ids as integers, missing ids 0;
* ``STEM_labels.npy``: int32 (n, 1);
* ``STEM_sparse_contig_freq.npy``: int64 (n, 26), one id space per column across all
  files: ids seen fewer than ``frequency_threshold`` times (over all files) are 1, the others
  are numbered from 2 by descending frequency (ties by ascending id).

The phases, each a set of tasks on the cluster (or on threads in this process): **parse**
(one task per byte range of :data:`RANGE_BYTES` of a plain file, cut on line boundaries, or
per compressed file, streamed in blocks: labels, sparse ids and raw counts go to staging
files of the range, and the ids are counted per column, in hash buckets, spilled to staging
past :data:`COUNT_BUDGET`; the ranges' labels are then joined in file order), **dense** (the
log transform, in chunks, once each file's minimum is known, written at each range's first
row), **fit** (per column: the counts summed over all files a bucket at a time, thresholded
and numbered into a lookup file) and **map** (the contiguous ids, chunk by chunk, from the
sparse ``.npy`` files; the ranges' sparse ids are joined into the file's on the way).
Memory is bounded by the block, range and chunk sizes and the count budget, not by the
number or size of the files (the fit holds one column's kept ids). The output folder is
published whole, with a ``_SUCCESS`` manifest, or not at all.

Each task is a unit of work recorded in the staging when it finishes (:mod:`._criteo_resume`):
the same call after a kill (or Ctrl-C) takes the killed run's temporary folder over and does
only the units not recorded there, for the same output bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from interactive_recsys.datasets._criteo import CRITEO_CATEGORICAL, read_criteo
from interactive_recsys.datasets._criteo_id_counts import _IdCounter, _lookup_file
from interactive_recsys.datasets._criteo_input import criteo_input_files, parse_days
from interactive_recsys.datasets._criteo_plan import check_space, criteo_plan
from interactive_recsys.datasets._criteo_remote import (
    check_remote_output,
    mirror_folder,
    publish_mirror,
    remote_file_key,
    remote_parse_tasks,
)
from interactive_recsys.datasets._criteo_resume import (
    FORMAT_VERSION,
    STAGING,
    SUMMARY,
    Ledger,
    Unit,
    file_key,
    pause_point,
    read_json,
    resumable,
    sync_files,
    write_json,
)
from interactive_recsys.datasets._criteo_tsv import (
    COMPRESSED,
    RANGE_BYTES,
    check_decompresses,
    line_ranges,
    read_criteo_blocks,
)
from interactive_recsys.errors import DatasetError, IRSError, ParameterError
from interactive_recsys.io._npy import (
    NpyAppender,
    create_npy,
    load_npy,
    npy_shape,
    read_npy_rows,
    write_npy_rows,
)
from interactive_recsys.store._outputs import remove_path
from interactive_recsys.store._urls import filesystem, is_remote, strip
from interactive_recsys.store.commit import published_folder

__all__ = ["criteo_input_files", "criteo_to_torchrec", "parse_days"]

TARGETS = ("torchrec", "parquet")
#: Distinct (id, column) pairs a parse task counts in memory before it writes them to staging.
COUNT_BUDGET = 1 << 24
#: Bytes of input text per hash bucket of the frequency counts (compressed files count 4x).
#: A column's counts are summed a bucket at a time: 1 GiB of text is about 4.4M lines, so a
#: bucket sums at most that many (id, count) pairs, a few hundred MB in the fit's task,
#: however large the input.
BUCKET_BYTES = 1 << 30


# ---- tasks ----------------------------------------------------------------------------------

def _parse_range(path: str, stem: str, part: int, byte_range: tuple[int, int] | None,
                 staging: str, block_size: int, bits: int = 0) -> dict[str, Any]:
    """One byte range of a file (``None``: all of it): its labels, sparse ids and raw counts
    to staging files of the part, and its id counts (in ``2**bits`` hash buckets per column)
    to staging too. The files it names (``prefix``, ``count_files``) are relative to
    ``staging``, which a resumed run finds under another name."""
    name = f"{stem}.{part}"
    prefix = os.path.join(staging, name)
    writers = [NpyAppender(prefix + "_labels.npy", np.int32, 1),
               NpyAppender(prefix + "_sparse.npy", np.int64, 26),
               NpyAppender(prefix + "_dense_raw.npy", np.int32, 13)]
    counter = _IdCounter(prefix + "_ids", len(CRITEO_CATEGORICAL), bits, COUNT_BUDGET)
    dense_min = None
    try:
        for block in read_criteo_blocks(path, block_size=block_size, has_label=stem != "test",
                                        byte_range=byte_range):
            writers[0].append(block.labels.reshape(-1, 1))
            writers[1].append(block.sparse)
            writers[2].append(block.dense)
            counter.add(block.sparse)
            if len(block.labels):
                low = int(block.dense.min())
                dense_min = low if dense_min is None else min(dense_min, low)
            pause_point(f"parse:{name}")
        for w in writers:
            w.close()
        counter.flush()
    except BaseException:
        for w in writers:
            w.abort()
        raise
    sync_files(*(w.path for w in writers))
    return {"stem": stem, "part": part, "prefix": name, "rows": writers[0].rows,
            "dense_min": dense_min,
            "count_files": [os.path.basename(c) for c in counter.files]}


def _parse_files(result: dict[str, Any]) -> list[str]:
    """The staging files of a parsed range, relative to the staging folder."""
    return [result["prefix"] + k for k in ("_labels.npy", "_sparse.npy", "_dense_raw.npy")] + [
        c + k for c in result["count_files"] for k in ("_counts.npy", "_offsets.npy")]


def _dense_part(raw_path: str, out_path: str, offset: int, dense_min: int,
                chunk_rows: int) -> int:
    """``log(x - m + 2)`` in float32, computed as TorchRec does (int32, then ``np.log``), of
    one part's raw counts, written at row ``offset`` of the file's dense file (the raw file
    is removed once the unit is recorded)."""
    rows = npy_shape(raw_path)[0]
    shift = np.int32(dense_min) - np.int32(2)
    with np.errstate(over="ignore"):
        for start in range(0, rows, chunk_rows):
            x = read_npy_rows(raw_path, start, start + chunk_rows)
            x -= shift
            write_npy_rows(out_path, offset + start, np.log(x, dtype=np.float32))
            pause_point("dense:" + os.path.basename(raw_path).removesuffix("_dense_raw.npy"))
    sync_files(out_path)
    return int(rows)


def _map_rows(sparse_path: str, start: int, stop: int, out_path: str, offset: int,
              lookups: list[str], chunk_rows: int, copy_to: str | None = None,
              unit: str = "") -> int:
    """Rows ``start:stop`` of a sparse file to contiguous ids (1: not in the vocabulary,
    i.e. below the frequency threshold), written at row ``offset + start`` of ``out_path``,
    chunk by chunk. With ``copy_to`` (a part of a file cut in byte ranges), the rows are
    also copied there, at the same row (the part's sparse file is removed once the unit is
    recorded). Returns the number of rows."""
    for first in range(start, stop, chunk_rows):
        block = read_npy_rows(sparse_path, first, min(first + chunk_rows, stop))
        if copy_to is not None:
            write_npy_rows(copy_to, offset + first, block)
        write_npy_rows(out_path, offset + first, _contiguous(block, lookups))
        pause_point(f"map:{unit}")
    sync_files(out_path, *([copy_to] if copy_to else []))
    return stop - start


def _contiguous(block: np.ndarray, lookups: list[str]) -> np.ndarray:
    """The ids of ``block`` (rows x 26 columns) looked up in the columns' lookup files, in
    place."""
    for j, lookup in enumerate(lookups):
        table = load_npy(lookup)
        values, ids = table[0], table[1]
        col = block[:, j]
        if not len(values):
            block[:, j] = 1
            continue
        if 4 * len(values) < len(col):  # a small vocabulary: a hash table, built per chunk
            import pandas as pd

            pos = pd.Index(np.asarray(values)).get_indexer(col)
            block[:, j] = np.where(pos >= 0, ids[pos], 1)
        else:  # a wide one: binary search in the sorted file (no copy in memory)
            pos = np.minimum(np.searchsorted(values, col), len(values) - 1)
            block[:, j] = np.where(values[pos] == col, ids[pos], 1)
    return block


# ---- running tasks with a progress bar -------------------------------------------------------

def _run_tasks(fn: Callable[..., Any], calls: list[tuple], client: Any, desc: str,
               progress: bool) -> list[Any]:
    from tqdm import tqdm

    bar = tqdm(total=len(calls), desc=desc, unit="task", file=sys.stderr, disable=not progress)
    try:
        if client is None:  # threads: pyarrow and numpy release the GIL in the heavy parts
            from concurrent.futures import ThreadPoolExecutor

            pool = ThreadPoolExecutor(max(1, min(len(calls), os.cpu_count() or 1)))
            try:
                futures = [pool.submit(fn, *call) for call in calls]
                for future in futures:
                    future.add_done_callback(lambda _: bar.update())
                return [future.result() for future in futures]
            finally:  # after an error or Ctrl-C, the tasks not started are not run
                pool.shutdown(wait=True, cancel_futures=True)
        from distributed import as_completed

        futures = [client.submit(fn, *call, pure=False) for call in calls]
        for _ in as_completed(futures):
            bar.update()
        return client.gather(futures)
    finally:
        bar.close()


def _active_client(client: Any) -> Any:
    if client is not None or "distributed" not in sys.modules:  # no client without it
        return client
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


# ---- the pipeline ----------------------------------------------------------------------------

def criteo_to_torchrec(input: str | os.PathLike, output: str | os.PathLike, *,
                       to: str = "torchrec", frequency_threshold: int = 0,
                       days: str | Sequence[int] | None = None, client: Any = None,
                       overwrite: bool = False, progress: bool = True,
                       block_size: int = 8 << 20, chunk_rows: int = 1 << 20,
                       range_bytes: int = RANGE_BYTES, resume: bool = True,
                       space_check: bool = True, storage_options: Any = None) -> dict[str, Any]:
    """Raw Criteo TSV (the 1TB ``day_N`` files or Kaggle's ``train.txt``) to the files TorchRec's
    DLRM reads (``to="torchrec"``) or to the standard workflow's parquet (``to="parquet"``, for
    :class:`~interactive_recsys.Loader`).

    With ``to="torchrec"``, each input file ``STEM`` gets what TorchRec's
    ``npy_preproc_criteo.py`` and ``contiguous_preproc_criteo.py`` write:
    ``STEM_dense.npy`` (float32, ``log(x - m + 2)`` with ``m`` the minimum of the file's 13
    counts), ``STEM_sparse.npy`` (int64, the hex ids as integers), ``STEM_labels.npy`` (int32,
    shape (n, 1)) and ``STEM_sparse_contig_freq.npy`` (int64, contiguous ids from 2 per column
    across all files, by descending frequency; ids seen fewer than ``frequency_threshold``
    times are 1). A missing value is 0. The guide page *Criteo for TorchRec's DLRM* has the
    details.

    With ``to="torchrec"`` and a local ``output``, a killed (or Ctrl-C'd) run keeps its finished
    work beside ``output``; the same call takes it over and does only what was not finished,
    for the same output bytes (the guide page's section *A killed run resumes*).

    Parameters
    ----------
    input : folder of ``day_0`` ... ``day_23`` (plain or ``.gz``) or of ``train.txt``, or a file.
    output : folder to write (published whole, with a ``_SUCCESS`` manifest).
    to : ``"torchrec"`` or ``"parquet"``.
    frequency_threshold : ids seen fewer times than this over all files become 1 (0 or 1:
        none), as TorchRec's ``--frequency_threshold``.
    days : which day files, e.g. ``"0-22"`` or ``[0, 1]`` (default: all found).
    client : a ``distributed.Client`` to run on (default: the active one, else this process).
    overwrite : replace an existing ``output``.
    progress : a progress bar per phase on stderr.
    block_size, chunk_rows : bytes of text parsed at once, and rows per chunk of the later
        phases: they, not the data size, bound the memory of each task.
    range_bytes : a plain (uncompressed) file is cut into byte ranges of about this size,
        on line boundaries, parsed by separate tasks (in parallel) and joined in file order.
        A compressed file is parsed by one task.
    resume : take over the work a killed run to ``output`` left (``False``: remove it and
        start from zero, as ``irs criteo --restart``).
    storage_options : fsspec options of URL (``s3://``...) inputs and outputs.
    space_check : with ``to="torchrec"`` and local files, refuse to start when the free disk
        of ``output``'s filesystem cannot hold the estimated output and staging (as ``irs
        criteo --plan`` estimates them); ``False``: start anyway.

    Returns
    -------
    dict
        The summary (also written as ``output/_summary.json``): ``rows``, ``files`` (rows per
        file), ``num_embeddings`` (per column: the largest contiguous id + 1),
        ``missing_ids`` (per column: the contiguous id of a missing id, 1 when infrequent or
        absent; with ``to="torchrec"``: how its ids relate to ``to="parquet"``'s, see
        :func:`parquet_ids_from_torchrec`), ``seconds`` (per phase) and
        ``frequency_threshold``; with ``to="torchrec"`` also ``made_from`` (the input files'
        sizes and modification times, and the options) and ``units`` (per phase, the units
        of work kept from a killed run and those done by this one).

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> tmp = tempfile.mkdtemp()
    >>> os.makedirs(f"{tmp}/in")
    >>> rows = [["1", "3"] + ["1"] * 12 + ["a"] * 26, ["0", "-1"] + [""] * 12 + ["b"] * 26]
    >>> _ = open(f"{tmp}/in/day_0", "w").write("".join("\\t".join(r) + "\\n" for r in rows))
    >>> summary = criteo_to_torchrec(f"{tmp}/in", f"{tmp}/out", progress=False)
    >>> sorted(f[6:] for f in os.listdir(f"{tmp}/out") if f.endswith(".npy"))
    ['dense.npy', 'labels.npy', 'sparse.npy', 'sparse_contig_freq.npy']
    >>> np.load(f"{tmp}/out/day_0_sparse.npy")[:, 0].tolist()
    [10, 11]
    >>> [round(float(v), 3) for v in np.load(f"{tmp}/out/day_0_dense.npy")[1, :2]]  # m = -1
    [0.693, 1.099]
    """
    _check_arguments(to, frequency_threshold, input, output)
    files = _readable_by(to, criteo_input_files(input, parse_days(days), storage_options))
    return _convert(files, output, to=to, frequency_threshold=frequency_threshold,
                    client=_active_client(client), overwrite=overwrite, progress=progress,
                    block_size=block_size, chunk_rows=chunk_rows, range_bytes=range_bytes,
                    resume=resume, space_check=space_check, storage_options=storage_options)


def _convert(files: list[tuple[str, str]], output: str | os.PathLike, *, to: str,
             frequency_threshold: int, client: Any, overwrite: bool, progress: bool,
             block_size: int, chunk_rows: int, range_bytes: int, resume: bool,
             space_check: bool, storage_options: dict[str, Any] | None) -> dict[str, Any]:
    """:func:`criteo_to_torchrec` on its checked ``files`` (``(path, stem)`` pairs)."""
    remote_in = any(is_remote(f) for f, _ in files)
    local = not is_remote(os.fspath(output))
    if to == "torchrec" and space_check and local and not remote_in:
        check_space(criteo_plan(files, output, workers=_workers(client), resume=resume,
                                range_bytes=range_bytes))
    protect = {"the input": [f for f, _ in files]}
    if to == "parquet":
        with published_folder(output, overwrite=overwrite, protect=protect) as tmp:
            summary = _to_parquet(files, tmp, frequency_threshold, progress)
            return _finish(summary, tmp, os.path.abspath(os.fspath(output)), to,
                           frequency_threshold, client)
    keys = [remote_file_key(f, storage_options) if remote_in else file_key(f)
            for f, _ in files]
    plan = _plan(files, keys, frequency_threshold, block_size, chunk_rows, range_bytes)
    parse = (remote_parse_tasks(client, storage_options, progress, _parse_range,
                                _parse_files) if remote_in else None,
             storage_options)
    if local:
        with published_folder(output, overwrite=overwrite, protect=protect,
                              resume=resumable if resume else None) as tmp:
            summary = _to_torchrec(files, tmp, plan, client, progress, parse)
            return _finish(summary, tmp, os.path.abspath(os.fspath(output)), to,
                           frequency_threshold, client)
    return _convert_to_store(files, os.fspath(output).rstrip("/"), plan, parse, client,
                             progress=progress, overwrite=overwrite, resume=resume,
                             protect=protect, threshold=frequency_threshold)


def _convert_to_store(files: list[tuple[str, str]], url: str, plan: dict[str, Any],
                      parse: tuple[Any, Any], client: Any, *, progress: bool, overwrite: bool,
                      resume: bool, protect: dict[str, list[str]], threshold: int
                      ) -> dict[str, Any]:
    """The conversion into the local mirror of the output ``url``
    (:mod:`._criteo_remote`), kept and taken over after a kill, then its upload."""
    storage_options = parse[1]
    check_remote_output(url, storage_options, overwrite, protect)
    mirror = mirror_folder(url)
    done = read_json(os.path.join(mirror, SUMMARY))
    if not (resume and isinstance(done, dict) and done.get("made_from") == _as_json(plan)
            and os.path.isfile(os.path.join(mirror, "_SUCCESS"))):
        # the later phases run on this process's threads: the mirror is on its disk
        with published_folder(mirror, overwrite=True,
                              resume=resumable if resume else None) as tmp:
            summary = _to_torchrec(files, tmp, plan, None, progress, parse)
            done = _finish(summary, tmp, url, "torchrec", threshold, client)
    else:  # killed while uploading: the converted mirror is uploaded again
        done["units"] = {"publish": {"kept": 1, "done": 0}}
    pause_point("upload")
    publish_mirror(mirror, url, storage_options, overwrite=overwrite, protect=protect)
    return done


def _finish(summary: dict[str, Any], tmp: str, output: str, to: str, threshold: int,
            client: Any) -> dict[str, Any]:
    """The summary written into the temporary folder ``tmp``, its staging removed."""
    summary.update(output=output, to=to, frequency_threshold=int(threshold),
                   cluster=_describe(client))
    staging = os.path.join(tmp, STAGING)  # a killed write leaves its temporary there
    os.makedirs(staging, exist_ok=True)
    write_json(os.path.join(tmp, SUMMARY), summary, indent=2, scratch=staging)
    pause_point("summary")
    remove_path(staging)
    pause_point("publish")
    return summary


def _as_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


def _check_arguments(to: str, frequency_threshold: Any, input: str | os.PathLike = "",
                     output: str | os.PathLike = "") -> None:
    if to == "parquet" and (is_remote(os.fspath(input)) or is_remote(os.fspath(output))):
        raise ParameterError("to='parquet' (--to parquet) reads and writes local folders; "
                             "with s3:// gs:// abfs:// URLs use to='torchrec', or irs run "
                             "--input-format criteo for the workflow's parquet.")
    if to not in TARGETS:
        raise ParameterError(f"to must be one of {list(TARGETS)}; got {to!r}.")
    if not isinstance(frequency_threshold, int | np.integer) or frequency_threshold < 0:
        raise ParameterError(f"frequency_threshold must be an integer >= 0; got "
                             f"{frequency_threshold!r}.")


def _describe(client: Any) -> str:
    if client is None:
        return "in-process (no cluster)"
    return f"{len(client.scheduler_info(n_workers=-1)['workers'])} workers"


def _workers(client: Any) -> int | None:
    """The workers of ``client``; None: tasks on threads in this process."""
    return None if client is None else len(client.scheduler_info(n_workers=-1)["workers"])


def _plan(files: list[tuple[str, str]], keys: list[dict[str, Any]], threshold: int,
          block_size: int, chunk_rows: int, range_bytes: int) -> dict[str, Any]:
    """What the output is made from: the inputs as they are now, and the options that shape
    the output or the units of work (:mod:`._criteo_resume`)."""
    return {"format": FORMAT_VERSION, "to": "torchrec",
            "inputs": [{"stem": stem, **key} for (_, stem), key in zip(files, keys,
                                                                       strict=True)],
            "options": {"frequency_threshold": int(threshold), "block_size": block_size,
                        "chunk_rows": chunk_rows, "range_bytes": range_bytes,
                        "count_budget": COUNT_BUDGET,
                        "bucket_bits": _bucket_bits(files, [k["size"] for k in keys])}}


def _to_torchrec(files: list[tuple[str, str]], out: str, plan: dict[str, Any], client: Any,
                 progress: bool, parse: tuple[Any, Any] = (None, None)) -> dict[str, Any]:
    """The phases into ``out``; ``parse``: the store's parse runner (or None), its options."""
    plan = json.loads(json.dumps(plan))
    done = read_json(os.path.join(out, SUMMARY))
    if isinstance(done, dict) and done.get("made_from") == plan:  # killed while publishing
        done["units"] = {"publish": {"kept": 1, "done": 0}}
        return done
    staging = os.path.join(out, STAGING)
    ledger = Ledger(staging, plan)
    if not ledger.same_plan:  # outputs of another plan: made again from the units kept
        for name in os.listdir(out):
            if name != STAGING and not name.startswith(".irs-"):
                remove_path(os.path.join(out, name))
    options = plan["options"]
    block_size, chunk_rows, bits = (options[k] for k in ("block_size", "chunk_rows",
                                                          "bucket_bits"))

    def tasks(desc: str) -> Callable[[Callable[..., Any], list[tuple]], list[Any]]:
        return lambda fn, calls: _run_tasks(fn, calls, client, desc, progress)

    def inline(fn: Callable[..., Any], calls: list[tuple]) -> list[Any]:
        return [fn(*call) for call in calls]

    seconds: dict[str, float] = {}
    t = time.perf_counter()
    units = []
    for (f, stem), source in zip(files, plan["inputs"], strict=True):
        fs = filesystem(f, parse[1]) if is_remote(f) else None
        ranges = line_ranges(strip(f) if fs else f, options["range_bytes"], fs)
        for part, byte_range in enumerate(ranges):
            key = {"file": source, "range": byte_range, "block_size": block_size,
                   "bits": bits, "count_budget": options["count_budget"]}
            units.append(Unit(f"parse.{stem}.{part}", key,
                              (f, stem, part, byte_range, staging, block_size, bits),
                              files=lambda r: [os.path.join(staging, n) for n in _parse_files(r)]))
    parts = ledger.run("parse", _parse_range, units, parse[0] or tasks("parse"))
    days = _days_of(parts, dict((stem, f) for f, stem in files))
    ledger.run("join", _join_day, [
        Unit(f"join.{stem}", ledger.digest, (stem, day["parts"], staging, out),
             consumed=[os.path.join(staging, p["prefix"] + "_labels.npy")
                       for p in day["parts"]] if len(day["parts"]) > 1 else ())
        for stem, day in days.items()], inline)
    seconds["parse"] = time.perf_counter() - t

    t = time.perf_counter()
    ledger.run("dense", _dense_part, [
        Unit(f"dense.{p['stem']}.{p['part']}", ledger.digest,
             (raw, os.path.join(out, f"{p['stem']}_dense.npy"), p["offset"],
              days[p["stem"]]["dense_min"], chunk_rows), consumed=[raw])
        for p in parts for raw in [os.path.join(staging, p["prefix"] + "_dense_raw.npy")]],
        tasks("dense"))
    seconds["dense"] = time.perf_counter() - t

    t = time.perf_counter()
    count_files = [os.path.join(staging, c) for p in parts for c in p["count_files"]]
    lookups = [os.path.join(staging, f"lookup_{name}.npy") for name in CRITEO_CATEGORICAL]
    kept = ledger.run("fit", _lookup_file, [
        Unit(f"fit.{name}", ledger.digest,
             (count_files, j, bits, options["frequency_threshold"], lookups[j]))
        for j, name in enumerate(CRITEO_CATEGORICAL)], tasks("fit"))
    seconds["fit"] = time.perf_counter() - t

    missing = [_missing_id(lookup) for lookup in lookups]

    t = time.perf_counter()
    ledger.run("map", _map_rows, _map_units(days, staging, lookups, out, chunk_rows,
                                            ledger.digest), tasks("map"))
    seconds["map"] = time.perf_counter() - t
    return {"rows": sum(day["rows"] for day in days.values()),
            "files": {stem: day["rows"] for stem, day in days.items()},
            # every kept id occurs (it was counted in these files): the largest id is the
            # number kept + 1, or 1 where none is kept
            "num_embeddings": {f"cat_{j}": int(k) + 2 for j, k in enumerate(kept)},
            # where a missing id went: how the ids relate to --to parquet's (_criteo_ids)
            "missing_ids": {f"cat_{j}": z for j, z in enumerate(missing)},
            "seconds": {k: round(v, 3) for k, v in seconds.items()},
            "made_from": plan, "units": ledger.counts(),
            **({"changed": ledger.changes} if ledger.changes else {})}


def _missing_id(lookup: str) -> int:
    """The contiguous id of a missing id (the id 0) in a column's lookup file: the first
    of its sorted ids, or 1 (infrequent or absent)."""
    values, ids = load_npy(lookup)[:, :1]
    return int(ids[0]) if len(values) and values[0] == 0 else 1


def _days_of(parts: list[dict[str, Any]], paths: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per file (in input order): its rows, its counts' minimum and its parts, each part
    given its first row in the file (``offset``)."""
    days: dict[str, dict[str, Any]] = {}
    for stem, path in paths.items():
        mine = sorted((p for p in parts if p["stem"] == stem), key=lambda p: p["part"])
        offset = 0
        for p in mine:
            p["offset"], offset = offset, offset + p["rows"]
        lows = [p["dense_min"] for p in mine if p["dense_min"] is not None]
        if not lows:
            raise DatasetError(f"Criteo input {path!r} has no rows; TorchRec's scripts cannot "
                               "take it either (the minimum of no counts). Remove it or pick "
                               "other days.")
        days[stem] = {"rows": offset, "dense_min": min(lows), "parts": mine}
    return days


def _join_day(stem: str, parts: list[dict[str, Any]], staging: str, out: str) -> int:
    """A file's output files, made: its labels joined from its parts' (a file of one part
    gets its part's labels and sparse files as they are), its dense and contiguous files (and
    the sparse file of a file of several parts) created, to be filled at each part's
    ``offset``. Done again whole if killed: the parts' files are removed only once it is
    recorded, and a file already moved is taken where it is. Returns the rows."""
    rows = sum(p["rows"] for p in parts)
    name = os.path.join(out, stem)
    if len(parts) == 1:
        prefix = os.path.join(staging, parts[0]["prefix"])
        _moved(prefix + "_labels.npy", name + "_labels.npy")
        pause_point(f"join:{stem}")
        _moved(prefix + "_sparse.npy", name + "_sparse.npy")
    else:
        with NpyAppender(name + "_labels.npy", np.int32, 1) as joined:
            for p in parts:
                joined.append(load_npy(os.path.join(staging, p["prefix"] + "_labels.npy"),
                                       mmap=False))
                pause_point(f"join:{stem}")
        create_npy(name + "_sparse.npy", np.int64, (rows, len(CRITEO_CATEGORICAL)))
    create_npy(name + "_dense.npy", np.float32, (rows, 13))
    create_npy(name + "_sparse_contig_freq.npy", np.int64, (rows, len(CRITEO_CATEGORICAL)))
    sync_files(*(name + k for k in ("_labels.npy", "_sparse.npy", "_dense.npy",
                                    "_sparse_contig_freq.npy")))
    return rows


def _moved(src: str, dst: str) -> None:
    """``src`` renamed to ``dst``, or already there (a killed join moved it)."""
    if os.path.exists(src) or not os.path.exists(dst):
        os.replace(src, dst)


def _bucket_bits(files: list[tuple[str, str]], sizes: list[int]) -> int:
    """Hash buckets (``2**bits``) per column for the frequency counts: about one per
    :data:`BUCKET_BYTES` of input text (compressed files counted 4x), so that one bucket of one
    column's counts over all files fits a task's memory."""
    size = sum(n * (4 if f.endswith(COMPRESSED) else 1)
               for (f, _), n in zip(files, sizes, strict=True))
    return (size // BUCKET_BYTES).bit_length()


def _map_units(days: dict[str, dict[str, Any]], staging: str, lookups: list[str], out: str,
               chunk_rows: int, key: str) -> list[Unit]:
    """The units that write ``STEM_sparse_contig_freq.npy``: a file of one part chunk by
    chunk (a unit per chunk), a file cut in parts a unit per part, which also copies the
    part's sparse ids into the file's ``STEM_sparse.npy`` (and removes the part's once
    recorded)."""
    units = []
    for stem, day in days.items():
        contig = os.path.join(out, f"{stem}_sparse_contig_freq.npy")
        sparse = os.path.join(out, f"{stem}_sparse.npy")
        if len(day["parts"]) == 1:
            units += [Unit(f"map.{stem}.{k}", key,
                           (sparse, start, min(start + chunk_rows, day["rows"]), contig, 0,
                            lookups, chunk_rows, None, f"{stem}.{k}"))
                      for k, start in enumerate(range(0, day["rows"], chunk_rows))]
            continue
        for p in day["parts"]:
            part = os.path.join(staging, p["prefix"] + "_sparse.npy")
            units.append(Unit(f"map.{stem}.{p['part']}", key,
                              (part, 0, p["rows"], contig, p["offset"], lookups, chunk_rows,
                               sparse, f"{stem}.{p['part']}"), consumed=[part]))
    return units


def _to_parquet(files: list[tuple[str, str]], out: str, threshold: int, progress: bool
                ) -> dict[str, Any]:
    """The standard Criteo workflow fit on the raw files, its parquet and the workflow."""
    from tqdm import tqdm

    from interactive_recsys.datasets._criteo_workflow import (  # lazy: Dask, as above
        standard_criteo_workflow,
    )
    from interactive_recsys.embedding import (  # lazy: Dask, only for the parquet target
        embedding_sizes,
    )


    seconds: dict[str, float] = {}
    ds = read_criteo([f for f, _ in files])
    wf = standard_criteo_workflow(threshold)
    with tqdm(total=2, desc="parquet", unit="phase", file=sys.stderr,
              disable=not progress) as bar, _input_errors(files):
        t = time.perf_counter()
        wf.fit(ds)
        seconds["fit"] = time.perf_counter() - t
        bar.update()
        t = time.perf_counter()
        written = wf.transform(ds).to_parquet(os.path.join(out, "data"))
        seconds["transform_write"] = time.perf_counter() - t
        bar.update()
    wf.save(os.path.join(out, "workflow"))

    return {"rows": int(written["num_rows"]),
            "files": {stem: None for _, stem in files},
            "num_embeddings": {k: int(v[0]) for k, v in embedding_sizes(wf).items()},
            "seconds": {k: round(v, 3) for k, v in seconds.items()}}


def _readable_by(to: str, files: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``files``, refused if ``to="parquet"`` cannot read them: it reads the days with
    :func:`read_criteo` (the csv reader of :class:`~interactive_recsys.Dataset`), which
    takes plain and ``.gz`` files only."""
    other = [f for f, _ in files if to == "parquet" and f.endswith(COMPRESSED)
             and not f.endswith(".gz")]
    if other:
        raise DatasetError(f"Criteo input {other[0]!r} is {other[0].rsplit('.', 1)[1]}-"
                           f"compressed ({len(other)} such file(s)), and to='parquet' (--to "
                           "parquet) reads plain and .gz day files only. Decompress them (or "
                           "gzip them), or use to='torchrec' (--to torchrec), which also "
                           "reads .bz2, .zst and .lz4.")
    return files


@contextlib.contextmanager
def _input_errors(files: list[tuple[str, str]]) -> Iterator[None]:
    """A decompression failure of the csv reader (``EOFError``, ``zlib.error``,
    ``OSError``) as the error that names the corrupt input file, found by reading the
    compressed inputs to their end (only then: the failure may be the output's)."""
    try:
        yield
    except (EOFError, OSError, zlib.error) as exc:
        if isinstance(exc, IRSError):
            raise
        for f, _ in files:
            check_decompresses(f)  # raises for the first corrupt one
        raise
