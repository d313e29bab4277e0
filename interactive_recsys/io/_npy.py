"""``.npy`` files written in pieces: rows appended as they come, the shape set at the end.

:class:`NpyAppender` writes the same bytes as ``numpy.save`` of the whole array (header
version 1.0, C order), without holding the array: rows go to disk as they are appended and
the header is written last, when the number of rows is known.

>>> import os, tempfile, numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
>>> with NpyAppender(path, np.int32, columns=2) as out:
...     out.append(np.array([[1, 2]], np.int32))
...     out.append(np.array([[3, 4], [5, 6]], np.int32))
>>> np.load(path).tolist()
[[1, 2], [3, 4], [5, 6]]
>>> ref = os.path.join(os.path.dirname(path), "ref.npy")
>>> np.save(ref, np.load(path))
>>> open(ref, "rb").read() == open(path, "rb").read()
True
"""

from __future__ import annotations

import io
import os
import shutil
import threading
from types import TracebackType
from typing import Any

import numpy as np

__all__ = ["NpyAppender", "create_npy", "load_npy", "npy_header", "npy_shape", "read_npy_rows",
           "write_npy_rows"]

#: NumPy parses an ``.npy`` header with ``ast.literal_eval``, and CPython 3.11's parser is not
#: safe in threads (``SystemError: AST constructor recursion depth mismatch`` when two threads
#: compile at once): tasks on threads (``irs criteo --local``) read headers one at a time.
_HEADER_LOCK = threading.Lock()


def npy_header(dtype: Any, shape: tuple[int, ...]) -> bytes:
    """The header ``numpy.save`` writes for a C-ordered array of ``dtype`` and ``shape``.

    >>> len(npy_header(np.int64, (195_000_000, 26)))
    128
    """
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
              "fortran_order": False, "shape": tuple(int(s) for s in shape)})
    return buf.getvalue()


class NpyAppender:
    """Append rows of ``columns`` values (or scalars, ``columns=None``) to a new ``.npy``.

    The file holds a provisional header until :meth:`close` (also on leaving a ``with``
    block without an error) writes the real one. A header that needs more room than the
    provisional one (more than about 10^40 rows) is moved by one copy of the file.
    """

    def __init__(self, path: str | os.PathLike, dtype: Any, columns: int | None) -> None:
        self.path, self.dtype, self.columns = os.fspath(path), np.dtype(dtype), columns
        self.rows = 0
        self._file = open(self.path, "wb")
        self._header = npy_header(self.dtype, self._shape(0))
        self._file.write(self._header)

    def _shape(self, rows: int) -> tuple[int, ...]:
        return (rows,) if self.columns is None else (rows, self.columns)

    def append(self, rows: np.ndarray) -> None:
        """Write ``rows`` (shape ``(n, columns)`` or ``(n,)``; cast to the file's dtype)."""
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        if rows.shape[1:] != self._shape(0)[1:]:
            raise ValueError(f"{self.path}: rows of shape {rows.shape} do not fit "
                             f"{self._shape(0)[1:]} columns")
        self._file.write(memoryview(rows.reshape(-1).view(np.uint8)))
        self.rows += len(rows)

    def close(self) -> None:
        """Write the final header (the number of rows) and close the file."""
        if self._file.closed:
            return
        header = npy_header(self.dtype, self._shape(self.rows))
        if len(header) == len(self._header):
            self._file.seek(0)
            self._file.write(header)
            self._file.close()
            return
        self._file.close()
        moved = self.path + ".body"
        os.replace(self.path, moved)
        with open(moved, "rb") as src, open(self.path, "wb") as dst:
            dst.write(header)
            src.seek(len(self._header))
            shutil.copyfileobj(src, dst, 16 << 20)
        os.remove(moved)

    def abort(self) -> None:
        """Close without a valid header (the caller removes the file)."""
        self._file.close()

    def __enter__(self) -> NpyAppender:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


def create_npy(path: str | os.PathLike, dtype: Any, shape: tuple[int, ...]) -> None:
    """A new ``.npy`` file of ``shape`` (zeros, allocated lazily by the file system), for
    :func:`write_npy_rows` to fill in any order."""
    header = npy_header(dtype, shape)
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(len(header) + int(np.prod(shape)) * np.dtype(dtype).itemsize)


def load_npy(path: str | os.PathLike, mmap: bool = True) -> np.ndarray:
    """``np.load(path)``, memory-mapped read-only by default, safe to call from threads.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "l.npy")
    >>> np.save(path, np.arange(4))
    >>> load_npy(path).tolist(), type(load_npy(path)).__name__, type(load_npy(path, False)).__name__
    ([0, 1, 2, 3], 'memmap', 'ndarray')
    """
    with _HEADER_LOCK:
        return np.load(path, mmap_mode="r" if mmap else None)


def _layout(f: Any) -> tuple[int, np.dtype, tuple[int, ...]]:
    version = np.lib.format.read_magic(f)
    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
            else np.lib.format.read_array_header_2_0)
    with _HEADER_LOCK:
        shape, fortran, dtype = read(f)
    if fortran:
        raise ValueError(f"{getattr(f, 'name', f)}: a Fortran-ordered .npy file")
    return f.tell(), dtype, shape


def npy_shape(path: str | os.PathLike) -> tuple[int, ...]:
    """The shape of a ``.npy`` file, from its header."""
    with open(path, "rb") as f:
        return _layout(f)[2]


def read_npy_rows(path: str | os.PathLike, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a C-ordered ``.npy`` file, read with one positioned read (no
    memory map: no page faults on the whole range).

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "r.npy")
    >>> np.save(path, np.arange(12).reshape(6, 2))
    >>> read_npy_rows(path, 2, 4).tolist()
    [[4, 5], [6, 7]]
    """
    with open(path, "rb") as f:
        offset, dtype, shape = _layout(f)
        row = int(np.prod(shape[1:])) * dtype.itemsize
        stop = min(stop, shape[0])
        f.seek(offset + start * row)
        data = np.fromfile(f, dtype=dtype, count=max(0, stop - start) * row // dtype.itemsize)
    return data.reshape((-1, *shape[1:]))


def write_npy_rows(path: str | os.PathLike, start: int, rows: np.ndarray) -> None:
    """Write ``rows`` at row ``start`` of an existing ``.npy`` file (:func:`create_npy`).

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npy")
    >>> create_npy(path, np.int32, (3, 2))
    >>> write_npy_rows(path, 1, np.array([[7, 8]], np.int32))
    >>> np.load(path).tolist()
    [[0, 0], [7, 8], [0, 0]]
    """
    with open(path, "r+b") as f:
        offset, dtype, shape = _layout(f)
        rows = np.ascontiguousarray(rows, dtype=dtype)
        if rows.shape[1:] != shape[1:] or start + len(rows) > shape[0]:
            raise ValueError(f"{path}: rows {rows.shape} at {start} do not fit {shape}")
        f.seek(offset + start * int(np.prod(shape[1:])) * dtype.itemsize)
        f.write(memoryview(rows.reshape(-1).view(np.uint8)))
