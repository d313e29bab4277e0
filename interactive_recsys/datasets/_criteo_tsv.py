"""Raw Criteo TSV read in blocks as TorchRec's arrays: labels, dense counts, hex ids as integers.

The conventions are those of TorchRec's ``BinaryCriteoUtils.tsv_to_npys``: an empty field is
0, the label and the 13 counts are int32, the 26 categorical fields are hexadecimal numbers
read as int64 (``int(x, 16)``). A value those types cannot hold is an error here as there
(numpy refuses it), with the file, column and value named.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "day_0")
>>> row = ["1", "5", "-1"] + [""] * 11 + ["68fd1e64", "", "FFFFFFFF"] + ["0"] * 23
>>> _ = open(path, "w").write("\\t".join(row) + "\\n")
>>> block = next(read_criteo_blocks(path))
>>> block.labels.tolist(), block.dense[0, :3].tolist(), block.sparse[0, :3].tolist()
([1], [5, -1, 0], [1761418852, 0, 4294967295])
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from interactive_recsys.datasets._criteo import (
    CRITEO_CATEGORICAL,
    CRITEO_COLUMNS,
    CRITEO_CONTINUOUS,
    CRITEO_LABEL,
)
from interactive_recsys.errors import DatasetError

__all__ = ["COMPRESSED", "CriteoBlock", "check_decompresses", "hex_to_int64", "line_ranges",
           "read_criteo_blocks", "unreadable_input"]

_INT32 = np.iinfo(np.int32)
#: Extensions of the compressed inputs (read whole: a compressed file cannot be cut by offset).
COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")
#: Bytes of a plain input file parsed by one task (a file is cut into ranges of this size).
RANGE_BYTES = 128 << 20


def line_ranges(path: str | os.PathLike, range_bytes: int, fs: Any = None
                ) -> list[tuple[int, int] | None]:
    """Byte ranges ``(start, stop)`` that cut a plain text file into pieces of about
    ``range_bytes``, each holding whole lines, every line in exactly one, in file order.

    The file is cut at the offsets ``k * range_bytes``; a line belongs to the range that holds
    its first byte, so a cut moves forward to the start of the next line (after the first
    newline at or after the byte before the cut). A range is never empty; one longer than
    ``range_bytes`` holds a line that crosses the next cut. A compressed file (see
    :data:`COMPRESSED`) cannot be cut by offset: it is one range, ``None`` (the whole file).
    ``fs``: the fsspec filesystem of a file on an object store (``path`` without its scheme),
    read a few bytes around each cut.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "day_0")
    >>> _ = open(path, "wb").write(b"aaaa\\nbb\\ncccccc\\nd")
    >>> line_ranges(path, 4)
    [(0, 5), (5, 8), (8, 15), (15, 16)]
    >>> line_ranges(path, 100), line_ranges(path + ".gz", 4)
    ([(0, 16)], [None])
    """
    path = os.fspath(path)
    if path.endswith(COMPRESSED):
        return [None]
    if range_bytes < 1:
        raise ValueError(f"range_bytes must be >= 1; got {range_bytes!r}")
    size = os.path.getsize(path) if fs is None else fs.size(path)
    bounds = [0]
    with open(path, "rb") if fs is None else fs.open(path, "rb", block_size=1 << 16) as f:
        cut = range_bytes
        while cut < size:
            f.seek(cut - 1)
            start = cut - 1 + len(f.readline())  # the first line that starts at or after cut
            if start >= size:
                break
            bounds.append(start)
            cut = -(-(start + 1) // range_bytes) * range_bytes  # cuts up to start add nothing
    bounds.append(size)
    return list(itertools.pairwise(bounds))


def _hex_digits(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value of each byte of ``data`` as a hex digit, and where a byte is not one
    (``0-9a-fA-F``), with byte arithmetic (no table lookup).

    >>> [a.tolist() for a in _hex_digits(np.frombuffer(b"09afAFg/", np.uint8))]
    [[0, 9, 10, 15, 10, 15, 16, 15], [False, False, False, False, False, False, True, True]]
    """
    invalid = ((data - np.uint8(48)) > 9) & (((data | np.uint8(0x20)) - np.uint8(97)) > 5)
    return (data & np.uint8(15)) + np.uint8(9) * (data >> np.uint8(6)), invalid


