"""Publishing an output folder in an object store, which has no atomic rename of a folder.

The commit protocol is Spark's and Delta's, with a lease (``_lease``):

1. the writer takes a lease, ``DEST/_temporary/WRITE-ID.lease``, renewed every 30 s while
   it runs; every file is written under ``DEST/_temporary/WRITE-ID/`` (readers skip ``_``
   names);
2. the writer checks its staging (every file it wrote is there, with its size where it
   knows it; at least one file) and lists the staged files, with their sizes, in
   ``_temporary/WRITE-ID/_SUCCESS``. Staging that lost files, or holds none, is never
   published: the write fails and the old output stays as it was;
3. **commit**: the writer claims ``DEST/_temporary/_publishing`` by an exclusive create
   (S3's ``If-None-Match``), writing its write id there, so two writers never publish at
   once. From here the new output is the folder's content: it is whole in staging.
4. the old ``DEST/_SUCCESS`` (if any) is checked (``_manifest``), saved beside the staged
   files and removed, the files are copied into ``DEST/`` (server-side copies), and the
   manifest ``DEST/_SUCCESS`` is written **last**; files of the old output that the new one
   lacks (exact names from the checked old manifest, one by one, never a pattern), the
   claim, the staging folder and the lease are removed.

A writer interrupted in step 4 (killed, or the store out of reach) leaves the claim and the
whole staged output: readers read the staged copy (:func:`.storage.published_files`), and
once the writer's lease is no longer fresh, the next write to the folder, :func:`roll_forward`
or ``irs clean`` finish the copy. Nothing finishes the publish of a writer whose lease is
fresh: it finishes itself. Readers only read. So an overwrite never leaves the old output
deleted while the new one is incomplete.

>>> import pandas as pd, pyarrow as pa
>>> from interactive_recsys.store import storage
>>> with remote_atomic_directory("memory://irs-commit-doc/out") as staging:
...     storage.write_table(pa.table({"x": [1, 2]}), staging + "/part.0.parquet")
>>> [f.rsplit("/", 1)[1] for f in storage.published_files("memory://irs-commit-doc/out")]
['part.0.parquet']
"""

from __future__ import annotations

import calendar
import contextlib
import logging
import math
import os
import posixpath
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from interactive_recsys.errors import DatasetError, IRSError, ParameterError, StorageError
from interactive_recsys.store import _lease as leases
from interactive_recsys.store._manifest import WRITE_ID, read_manifest
from interactive_recsys.store._outputs import atomic_directory
from interactive_recsys.store.storage import (
    CLAIM,
    MANIFEST,
    STAGING,
    StorageOptions,
    check_remote_destination,
    claim_owner,
    claimed_output,
    filesystem,
    forget_listing,
    guarded,
    is_remote,
    listed_sizes,
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
log = logging.getLogger(__name__)

__all__ = ["PublishInterrupted", "clean_staging", "expect", "published_folder",
           "remote_atomic_directory", "roll_forward"]

_EXPECTED: dict[str, dict[str, int | None]] = {}  # staging URL -> files its writer staged
_EXPECTED_LOCK = threading.Lock()


class PublishInterrupted(StorageError):
    """Publishing stopped after the commit: the output is whole in staging, to roll forward."""


def expect(staging: str, files: Mapping[str, int | None]) -> None:
    """Record files that the writer of ``staging`` (the URL yielded by
    :func:`remote_atomic_directory`) put there, with their sizes where known (None: not
    known): before publishing it checks they are all still there, and fails otherwise
    (another process removed them) with the old output untouched."""
    with _EXPECTED_LOCK:
        _EXPECTED.setdefault(staging.rstrip("/"), {}).update(files)


def _new_write_id() -> str:
    return f"{time.strftime('%Y%m%d%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def remote_atomic_directory(url: str, storage_options: StorageOptions = None, *,
                            overwrite: bool = False,
                            protect: Mapping[str, Iterable[str]] | None = None) -> Iterator[str]:
    """Yield a staging URL (``URL/_temporary/WRITE-ID``) whose files are published into
    ``url`` with a ``_SUCCESS`` manifest only if the block succeeds (see the module doc).

    Without ``overwrite`` an existing output (or any file in ``url``) is an error, also
    one published by another writer while this one was writing. A failure before the
    commit removes the staging folder and publishes nothing; one after it keeps the staged
    output for :func:`roll_forward`. Callers may :func:`expect` the files they stage."""
    fs = filesystem(url, storage_options)
    url = url.rstrip("/")
    check_remote_destination(url, protect)
    root = strip(url)
    roll_forward(url, storage_options)  # a dead writer's committed output comes first
    forget_listing(fs, root)
    if not overwrite and guarded(fs.exists, url, root) and guarded(fs.ls, url, root):
        raise DatasetError(f"Output {url!r} already exists; pass overwrite=True (irs run "
                           "--overwrite) or choose another path.")
    write_id = _new_write_id()
    staging = f"{root}/{STAGING}/{write_id}"
    staging_url = f"{protocol(url)}://{staging}"
    lease = leases.Lease(fs, url, root, write_id)
    try:
        lease.start()
    except Exception as exc:  # a missing bucket too (FileNotFoundError): nothing written yet
        raise storage_error(url, exc) from exc
    try:
        try:
            yield staging_url
        except BaseException:  # the writer's own failure, raised as it is
            _remove_tree(fs, staging)
            raise
        try:
            _publish(fs, url, root, staging, write_id, overwrite, lease,
                     _take_expected(staging_url))
        except PublishInterrupted:
            raise  # committed: the staged output stays, whole, for readers and roll_forward
        except BaseException as exc:
            _remove_tree(fs, staging)
            if isinstance(exc, IRSError) or not isinstance(exc, Exception):
                raise
            raise storage_error(url, exc) from exc
    finally:
        _take_expected(staging_url)
        lease.stop()
        _remove_empty(fs, f"{root}/{STAGING}")


