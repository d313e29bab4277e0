"""The synthetic Criteo data set: its parameters, its cached folder and its files, written
whole or not at all (the rows themselves: :mod:`._criteo_columns`)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from interactive_recsys.datasets._criteo import (
    CRITEO_CATEGORICAL,
    CRITEO_CONTINUOUS,
    CRITEO_KAGGLE_CARDINALITIES,
    CRITEO_LABEL,
    PathLike,
)
from interactive_recsys.datasets._criteo_columns import _criteo_table
from interactive_recsys.datasets._criteo_kaggle import KAGGLE_SHAPES

_GENERATOR = "interactive_recsys.synthetic_criteo"
_GENERATOR_VERSION = 1
_PARAMS_FILE = "_params.json"
_ROW_GROUP_SIZE = 128 * 1024
_MAX_ROWS_PER_FILE = 2**28  # 8 bytes per string value must fit int32 offsets
_MAX_CARDINALITY = 2**30


def synthetic_criteo(rows: int = 1_000_000, seed: int = 0, path: PathLike | None = None, *,
                     rows_per_file: int = 500_000, cardinalities: Sequence[int] | None = None,
                     zipf_exponent: float = 1.1, profile: str = "default",
                     progress: bool | None = None) -> Path:
    """Write a deterministic, Criteo-shaped synthetic data set as parquet files.

    The directory receives ``part-00000.parquet``, ``part-00001.parquet``, ... (at most
    ``rows_per_file`` rows each, row groups of 128Ki rows, snappy) and a small ``_params.json``
    that records how it was made. Calling again with the same parameters and path reuses the
    files instead of writing them again.

    Columns (see :data:`CRITEO_COLUMNS`): ``label`` int64 0/1 (25 % ones, weakly related to
    ``I1``, ``I7``, ``I11``, ``C14`` and ``C17``); ``I1..I13`` int64 heavy-tailed counts
    (floored Lomax draws capped at the Criteo Kaggle maxima; ``I2`` is -1, -2 or -3 in about
    10 % of rows); ``C1..C26`` 8 lowercase hex characters (like ``"68fd1e64"``) drawn from a
    bounded power law of popularity ranks (:mod:`._criteo_columns`); nulls at Criteo-like
    rates (:data:`CRITEO_NULL_RATES`).

    Parameters
    ----------
    rows : int, default 1_000_000
        Total number of rows.
    seed : int, default 0
        Non-negative seed. File ``i`` is drawn from ``numpy.random.default_rng([seed, i])``,
        so the data only depend on the parameters of this function.
    path : str or os.PathLike, optional
        Output directory. Defaults to ``<tempdir>/irs-synthetic-criteo-<rows>-<seed>``
        (plus ``-<hash>`` when the keyword-only parameters are not the defaults).
    rows_per_file : int, default 500_000
        Rows per parquet file.
    cardinalities : sequence of 26 ints, optional
        Vocabulary size ``K`` of ``C1..C26``. Default: the Criteo Kaggle cardinality
        (:data:`CRITEO_KAGGLE_CARDINALITIES`) capped at ``max(10, rows // 2)``.
    zipf_exponent : float, default 1.1
        Power-law exponent of the categorical frequencies (0 gives uniform frequencies).
    profile : {"default", "kaggle"}, default "default"
        ``"kaggle"``: each categorical column's exponent, vocabulary and null rate fitted to
        the real Criteo Kaggle data, so that its distinct count grows with ``rows`` as the
        real column's does (:mod:`._criteo_kaggle`); not with ``cardinalities`` or
        ``zipf_exponent``. ``"default"`` is narrower and quicker.
    progress : bool, optional
        Print one line on standard error that counts the rows written, the rate and the
        time left, rewritten after each file (a notebook shows it in place). The default
        prints it only when the data set is generated and has more than one file.

    Returns
    -------
    pathlib.Path
        The directory holding the files.

    Raises
    ------
    FileExistsError
        If ``path`` exists but is neither empty nor a complete data set made with the same
        parameters.
    ValueError
        If a parameter is out of range.

    Notes
    -----
    Files are written into a hidden sibling directory renamed to ``path`` once all are
    complete, so an interrupted run leaves no partial data set. About a million rows per
    second on one core (vectorised; file ``i`` is written while file ``i + 1`` is drawn).

    Examples
    --------
    >>> import pathlib, shutil, tempfile
    >>> import pyarrow.parquet as pq
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> out = synthetic_criteo(3_000, seed=1, path=tmp / "criteo", rows_per_file=2_000)
    >>> sorted(p.name for p in out.glob("*.parquet"))
    ['part-00000.parquet', 'part-00001.parquet']
    >>> table = pq.read_table(out)
    >>> table.num_rows, table.num_columns, str(table.schema.field("C1").type)
    (3000, 40, 'string')
    >>> synthetic_criteo(3_000, seed=1, path=out, rows_per_file=2_000) == out  # reused
    True
    >>> shutil.rmtree(tmp)
    """
    params = _criteo_params(rows, seed, rows_per_file, cardinalities, zipf_exponent, profile)
    target = Path(path) if path is not None else _default_criteo_dir(params)
    if not _is_complete(target, params):
        many = len(_part_sizes(params["rows"], params["rows_per_file"])) > 1
        _generate(target, params, _Progress(params["rows"], target)
                  if (many if progress is None else progress) else None)
    return target


class _Progress:
    r"""The one line ``synthetic_criteo`` keeps rewriting on standard error while it writes.

    >>> import io
    >>> line = _Progress(8_000_000, Path("out"), io.StringIO(), clock=iter([0, 2, 4]).__next__)
    >>> line.update(2_000_000)
    >>> line.stream.getvalue().split("\r")[-1]
    'synthetic_criteo: 2,000,000 of 8,000,000 rows (25%) into out, 1.0M rows/s, about 6 s left'
    >>> line.close()
    >>> line.stream.getvalue().split("\r")[-1]
    'synthetic_criteo: 8,000,000 rows written to out in 4.0 s\n'
    """

    def __init__(self, rows: int, target: Path, stream: TextIO | None = None,
                 clock: Any = time.perf_counter) -> None:
        self.rows, self.target, self.clock = rows, target, clock
        self.stream = stream if stream is not None else sys.stderr
        self.started = clock()
        self._say(f"{rows:,} rows to write into {target}...")

    def _say(self, text: str, end: str = "") -> None:
        self.stream.write(f"\rsynthetic_criteo: {text}{end}")
        self.stream.flush()

    def update(self, done: int) -> None:
        seconds = max(self.clock() - self.started, 1e-9)
        per_second = done / seconds
        left = (self.rows - done) / per_second if per_second else 0.0
        self._say(f"{done:,} of {self.rows:,} rows ({done / max(self.rows, 1):.0%}) into "
                  f"{self.target}, {per_second / 1e6:.1f}M rows/s, about {left:.0f} s left")

    def close(self) -> None:
        self._say(f"{self.rows:,} rows written to {self.target} in "
                  f"{self.clock() - self.started:.1f} s", end="\n")


def _generate(target: Path, params: dict[str, Any], progress: _Progress | None = None
              ) -> None:
    """Write the data set into a hidden sibling of ``target``, renamed to it once complete."""
    _check_target_free(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        _write_criteo_files(staging, params, progress)
        _publish(staging, target, params)
        if progress is not None:
            progress.close()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _criteo_params(
    rows: int,
    seed: int,
    rows_per_file: int,
    cardinalities: Sequence[int] | None,
    zipf_exponent: float,
    profile: str = "default",
) -> dict[str, Any]:
    """Validate the generator arguments and return them as a JSON-ready dict."""
    if profile not in ("default", "kaggle"):
        raise ValueError(f"profile must be 'default' or 'kaggle', got {profile!r}")
    if profile == "kaggle" and (cardinalities is not None or zipf_exponent != 1.1):
        raise ValueError(
            "profile='kaggle' fixes each column's cardinality and exponent; "
            "drop cardinalities/zipf_exponent or use profile='default'"
        )
    if int(rows) != rows or rows < 0:
        raise ValueError(f"rows must be a non-negative integer, got {rows!r}")
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if int(rows_per_file) != rows_per_file or not 0 < rows_per_file <= _MAX_ROWS_PER_FILE:
        raise ValueError(
            f"rows_per_file must be in [1, {_MAX_ROWS_PER_FILE}], got {rows_per_file!r}"
        )
    if not (math.isfinite(zipf_exponent) and zipf_exponent >= 0):
        raise ValueError(f"zipf_exponent must be finite and >= 0, got {zipf_exponent!r}")
    if profile == "kaggle":
        cards = [vocabulary for _, vocabulary in KAGGLE_SHAPES]
    elif cardinalities is None:
        cap = max(10, int(rows) // 2)
        cards = [min(k, cap) for k in CRITEO_KAGGLE_CARDINALITIES]
    else:
        cards = [int(k) for k in cardinalities]
        if len(cards) != len(CRITEO_CATEGORICAL):
            raise ValueError(f"cardinalities needs 26 values (C1..C26), got {len(cards)}")
        if any(not 1 <= k <= _MAX_CARDINALITY for k in cards):
            raise ValueError(f"each cardinality must be in [1, {_MAX_CARDINALITY}]: {cards}")
    params = {
        "generator": _GENERATOR,
        "version": _GENERATOR_VERSION,
        "rows": int(rows),
        "seed": int(seed),
        "rows_per_file": int(rows_per_file),
        "cardinalities": cards,
        "zipf_exponent": float(zipf_exponent),
    }
    if profile == "kaggle":
        params.update(profile="kaggle", zipf_exponent=[s for s, _ in KAGGLE_SHAPES])
    return params


def _default_criteo_dir(params: dict[str, Any]) -> Path:
    """Cache directory under the system temp dir, named from rows and seed (and a hash)."""
    name = f"irs-synthetic-criteo-{params['rows']}-{params['seed']}"
    if params.get("profile") == "kaggle":
        defaults = _criteo_params(params["rows"], params["seed"], 500_000, None, 1.1, "kaggle")
        return Path(tempfile.gettempdir()) / (name + "-kaggle" + ("" if params == defaults
                                                                    else "-" + _digest(params)))
    defaults = _criteo_params(params["rows"], params["seed"], 500_000, None, 1.1)
    if params != defaults:
        name = f"{name}-{_digest(params)}"
    return Path(tempfile.gettempdir()) / name


def _digest(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8]


def _part_sizes(rows: int, rows_per_file: int) -> list[int]:
    """Rows of each file; a zero-row data set still gets one (empty) file."""
    sizes = [rows_per_file] * (rows // rows_per_file)
    if rows % rows_per_file or not sizes:
        sizes.append(rows % rows_per_file)
    return sizes


def _part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def _is_complete(directory: Path, params: dict[str, Any]) -> bool:
    """Whether ``directory`` holds a finished data set made with ``params``."""
    try:
        recorded = json.loads((directory / _PARAMS_FILE).read_text())
        files = recorded.pop("files")
        return recorded == params and all(
            (directory / name).stat().st_size == size for name, size in files.items()
        )
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return False


def _check_target_free(target: Path) -> None:
    """Raise FileExistsError unless ``target`` is absent or an empty directory."""
    if not os.path.lexists(target):
        return
    if target.is_dir() and not target.is_symlink() and not any(target.iterdir()):
        return
    raise FileExistsError(
        f"{target} already exists and is not a synthetic Criteo data set made with these "
        "parameters; delete it or pick another path"
    )


def _write_criteo_files(directory: Path, params: dict[str, Any],
                        progress: _Progress | None = None) -> None:
    """Generate and write every part file, then ``_params.json``, into ``directory``.

    File ``i`` is written in a background thread while file ``i + 1`` is generated;
    ``progress`` hears of the rows written after each file.
    """
    sizes = _part_sizes(params["rows"], params["rows_per_file"])
    names = [_part_name(index) for index in range(len(sizes))]
    futures: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="irs-criteo-writer") as writer:
        for index, n in enumerate(sizes):
            table = _criteo_table(n, params, index)
            if futures:
                futures[-1].result()  # at most one finished table waits for the writer
                if progress is not None:
                    progress.update(sum(sizes[:index]))
            futures.append(writer.submit(_write_part, table, directory / names[index]))
        futures[-1].result()
    files = {name: (directory / name).stat().st_size for name in names}
    record = {**params, "files": files}
    (directory / _PARAMS_FILE).write_text(json.dumps(record, indent=1) + "\n")


def _write_part(table: pa.Table, file_path: Path) -> None:
    """Write one parquet file (snappy, 128Ki-row row groups, no statistics for hashes).

    The Arrow schema is not stored, so dictionary-encoded columns read back as strings.
    """
    pq.write_table(
        table,
        file_path,
        row_group_size=_ROW_GROUP_SIZE,
        compression="snappy",
        write_statistics=[CRITEO_LABEL, *CRITEO_CONTINUOUS],
        store_schema=False,
    )


def _publish(staging: Path, target: Path, params: dict[str, Any]) -> None:
    """Move the finished ``staging`` directory to ``target`` in one rename."""
    staging.chmod(0o755)
    if target.is_dir() and not any(target.iterdir()):
        target.rmdir()
    try:
        os.rename(staging, target)
    except OSError:
        if _is_complete(target, params):  # an identical concurrent call finished first
            shutil.rmtree(staging, ignore_errors=True)
        elif os.path.lexists(target):
            raise FileExistsError(
                f"{target} appeared while generating; delete it or pick another path"
            ) from None
        else:
            raise
