"""A remote writer's lease: proof, readable by other processes, that it is still running.

An object store cannot tell whether a writer on another machine still runs. So a writer
(:func:`.commit.remote_atomic_directory`) keeps a small JSON file beside its staging
folder, ``DEST/_temporary/WRITE-ID.lease``, and rewrites it every
:data:`HEARTBEAT_SECONDS` (30 s) from a background thread, from before it stages its
first file until it has published (or given up). The lease is **fresh** while its last
renewal is less than :data:`LEASE_SECONDS` (10 minutes) old; then its writer is taken to
be dead. ``irs clean`` never removes the staging of a fresh lease and refuses an
``--older-than`` below the lease age, and only the writer itself, or a roll-forward once
its lease is no longer fresh, may finish a publish it claimed.

The renewal time is the writer's clock; clocks of the machines involved must agree to
well within the lease age (minutes), as NTP keeps them.

>>> import fsspec
>>> fs = fsspec.filesystem("memory")
>>> lease = Lease(fs, "memory://irs-lease-doc/out", "/irs-lease-doc/out", "20260101000000-0a1b2c3d")
>>> lease.start(); state(fs, "/irs-lease-doc/out", "20260101000000-0a1b2c3d")
'fresh'
>>> lease.stop(); state(fs, "/irs-lease-doc/out", "20260101000000-0a1b2c3d")
'missing'
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import threading
import time
from typing import Any

from interactive_recsys.store._manifest import STAGING

LEASE_SECONDS = 600.0
HEARTBEAT_SECONDS = 30.0
_MAX_LEASE = 24 * 3600.0  # a lease file cannot keep its staging for longer than a day

__all__ = ["HEARTBEAT_SECONDS", "LEASE_SECONDS", "Lease", "lease_path", "state"]


def lease_path(root: str, write_id: str) -> str:
    """Where the lease of write ``write_id`` into ``root`` (a path inside the store) lies."""
    return f"{root}/{STAGING}/{write_id}.lease"


class Lease:
    """The lease of one write, renewed from a daemon thread while it is held.

    :meth:`start` writes it (a store failure is raised: the write cannot begin), the thread
    rewrites it every :data:`HEARTBEAT_SECONDS`, :meth:`stop` ends the thread and removes the
    file (best effort: left behind, it goes stale by itself). :meth:`held` says whether the
    last renewal is recent enough that no other process may yet take the writer for dead."""

    def __init__(self, fs: Any, url: str, root: str, write_id: str) -> None:
        self.fs, self.url, self.write_id = fs, url, write_id
        self.path = lease_path(root, write_id)
        self.renewed = -math.inf  # time.monotonic() of the last successful renewal
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _write(self) -> None:
        record = {"write_id": self.write_id, "renewed": time.time(),
                  "lease_seconds": LEASE_SECONDS, "host": socket.gethostname(),
                  "pid": os.getpid()}
        self.fs.pipe_file(self.path, json.dumps(record).encode())
        self.renewed = time.monotonic()

    def start(self) -> None:
        self._write()
        self._thread = threading.Thread(target=self._beat, name=f"irs-lease-{self.write_id}",
                                        daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                self._write()
            except Exception as exc:  # the store out of reach: held() says when it matters
                self.error = exc

    def held(self) -> bool:
        """Whether the lease was renewed recently enough (with two heartbeats of margin)
        that it is still fresh for every other process."""
        return time.monotonic() - self.renewed < LEASE_SECONDS - 2 * HEARTBEAT_SECONDS

    def stop(self, remove: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if remove:
            with contextlib.suppress(Exception):
                self.fs.rm_file(self.path)


def state(fs: Any, root: str, write_id: str, now: float | None = None) -> str:
    """``"fresh"``, ``"expired"`` or ``"missing"`` (no lease file, or one that cannot be
    read as a lease: a writer of an older version, or one that never started) for the
    write ``write_id`` into ``root``."""
    try:
        data = fs.cat_file(lease_path(root, write_id))
        record = json.loads(data.decode("utf-8"))
        renewed = float(record["renewed"])
        seconds = min(max(float(record.get("lease_seconds", LEASE_SECONDS)), 0.0), _MAX_LEASE)
    except FileNotFoundError:
        return "missing"
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return "missing"
    if not math.isfinite(renewed):
        return "missing"
    now = time.time() if now is None else now
    if renewed - now > _MAX_LEASE:  # renewed far in the future: a clock or a file not to trust
        return "expired"
    return "fresh" if now - renewed < seconds else "expired"