def _take_expected(staging_url: str) -> dict[str, int | None]:
    with _EXPECTED_LOCK:
        return _EXPECTED.pop(staging_url.rstrip("/"), {})


def roll_forward(url: str, storage_options: StorageOptions = None) -> bool:
    """Finish publishing an output that its writer committed but did not finish copying into
    the folder ``url`` (killed, or the store went out of reach). Return whether there was
    one. A publish whose writer's lease is fresh is left to that writer (False): only a
    dead writer's publish is finished here. Copies are idempotent."""
    fs = filesystem(url, storage_options)
    url = url.rstrip("/")
    root = strip(url)
    forget_listing(fs, root)
    if not guarded(fs.exists, url, f"{root}/{CLAIM}"):
        return False
    owner = claim_owner(fs, url, root)
    if owner is None or guarded(leases.state, url, fs, root, owner) == "fresh":
        return False  # no write named, or its writer is alive and publishing: not ours
    found = listed_sizes(guarded(fs.find, url, root, withdirs=False, detail=True), root)
    pending = claimed_output(fs, url, root, found)
    if pending is None:
        return False
    write_id, text, files = pending
    staging = f"{root}/{STAGING}/{write_id}"
    old = None  # the output it replaces: saved beside the staged files, or still in place
    for name in (f"{STAGING}/{write_id}/{REPLACED}", MANIFEST):
        if name in found:
            old = parse_manifest(f"{url}/{name}", guarded(fs.cat_file, url, f"{root}/{name}"))
            old = old or {}
            break
    _copy_in(fs, url, root, staging, files, text, old, write_id)
    _finish(fs, root, staging, write_id)
    log.info("finished publishing %s (write %s, whose writer stopped)", url, write_id)
    return True


def _remove_files(fs: Any, paths: Iterable[str]) -> None:
    """Remove files by their exact paths, one by one (``rm_file`` expands no pattern)."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(path)


def _remove_empty(fs: Any, folder: str) -> None:
    """Remove ``folder`` if it is an empty pseudo-folder (stores with real folders, e.g.
    memory://; an S3 prefix vanishes with its last key). Never a bucket: ``folder`` has a key."""
    if "/" not in folder.strip("/"):
        return
    with contextlib.suppress(Exception):
        fs.invalidate_cache(folder)
        if not fs.ls(folder, refresh=True):
            fs.rmdir(folder)


def _remove_tree(fs: Any, folder: str, attempts: int = 25) -> None:
    """Remove every file under ``folder`` (exact paths from its listing), also files that
    tasks still running add after a failure (it must be found empty twice, 0.25 s apart);
    best effort."""
    empty = 0
    for _ in range(attempts):
        try:
            forget_listing(fs, folder)
            found = fs.find(folder, withdirs=False)
            if found:
                _remove_files(fs, found)
                empty = 0
            else:
                empty += 1
        except Exception:  # the store is out of reach: nothing more to do from here
            return
        if empty >= 2:
            break
        time.sleep(0.25)
    _remove_empty(fs, folder)


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
                       f"is running (one was killed while publishing), `irs clean {url}` "
                       f"finishes or removes its publish once its lease ({_lease_text()}) "
                       "has expired; then write again.")


