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
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from interactive_recsys.datasets._criteo import CRITEO_CATEGORICAL, read_criteo
from interactive_recsys.datasets._criteo_id_counts import _IdCounter, _lookup_file
from interactive_recsys.datasets._criteo_input import criteo_input_files, parse_days
from interactive_recsys.datasets._criteo_tsv import (
    COMPRESSED,
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
from interactive_recsys.store.commit import published_folder

__all__ = ["criteo_input_files", "criteo_to_torchrec", "parse_days"]

TARGETS = ("torchrec", "parquet")
#: Distinct (id, column) pairs a parse task counts in memory before it writes them to staging.
COUNT_BUDGET = 1 << 24
#: Bytes of a plain input file parsed by one task (a file is cut into ranges of this size).
RANGE_BYTES = 128 << 20
#: Bytes of input text per hash bucket of the frequency counts (compressed files count 4x).
#: A column's counts are summed a bucket at a time: 1 GiB of text is about 4.4M lines, so a
#: bucket sums at most that many (id, count) pairs, a few hundred MB in the fit's task,
#: however large the input.
BUCKET_BYTES = 1 << 30
SUMMARY = "_summary.json"


# ---- tasks ----------------------------------------------------------------------------------

def _parse_range(path: str, stem: str, part: int, byte_range: tuple[int, int] | None,
                 staging: str, block_size: int, bits: int = 0) -> dict[str, Any]:
    """One byte range of a file (``None``: all of it): its labels, sparse ids and raw counts
    to staging files of the part, and its id counts (in ``2**bits`` hash buckets per column)
    to staging too."""
    prefix = os.path.join(staging, f"{stem}.{part}")
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
        for w in writers:
            w.close()
        counter.flush()
    except BaseException:
        for w in writers:
            w.abort()
        raise
    return {"stem": stem, "part": part, "prefix": prefix, "rows": writers[0].rows,
            "dense_min": dense_min, "count_files": counter.files}


def _dense_part(raw_path: str, out_path: str, offset: int, dense_min: int,
                chunk_rows: int) -> int:
    """``log(x - m + 2)`` in float32, computed as TorchRec does (int32, then ``np.log``), of
    one part's raw counts, written at row ``offset`` of the file's dense file; the raw file
    is removed."""
    rows = npy_shape(raw_path)[0]
    shift = np.int32(dense_min) - np.int32(2)
    with np.errstate(over="ignore"):
        for start in range(0, rows, chunk_rows):
            x = read_npy_rows(raw_path, start, start + chunk_rows)
            x -= shift
            write_npy_rows(out_path, offset + start, np.log(x, dtype=np.float32))
    os.remove(raw_path)
    return int(rows)


def _map_rows(sparse_path: str, start: int, stop: int, out_path: str, offset: int,
              lookups: list[str], chunk_rows: int, copy_to: str | None = None) -> int:
    """Rows ``start:stop`` of a sparse file to contiguous ids (1: not in the vocabulary,
    i.e. below the frequency threshold), written at row ``offset + start`` of ``out_path``,
    chunk by chunk. With ``copy_to`` (a part of a file cut in byte ranges), the rows are
    also copied there, at the same row, and the part's sparse file is removed after.
    Returns the number of rows."""
    for first in range(start, stop, chunk_rows):
        block = read_npy_rows(sparse_path, first, min(first + chunk_rows, stop))
        if copy_to is not None:
            write_npy_rows(copy_to, offset + first, block)
        write_npy_rows(out_path, offset + first, _contiguous(block, lookups))
    if copy_to is not None:
        os.remove(sparse_path)
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

            with ThreadPoolExecutor(max(1, min(len(calls), os.cpu_count() or 1))) as pool:
                futures = [pool.submit(fn, *call) for call in calls]
                for future in futures:
                    future.add_done_callback(lambda _: bar.update())
                return [future.result() for future in futures]
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
                       range_bytes: int = RANGE_BYTES) -> dict[str, Any]:
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

    Parameters
    ----------
    input : folder of ``day_0`` ... ``day_23`` (plain or ``.gz``), folder of ``train.txt``,
        or one file.
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

    Returns
    -------
    dict
        The summary (also written as ``output/_summary.json``): ``rows``, ``files`` (rows per
        file), ``num_embeddings`` (per column: the largest contiguous id + 1),
        ``missing_ids`` (per column: the contiguous id of a missing id, 1 when infrequent or
        absent; with ``to="torchrec"``: how its ids relate to ``to="parquet"``'s, see
        :func:`parquet_ids_from_torchrec`), ``seconds`` (per phase) and
        ``frequency_threshold``.

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
    _check_arguments(to, frequency_threshold)
    files = _readable_by(to, criteo_input_files(input, parse_days(days)))
    client = _active_client(client)
    protect = {"the input": [f for f, _ in files]}
    with published_folder(output, overwrite=overwrite, protect=protect) as tmp:
        if to == "parquet":
            summary = _to_parquet(files, tmp, frequency_threshold, progress)
        else:
            summary = _to_torchrec(files, tmp, frequency_threshold, client, progress,
                                   block_size, chunk_rows, range_bytes)
        summary.update(output=os.path.abspath(os.fspath(output)), to=to,
                       frequency_threshold=int(frequency_threshold),
                       cluster=_describe(client))
        with open(os.path.join(tmp, SUMMARY), "w") as f:
            json.dump(summary, f, indent=2)
    return summary


def _check_arguments(to: str, frequency_threshold: Any) -> None:
    if to not in TARGETS:
        raise ParameterError(f"to must be one of {list(TARGETS)}; got {to!r}.")
    if not isinstance(frequency_threshold, int | np.integer) or frequency_threshold < 0:
        raise ParameterError(f"frequency_threshold must be an integer >= 0; got "
                             f"{frequency_threshold!r}.")


