"""Safe outputs: destination guards, atomic folders and files, stale temporaries.

Every output (parquet, a saved workflow) is written into a hidden sibling
``.NAME.tmp-HOST-PID-RANDOM`` and published by one rename:

* without ``overwrite`` the rename refuses to replace anything (``renameat2`` with
  ``RENAME_NOREPLACE`` on Linux, else a rename onto the path, which fails when the other
  writer's folder is there), so of two writers racing to the same new path one wins whole
  and the other gets :class:`~interactive_recsys.errors.DatasetError`;
* a destination that is, or contains, the input, the workflow folder, the current
  directory, the home directory or ``/`` is refused before anything is touched;
* a failed write (disk full, no permission, a parent that is a file) raises
  :class:`OutputError` naming the file, and leaves nothing behind;
* an overwrite swaps the new folder and the old one in one atomic step (``renameat2`` with
  ``RENAME_EXCHANGE`` on Linux), so the path always holds a whole output; where that is not
  available it renames the old output aside and the new one into place, and a writer
  killed between the two is recovered by the next write or ``irs clean PATH`` (the path
  gets the complete new output, :func:`recover`);
* temporaries of a killed writer (its process is gone) are removed by the next write to
  the same destination, or by ``irs clean PATH`` (:func:`clean_stale`); a writer that can
  resume (``irs criteo``) takes one over instead (``atomic_directory(resume=...)``).

>>> import tempfile
>>> root = tempfile.mkdtemp()
>>> with atomic_directory(os.path.join(root, "out")) as tmp:
...     _ = open(os.path.join(tmp, "x.txt"), "w").write("x")
>>> sorted(os.listdir(root)), os.listdir(os.path.join(root, "out"))
(['out'], ['x.txt'])
>>> check_destination(root, protect={"the input": [os.path.join(root, "out", "x.txt")]})
Traceback (most recent call last):
...
interactive_recsys.errors.DatasetError: Refusing to write to ...
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping

import psutil

from interactive_recsys.errors import DatasetError, IRSError

_OWNER_FILE = ".irs-owner.json"
_TEMP_RE = re.compile(r"^\.(?P<base>.+)\.(?P<kind>tmp|old)-(?P<host>[A-Za-z0-9_.]+)-"
                      r"(?P<pid>\d+)-(?P<rand>[0-9a-f]{8})$")


class OutputError(IRSError, OSError):
    """An output could not be written (disk full, no permission, a parent is a file...)."""

    def __str__(self) -> str:
        return str(self.strerror)


# ---- destination guards ----------------------------------------------------------------------
def _real(path: str | os.PathLike) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def _cwd() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:  # the current directory was deleted
        return os.sep


def check_destination(path: str | os.PathLike,
                      protect: Mapping[str, Iterable[str | os.PathLike]] | None = None) -> None:
    """Refuse an output ``path`` that is, or contains, a protected path.

    Always protected: ``/``, the home directory and the current directory. ``protect``
    adds more, by what they are (``{"the input": files, "the workflow": [folder]}``).
    """
    dest = _real(path)
    guarded = [(what, _real(p)) for what, paths in (protect or {}).items() for p in paths]
    guarded += [("the filesystem root", os.sep), ("the home directory",
                                                   _real(os.path.expanduser("~"))),
                ("the current directory", _real(_cwd()))]
    for relation, hit in (("is", str.__eq__), ("contains", _within)):
        what, real = next(((w, r) for w, r in guarded if hit(r, dest)), ("", ""))
        if what:
            raise DatasetError(
                f"Refusing to write to {os.fspath(path)!r}: it {relation} {what} ({real!r}), "
                "which writing there (with overwrite, replacing the folder) would delete. "
                "Choose a new folder for the output, e.g. "
                f"{os.path.join(os.path.dirname(dest), 'processed')!r} if that is free.")


def check_not_inside_input(path: str | os.PathLike,
                           inputs: Iterable[str | os.PathLike]) -> None:
    """Refuse an output ``path`` inside a folder that is read as input.

    ``inputs`` are the files and folders an input is read from (:meth:`~interactive_recsys.
    io.Dataset.input_files` gives them for a dataset; the folders named by the user are among
    them). Writing inside such a folder adds the output to the input: reading the folder
    again reads both (rows doubled, or "incompatible types across files"). A folder that
    is only the parent of an input *file* is not protected (reading that file again does not
    see the output). Raises :class:`~interactive_recsys.errors.DatasetError` naming the
    folder and a free sibling; callers run it before anything is written (``to_parquet``,
    ``irs run``, the Studio).

    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> check_not_inside_input(os.path.join(root, "out"), [os.path.join(root, "in.parquet")])
    >>> check_not_inside_input(os.path.join(root, "data", "out"), [os.path.join(root, "data")])
    Traceback (most recent call last):
    ...
    interactive_recsys.errors.DatasetError: Refusing to write to ...
    """
    dest = _real(path)
    for item in inputs:
        folder = _real(item)
        if dest != folder and _within(dest, folder) and not os.path.isfile(folder):
            sibling = os.path.join(os.path.dirname(folder),
                                   os.path.basename(folder) + "-processed")
            raise DatasetError(
                f"Refusing to write to {os.fspath(path)!r}: it is inside the input folder "
                f"{folder!r}, so reading that folder again would read the output as input "
                "too (rows doubled, or types that clash across files). Write outside the "
                f"input folder, e.g. to {sibling!r}.")


def check_output(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), *,
                 overwrite: bool = False) -> None:
    """Every check of an output folder that can be made before any work: raise at once.

    ``path`` must not be, contain or lie inside ``inputs`` (:func:`check_destination`,
    :func:`check_not_inside_input`), must not exist unless ``overwrite``, and its nearest
    existing folder must take a new entry (probed by creating and removing a hidden
    folder there, so permissions, read-only filesystems and a file in the way all show).
    Callers that start long work (the Studio's Run, ``BuilderModel.run``) call this first;
    the writers check again when they publish.

    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> check_output(os.path.join(root, "new", "out"))          # fine: nothing raised
    >>> check_output(os.path.join(root, "out"), [root])
    Traceback (most recent call last):
    ...
    interactive_recsys.errors.DatasetError: Refusing to write to ...
    """
    inputs = [os.fspath(p) for p in inputs]
    check_destination(path, {"the input": inputs})
    check_not_inside_input(path, inputs)
    full = os.path.abspath(os.fspath(path))
    if os.path.lexists(full) and not overwrite:
        raise DatasetError(f"Output {os.fspath(path)!r} already exists; choose another path or "
                           "allow replacing it (overwrite=True, irs run --overwrite, or the "
                           "Studio's 'replace' box).")
    existing = os.path.dirname(full)
    while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    try:
        if not os.path.isdir(existing):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), existing)
        os.rmdir(tempfile.mkdtemp(prefix=".irs-probe-", dir=existing))
    except OSError as exc:
        raise output_error(full, exc) from exc


# ---- atomic publishing ---------------------------------------------------------------------
def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "host"


def _temp_name(path: str, kind: str) -> str:
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{kind}-{_host()}-"
                                               f"{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _renameat2() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()


def rename_noreplace(src: str, dst: str) -> None:
    """Rename ``src`` to ``dst``, failing with ``FileExistsError`` if ``dst`` exists, atomically
    (``renameat2(RENAME_NOREPLACE)``; without it, a file is linked then unlinked and a folder
    renamed onto the path, which fails if another writer's non-empty folder is there)."""
    if _RENAMEAT2 is not None:
        at_fdcwd, noreplace = -100, 1
        if _RENAMEAT2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), noreplace) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: the filesystem lacks the flag
            raise OSError(code, os.strerror(code), dst)
    if os.path.isdir(src):
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
        try:
            os.rename(src, dst)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst) from exc
            raise
    else:
        os.link(src, dst)
        os.unlink(src)


