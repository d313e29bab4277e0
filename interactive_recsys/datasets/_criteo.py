"""Criteo: the synthetic generator and the raw TSV reader."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
import tempfile
import zlib
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from interactive_recsys.datasets._criteo_kaggle import KAGGLE_NULL_GROUPS, KAGGLE_SHAPES

if TYPE_CHECKING:
    from interactive_recsys.io._dataset import Dataset

PathLike = str | os.PathLike

# --------------------------------------------------------------------------------------------
# Criteo schema
# --------------------------------------------------------------------------------------------

CRITEO_LABEL = "label"
CRITEO_CONTINUOUS = [f"I{i}" for i in range(1, 14)]
CRITEO_CATEGORICAL = [f"C{i}" for i in range(1, 27)]
CRITEO_COLUMNS = [CRITEO_LABEL, *CRITEO_CONTINUOUS, *CRITEO_CATEGORICAL]

#: Distinct values of C1..C26 in the Criteo Kaggle (Display Advertising Challenge) train set.
CRITEO_KAGGLE_CARDINALITIES = (
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
    27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572,
)  # fmt: skip

# Columns that are missing together in real Criteo rows share one null mask: (columns, rate).
# Rates follow the Criteo Kaggle train set (C22 is ~76 % missing there, too).
_NULL_GROUPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("I1", "I10"), 0.45),
    (("I3",), 0.20),
    (("I4", "I13"), 0.20),
    (("I5", "I7", "I9", "I11"), 0.05),
    (("I6",), 0.25),
    (("I8",), 0.001),
    (("I12",), 0.77),
    (("C3", "C4", "C12", "C16", "C21", "C24"), 0.035),
    (("C6",), 0.12),
    (("C19", "C20", "C25", "C26"), 0.44),
    (("C22",), 0.76),
)

#: Fraction of nulls that :func:`synthetic_criteo` gives each column (0.0 for the rest).
CRITEO_NULL_RATES: dict[str, float] = {
    name: next((rate for cols, rate in _NULL_GROUPS if name in cols), 0.0)
    for name in CRITEO_COLUMNS
}

# Count features: floor of a Lomax (Pareto II) draw -> (median, tail index alpha, maximum).
# Medians, tails and maxima roughly follow the Criteo Kaggle train set.
_COUNT_SHAPES: dict[str, tuple[float, float, int]] = {
    "I1": (1.5, 1.2, 5775),
    "I2": (3.0, 0.6, 257675),
    "I3": (7.5, 1.1, 65535),
    "I4": (4.5, 2.0, 969),
    "I5": (2500.0, 0.75, 23159456),
    "I6": (40.0, 1.0, 431037),
    "I7": (3.5, 0.9, 56311),
    "I8": (7.5, 2.0, 6047),
    "I9": (41.0, 1.1, 29019),
    "I10": (0.9, 3.0, 11),
    "I11": (1.5, 1.5, 231),
    "I12": (0.4, 0.8, 4008),
    "I13": (5.5, 1.8, 7393),
}

_LABEL_RATE = 0.25
# Weak label signal: positives get 1.5x larger counts here ...
_LABEL_COUNT_LIFT = {"I1": 1.5, "I7": 1.5, "I11": 1.5}
# ... and half of the positives move one popularity rank down (rank r -> r + 1) here.
_LABEL_RANK_SHIFT = ("C14", "C17")
# I2 is sometimes negative in Criteo: P(I2 = -1), P(-2), P(-3).
_I2_NEGATIVE = ((-1, 0.095), (-2, 0.004), (-3, 0.001))

_GENERATOR = "interactive_recsys.synthetic_criteo"
_GENERATOR_VERSION = 1
_PARAMS_FILE = "_params.json"
_ROW_GROUP_SIZE = 128 * 1024
_MAX_ROWS_PER_FILE = 2**28  # 8 bytes per string value must fit int32 offsets
_MAX_CARDINALITY = 2**30
_DICTIONARY_MAX = 2**16  # vocabularies up to this size are written dictionary-encoded


def criteo_csv_options() -> dict[str, Any]:
    r"""Return the ``Dataset`` keyword arguments that describe a raw Criteo TSV file.

    Raw Criteo files have no header; each line holds 40 tab-separated fields: the 0/1 label,
    13 integer counts ``I1..I13`` and 26 hashed categoricals ``C1..C26``. An empty field is a
    null. Integer columns are declared ``"int64"`` and must be read as *nullable* integers.

    Returns
    -------
    dict
        ``engine``, ``sep``, ``names``, ``dtypes`` and ``header`` for
        :class:`interactive_recsys.io._dataset.Dataset`. A new dict on every call.

    Examples
    --------
    >>> opts = criteo_csv_options()
    >>> opts["engine"], opts["sep"], opts["header"], len(opts["names"])
    ('csv', '\t', None, 40)
    >>> opts["dtypes"]["I1"], opts["dtypes"]["C1"]
    ('int64', 'string')
    """
    dtypes = {CRITEO_LABEL: "int64"}
    dtypes.update({name: "int64" for name in CRITEO_CONTINUOUS})
    dtypes.update({name: "string" for name in CRITEO_CATEGORICAL})
    return {
        "engine": "csv",
        "sep": "\t",
        "names": list(CRITEO_COLUMNS),
        "dtypes": dtypes,
        "header": None,
    }


def read_criteo(
    path: PathLike | Sequence[PathLike], *, part_size: str | int | None = None
) -> Dataset:
    r"""Open raw Criteo TSV data (Kaggle ``train.txt`` or the 1TB ``day_N`` files) lazily.

    Parameters
    ----------
    path : str, os.PathLike or sequence of them
        One file, a glob pattern such as ``"criteo/day_*"``, or a list of files.
    part_size : str or int, optional
        Target partition size (``"128MB"`` or bytes), passed to the Dataset.

    Returns
    -------
    interactive_recsys.io._dataset.Dataset
        Columns :data:`CRITEO_COLUMNS`; ``label`` and ``I1..I13`` are nullable int64,
        ``C1..C26`` are strings.

    See Also
    --------
    criteo_csv_options : The keyword arguments used to build the Dataset.

    Examples
    --------
    >>> import pathlib, shutil, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> tsv = tmp / "train.txt"
    >>> _ = tsv.write_text("\t".join(["1", "5"] + [""] * 12 + ["68fd1e64"] * 26) + "\n")
    >>> ds = read_criteo(tsv)
    >>> type(ds).__name__
    'Dataset'
    >>> shutil.rmtree(tmp)
    """
    from interactive_recsys.io._dataset import Dataset  # lazy: Dask, not for the TSV readers

    return Dataset(path, part_size=part_size, **criteo_csv_options())


# --------------------------------------------------------------------------------------------
# Synthetic Criteo
# --------------------------------------------------------------------------------------------


def synthetic_criteo(
    rows: int = 1_000_000,
    seed: int = 0,
    path: PathLike | None = None,
    *,
    rows_per_file: int = 500_000,
    cardinalities: Sequence[int] | None = None,
    zipf_exponent: float = 1.1,
    profile: str = "default",
) -> Path:
    """Write a deterministic, Criteo-shaped synthetic data set as parquet files.

    The directory receives ``part-00000.parquet``, ``part-00001.parquet``, ... (at most
    ``rows_per_file`` rows each, row groups of 128Ki rows, snappy) and a small ``_params.json``
    that records how it was made. Calling again with the same parameters and path reuses the
    files instead of writing them again.

    Columns (see :data:`CRITEO_COLUMNS`):

    * ``label``: int64 0/1, 25 % ones, weakly related to ``I1``, ``I7``, ``I11``, ``C14``
      and ``C17``.
    * ``I1..I13``: int64 heavy-tailed counts (floored Lomax draws capped at the Criteo Kaggle
      maxima) with Arrow nulls at Criteo-like rates (:data:`CRITEO_NULL_RATES`); ``I2`` is
      -1, -2 or -3 in about 10 % of rows, the others are never negative.
    * ``C1..C26``: 8 lowercase hex characters (like ``"68fd1e64"``) with Criteo-like null
      rates. Column ``j`` draws popularity ranks ``r`` in ``[0, K_j)`` from a *bounded* power
      law: the floor of a continuous power law ``p(x) ~ x ** -zipf_exponent`` truncated to
      ``[1, K_j + 1)``, sampled by inverse CDF, minus one. Rank ``r`` maps to a fixed string
      by a keyed bijective 32-bit integer mix of ``(column, r)``, so a column never gives two
      ranks the same string, and the same rank gets a different string in another column. The
      strings do not depend on ``seed``.

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
        ``"kaggle"`` gives every categorical column its own exponent and vocabulary, fitted
        to the real Criteo Kaggle data so that its distinct count grows with ``rows`` as the
        real column's does (the widest hold 20-30 % distinct values at a few million rows),
        and the null rates of the real head sample
        (:mod:`~interactive_recsys.datasets._criteo_kaggle`). It cannot be combined with
        ``cardinalities`` or ``zipf_exponent``. ``"default"`` is narrower and quicker.

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
    Files are written into a hidden sibling directory that is renamed to ``path`` only after
    all files are complete, so an interrupted run never leaves a partial data set behind.
    Everything is vectorised numpy/pyarrow (no per-row Python): about a million rows per
    second on one core, of which 60 % is parquet writing. File ``i`` is written in a background
    thread while file ``i + 1`` is generated, so a second core adds about 30 %.

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
    if _is_complete(target, params):
        return target
    _check_target_free(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        _write_criteo_files(staging, params)
        _publish(staging, target, params)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


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


def _write_criteo_files(directory: Path, params: dict[str, Any]) -> None:
    """Generate and write every part file, then ``_params.json``, into ``directory``.

    File ``i`` is written in a background thread while file ``i + 1`` is generated.
    """
    sizes = _part_sizes(params["rows"], params["rows_per_file"])
    names = [_part_name(index) for index in range(len(sizes))]
    futures: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="irs-criteo-writer") as writer:
        for index, n in enumerate(sizes):
            table = _criteo_table(n, params, index)
            if futures:
                futures[-1].result()  # at most one finished table waits for the writer
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


