"""Paths and fsspec URLs: which filesystem a path is on, and how outputs are published there.

Every path the library takes may be a local path or an fsspec URL (``s3://``, ``gs://``,
``abfs://``, ``memory://``...), with ``storage_options`` passed to the filesystem
(credentials, ``endpoint_url``...). Local paths take the fast path: plain ``os`` calls, no
fsspec; :func:`filesystem` returns ``None`` for them.

Object stores have no atomic rename of a folder, so a remote output is published with the
commit protocol of :mod:`.commit`: staged files, a ``_SUCCESS`` manifest written last.

A reader (:func:`published_files`) accepts a folder whose ``_SUCCESS`` manifest lists
files that are all there with their sizes, or a folder that no writer of this library
touched (no ``_SUCCESS`` manifest, no ``_temporary``): data written by other tools. An output
that its writer committed (claimed, staged whole) but did not finish copying in is read from
its staged copy. A killed writer leaves either only its staging folder, or a folder without
``_SUCCESS`` beside a staging folder: both refused, naming the folder. Local outputs get the
same manifest (written last, before the atomic rename of ``_outputs``), so both paths
share the reader check.

>>> filesystem("/data/x.parquet") is None, is_remote("s3://bucket/x")
(True, True)
>>> fs, path = filesystem("memory://irs-doc/a.txt"), strip("memory://irs-doc/a.txt")
>>> with fs.open(path, "w") as f:
...     _ = f.write("hi")
>>> join("memory://irs-doc", "a.txt"), exists("memory://irs-doc/a.txt")
('memory://irs-doc/a.txt', True)
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from interactive_recsys.errors import DatasetError, StorageError
from interactive_recsys.store._manifest import (
    MANIFEST,
    MANIFEST_FORMAT,
    STAGING,
    WRITE_ID,
    bad_name,
    manifest_text,
    parse_manifest,
    read_manifest,
)
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.store._urls import (  # noqa: F401  (storage.join... for the callers)
    StorageOptions,
    exists,
    filesystem,
    guarded,
    is_remote,
    isdir,
    join,
    local_path,
    protocol,
    storage_error,
    strip,
)

__all__ = ["MANIFEST", "MANIFEST_FORMAT", "STAGING", "StorageError", "filesystem", "is_remote",
           "manifest_text", "parse_manifest", "published_files", "strip"]


# ---- the commit protocol --------------------------------------------------------------------
def local_manifest(folder: str, write_id: str | None = None) -> None:
    """Write ``folder/_SUCCESS`` listing every file under ``folder`` with its size (last)."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            if rel != MANIFEST and not name.startswith(".irs-owner"):  # outputs.py's marker
                files[rel] = os.path.getsize(full)
    with open(os.path.join(folder, MANIFEST), "w") as f:
        f.write(manifest_text(files, write_id or uuid.uuid4().hex[:12]))


def forget_listing(fs: Any, root: str) -> None:
    """Drop fsspec's cached listings of ``root`` and of every folder under it (fsspec's own
    ``invalidate_cache(root)`` keeps the folders under it), so a long-lived process sees
    what other processes published since it last listed."""
    fs.invalidate_cache(root)
    cache = getattr(fs, "dircache", None)
    if cache is not None:
        for key in [k for k in list(cache) if k.startswith(root.rstrip("/") + "/")]:
            cache.pop(key, None)


def _incomplete(url: str, why: str) -> DatasetError:
    return DatasetError(f"The folder {url!r} is not a complete output: {why}. A writer was "
                        "interrupted (or is still writing); readers refuse such a folder. "
                        "Write the output again (with overwrite=True / --overwrite).")


def published_files(url: str, storage_options: StorageOptions = None, *,
                    sizes: bool = True) -> list[str] | None:
    """The files of a complete output folder, from its ``_SUCCESS`` manifest (full paths or
    URLs), or None for a folder without one (written by another tool: read as it is).

    The manifest is trusted on both sides: a local folder and a folder in a store are read
    as the files their manifest lists, and a file added to the folder afterwards is not
    read by this library (pandas and pyarrow, which know no manifest, read it).

    Raises :class:`~interactive_recsys.DatasetError` naming the folder when it is an incomplete
    output: a manifest whose files are missing or of another size, or no manifest beside a
    ``_temporary`` staging folder (an interrupted remote write), and naming the manifest
    when it is damaged (``_manifest``). ``sizes=False`` checks that the files are there,
    not their sizes (a saved workflow's JSON may be edited)."""
    found = published_output(url, storage_options, sizes=sizes)
    return None if found is None else found[1]


