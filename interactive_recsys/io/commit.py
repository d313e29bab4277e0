"""Publishing an output folder in an object store, which has no atomic rename of a folder.

The commit protocol is Spark's and Delta's:

1. every file is written under ``DEST/_temporary/WRITE-ID/`` (readers skip ``_`` names);
2. the staged files are listed, with their sizes, in ``_temporary/WRITE-ID/_SUCCESS``;
3. **commit**: the writer claims ``DEST/_temporary/_publishing`` by an exclusive create
   (S3's ``If-None-Match``), writing its write id there, so two writers never publish at
   once. From here the new output is the folder's content: it is whole in staging.
4. the old ``DEST/_SUCCESS`` (if any) is saved beside the staged files and removed, the files
   are copied into ``DEST/`` (server-side copies), and the manifest ``DEST/_SUCCESS`` is
   written **last**; files of the old output that the new one lacks, the claim and the
   staging folder are removed.

A writer interrupted in step 4 (killed, or the store out of reach) leaves the claim and the
whole staged output: readers read the staged copy (:func:`.storage.published_files`), and
the next write to the folder, :func:`roll_forward` or ``irs clean`` finish the copy. So an
overwrite never leaves the old output deleted while the new one is incomplete.

>>> import pandas as pd, pyarrow as pa
>>> from interactive_recsys.io import storage
>>> with remote_atomic_directory("memory://irs-commit-doc/out") as staging:
...     storage.write_table(pa.table({"x": [1, 2]}), staging + "/part.0.parquet")
>>> [f.rsplit("/", 1)[1] for f in storage.published_files("memory://irs-commit-doc/out")]
['part.0.parquet']
"""

from __future__ import annotations

import calendar
import contextlib
import os
import posixpath
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import DatasetError, IRSError, StorageError
from .outputs import atomic_directory
from .storage import (
    CLAIM,
    MANIFEST,
    STAGING,
    StorageOptions,
    check_remote_destination,
    claimed_output,
    filesystem,
    guarded,
    is_remote,
    local_manifest,
    local_path,
    manifest_text,
    parse_manifest,
    protocol,
    storage_error,
    strip,
    upload_directory,
)

REPLACED = "_REPLACED"  # the old output's manifest, kept beside the staged files (step 4)

__all__ = ["clean_staging", "published_folder", "remote_atomic_directory", "roll_forward"]


class PublishInterrupted(StorageError):
    """Publishing stopped after the commit: the output is whole in staging, to roll forward."""


@contextlib.contextmanager
def remote_atomic_directory(url: str, storage_options: StorageOptions = None, *,
                            overwrite: bool = False,
                            protect: Mapping[str, Iterable[str]] | None = None) -> Iterator[str]:
    """Yield a staging URL (``URL/_temporary/WRITE-ID``) whose files are published into
    ``url`` with a ``_SUCCESS`` manifest only if the block succeeds (see the module doc).

    Without ``overwrite`` an existing output (or any file in ``url``) is an error, also
    one published by another writer while this one was writing. A failure before the
    commit removes the staging folder and publishes nothing; one after it keeps the staged
    output for :func:`roll_forward`."""
    fs = filesystem(url, storage_options)
    url = url.rstrip("/")
    check_remote_destination(url, protect)
    root = strip(url)
    roll_forward(url, storage_options)  # a committed output left half-copied comes first
    fs.invalidate_cache(root)
    if not overwrite and guarded(fs.exists, url, root) and guarded(fs.ls, url, root):
        raise DatasetError(f"Output {url!r} already exists; pass overwrite=True (irs run "
                           "--overwrite) or choose another path.")
    write_id = f"{time.strftime('%Y%m%d%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    staging = f"{root}/{STAGING}/{write_id}"
    try:
        yield f"{protocol(url)}://{staging}"
    except BaseException:  # the writer's own failure, raised as it is
        _remove_staging(fs, root, staging)
        raise
    try:
        _publish(fs, url, root, staging, write_id, overwrite)
    except PublishInterrupted:
        raise  # committed: the staged output stays, whole, for readers and roll_forward
    except BaseException as exc:
        _remove_staging(fs, root, staging)
        if isinstance(exc, IRSError) or not isinstance(exc, Exception):
            raise
        raise storage_error(url, exc) from exc