def _pack8(digits: np.ndarray) -> np.ndarray:
    """Numbers of 8 hex digits (values 0-15, one byte each, first digit first) as uint64:
    the 8 bytes of each read as one little-endian word, then the nibbles packed pairwise."""
    x = np.ascontiguousarray(digits).view("<u8")
    x = ((x & np.uint64(0x000F000F000F000F)) << np.uint64(4)) | (
        (x >> np.uint64(8)) & np.uint64(0x000F000F000F000F))
    x = ((x & np.uint64(0x000000FF000000FF)) << np.uint64(8)) | (
        (x >> np.uint64(16)) & np.uint64(0x000000FF000000FF))
    return ((x & np.uint64(0xFFFF)) << np.uint64(16)) | ((x >> np.uint64(32)) & np.uint64(0xFFFF))


@dataclass
class CriteoBlock:
    """One block of rows: ``labels`` int32 (n,), ``dense`` int32 (n, 13), ``sparse`` int64
    (n, 26)."""

    labels: np.ndarray
    dense: np.ndarray
    sparse: np.ndarray


def _string_parts(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (from 0) and bytes of a string array whose nulls are empty strings."""
    if array.null_count:
        array = pc.fill_null(array, "")
    offset_type = np.int64 if pa.types.is_large_string(array.type) else np.int32
    _, offsets_buf, data_buf = array.buffers()
    offsets = np.frombuffer(offsets_buf, offset_type)[array.offset: array.offset + len(array) + 1]
    start, stop = int(offsets[0]), int(offsets[-1])
    data = (np.frombuffer(data_buf, np.uint8)[start:stop] if data_buf is not None
            else np.zeros(0, np.uint8))
    return (offsets - start).astype(np.int64), data


def hex_to_int64(array: pa.Array | pa.ChunkedArray, name: str = "C?", where: str = ""
                 ) -> np.ndarray:
    """Hexadecimal strings as int64, as ``int(x or "0", 16)``; null or empty is 0.

    Digits are ``0-9a-fA-F``; a sign, ``0x`` prefix, space or ``_`` (which Python's ``int``
    also accepts) are refused here, as is a value of 2**63 or more (numpy refuses it in
    TorchRec's int64 array).

    >>> hex_to_int64(pa.array(["68fd1e64", None, "", "7fffffffffffffff", "A"])).tolist()
    [1761418852, 0, 0, 9223372036854775807, 10]
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    n = len(array)
    offsets, data = _string_parts(array)
    lengths = np.diff(offsets)
    digits, invalid = _hex_digits(data)
    if n and invalid.any():
        bad = int(np.searchsorted(offsets, int(np.argmax(invalid)), side="right")) - 1
        raise DatasetError(f"Column {name!r}{where} holds {array[bad].as_py()!r} (row {bad} of "
                           "its block), which is not a hexadecimal id: Criteo's categorical "
                           "fields are hex digits (0-9a-f) or empty. Fix or drop that line.")
    out = np.zeros(n, np.uint64)
    if not digits.size:
        return out.astype(np.int64)
    if lengths.max() == 8 and ((lengths == 8) | (lengths == 0)).all():  # Criteo's 8 digits
        out[lengths == 8] = _pack8(digits)
        return out.astype(np.int64)
    row = np.repeat(np.arange(n), lengths)
    long = lengths > 16  # only leading zeros can keep these below 2**63: Python reads them
    if long.any():
        digits = np.where(long[row], 0, digits).astype(np.uint8)
    power = np.minimum(offsets[1:][row] - 1 - np.arange(data.size), 15).astype(np.uint64)
    values = digits.astype(np.uint64) << (power * np.uint64(4))
    nonempty = lengths > 0
    out[nonempty] = np.add.reduceat(values, offsets[:-1][nonempty])
    for i in np.flatnonzero(long):
        out[i] = min(int(array[i].as_py(), 16), 2**64 - 1)
    too_big = out > np.uint64(2**63 - 1)
    if too_big.any():
        bad = int(np.argmax(too_big))
        raise DatasetError(f"Column {name!r}{where} holds {array[bad].as_py()!r} (row {bad} of "
                           "its block), an id of 2**63 or more, which TorchRec's int64 sparse "
                           "array cannot hold (numpy refuses it there). Fix or drop that line.")
    return out.astype(np.int64)


def _int32(column: pa.ChunkedArray | pa.Array, name: str, where: str) -> np.ndarray:
    values = pc.fill_null(column, 0)
    values = values.to_numpy() if isinstance(values, pa.ChunkedArray) else values.to_numpy(
        zero_copy_only=False)
    if values.size and (values.min() < _INT32.min or values.max() > _INT32.max):
        bad = values[(values < _INT32.min) | (values > _INT32.max)][0]
        raise DatasetError(f"Column {name!r}{where} holds {int(bad)}, outside int32, which "
                           "TorchRec's int32 arrays cannot hold (numpy refuses it there). Fix "
                           "or drop that line.")
    return values.astype(np.int32)


def read_criteo_blocks(path: str | os.PathLike, *, block_size: int = 64 << 20,
                       has_label: bool = True, byte_range: tuple[int, int] | None = None
                       ) -> Iterator[CriteoBlock]:
    """The rows of one raw Criteo file (plain or ``.gz``/``.bz2``/...), block by block.

    Parameters
    ----------
    path : the TSV file: label, 13 counts and 26 hex ids per line, tab-separated.
    block_size : bytes of text parsed at once (memory: about 6x this per block).
    has_label : ``False`` for Kaggle's ``test.txt``, which has no label column; its labels
        are then -1, as TorchRec's.
    byte_range : ``(start, stop)``: only these bytes of a plain file, which must start and
        end on a line boundary (:func:`line_ranges` cuts a file so); ``None``: the whole file.
    """
    path = os.fspath(path)
    names = CRITEO_COLUMNS if has_label else CRITEO_COLUMNS[1:]
    types = {name: pa.int64() for name in CRITEO_CONTINUOUS} | {
        name: pa.string() for name in CRITEO_CATEGORICAL}
    if has_label:
        types[CRITEO_LABEL] = pa.int64()
    source = None
    try:
        if byte_range is None:
            stream = pa.input_stream(path, compression="detect")
        else:
            source = pa.OSFile(path)
            stream = source.get_stream(byte_range[0], byte_range[1] - byte_range[0])
        reader = pacsv.open_csv(
            stream, read_options=pacsv.ReadOptions(column_names=names, block_size=block_size),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types=types, null_values=[""],
                                                 strings_can_be_null=False))
    except (pa.ArrowInvalid, OSError) as exc:
        if source is not None:
            source.close()
        if isinstance(exc, OSError):
            raise unreadable_input(path, exc) from None
        raise DatasetError(f"Cannot read {path!r} as a raw Criteo TSV file (label, I1..I13, "
                           f"C1..C26, tab-separated): {exc}") from None
    with stream, source if source is not None else contextlib.nullcontext():
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except pa.ArrowInvalid as exc:
                raise DatasetError(f"Cannot read {path!r} as a raw Criteo TSV file (label, "
                                   f"I1..I13, C1..C26, tab-separated): {exc}") from None
            except OSError as exc:  # a corrupt or truncated compressed file, a failing disk
                raise unreadable_input(path, exc) from None
            yield _block(batch, path, has_label)


#: The command that checks a compressed file of each kind, named by :func:`unreadable_input`.
_TEST_COMMANDS = {".gz": "gzip -t", ".bz2": "bzip2 -t", ".zst": "zstd -t", ".lz4": "lz4 -t"}


def unreadable_input(path: str, exc: OSError) -> DatasetError:
    """The error for an input file that cannot be read (``exc``): a compressed file that is
    corrupt or truncated, a folder, a failing disk. It names the input (never the output,
    which is not written).

    >>> print(unreadable_input("in/day_0.gz", OSError("Truncated compressed stream")))
    ... # doctest: +NORMALIZE_WHITESPACE
    Criteo input 'in/day_0.gz' is corrupt or truncated: it cannot be decompressed to its end
    (Truncated compressed stream). Download it again; check it with gzip -t 'in/day_0.gz'
    (or by decompressing it).
    """
    path = os.fspath(path)
    if isinstance(exc, IsADirectoryError) or os.path.isdir(path):
        return DatasetError(f"Criteo input {path!r} is a folder, not a file: each day must be "
                            "one file (day_0, or day_0.gz, .bz2, .zst, .lz4). Put the day's "
                            "file in its place.")
    detail = exc.strerror or str(exc) or type(exc).__name__
    suffix = next((s for s in COMPRESSED if path.endswith(s)), None)
    if suffix is None or isinstance(exc, PermissionError | FileNotFoundError):
        return DatasetError(f"Cannot read Criteo input {path!r} ({detail}). Check that the "
                            "file is there and readable, and that its disk works (copy the "
                            "file elsewhere to test).")
    return DatasetError(f"Criteo input {path!r} is corrupt or truncated: it cannot be "
                        f"decompressed to its end ({detail}). Download it again; check it "
                        f"with {_TEST_COMMANDS[suffix]} {path!r} (or by decompressing it).")


def check_decompresses(path: str | os.PathLike, chunk: int = 16 << 20) -> None:
    """Read a compressed file (see :data:`COMPRESSED`) to its end, raising the error of
    :func:`unreadable_input` if it is corrupt or truncated; a plain file is not read."""
    path = os.fspath(path)
    if not path.endswith(COMPRESSED):
        return
    try:
        with pa.input_stream(path, compression="detect") as stream:
            while stream.read(chunk):
                pass
    except OSError as exc:
        raise unreadable_input(path, exc) from None


def _block(batch: pa.RecordBatch, path: str, has_label: bool) -> CriteoBlock:
    where = f" of {os.path.basename(path)!r}"
    n = batch.num_rows
    labels = (_int32(batch.column(CRITEO_LABEL), CRITEO_LABEL, where) if has_label
              else np.full(n, -1, np.int32))
    dense = np.empty((n, len(CRITEO_CONTINUOUS)), np.int32)
    for j, name in enumerate(CRITEO_CONTINUOUS):
        dense[:, j] = _int32(batch.column(name), name, where)
    sparse = np.empty((n, len(CRITEO_CATEGORICAL)), np.int64)
    for j, name in enumerate(CRITEO_CATEGORICAL):
        sparse[:, j] = hex_to_int64(batch.column(name), name, where)
    return CriteoBlock(labels, dense, sparse)


def write_criteo_tsv(source: str | os.PathLike | pa.Table, path: str | os.PathLike) -> int:
    """Write Criteo rows (a table or a folder/file of parquet with :data:`CRITEO_COLUMNS`, such
    as :func:`~interactive_recsys.datasets.synthetic_criteo` writes) as a raw Criteo TSV file:
    no header, tab-separated, a null as an empty field. Returns the number of rows.

    >>> import os, tempfile
    >>> table = pa.table({n: pa.array([None], pa.int64() if n[0] != "C" else pa.string())
    ...                   for n in CRITEO_COLUMNS})
    >>> path = os.path.join(tempfile.mkdtemp(), "day_0")
    >>> write_criteo_tsv(table, path), open(path).read() == "\\t" * 39 + "\\n"
    (1, True)
    """
    import pyarrow.dataset as pads

    if not isinstance(source, pa.Table):
        source = pads.dataset(os.fspath(source), format="parquet").to_table(columns=CRITEO_COLUMNS)
    source = source.select(CRITEO_COLUMNS)
    options = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    pacsv.write_csv(source, os.fspath(path), write_options=options)
    return source.num_rows
