"""Saved folders are closed: no symbolic links in them, only the files they name are copied,
and each artifact's checksum is recorded and checked.

A saved workflow or model folder is something people send to each other, so:

* **Links are refused, not followed.** :func:`refuse_links` walks a local folder (the folder
  given may itself be a link, e.g. ``~/wf -> /data/wf``; everything inside it must be a
  plain file or folder) and raises :class:`~interactive_recsys.errors.WorkflowFormatError`
  naming the first link. A link in ``artifacts/`` (or ``artifacts/`` being a link) could
  otherwise make a load read, or a save copy, a file from elsewhere (``~/.aws/credentials``).
* **Only named files are copied.** :func:`copy_named` copies the artifact paths that the
  workflow's states name (``categorify-1/vocab-000``, a side table), file by file, never a
  whole folder, refusing links; a stray file in ``artifacts/`` stays behind.
* **Checksums.** :func:`copy_named` returns the SHA-256 of every file it copied;
  ``Workflow.save`` records them in ``workflow.json`` (``"artifacts"``), ``Model.save``
  records :func:`file_sha256` of ``arrays.npz`` in ``model.json`` (``"sha256"``), and
  :func:`verify_checksums` refuses a file that was changed since (a tampered vocabulary, a
  changed weight, a truncated file), naming it. A folder saved by an older version, without
  a record, is loaded unchecked with a :class:`~interactive_recsys.errors.ChecksumWarning`
  (:func:`warn_unrecorded`).

>>> import os, tempfile
>>> src, dst = tempfile.mkdtemp(), tempfile.mkdtemp()
>>> os.makedirs(os.path.join(src, "step-1", "vocab-000"))
>>> with open(os.path.join(src, "step-1", "vocab-000", "part.00000.parquet"), "wb") as f:
...     _ = f.write(b"abc")
>>> with open(os.path.join(src, "stray.txt"), "wb") as f:
...     _ = f.write(b"not named")
>>> sums = copy_named(src, os.path.join(dst, "artifacts"), ["step-1/vocab-000"])
>>> sums == {"step-1/vocab-000/part.00000.parquet": hashlib.sha256(b"abc").hexdigest()}
True
>>> sorted(os.listdir(os.path.join(dst, "artifacts")))
['step-1']
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from interactive_recsys.errors import ChecksumWarning, WorkflowFormatError
from interactive_recsys.redact import redact_text
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import resolve

_CHUNK = 8 * 1024 * 1024


def refuse_links(folder: str, what: str = "saved workflow folder",
                 error: type[Exception] = WorkflowFormatError) -> None:
    """Raise ``error`` (:class:`WorkflowFormatError`) when a local ``folder`` holds a symbolic
    link (at any depth; ``folder`` itself may be one). URLs have no links: nothing to check."""
    if storage.is_remote(folder):
        return
    root = storage.local_path(folder)
    todo = [root]
    while todo:
        current = todo.pop()
        try:
            entries = list(os.scandir(current))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.is_symlink():
                raise error(
                    f"{entry.path!r} is a symbolic link inside the {what} {root!r}. Saved "
                    "folders hold plain files only: a link could read or copy a file from "
                    "elsewhere (a load refuses links, it never follows them). Replace the link "
                    "by a copy of the file it names, or save the folder again.")
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)


def artifact_paths(states: Mapping[str, Any]) -> list[str]:
    """Every artifact path (``"path"`` entries) the states name, sorted, each once."""
    found: set[str] = set()
    todo: list[Any] = list(states.values())
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            if isinstance(item.get("path"), str):
                found.add(item["path"])
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return sorted(found)


def named_files(folder: str, relatives: Iterable[str], storage_options: Any = None
                ) -> list[str]:
    """The files (paths relative to ``folder``, ``/``-separated) of the named artifact
    paths: a file itself, or every file under a folder. Links are refused, a missing path
    is a :class:`WorkflowFormatError`."""
    out: list[str] = []
    fs = storage.filesystem(folder, storage_options)
    for rel in relatives:
        full = resolve(folder, rel)
        if fs is None:
            out.extend(_local_files(folder, full, rel))
            continue
        if not storage.guarded(fs.exists, full, storage.strip(full)):
            raise _missing(folder, rel)
        if storage.guarded(fs.isdir, full, storage.strip(full)):
            base = storage.strip(full)
            out.extend(f"{rel.rstrip('/')}/{posixpath.relpath(f, base)}"
                       for f in sorted(storage.guarded(fs.find, full, base)))
        else:
            out.append(rel)
    return sorted(set(out))


def _missing(folder: str, rel: str) -> WorkflowFormatError:
    return WorkflowFormatError(f"The artifact {rel!r} that the workflow's state names is "
                               f"missing from {folder!r}; fit the workflow again.")


def _local_files(folder: str, full: str, rel: str) -> Iterator[str]:
    try:
        mode = os.lstat(full).st_mode
    except FileNotFoundError:
        raise _missing(folder, rel) from None
    if stat.S_ISLNK(mode):
        refuse_links(os.path.dirname(full), "artifacts folder")
    if stat.S_ISREG(mode):
        yield rel.replace(os.sep, "/")
        return
    refuse_links(full, "artifacts folder")
    for root, _, names in os.walk(full):
        for name in names:
            path = os.path.join(root, name)
            yield os.path.relpath(path, folder).replace(os.sep, "/")


def _open(path: str, mode: str, storage_options: Any) -> Any:
    fs = storage.filesystem(path, storage_options)
    if fs is None:
        if "w" in mode:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            # a link planted at the target is never written through
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            return os.fdopen(os.open(path, flags, 0o644), "wb")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        return os.fdopen(os.open(path, flags), "rb")
    if "r" in mode:
        fs.invalidate_cache(storage.strip(path))  # rewritten since this process listed it
    return storage.guarded(fs.open, path, storage.strip(path), mode)


def copy_named(source: str, target: str, relatives: Iterable[str],
               source_options: Any = None, target_options: Any = None) -> dict[str, str]:
    """Copy only the named artifact paths (and the files under named folders) of folder
    ``source`` into folder ``target`` (local or URLs); return ``{file: sha256}``."""
    sums: dict[str, str] = {}
    for rel in named_files(source, relatives, source_options):
        h = hashlib.sha256()
        with _open(storage.join(source, *rel.split("/")), "rb", source_options) as src, \
                _open(storage.join(target, *rel.split("/")), "wb", target_options) as dst:
            while chunk := src.read(_CHUNK):
                h.update(chunk)
                dst.write(chunk)
        sums[rel] = h.hexdigest()
    return sums


def file_sha256(path: str, storage_options: Any = None) -> str:
    """SHA-256 of one file (local or URL), read in chunks; links are not followed."""
    h = hashlib.sha256()
    with _open(path, "rb", storage_options) as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify_checksums(folder: str, sums: Mapping[str, str], config_path: str,
                     storage_options: Any = None, *, what: str = "workflow",
                     kind: str = "artifact file", field: str = "artifacts",
                     contents: str = "vocabulary or statistics file",
                     error: type[Exception] = WorkflowFormatError) -> None:
    """Refuse (``error``, :class:`WorkflowFormatError`, naming the file) a file of ``folder``
    whose SHA-256 is not the one recorded at save in ``config_path``: it was changed (or
    replaced, truncated, removed) since. ``what`` is the saved thing (``"workflow"``,
    ``"model"``), ``field`` the record's key in ``config_path``, ``kind`` and ``contents`` how
    its files are named in the message."""
    record = config_path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    fix = f"save the {what} again from a fitted one"
    for rel, expected in sorted(sums.items()):
        full = resolve(folder, rel, f"{kind} ({field})")
        try:
            actual = file_sha256(full, storage_options)
        except FileNotFoundError:
            raise error(f"{config_path}: the {kind} {rel!r} is missing from {folder!r}; "
                        f"{fix}.") from None
        except OSError as exc:  # O_NOFOLLOW on a link: ELOOP
            raise error(f"{config_path}: the {kind} {rel!r} cannot be read as a plain file "
                        f"({exc.strerror}); {fix}.") from None
        if actual != expected:
            raise error(
                f"{config_path}: the {kind} {rel!r} was changed after the {what} was saved "
                f"(its SHA-256 is {actual[:12]}..., {record} records {str(expected)[:12]}...). "
                f"A changed {contents} is never used; {fix}, or fit it again.")


def warn_unrecorded(config_path: str, what: str, files: Iterable[str], stacklevel: int = 4
                    ) -> None:
    """Warn (:class:`ChecksumWarning`, at the caller ``stacklevel - 1`` frames up) that the
    ``files`` of a ``what`` saved by an older version, whose ``config_path`` records no
    SHA-256, are loaded unchecked."""
    names = sorted(files)
    shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more"
                                                     if len(names) > 3 else "")
    warnings.warn(redact_text(
        f"{config_path} records no SHA-256 of its files ({shown}): the {what} was saved by "
        "an older version. They are loaded unchecked, so a changed or damaged file would not "
        f"be noticed; save the {what} again to record them."), ChecksumWarning,
        stacklevel=stacklevel)