def _describe(client: Any) -> str:
    if client is None:
        return "in-process (no cluster)"
    return f"{len(client.scheduler_info(n_workers=-1)['workers'])} workers"


def _to_torchrec(files: list[tuple[str, str]], out: str, threshold: int, client: Any,
                 progress: bool, block_size: int, chunk_rows: int, range_bytes: int
                 ) -> dict[str, Any]:
    seconds: dict[str, float] = {}
    staging = os.path.join(out, "_staging")
    os.makedirs(staging)

    t = time.perf_counter()
    bits = _bucket_bits(files)
    calls = [(f, stem, part, byte_range, staging, block_size, bits) for f, stem in files
             for part, byte_range in enumerate(line_ranges(f, range_bytes))]
    parts = _run_tasks(_parse_range, calls, client, "parse", progress)
    days = _join_parts(parts, dict((stem, f) for f, stem in files), out)
    seconds["parse"] = time.perf_counter() - t

    t = time.perf_counter()
    for stem, day in days.items():
        create_npy(os.path.join(out, f"{stem}_dense.npy"), np.float32, (day["rows"], 13))
    _run_tasks(_dense_part, [(p["prefix"] + "_dense_raw.npy",
                              os.path.join(out, f"{p['stem']}_dense.npy"), p["offset"],
                              days[p["stem"]]["dense_min"], chunk_rows) for p in parts],
               client, "dense", progress)
    seconds["dense"] = time.perf_counter() - t

    t = time.perf_counter()
    count_files = [c for p in parts for c in p["count_files"]]
    lookups = [os.path.join(staging, f"lookup_{name}.npy") for name in CRITEO_CATEGORICAL]
    kept = _run_tasks(_lookup_file, [(count_files, j, bits, threshold, lookup)
                                     for j, lookup in enumerate(lookups)], client, "fit",
                      progress)
    seconds["fit"] = time.perf_counter() - t

    missing = [_missing_id(lookup) for lookup in lookups]

    t = time.perf_counter()
    _map_contiguous(days, parts, lookups, out, client, progress, chunk_rows)
    shutil.rmtree(staging)
    seconds["map"] = time.perf_counter() - t
    return {"rows": sum(day["rows"] for day in days.values()),
            "files": {stem: day["rows"] for stem, day in days.items()},
            # every kept id occurs (it was counted in these files): the largest id is the
            # number kept + 1, or 1 where none is kept
            "num_embeddings": {f"cat_{j}": int(k) + 2 for j, k in enumerate(kept)},
            # where a missing id went: how the ids relate to --to parquet's (_criteo_ids)
            "missing_ids": {f"cat_{j}": z for j, z in enumerate(missing)},
            "seconds": {k: round(v, 3) for k, v in seconds.items()}}


def _missing_id(lookup: str) -> int:
    """The contiguous id of a missing id (the id 0) in a column's lookup file: the first
    of its sorted ids, or 1 (infrequent or absent)."""
    values, ids = load_npy(lookup)[:, :1]
    return int(ids[0]) if len(values) and values[0] == 0 else 1


def _join_parts(parts: list[dict[str, Any]], paths: dict[str, str], out: str
                ) -> dict[str, dict[str, Any]]:
    """Per file (in input order): its rows, its counts' minimum and its parts. Each part
    gets its first row in the file (``offset``); the labels are joined into the file's
    labels file, and a file of one part gets its sparse file as it is."""
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
        labels = os.path.join(out, f"{stem}_labels.npy")
        if len(mine) == 1:
            os.replace(mine[0]["prefix"] + "_labels.npy", labels)
            os.replace(mine[0]["prefix"] + "_sparse.npy", os.path.join(out, f"{stem}_sparse.npy"))
            continue
        with NpyAppender(labels, np.int32, 1) as joined:
            for p in mine:
                joined.append(load_npy(p["prefix"] + "_labels.npy", mmap=False))
                os.remove(p["prefix"] + "_labels.npy")
    return days


def _bucket_bits(files: list[tuple[str, str]]) -> int:
    """Hash buckets (``2**bits``) per column for the frequency counts: about one per
    :data:`BUCKET_BYTES` of input text (compressed files counted 4x), so that one bucket of one
    column's counts over all files fits a task's memory."""
    size = sum(os.path.getsize(f) * (4 if f.endswith(COMPRESSED) else 1) for f, _ in files)
    return (size // BUCKET_BYTES).bit_length()


def _map_contiguous(days: dict[str, dict[str, Any]], parts: list[dict[str, Any]],
                    lookups: list[str], out: str, client: Any, progress: bool,
                    chunk_rows: int) -> None:
    """Write ``STEM_sparse_contig_freq.npy``: a file of one part chunk by chunk (a task per
    chunk), a file cut in parts a task per part, which also copies the part's sparse ids
    into the file's ``STEM_sparse.npy``."""
    calls = []
    for stem, day in days.items():
        contig = os.path.join(out, f"{stem}_sparse_contig_freq.npy")
        sparse = os.path.join(out, f"{stem}_sparse.npy")
        create_npy(contig, np.int64, (day["rows"], len(CRITEO_CATEGORICAL)))
        if len(day["parts"]) == 1:
            calls += [(sparse, start, min(start + chunk_rows, day["rows"]), contig, 0, lookups,
                       chunk_rows) for start in range(0, day["rows"], chunk_rows)]
            continue
        create_npy(sparse, np.int64, (day["rows"], len(CRITEO_CATEGORICAL)))
        calls += [(p["prefix"] + "_sparse.npy", 0, p["rows"], contig, p["offset"], lookups,
                   chunk_rows, sparse) for p in day["parts"]]
    _run_tasks(_map_rows, calls, client, "map", progress)


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