def _criteo_table(n: int, params: dict[str, Any], index: int) -> pa.Table:
    """Draw one file's worth of synthetic Criteo rows."""
    cardinalities = params["cardinalities"]
    exponents = params["zipf_exponent"]
    if not isinstance(exponents, list):
        exponents = [exponents] * len(cardinalities)
    kaggle = params.get("profile") == "kaggle"
    rng = np.random.default_rng([params["seed"], index])
    u_label = rng.random(n, dtype=np.float32)
    label = u_label < _LABEL_RATE
    shifted = u_label < _LABEL_RATE / 2  # half of the positives
    nulls = _null_masks(rng, n, KAGGLE_NULL_GROUPS if kaggle else _NULL_GROUPS)
    columns = {CRITEO_LABEL: pa.array(label.astype(np.int64))}
    for name in CRITEO_CONTINUOUS:
        values = _counts(rng, n, name, label)
        columns[name] = pa.array(values, mask=nulls.get(name), type=pa.int64())
    offsets = _string_offsets(n)
    for name, k, exponent in zip(CRITEO_CATEGORICAL, cardinalities, exponents, strict=True):
        ranks = _power_law_ranks(rng, n, k, exponent)
        if name in _LABEL_RANK_SHIFT:
            ranks = (ranks + shifted) % np.int32(k)
        columns[name] = _categorical_column(name, ranks, k, nulls.get(name), offsets)
    return pa.table(columns)