def roll_forward(url: str, storage_options: StorageOptions = None) -> bool:
    """Finish publishing an output that its writer committed but did not finish copying into
    the folder ``url`` (killed, or the store went out of reach). Return whether there was
    one. Copies are idempotent, so a writer still copying the same output does no harm."""
    fs = filesystem(url, storage_options)
    root = strip(url.rstrip("/"))
    fs.invalidate_cache(root)
    if not guarded(fs.exists, url, f"{root}/{CLAIM}"):
        return False
    listing = guarded(fs.find, url, root, withdirs=False, detail=True)
    found = {posixpath.relpath(k, root): v.get("size") for k, v in listing.items()}
    pending = claimed_output(fs, url, root, found)
    if pending is None:
        return False
    write_id, text, files = pending
    staging = f"{root}/{STAGING}/{write_id}"
    old = None  # the output it replaces: saved beside the staged files, or still in place
    for name in (f"{STAGING}/{write_id}/{REPLACED}", MANIFEST):
        if name in found:
            old = parse_manifest(url, guarded(fs.cat_file, url, f"{root}/{name}").decode())
            old = old or {}
            break
    _copy_in(fs, url, root, staging, files, text, old)
    _finish(fs, root, staging)
    return True


def _remove_staging(fs: Any, root: str, staging: str, attempts: int = 25) -> None:
    """Remove a failed write's staging folder, also files that tasks already running add
    after the failure (it must be found empty twice, 0.25 s apart); best effort."""
    empty = 0
    for _ in range(attempts):
        try:
            fs.invalidate_cache(staging)
            if fs.find(staging):
                fs.rm(staging, recursive=True)
                empty = 0
            else:
                empty += 1
        except Exception:  # the store is out of reach: nothing more to do from here
            return
        if empty >= 2:
            break
        time.sleep(0.25)
    with contextlib.suppress(Exception):
        if not fs.ls(f"{root}/{STAGING}", refresh=True):
            fs.rm(f"{root}/{STAGING}", recursive=True)


def _claim(fs: Any, url: str, root: str, write_id: str) -> None:
    """Take the right to publish into ``root``: an exclusive create (S3's ``If-None-Match``;
    where a store cannot, a check then a write), so of two writers publishing at once one
    goes on and the other fails whole."""
    claim = f"{root}/{CLAIM}"
    try:
        with fs.open(claim, "xb") as f:
            f.write(write_id.encode())
        return
    except FileExistsError:
        pass
    except (ValueError, NotImplementedError, TypeError):  # no exclusive create here
        fs.invalidate_cache(root)
        if not fs.exists(claim):
            fs.pipe_file(claim, write_id.encode())
            return
    raise DatasetError(f"Output {url!r} is being published by another writer ({CLAIM} "
                       "exists); this write was discarded and the other kept. If no writer "
                       f"is running (one was killed while publishing), delete {url}/{STAGING} "
                       "and write again.")


def _publish(fs: Any, url: str, root: str, staging: str, write_id: str,
             overwrite: bool) -> None:
    listing = fs.find(staging, withdirs=False, detail=True)
    files = {posixpath.relpath(k, staging): int(v.get("size") or 0)
             for k, v in listing.items()}
    text = manifest_text(files, write_id)
    fs.pipe_file(f"{staging}/{MANIFEST}", text.encode())  # staged output: complete
    _claim(fs, url, root, write_id)
    try:
        fs.invalidate_cache(root)
        old = None
        if fs.exists(f"{root}/{MANIFEST}"):
            if not overwrite:
                raise DatasetError(f"Output {url!r} was published by another writer while "
                                   "this one was writing; this write was discarded and the "
                                   "other output kept whole. Write to another path, or pass "
                                   "overwrite=True.")
            old_text = fs.cat_file(f"{root}/{MANIFEST}")
            old = parse_manifest(url, old_text.decode()) or {}
            fs.pipe_file(f"{staging}/{REPLACED}", old_text)  # the stale files, for a roll forward
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm_file(f"{root}/{CLAIM}")  # not committed: the claim goes with the write
        raise
    _copy_in(fs, url, root, staging, files, text, old)
    _finish(fs, root, staging)


