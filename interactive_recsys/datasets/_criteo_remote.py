"""Criteo on object storage: ``irs criteo s3://in s3://out --storage-options ...``.

The design gathers to the client, with no disk shared between the client and the workers:

* **inputs**: the day files are listed on the store (:func:`remote_input_files`) and cut into
  byte ranges on line boundaries by reading a few bytes around each cut
  (:func:`~._criteo_tsv.line_ranges` through the store's filesystem);
* **parse** (on the workers): each task reads its byte range from the store itself, parses
  it in the worker's own temporary folder and sends the parsed files back to the client as
  bytes (:func:`parse_remote_range`), then removes them; the client writes them into its
  staging and records the unit (:func:`remote_parse_tasks`), one task's result at a time;
* **the other phases** (join, dense, fit, map) run on threads of the client, on its local
  disk, as a local run does;
* **staging** is a local folder of the client, the *mirror* of the output
  (:func:`mirror_folder`, keyed by the output URL, under the system's temporary folder);
  its work is kept and taken over as a local run's is (:mod:`._criteo_resume`), so a killed
  run resumes. Once converted, the mirror is uploaded to the output with the commit
  protocol of :mod:`~interactive_recsys.store.commit` (staged under ``OUT/_temporary/``,
  ``_SUCCESS`` written last), then removed; a run killed while uploading uploads the whole
  mirror again.

The cost: the client's disk holds what a local run's holds (output and staging), and its
network carries the parsed ranges in (264 bytes a row and their id counts) and the output out;
the workers hold one range at a time and no staging.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from interactive_recsys.datasets._criteo_resume import recorded, sync_files
from interactive_recsys.errors import DatasetError
from interactive_recsys.store._urls import StorageOptions, filesystem, guarded, strip
from interactive_recsys.store.commit import expect, remote_atomic_directory
from interactive_recsys.store.storage import check_remote_destination

__all__ = ["check_remote_output", "mirror_folder", "parse_remote_range", "publish_mirror",
           "remote_file_key", "remote_parse_tasks"]


def remote_file_key(url: str, storage_options: StorageOptions = None) -> dict[str, Any]:
    """What an input object is taken to be (a resumed run keeps its parsed ranges only while
    this is unchanged): its URL, size and ETag (or modification time)."""
    fs = filesystem(url, storage_options)
    info = guarded(fs.info, url, strip(url))
    tag = info.get("ETag") or info.get("etag") or info.get("LastModified") or info.get("mtime")
    return {"path": url, "size": int(info["size"]), "etag": str(tag)}


def parse_remote_range(url: str, storage_options: StorageOptions, stem: str, part: int,
                       byte_range: tuple[int, int] | None, block_size: int, bits: int,
                       parse_range: Callable[..., dict[str, Any]],
                       parse_files: Callable[[dict[str, Any]], list[str]]) -> dict[str, Any]:
    """A parse task on a worker: the byte range of ``url`` (``None``: the whole, compressed,
    object) read from the store, parsed by ``parse_range`` as a local range is (the
    conversion's own task, passed in) in a temporary folder of the worker, and returned with
    the bytes of the files ``parse_files`` names (``files``: name -> bytes)."""
    fs = filesystem(url, storage_options)
    work = tempfile.mkdtemp(prefix="irs-criteo-part-")
    try:
        local = os.path.join(work, "input" + _suffix(url))
        with guarded(fs.open, url, strip(url), "rb") as src, open(local, "wb") as dst:
            start, stop = byte_range if byte_range is not None else (0, None)
            src.seek(start)
            left = None if stop is None else stop - start
            while left is None or left > 0:
                chunk = src.read(8 << 20 if left is None else min(8 << 20, left))
                if not chunk:
                    break
                dst.write(chunk)
                left = None if left is None else left - len(chunk)
        size = os.path.getsize(local)
        os.makedirs(os.path.join(work, "out"))
        result = parse_range(local, stem, part, None if byte_range is None else (0, size),
                              os.path.join(work, "out"), block_size, bits)
        files = {}
        for name in parse_files(result):
            with open(os.path.join(work, "out", name), "rb") as f:
                files[name] = f.read()
        return {"result": result, "files": files}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _suffix(url: str) -> str:
    name = posixpath.basename(url)
    return "." + name.rsplit(".", 1)[1] if "." in name else ""


def _write_parsed(payload: dict[str, Any], staging: str) -> dict[str, Any]:
    """On the client: a parse task's files written into the staging, synced."""
    paths = []
    for name, data in payload["files"].items():
        path = os.path.join(staging, name)
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    sync_files(*paths)
    return payload["result"]


def remote_parse_tasks(client: Any, storage_options: StorageOptions, progress: bool,
                       parse_range: Callable[..., dict[str, Any]],
                       parse_files: Callable[[dict[str, Any]], list[str]]
                       ) -> Callable[[Callable[..., Any], list[tuple]], list[Any]]:
    """The parse phase's runner for :meth:`~._criteo_resume.Ledger.run` with inputs on a
    store: each call ``(recorded, marker, key, consumed, url, stem, part, byte_range,
    staging, block_size, bits)`` runs :func:`parse_remote_range` on a worker (on threads of
    this process without ``client``), and its files are written into the staging and its
    unit recorded here, as each task finishes (one result in memory at a time)."""
    from tqdm import tqdm

    def run(_: Callable[..., Any], calls: list[tuple]) -> list[Any]:
        results: list[Any] = [None] * len(calls)
        remote = [(url, storage_options, stem, part, byte_range, block, bits, parse_range,
                   parse_files)
                  for (_, _, _, _, url, stem, part, byte_range, _, block, bits) in calls]
        with tqdm(total=len(calls), desc="parse", unit="task", file=sys.stderr,
                  disable=not progress) as bar:
            for i, payload in _as_completed(client, remote):
                _, marker, key, consumed, *_, staging, _, _ = calls[i]
                results[i] = recorded(_write_parsed, marker, key, consumed, payload, staging)
                bar.update()
        return results

    return run


def _as_completed(client: Any, calls: list[tuple]) -> Any:
    """``(index, result)`` of :func:`parse_remote_range` over ``calls`` as they finish."""
    if client is None:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        with ThreadPoolExecutor(max(1, min(len(calls), os.cpu_count() or 1))) as pool:
            futures = {pool.submit(parse_remote_range, *c): i for i, c in enumerate(calls)}
            for future in as_completed(futures):
                yield futures[future], future.result()
        return
    from distributed import as_completed as completed

    futures = [client.submit(parse_remote_range, *c, pure=False) for c in calls]
    index = {f.key: i for i, f in enumerate(futures)}
    with client.as_current():  # as_completed asks for the current client
        for future in completed(futures):
            yield index[future.key], future.result()
            future.release()


def check_remote_output(url: str, storage_options: StorageOptions, overwrite: bool,
                        protect: dict[str, list[str]]) -> None:
    """Refuse, before any work, an output URL inside an input, or one that exists (unless
    ``overwrite``)."""
    check_remote_destination(url, protect)
    fs, root = filesystem(url, storage_options), strip(url)
    if not overwrite and guarded(fs.exists, url, root) and guarded(fs.ls, url, root):
        raise DatasetError(f"Output {url!r} already exists; pass overwrite=True (irs criteo "
                           "--overwrite) or choose another path.")


def mirror_folder(url: str) -> str:
    """The client's local folder where a run to the URL ``url`` converts (and keeps its work
    until it is uploaded): ``TMPDIR/irs-criteo-mirror/<hash of the URL>/out``."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), "irs-criteo-mirror", digest, "out")


def publish_mirror(mirror: str, url: str, storage_options: StorageOptions, *,
                   overwrite: bool, protect: dict[str, list[str]]) -> None:
    """Upload the converted ``mirror`` (but its local ``_SUCCESS``) to ``url`` with the
    commit protocol, then remove the mirror."""
    fs = filesystem(url, storage_options)
    with remote_atomic_directory(url, storage_options, overwrite=overwrite,
                                 protect=protect) as staging:
        sent = {}
        for name in sorted(os.listdir(mirror)):
            full = os.path.join(mirror, name)
            if name == "_SUCCESS" or not os.path.isfile(full):
                continue
            guarded(fs.put_file, url, full, f"{strip(staging)}/{name}")
            sent[name] = os.path.getsize(full)
        expect(staging, sent)
    shutil.rmtree(os.path.dirname(mirror), ignore_errors=True)