def exchange(src: str, dst: str) -> bool:
    """Swap ``src`` and ``dst`` in one atomic step (``renameat2(RENAME_EXCHANGE)``, Linux):
    ``dst`` is never missing, not even for an instant. Return False where the system or
    the filesystem cannot (then nothing moved); other failures raise ``OSError``."""
    if _RENAMEAT2 is None:
        return False
    at_fdcwd, swap = -100, 2
    if _RENAMEAT2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), swap) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), dst)


def remove_path(path: str, attempts: int = 50) -> None:
    """Remove a file or a folder, even while tasks that already started still add files."""
    for _ in range(attempts):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        if not os.path.lexists(path):
            return
        time.sleep(0.1)


_FIXES = {errno.ENOSPC: "free disk space or write elsewhere",
          errno.EFBIG: "the file size limit (ulimit -f) or the disk is too small; raise the "
                       "limit, free space or write elsewhere",
          errno.EDQUOT: "free space in your quota or write elsewhere",
          errno.ENOTDIR: "a part of the path is a file, not a folder; choose another path",
          errno.EEXIST: "a part of the path is a file, not a folder; choose another path",
          errno.EACCES: "choose a folder you can write to",
          errno.EPERM: "choose a folder you can write to",
          errno.EROFS: "the filesystem is read-only; choose a writable folder",
          errno.ENOENT: "choose an existing, writable folder (not /proc or /sys)"}


