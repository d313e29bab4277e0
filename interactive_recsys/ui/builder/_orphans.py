"""Orphaned temporary output: what a Run killed with its kernel left next to its output.

A Run writes into a hidden temporary beside the output and publishes it by a rename (a
local folder, :mod:`interactive_recsys.store._outputs`) or into ``OUTPUT/_temporary/WRITE-ID/``
under a lease (an object store, :mod:`interactive_recsys.store.commit`). A kernel restarted
mid-run leaves that temporary behind. :func:`find_orphans` lists those whose writer is gone
(its process is no longer running on this machine, or its lease expired), with their size,
by the same rules as ``irs clean``; :func:`remove_orphans` removes them with ``irs clean``'s
own functions. A live writer's temporary is never listed nor removed.

>>> import os, tempfile
>>> out = os.path.join(tempfile.mkdtemp(), "out")
>>> find_orphans(out)
[]
>>> size_text(111_234_567)
'106.1 MiB'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from interactive_recsys.store import storage
from interactive_recsys.store._lease import LEASE_SECONDS
from interactive_recsys.store._outputs import clean_stale, stale_temporaries
from interactive_recsys.store.commit import clean_staging

__all__ = ["Orphan", "find_orphans", "orphan_text", "remove_orphans", "size_text"]


@dataclass(frozen=True)
class Orphan:
    """A temporary a dead writer left: its path (or URL) and its size in bytes."""

    path: str
    nbytes: int


def size_text(nbytes: int) -> str:
    """``nbytes`` for people (binary units)."""
    size, unit = float(nbytes), "bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{int(size)} bytes" if unit == "bytes" else f"{size:.1f} {unit}"


def _local_size(path: str) -> int:
    if not os.path.isdir(path) or os.path.islink(path):
        return os.lstat(path).st_size if os.path.lexists(path) else 0
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass  # removed meanwhile
    return total


def find_orphans(output: str | os.PathLike | None,
                 storage_options: dict[str, Any] | None = None) -> list[Orphan]:
    """The temporaries of ``output`` whose writer is gone, with their sizes (nothing is
    changed). Local: hidden ``.NAME.tmp-HOST-PID-*`` siblings whose process is no longer
    running here; an object store: staging whose lease expired (``irs clean``'s rules)."""
    if output is None or not os.fspath(output).strip():
        return []
    output = os.fspath(output)
    if not storage.is_remote(output):
        return [Orphan(p, _local_size(p)) for p in stale_temporaries(output)]
    fs = storage.filesystem(output, storage_options)
    found = []
    for url in clean_staging(output, storage_options, LEASE_SECONDS, dry_run=True):
        try:
            nbytes = int(fs.du(storage.strip(url)))
        except (OSError, ValueError):
            nbytes = 0
        found.append(Orphan(url, nbytes))
    return found


def remove_orphans(output: str | os.PathLike,
                   storage_options: dict[str, Any] | None = None) -> list[str]:
    """Remove what :func:`find_orphans` lists, as ``irs clean OUTPUT`` does; return what
    was removed."""
    output = os.fspath(output)
    if storage.is_remote(output):
        return clean_staging(output, storage_options, LEASE_SECONDS)
    return clean_stale(output)


def orphan_text(output: str, orphans: list[Orphan]) -> str:
    """One line for the offer: how much a stopped run left next to ``output``, and where.

    >>> print(orphan_text("/d/out", [Orphan("/d/.out.tmp-h-1-0a1b2c3d", 2048)]))
    ... # doctest: +NORMALIZE_WHITESPACE
    A run that stopped before publishing (its kernel restarted or died) left a temporary
    output of 2.0 KiB next to '/d/out': '.out.tmp-h-1-0a1b2c3d'. Its writer is gone;
    nothing uses it.
    """
    total = sum(o.nbytes for o in orphans)
    names = ", ".join(repr(os.path.basename(o.path.rstrip("/"))) for o in orphans[:3])
    more = f" and {len(orphans) - 3} more" if len(orphans) > 3 else ""
    return (f"A run that stopped before publishing (its kernel restarted or died) left "
            f"{'a temporary output' if len(orphans) == 1 else f'{len(orphans)} temporaries'}"
            f" of {size_text(total)} next to {output!r}: {names}{more}. Its writer is gone; "
            "nothing uses it.")