def _null_masks(
    rng: np.random.Generator, n: int, groups: Sequence[tuple[tuple[str, ...], float]]
) -> dict[str, np.ndarray]:
    """One boolean null mask per column with nulls; grouped columns share a mask."""
    masks = {}
    for names, rate in groups:
        mask = rng.random(n, dtype=np.float32) < rate
        masks.update(dict.fromkeys(names, mask))
    return masks


def _counts(rng: np.random.Generator, n: int, name: str, label: np.ndarray) -> np.ndarray:
    """Heavy-tailed int64 counts for column ``name``: a floored, capped Lomax draw."""
    median, alpha, cap = _COUNT_SHAPES[name]
    scale = median / (2.0 ** (1.0 / alpha) - 1.0)  # Lomax median = scale * (2**(1/a) - 1)
    u = rng.random(n, dtype=np.float32)
    x = np.power(np.float32(1.0) - u, np.float32(-1.0 / alpha)) - np.float32(1.0)
    x *= np.float32(scale)
    if name in _LABEL_COUNT_LIFT:
        x *= np.where(label, np.float32(_LABEL_COUNT_LIFT[name]), np.float32(1.0))
    values = np.minimum(x, np.float32(cap)).astype(np.int64)
    if name == "I2":
        u_neg = rng.random(n, dtype=np.float32)
        low = np.float32(0.0)
        for value, prob in _I2_NEGATIVE:
            values[(u_neg >= low) & (u_neg < low + np.float32(prob))] = value
            low += np.float32(prob)
    return values