def output_error(path: str, exc: OSError) -> OutputError:
    """An :class:`OutputError` naming the file that failed and the fix."""
    failed = os.fspath(exc.filename or path)
    if _TEMP_RE.match(os.path.basename(os.path.dirname(failed))):  # a file of the output
        failed = os.path.join(os.fspath(path), os.path.basename(failed))
    reason = exc.strerror or str(exc)
    fix = _FIXES.get(exc.errno or 0, "check the path, the permissions and the free space")
    err = OutputError(exc.errno or errno.EIO,
                      f"Cannot write {os.fspath(path)!r}: writing {os.fspath(failed)!r} failed "
                      f"({reason}). Nothing was written to {os.fspath(path)!r} and no temporary "
                      f"files were left. Fix: {fix}.")
    err.filename = os.fspath(exc.filename or path)
    return err


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike, *, overwrite: bool = False,
                     protect: Mapping[str, Iterable[str | os.PathLike]] | None = None,
                     resume: Callable[[str], bool] | None = None) -> Iterator[str]:
    """Yield a temporary folder that becomes ``path`` only if the block succeeds.

    Without ``overwrite`` an existing ``path`` (also one created by another writer while
    this one was writing) is an error, except an empty folder (e.g. made by ``mkdir -p``),
    which the output replaces; with ``overwrite``, the old content is replaced and removed.

    With ``resume``, the temporary folder of a killed writer of ``path`` (its process gone)
    that ``resume(folder)`` accepts is taken over, with what it holds, instead of being
    removed (:func:`adopt_stale`); and a ``KeyboardInterrupt`` keeps the temporary folder
    for the next writer to take over, as a kill would. Other failures remove it.
    """
    path = os.path.abspath(os.fspath(path))
    check_destination(path, protect)
    with contextlib.suppress(OSError):
        recover(path)  # an output a killed writer left missing comes back first
    if os.path.lexists(path) and not overwrite and not is_empty_folder(path):
        raise DatasetError(f"Output {path!r} already exists; pass overwrite=True (irs run "
                           "--overwrite) or choose another path.")
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = adopt_stale(path, resume) if resume is not None else None
        clean_stale(path)
        if tmp is None:
            tmp = _temp_name(path, "tmp")
            os.makedirs(tmp)
            _write_owner(tmp)
    except OSError as exc:
        raise output_error(path, exc) from exc
    try:
        yield tmp
        os.remove(os.path.join(tmp, _OWNER_FILE))
        _publish(tmp, path, overwrite)
    except OSError as exc:
        remove_path(tmp)
        if isinstance(exc, IRSError):
            raise
        raise output_error(path, exc) from exc
    except KeyboardInterrupt:
        if resume is None:
            remove_path(tmp)
        else:  # kept, and free for the next writer to take over, in this process too
            with contextlib.suppress(OSError):
                _write_owner(tmp, released=True)
        raise
    except BaseException:
        remove_path(tmp)
        raise