def published_output(url: str, storage_options: StorageOptions = None, *,
                     sizes: bool = True) -> tuple[str, list[str]] | None:
    """``(folder, files)`` of a complete output (see :func:`published_files`): ``folder`` is
    ``url``, or the staging folder of an output committed but not yet copied into ``url``
    (its files are read there while the publish goes on)."""
    fs = filesystem(url, storage_options)
    if fs is None:
        path = local_path(url)
        manifest = os.path.join(path, MANIFEST)
        if not os.path.isfile(manifest):
            if os.path.isdir(os.path.join(path, STAGING)):
                raise _incomplete(url, f"it has no {MANIFEST} manifest but a {STAGING} folder")
            return None
        with open(manifest, "rb") as f:
            files = parse_manifest(manifest, f.read())
        if files is None:
            return None
        # one stat per listed file, each path joined once: linear in the manifest's entries
        base = os.path.join(path, "")
        fulls = [base + (rel if os.sep == "/" else rel.replace("/", os.sep)) for rel in files]
        for full, (rel, size) in zip(fulls, files.items(), strict=True):  # names: checked
            try:
                actual = os.stat(full).st_size
            except OSError:
                raise _incomplete(url, f"{rel!r}, listed in its manifest, is missing") from None
            if sizes and actual != size:
                raise _incomplete(url, f"{rel!r} has {actual} bytes, its manifest says {size}")
        return path, fulls
    root = strip(url)
    forget_listing(fs, root)  # another process may have written since this one listed
    found = listed_sizes(guarded(fs.find, url, root, withdirs=False, detail=True), root)
    prefix = url.rstrip("/")
    pending = claimed_output(fs, url, root, found)
    if pending is not None:  # committed, its copy into the folder not finished: read it staged
        write_id, _, files = pending
        staged = f"{prefix}/{STAGING}/{write_id}"
        return staged, [f"{staged}/{rel}" for rel in files]
    if MANIFEST not in found:
        if any(k.split("/", 1)[0] == STAGING for k in found):
            raise _incomplete(url, f"it has no {MANIFEST} manifest but a {STAGING} folder")
        return None
    files = parse_manifest(f"{prefix}/{MANIFEST}",
                           guarded(fs.cat_file, url, f"{root}/{MANIFEST}"))
    if files is None:
        return None
    for rel, size in files.items():
        if rel not in found:
            raise _incomplete(url, f"{rel!r}, listed in its manifest, is missing")
        if sizes and found[rel] != size:
            raise _incomplete(url, f"{rel!r} has {found[rel]} bytes, its manifest says {size}")
    return prefix, [f"{prefix}/{rel}" for rel in files]


def listed_sizes(listing: Mapping[str, Mapping[str, Any]], root: str) -> dict[str, Any]:
    """``{name relative to root: size}`` of a detailed ``fs.find`` listing under ``root``:
    one listing into one dict, so checking a manifest against it is linear in its entries.

    >>> listed_sizes({"b/out/a.parquet": {"size": 3}, "b/out/d/e": {"size": 0}}, "b/out")
    {'a.parquet': 3, 'd/e': 0}
    """
    head = root.rstrip("/") + "/"
    cut = len(head)
    return {k[cut:] if k.startswith(head) else posixpath.relpath(k, root): v.get("size")
            for k, v in listing.items()}


CLAIM = f"{STAGING}/_publishing"


def claimed_output(fs: Any, url: str, root: str, found: Mapping[str, Any]
                   ) -> tuple[str, str, dict[str, int]] | None:
    """``(write_id, manifest text, files)`` of the output a writer committed (it holds the
    publishing claim and its staged copy is complete) but has not finished copying into
    ``root``, else None. ``found`` maps each file under ``root`` to its size."""
    if CLAIM not in found:
        return None
    write_id = claim_owner(fs, url, root)
    staged = f"{STAGING}/{write_id}"
    if write_id is None or f"{staged}/{MANIFEST}" not in found:
        return None  # a claim whose writer died before it staged a manifest: not committed
    data = guarded(fs.cat_file, url, f"{root}/{staged}/{MANIFEST}")
    files = parse_manifest(f"{url.rstrip('/')}/{staged}/{MANIFEST}", data)
    if not files or any(found.get(f"{staged}/{rel}") != size for rel, size in files.items()):
        return None
    return write_id, data.decode(), files