def _lease_text() -> str:
    return f"{leases.LEASE_SECONDS / 60:g} minutes"


def _check_staging(url: str, files: Mapping[str, int], expected: Mapping[str, int | None]
                   ) -> None:
    """Refuse to publish staging that lost files its writer wrote, or that holds none."""
    missing = sorted(n for n in expected if n not in files)
    changed = sorted(n for n, size in expected.items()
                     if n in files and size is not None and files[n] != size)
    if missing or changed or not files:
        what = (f"{len(missing)} staged file(s) are gone ({missing[:3]})" if missing else
                f"staged file(s) changed size ({changed[:3]})" if changed else
                "its staging folder holds no files")
        raise DatasetError(f"Refusing to publish {url!r}: {what}. Another process removed or "
                           f"changed files under {url}/{STAGING} while this write ran (an "
                           "`irs clean` of another version, a lifecycle rule, a manual "
                           "delete). Nothing was published and the existing output, if any, "
                           "is untouched; write again.")


def _publish(fs: Any, url: str, root: str, staging: str, write_id: str, overwrite: bool,
             lease: leases.Lease, expected: Mapping[str, int | None]) -> None:
    forget_listing(fs, staging)
    listing = fs.find(staging, withdirs=False, detail=True)
    files = {posixpath.relpath(k, staging): int(v.get("size") or 0)
             for k, v in listing.items()}
    _check_staging(url, files, expected)
    if not lease.held():
        raise DatasetError(f"Refusing to publish {url!r}: this writer could not renew its "
                           f"lease for {_lease_text()} ({lease.error!r}), so another process "
                           "may have taken it for dead. Nothing was published; write again.")
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
            old = parse_manifest(f"{url}/{MANIFEST}", old_text) or {}
            fs.pipe_file(f"{staging}/{REPLACED}", old_text)  # the stale files, for a roll forward
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm_file(f"{root}/{CLAIM}")  # not committed: the claim goes with the write
        raise
    try:
        _copy_in(fs, url, root, staging, files, text, old, write_id)
    except PublishInterrupted as exc:
        if _published_as(fs, root, write_id):  # a roll-forward finished it: published whole
            log.warning("publishing %s was finished by another process (a roll-forward): "
                        "the output is this write's", url)
            return
        lease.stop()  # given up: a roll-forward may finish it without waiting for the lease
        if not _exists(fs, f"{staging}/{MANIFEST}"):  # taken over: this write is not there
            raise DatasetError(f"Publishing {url!r} stopped: another process took this "
                               "write for dead (its lease expired) and removed its staged "
                               f"output. The folder holds another write's output, not this "
                               "one; write again.") from exc
        raise
    _finish(fs, root, staging, write_id)


def _exists(fs: Any, path: str) -> bool:
    try:
        fs.invalidate_cache(posixpath.dirname(path))
        return bool(fs.exists(path))
    except Exception:  # the store out of reach: the staged copy may well be there
        return True


def _published_as(fs: Any, root: str, write_id: str) -> bool:
    """Whether the folder's manifest is that of write ``write_id``."""
    try:
        forget_listing(fs, root)
        manifest = read_manifest(f"{root}/{MANIFEST}", fs.cat_file(f"{root}/{MANIFEST}"))
    except Exception:
        return False
    return manifest is not None and manifest.write_id == write_id


def _copy_in(fs: Any, url: str, root: str, staging: str, files: dict[str, int], text: str,
             old: dict[str, int] | None, write_id: str) -> None:
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
                                 f"it (at once when this writer is gone, else once its lease "
                                 f"of {_lease_text()} expires).") from exc
    # the old output's files that the new one lacks: exact names from its checked manifest
    _remove_files(fs, [f"{root}/{rel}" for rel in old or {} if rel not in files])


def _finish(fs: Any, root: str, staging: str, write_id: str) -> None:
    """Release the claim, remove the staging folder and the lease (best effort: the output
    is published)."""
    with contextlib.suppress(Exception):
        if claim_owner(fs, root, root) == write_id:  # never another writer's
            fs.rm_file(f"{root}/{CLAIM}")
    _remove_tree(fs, staging, attempts=1)
    with contextlib.suppress(Exception):
        fs.rm_file(leases.lease_path(root, write_id))
    _remove_empty(fs, f"{root}/{STAGING}")