def adopt_stale(path: str | os.PathLike, accept: Callable[[str], bool]) -> str | None:
    """Take over the temporary folder of a killed writer of ``path`` that ``accept`` takes
    (the newest, if several): renamed as this process's own temporary, with its owner file
    rewritten, so that no other process removes it while this one works in it. Return its
    new name, or None (then the stale temporaries are removed as usual)."""
    path = os.path.abspath(os.fspath(path))
    found = [e for e in stale_temporaries(path)
             if os.path.dirname(e) == os.path.dirname(path)
             and _TEMP_RE.match(os.path.basename(e))["kind"] == "tmp"
             and os.path.isdir(e) and not os.path.islink(e) and accept(e)]
    for entry in sorted(found, key=os.path.getmtime, reverse=True):
        tmp = _temp_name(path, "tmp")
        try:  # atomic: of two writers taking it over at once, one gets it
            os.rename(entry, tmp)
        except OSError:
            continue
        _write_owner(tmp)
        return tmp
    return None


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, *, mode: int | None = None) -> Iterator[str]:
    """Yield a temporary file name next to ``path`` that replaces ``path`` only if the block
    succeeds (readers see the old file or the new one whole, never a part).

    The temporary (``.NAME.tmp-HOST-PID-RANDOM``, so concurrent writers never share one) is
    removed when the block fails, and by :func:`clean_stale` when its writer was killed.
    ``mode`` sets the file's permissions (else they follow the umask).

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.txt")
    >>> with atomic_file(path) as tmp:
    ...     _ = open(tmp, "w").write("x")
    >>> open(path).read(), os.listdir(os.path.dirname(path))
    ('x', ['x.txt'])
    """
    path = os.fspath(path)
    tmp = _temp_name(path, "tmp")
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def is_empty_folder(path: str) -> bool:
    """Whether ``path`` is a real folder (not a link) holding nothing."""
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _publish(tmp: str, path: str, overwrite: bool) -> None:
    old = None
    emptied = False
    if not overwrite and is_empty_folder(path):
        try:  # rmdir fails if a file arrived meanwhile: then the folder is not ours to take
            os.rmdir(path)
            emptied = True
        except OSError:
            pass
    if overwrite and os.path.lexists(path):
        try:  # one atomic swap: the path holds the old output, then the new one, never nothing
            swapped = exchange(tmp, path)
        except FileNotFoundError:  # another writer moved it meanwhile: publish as new
            swapped = False
        if swapped:
            remove_path(tmp)  # the old output, now under the temporary name
            return
        # no atomic swap here (not Linux, or a filesystem without it): two renames, and a
        # writer killed between them is recovered by clean_stale (the next write, irs clean)
        old = _temp_name(path, "old")
        with contextlib.suppress(FileNotFoundError):  # another writer may have moved it
            os.rename(path, old)
    try:
        rename_noreplace(tmp, path)
    except FileExistsError:
        if old is not None:
            remove_path(old)
        raise DatasetError(f"Output {path!r} was created by another writer while this one was "
                           "writing; this write was discarded and the other output kept whole. "
                           "Write to another path, or pass overwrite=True.") from None
    except OSError:
        if old is not None:  # put the previous output back
            with contextlib.suppress(OSError):
                os.rename(old, path)
        if emptied:  # and the empty folder the user made
            with contextlib.suppress(OSError):
                os.mkdir(path)
        raise
    if old is not None:
        remove_path(old)