def published_copy(fs: Any, path: str) -> str | None:
    """For a file of a committed output's staging folder (``ROOT/_temporary/WRITE-ID/NAME``,
    a path or URL), its copy ``ROOT/NAME`` once that write is published (the folder's
    manifest names it); else None. Any listing of the folder cached here is dropped first."""
    stripped = strip(path) if is_remote(path) else path
    root, sep, rest = stripped.partition(f"/{STAGING}/")
    forget_listing(fs, posixpath.dirname(stripped))
    write_id, _, name = rest.partition("/")
    if not sep or not WRITE_ID.match(write_id) or bad_name(name):
        return None
    forget_listing(fs, root)
    try:
        manifest = read_manifest(f"{root}/{MANIFEST}", fs.cat_file(f"{root}/{MANIFEST}"))
    except (OSError, DatasetError):
        return None
    if manifest is None or manifest.write_id != write_id or name not in manifest.files:
        return None
    return f"{root}/{name}"


def claim_owner(fs: Any, url: str, root: str) -> str | None:
    """The write id held in the publishing claim of ``root``; None when there is no claim or
    it holds something else than a write id (then it names no staging folder to use)."""
    try:
        data = guarded(fs.cat_file, url, f"{root}/{CLAIM}")
    except FileNotFoundError:
        return None
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        return None
    return text if WRITE_ID.match(text) else None


def expand_url(item: str, extensions: tuple[str, ...],
               storage_options: StorageOptions = None) -> list[str]:
    """The data files (names ending in ``extensions``) of one URL: a folder (its
    ``_SUCCESS`` manifest checked, its listed files used), a glob or a file. Names starting
    with ``_`` or ``.`` (staging, metadata) are skipped."""
    fs, scheme = filesystem(item, storage_options), protocol(item)
    path = strip(item)

    def data(paths: Iterable[str], root: str) -> list[str]:
        return sorted(f"{scheme}://{p}" for p in paths if p.endswith(extensions) and not any(
            part.startswith(("_", ".")) for part in p[len(root):].split("/") if part))

    magic = re.search(r"[*?\[]", path)
    forget_listing(fs, path)
    if magic:
        found = data(guarded(fs.glob, item, path), posixpath.dirname(path[:magic.start()]))
    elif guarded(fs.isdir, item, path):
        published = published_output(item, storage_options)
        if published is None:
            found = data(guarded(fs.find, item, path), path)
        else:  # the manifest's files: in the folder, or in a committed output's staging
            found = data([strip(f) for f in published[1]], strip(published[0]))
    elif not guarded(fs.exists, item, path):
        raise DatasetError(f"Input file {item!r} does not exist. Check the URL (and that "
                           "storage_options reach the right store).")
    else:
        found = [item]
    if not found:
        raise DatasetError(f"{item!r} holds or matches no data files (names ending in "
                           f"{extensions}). Check the URL or the glob pattern.")
    return found


def filesystem_of(files: list[str], storage_options: StorageOptions = None) -> Any:
    """The one fsspec filesystem of ``files`` (None when they are local); a list that mixes
    local files and URLs is refused."""
    remote = [f for f in files if is_remote(f)]
    if remote and len(remote) != len(files):
        raise DatasetError(f"The input mixes local files and URLs ({files[:4]}...); pass "
                           "files of one filesystem.")
    return filesystem(remote[0], storage_options) if remote else None


def _same_or_inside(inner: str, outer: str) -> bool:
    inner, outer = inner.rstrip("/"), outer.rstrip("/")
    return inner == outer or inner.startswith(outer + "/")


def check_remote_destination(url: str, protect: Mapping[str, Iterable[str]] | None) -> None:
    """Refuse a remote output that is, or contains, a protected path (e.g. the input), or
    is a bucket's root."""
    dest = f"{protocol(url)}://{strip(url)}"
    if "/" not in strip(url):
        raise DatasetError(f"Refusing to write to {url!r}: it is a whole bucket; write to a "
                           f"folder in it, e.g. {url.rstrip('/') + '/processed'!r}.")
    for what, paths in (protect or {}).items():
        for p in paths:
            if is_remote(p) and _same_or_inside(f"{protocol(p)}://{strip(p)}", dest):
                raise DatasetError(f"Refusing to write to {url!r}: it is or contains {what} "
                                   f"({p!r}), which writing there would replace. Choose a new "
                                   "folder for the output.")