def _copy_in(fs: Any, url: str, root: str, staging: str, files: dict[str, int], text: str,
             old: dict[str, int] | None) -> None:
    """Step 4 of the protocol, after the commit: an interruption raises
    :class:`PublishInterrupted` (the staged output is whole; readers use it)."""
    try:
        if old is not None:
            with contextlib.suppress(FileNotFoundError):
                fs.rm_file(f"{root}/{MANIFEST}")  # from here readers use the staged copy
        for rel in files:
            fs.copy(f"{staging}/{rel}", f"{root}/{rel}")
        fs.pipe_file(f"{root}/{MANIFEST}", text.encode())  # published
    except BaseException as exc:  # also an interrupt: the staged output must stay
        cause = (storage_error(url, exc).strerror if isinstance(exc, Exception)
                 else f"Publishing {url!r} was interrupted ({type(exc).__name__}).")
        raise PublishInterrupted(5, f"{cause} The new output was committed before this: it "
                                 f"is whole in {url}/{STAGING} and readers use it; the next "
                                 f"write to {url!r}, or `irs clean {url}`, finishes publishing "
                                 "it.") from exc
    stale = [f"{root}/{rel}" for rel in old or {} if rel not in files]
    if stale:
        with contextlib.suppress(Exception):
            fs.rm(stale)


def _finish(fs: Any, root: str, staging: str) -> None:
    """Release the claim and remove the staging folder (best effort: the output is published)."""
    with contextlib.suppress(Exception):
        fs.rm_file(f"{root}/{CLAIM}")
    with contextlib.suppress(Exception):
        fs.rm(staging, recursive=True)
        if not fs.ls(f"{root}/{STAGING}", refresh=True):
            fs.rm(f"{root}/{STAGING}", recursive=True)


def clean_staging(url: str, storage_options: StorageOptions = None,
                  older_than: float = 24 * 3600) -> list[str]:
    """Finish publishing a committed output (:func:`roll_forward`), then remove the staging
    folders (and a publishing claim) under the output ``url`` that were started more than
    ``older_than`` seconds ago (UTC time in their write id): what killed writers left. A
    store cannot tell whether a writer on another machine still runs, so age is the test;
    return what was removed."""
    fs = filesystem(url, storage_options)
    roll_forward(url, storage_options)
    root = f"{strip(url)}/{STAGING}"
    fs.invalidate_cache(root)
    now, removed = time.time(), []
    for entry in guarded(fs.ls, url, root, detail=False) if fs.exists(root) else []:
        name = posixpath.basename(entry.rstrip("/"))
        try:
            started = calendar.timegm(time.strptime(name.split("-", 1)[0], "%Y%m%d%H%M%S"))
        except ValueError:  # the claim: as old as the newest staging folder allows
            started = now - older_than - 1 if name == posixpath.basename(CLAIM) else now
        if now - started > older_than:
            guarded(fs.rm, url, entry, recursive=True)
            removed.append(f"{protocol(url)}://{entry}")
    with contextlib.suppress(Exception):
        if not fs.ls(root, refresh=True):
            fs.rm(root, recursive=True)
    return removed


@contextlib.contextmanager
def published_folder(path: str | os.PathLike, storage_options: StorageOptions = None, *,
                     overwrite: bool = False,
                     protect: Mapping[str, Iterable[str]] | None = None) -> Iterator[str]:
    """A local temporary folder whose files become the folder ``path`` (a local path or a
    URL) with a ``_SUCCESS`` manifest, only if the block succeeds: for small outputs that
    the client writes itself (a saved model)."""
    path = os.fspath(path)
    if not is_remote(path):
        with atomic_directory(local_path(path), overwrite=overwrite, protect=protect) as tmp:
            yield tmp
            local_manifest(tmp)
        return
    import tempfile  # lazy: only remote outputs stage through a local folder

    with remote_atomic_directory(path, storage_options, overwrite=overwrite,
                                 protect=protect) as staging, \
            tempfile.TemporaryDirectory(prefix="irs-upload-") as local:
        yield local
        upload_directory(local, staging, storage_options)