# ---- stale temporaries ---------------------------------------------------------------------
def _write_owner(tmp: str, released: bool = False) -> None:
    """Write who owns ``tmp``; ``released``: no one any more (its writer stopped and left
    it for the next one to take over, see :func:`adopt_stale`)."""
    me = psutil.Process()
    with open(os.path.join(tmp, _OWNER_FILE), "w") as f:
        json.dump({"pid": me.pid, "host": _host(), "started": me.create_time(),
                   **({"released": True} if released else {})}, f)


def _owner_alive(entry: str, pid: int, host: str) -> bool:
    """Whether the process that made ``entry`` may still be writing (True if unsure)."""
    if host != _host():
        return True  # another machine's writer: it cannot be checked from here
    try:
        proc = psutil.Process(pid)
        started = proc.create_time()
        if proc.status() == psutil.STATUS_ZOMBIE:  # killed, not yet reaped (e.g. in a
            return False                           # container without an init)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True
    try:
        with open(os.path.join(entry, _OWNER_FILE)) as f:
            owner = json.load(f)
        recorded = owner.get("started")
    except (OSError, ValueError, AttributeError):
        return True
    if owner.get("released"):
        return False
    return recorded is None or abs(float(recorded) - started) < 1.0  # else: a reused pid


def stale_temporaries(path: str | os.PathLike) -> list[str]:
    """Temporaries of ``path`` (``.NAME.tmp-*`` / ``.NAME.old-*`` next to it) whose writer
    process is gone; inside a folder ``path`` also those of its entries."""
    path = os.path.abspath(os.fspath(path))
    places = [(os.path.dirname(path), os.path.basename(path))]
    if os.path.isdir(path):
        places.append((path, None))
    found = []
    for folder, base in places:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            m = _TEMP_RE.match(name)
            if m is None or (base is not None and m["base"] != base):
                continue
            entry = os.path.join(folder, name)
            if not _owner_alive(entry, int(m["pid"]), m["host"]):
                found.append(entry)
    return sorted(found)


def _writer_of(entry: str) -> tuple[str, str] | None:
    m = _TEMP_RE.match(os.path.basename(entry))
    return None if m is None else (m["host"], m["pid"])


def recover(path: str | os.PathLike, stale: Iterable[str] | None = None) -> str | None:
    """Put back an output ``path`` that a writer killed between its two renames left
    missing (where the atomic swap of :func:`exchange` is not available): its old output
    moved aside (``.NAME.old-*``) and its complete new one (``.NAME.tmp-*`` folder, its
    owner file already removed) not yet renamed into place. The new output takes the path,
    as its writer was doing. Return the temporary restored, or None."""
    path = os.path.abspath(os.fspath(path))
    if os.path.lexists(path):
        return None
    stale = stale_temporaries(path) if stale is None else list(stale)
    base = os.path.basename(path)
    mine = [e for e in stale if os.path.dirname(e) == os.path.dirname(path)
            and _TEMP_RE.match(os.path.basename(e))["base"] == base]
    olds = {_writer_of(e): e for e in mine if _TEMP_RE.match(os.path.basename(e))["kind"] == "old"}
    for entry in mine:
        m = _TEMP_RE.match(os.path.basename(entry))
        complete = os.path.isdir(entry) and not os.path.lexists(os.path.join(entry, _OWNER_FILE))
        if m["kind"] == "tmp" and complete and _writer_of(entry) in olds:
            try:
                rename_noreplace(entry, path)
            except OSError:
                return None  # another writer published meanwhile: nothing to put back
            return entry
    return None


def clean_stale(path: str | os.PathLike) -> list[str]:
    """Remove :func:`stale_temporaries` of ``path``; return what was removed. An output that
    a writer killed between its two renames left missing is first put back from its
    complete new copy (:func:`recover`), so nothing of it is lost."""
    stale = stale_temporaries(path)
    restored = recover(path, stale)
    removed = [e for e in stale if e != restored]
    for entry in removed:
        remove_path(entry)
    return removed