def check_older_than(older_than: float) -> float:
    """``older_than`` (seconds) if :func:`clean_staging` may use it, else a
    :class:`ParameterError`: below the writers' lease age a live writer's staging could go."""
    if not isinstance(older_than, int | float) or isinstance(older_than, bool) \
            or not math.isfinite(older_than) or older_than < 0:
        shown = (f"{older_than / 3600:g} hours" if isinstance(older_than, int | float)
                 else repr(older_than))
        raise ParameterError(f"older_than (--older-than) is {shown}; it must be a finite "
                             "number of hours, at least the writers' lease age "
                             f"({_lease_text()}, {leases.LEASE_SECONDS / 3600:.2f} hours).")
    if older_than < leases.LEASE_SECONDS:
        raise ParameterError(f"older_than (--older-than) is {older_than / 3600:g} hours, below "
                             f"the writers' lease age ({_lease_text()}, "
                             f"{leases.LEASE_SECONDS / 3600:.2f} hours): staging that young "
                             "may belong to a writer that still runs. Pass at least "
                             f"{math.ceil(leases.LEASE_SECONDS / 36) / 100:.2f} hours.")
    return float(older_than)


def clean_staging(url: str, storage_options: StorageOptions = None,
                  older_than: float = 24 * 3600, *, dry_run: bool = False) -> list[str]:
    """Finish publishing a dead writer's committed output (:func:`roll_forward`), then
    remove what killed writers left under the output ``url``: staging folders started more
    than ``older_than`` seconds ago (UTC time in their write id) whose lease
    (``_lease``) is not fresh, their lease files, and a publishing claim whose writer's
    lease is not fresh. ``older_than`` below the lease age is refused. A writer whose lease
    is fresh keeps everything. Files are removed one by one, by exact name; entries that
    are not a writer's of this library are left alone. Return what was removed; with
    ``dry_run``, what would be (nothing is finished or removed)."""
    check_older_than(older_than)
    fs = filesystem(url, storage_options)
    url = url.rstrip("/")
    if not dry_run:
        roll_forward(url, storage_options)
    root = strip(url)
    staging_root = f"{root}/{STAGING}"
    forget_listing(fs, staging_root)
    now, removed = time.time(), []
    entries = guarded(fs.ls, url, staging_root, detail=False) \
        if guarded(fs.exists, url, staging_root) else []
    names = {posixpath.basename(e.rstrip("/")) for e in entries}
    for name in sorted(names):
        entry = f"{staging_root}/{name}"
        write_id = name[:-len(".lease")] if name.endswith(".lease") else name
        if name == posixpath.basename(CLAIM):
            owner = claim_owner(fs, url, root)
            if owner is not None and guarded(leases.state, url, fs, root, owner) == "fresh":
                continue  # its writer is publishing
            if not dry_run:
                guarded(_remove_files, url, fs, [entry])
        elif WRITE_ID.match(write_id):
            if guarded(leases.state, url, fs, root, write_id, now) == "fresh":
                continue  # a running writer's
            try:
                started = calendar.timegm(time.strptime(write_id[:14], "%Y%m%d%H%M%S"))
            except ValueError:  # not a time: not a write of this library
                continue
            if now - started <= older_than:
                continue
            if dry_run:
                pass
            elif name == write_id:
                guarded(_remove_tree, url, fs, entry, attempts=1)
            else:
                guarded(_remove_files, url, fs, [entry])
        else:
            continue  # not a writer's of this library (e.g. Spark's): left alone
        removed.append(f"{protocol(url)}://{entry}")
    if not dry_run:
        _remove_empty(fs, staging_root)
    return removed


@contextlib.contextmanager
def published_folder(path: str | os.PathLike, storage_options: StorageOptions = None, *,
                     overwrite: bool = False,
                     protect: Mapping[str, Iterable[str]] | None = None,
                     resume: Callable[[str], bool] | None = None) -> Iterator[str]:
    """A local temporary folder whose files become the folder ``path`` (a local path or a
    URL) with a ``_SUCCESS`` manifest, only if the block succeeds: for small outputs that
    the client writes itself (a saved model). ``resume`` (a local ``path`` only): take over
    the temporary folder of a killed writer that it accepts (see ``atomic_directory`` in
    ``store/_outputs.py``)."""
    path = os.fspath(path)
    if not is_remote(path):
        with atomic_directory(local_path(path), overwrite=overwrite, protect=protect,
                              resume=resume) as tmp:
            yield tmp
            local_manifest(tmp)
        return
    import tempfile  # lazy: only remote outputs stage through a local folder

    with remote_atomic_directory(path, storage_options, overwrite=overwrite,
                                 protect=protect) as staging, \
            tempfile.TemporaryDirectory(prefix="irs-upload-") as local:
        yield local
        expect(staging, upload_directory(local, staging, storage_options))