def upload_directory(local: str, url: str, storage_options: StorageOptions = None
                     ) -> dict[str, int]:
    """Copy the files of a local folder into the folder ``url`` (e.g. a staging URL);
    return their names (relative, with ``/``) and sizes."""
    fs = filesystem(url, storage_options)
    sent = {}
    for root, _, names in os.walk(local):
        for name in names:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, local).replace(os.sep, "/")
            guarded(fs.put_file, url, full, f"{strip(url)}/{rel}")
            sent[rel] = os.path.getsize(full)
    return sent


def download_directory(url: str, local: str, storage_options: StorageOptions = None,
                       files: Iterable[str] | None = None) -> None:
    """Copy the files of folder ``url`` (or only ``files``, full URLs) into folder ``local``."""
    fs = filesystem(url, storage_options)
    root = strip(url)
    if files is None:
        files = [f"{protocol(url)}://{k}" for k in guarded(fs.find, url, root)]
    for f in files:
        rel = posixpath.relpath(strip(f), root)
        target = os.path.join(local, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        guarded(fs.get_file, url, strip(f), target)


# ---- artifact tables (vocabularies, statistics): written once by a task, read by many -------
def write_table(table: Any, path: str, storage_options: StorageOptions = None,
                **options: Any) -> None:
    """Write a parquet table so readers see it whole or not at all: locally a temporary file
    renamed into place, on an object store one PUT (atomic there)."""
    import pyarrow.parquet as pq

    fs = filesystem(path, storage_options)
    if fs is None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with atomic_file(path) as tmp:
            pq.write_table(table, tmp, **options)
        return
    guarded(pq.write_table, path, table, strip(path), filesystem=fs, **options)


def read_table(path: str, storage_options: StorageOptions = None,
               columns: list[str] | None = None) -> Any:
    import pyarrow.parquet as pq

    fs = filesystem(path, storage_options)
    if fs is None:
        return pq.read_table(path, columns=columns)
    return guarded(pq.read_table, path, strip(path), columns=columns, filesystem=fs)


def version(path: str, storage_options: StorageOptions = None) -> Any:
    """What changes when the file at ``path`` is rewritten (cache keys): the modification
    time locally, the ETag (else size and time) on a store."""
    fs = filesystem(path, storage_options)
    if fs is None:
        return os.stat(path).st_mtime_ns
    info = guarded(fs.info, path, strip(path))
    return str(info.get("ETag") or info.get("etag") or (info.get("size"), info.get("mtime"),
                                                         info.get("LastModified")))


def etag(path: str, storage_options: StorageOptions = None) -> str | None:
    """The ETag of an object at URL ``path`` (a hash of its content on S3, GCS, Azure), or
    None when its store gives none."""
    fs = filesystem(path, storage_options)
    info = guarded(fs.info, path, strip(path))
    value = info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("md5")
    return str(value) if value else None


def copy_directory(source: str, target: str, source_options: StorageOptions = None,
                   target_options: StorageOptions = None) -> None:
    """Copy every file of folder ``source`` into folder ``target`` (local or URLs, in any
    combination; server-side copies within one store)."""
    if not is_remote(source) and not is_remote(target):
        import shutil

        shutil.copytree(source, target)
        return
    if not is_remote(source):
        upload_directory(source, target, target_options)
        return
    if not is_remote(target):
        download_directory(source, target, source_options)
        return
    src_fs, dst_fs = filesystem(source, source_options), filesystem(target, target_options)
    root = strip(source)
    files = guarded(src_fs.find, source, root)
    if src_fs is dst_fs:  # one store, the same options (fsspec caches instances)
        for f in files:
            guarded(src_fs.copy, source, f, f"{strip(target)}/{posixpath.relpath(f, root)}")
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="irs-copy-") as local:
        download_directory(source, local, source_options)
        upload_directory(local, target, target_options)


@contextlib.contextmanager
def local_copy(path: str | os.PathLike, storage_options: StorageOptions = None
               ) -> Iterator[str]:
    """``path`` itself when local, else a temporary local copy of the complete output folder
    at the URL ``path`` (refused when its manifest is incomplete): for small saved folders
    read whole by the client (a model)."""
    path = os.fspath(path)
    if not is_remote(path):
        yield local_path(path)
        return
    import tempfile

    published = published_output(path, storage_options)  # the staged copy while publishing
    base, files = published if published is not None else (path, None)
    with tempfile.TemporaryDirectory(prefix="irs-download-") as local:
        download_directory(base, local, storage_options, files)
        yield local