def _power_law_ranks(rng: np.random.Generator, n: int, k: int, exponent: float) -> np.ndarray:
    """Int32 ranks in ``[0, k)`` from a bounded power law, ``P(r) ~ (r + 1) ** -exponent``.

    Inverse-CDF sampling of the continuous density ``x ** -exponent`` truncated to
    ``[1, k + 1)``; the rank is ``floor(x) - 1``.

    Examples
    --------
    >>> r = _power_law_ranks(np.random.default_rng(0), 100_000, 1000, 1.1)
    >>> int(r.min()), int(r.max()) < 1000, bool((r == 0).mean() > (r == 10).mean() * 5)
    (0, True, True)
    """
    x = rng.random(n)
    if abs(exponent - 1.0) < 1e-9:
        x *= math.log(k + 1.0)  # x = (k + 1) ** u
    else:
        a = 1.0 - exponent  # x = (1 + u * ((k + 1) ** a - 1)) ** (1 / a)
        x *= (k + 1.0) ** a - 1.0
        np.log1p(x, out=x)
        x *= 1.0 / a
    np.exp(x, out=x)
    ranks = x.astype(np.int32)
    ranks -= 1
    return np.minimum(ranks, k - 1, out=ranks)


def _categorical_column(
    name: str, ranks: np.ndarray, k: int, null_mask: np.ndarray | None, offsets: pa.Buffer
) -> pa.Array:
    """Hex strings for the ranks of column ``name``.

    Small vocabularies give a dictionary array (cheap to build and to write as parquet, read
    back as plain strings); large ones map each rank straight to its string.
    """
    keys = _column_keys(name)
    if k > min(_DICTIONARY_MAX, len(ranks)):
        return _hex_strings(_mix32(ranks.view(np.uint32), keys), null_mask, offsets)
    vocab = _hex_strings(_mix32(np.arange(k, dtype=np.uint32), keys), None, _string_offsets(k))
    indices = pa.array(ranks, mask=null_mask)
    return pa.DictionaryArray.from_arrays(indices, vocab, safe=False)


def _string_offsets(n: int) -> pa.Buffer:
    """Arrow int32 offsets of ``n`` strings of 8 bytes each."""
    return pa.py_buffer(np.arange(0, 8 * n + 1, 8, dtype=np.int32))


@functools.cache
def _column_keys(name: str) -> tuple[np.uint32, np.uint32]:
    """Two fixed 32-bit keys for a column, derived from its name."""
    return np.uint32(zlib.crc32(name.encode())), np.uint32(zlib.crc32(f"{name}/2".encode()))


def _mix32(x: np.ndarray, keys: tuple[np.uint32, np.uint32]) -> np.ndarray:
    """Keyed bijective mix of uint32 values (xor-shift-multiply steps of ``lowbias32``).

    Examples
    --------
    >>> ids = _mix32(np.arange(5, dtype=np.uint32), _column_keys("C1"))
    >>> len(set(ids.tolist()))
    5
    """
    x = x ^ keys[0]
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= keys[1]
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


@functools.cache
def _hex_lookup() -> np.ndarray:
    """Table mapping a little-endian uint16 to the 4 hex characters of its two bytes."""
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    byte = np.arange(256)
    pairs = np.stack([digits[byte >> 4], digits[byte & 15]], axis=1)  # (256, 2) ASCII
    half = np.arange(65536)
    chars = np.concatenate([pairs[half & 0xFF], pairs[half >> 8]], axis=1)  # (65536, 4)
    return np.ascontiguousarray(chars).view("<u4").ravel()


def _hex_strings(ids: np.ndarray, null_mask: np.ndarray | None, offsets: pa.Buffer) -> pa.Array:
    """Arrow strings of 8 hex characters: the 4 little-endian bytes of each uint32 id.

    Examples
    --------
    >>> ids = np.array([0x641EFD68, 1], dtype=np.uint32)
    >>> _hex_strings(ids, np.array([False, True]), _string_offsets(2)).to_pylist()
    ['68fd1e64', None]
    """
    halves = ids.astype("<u4", copy=False).view("<u2")
    data = pa.py_buffer(_hex_lookup()[halves])
    n = len(ids)
    if null_mask is None or not null_mask.any():
        return pa.StringArray.from_buffers(n, offsets, data, null_count=0)
    validity = pa.py_buffer(np.packbits(~null_mask, bitorder="little"))
    return pa.StringArray.from_buffers(n, offsets, data, validity, int(null_mask.sum()))
