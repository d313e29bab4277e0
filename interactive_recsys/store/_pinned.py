"""The local outputs a reader started with, held so that a write over them is noticed.

A local output is replaced by one atomic swap of its folder (:mod:`._outputs`), and the
new folder has the same file names, so a reader that keeps a list of files and opens them
by path after the swap would read the new output's files: a mix of two outputs. A reader
that lists an output and reads it later (``irs.Loader``) therefore holds the folder's
``_SUCCESS`` manifest open from *before* it lists the folder, and checks after each read
that the path still holds that manifest file (the same device and inode; a file held open
is never freed, so its inode number is never given to another file meanwhile):

* the listing and a read that both ran while the path held the manifest held came from that
  output, because a folder that leaves its path never comes back (a swap publishes a new
  folder and removes the old one), so the path held it all along;
* otherwise the reader raises the "make it again" error (:func:`rewritten_error`), never
  returning rows read after the swap.

A folder without a ``_SUCCESS`` file (written by another tool) is not held: nothing is
promised for it.

A descriptor cannot travel to the Dask worker processes that read an ``irs.Dataset``'s
files, but the manifest's identity can (:attr:`PinnedOutputs.keys`): a worker checks it with
:func:`same_output`, while the process that holds the descriptors keeps the inode taken.

>>> import tempfile
>>> from interactive_recsys.store.storage import local_manifest
>>> folder = tempfile.mkdtemp()
>>> local_manifest(folder)
>>> pins = PinnedOutputs("Loader")
>>> pins.pin([folder]); pins.folders == {folder}, pins.changed()
(True, [])
>>> os.replace(os.path.join(folder, MANIFEST), os.path.join(folder, "old"))
>>> local_manifest(folder)  # written again: another manifest file at the same path
>>> pins.changed() == [folder]
True
>>> pins.close()
"""

from __future__ import annotations

import os
import socket
import stat
import weakref
from collections.abc import Iterable

from interactive_recsys.errors import DatasetError
from interactive_recsys.store._manifest import MANIFEST

__all__ = ["HOST", "PinnedOutputs", "folders_of", "rewritten_error", "same_output"]

_Key = tuple[int, int]

#: This machine's name: where an identity taken here is compared device and inode.
HOST = socket.gethostname()
_DONE = {"make": "made", "open": "opened"}


def rewritten_error(folder: str, reader: str, again: str = "make") -> DatasetError:
    """The error of a reader (``"Loader"``) whose output ``folder`` was written again;
    ``again``: what the user does to the reader to read the output as it is now
    (``"make"`` or ``"open"``)."""
    return DatasetError(
        f"The output {folder!r} was written again (replaced) after this "
        f"{reader} was {_DONE[again]}: its files are no longer the ones the {reader} "
        f"listed, and it stops rather than mix the rows of two outputs. {again.capitalize()} "
        f"the {reader} again to read the output as it is now."
    )


def folders_of(paths: Iterable[str]) -> set[str]:
    """The absolute folders of local ``paths``: a folder itself, else the file's folder."""
    out = set()
    for p in paths:
        full = os.path.abspath(os.fspath(p))
        out.add(full if os.path.isdir(full) else os.path.dirname(full))
    return out


def _key(st: os.stat_result) -> _Key:
    return st.st_dev, st.st_ino


def current_key(folder: str) -> _Key | None:
    """The identity of the manifest ``folder`` holds now (None: it holds none)."""
    try:
        st = os.stat(os.path.join(folder, MANIFEST))
    except OSError:
        return None
    return _key(st) if stat.S_ISREG(st.st_mode) else None


def same_output(folder: str, key: _Key, host: str = HOST) -> bool:
    """Whether ``folder`` still holds the manifest whose identity ``key`` was taken on the
    machine ``host``: the same device and inode there; on another machine (a file system
    the workers of a cluster share, whose device numbers differ between machines) the same
    inode. One ``stat``."""
    now = current_key(folder)
    if now is None:
        return False
    return now == key if host == HOST else now[1] == key[1]


def _open_manifest(folder: str) -> tuple[int, _Key] | None:
    """An open descriptor of ``folder``'s manifest and its identity; None without one (a
    FIFO or a folder is not a manifest, and is opened without blocking)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(os.path.join(folder, MANIFEST), flags)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, _key(st)


def _close_all(held: dict[str, tuple[int, _Key]]) -> None:
    for fd, _ in held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    held.clear()


class PinnedOutputs:
    """The manifests of the local output folders a reader started with, held open.

    Parameters
    ----------
    reader : str
        What reads (``"Loader"``), for the error.
    """

    def __init__(self, reader: str) -> None:
        self.reader = reader
        self._held: dict[str, tuple[int, _Key]] = {}
        self._finalizer = weakref.finalize(self, _close_all, self._held)

    @property
    def folders(self) -> set[str]:
        """The folders held."""
        return set(self._held)

    @property
    def keys(self) -> dict[str, _Key]:
        """The identity (device, inode) of each folder's manifest held, taken on :data:`HOST`."""
        return {folder: key for folder, (_, key) in self._held.items()}

    def pin(self, folders: Iterable[str]) -> None:
        """Hold the manifest of each folder that has one (absolute paths)."""
        for folder in folders:
            if folder not in self._held:
                opened = _open_manifest(folder)
                if opened is not None:
                    self._held[folder] = opened

    def release(self, folders: Iterable[str]) -> None:
        """Stop holding ``folders``."""
        for folder in folders:
            held = self._held.pop(folder, None)
            if held is not None:
                os.close(held[0])

    def changed(self) -> list[str]:
        """The folders held whose path no longer holds the manifest held (sorted)."""
        return sorted(f for f, (_, key) in self._held.items() if current_key(f) != key)

    def unheld(self, folders: Iterable[str]) -> list[str]:
        """Those of ``folders`` that hold a manifest but are not held (sorted)."""
        return sorted(f for f in folders if f not in self._held and current_key(f) is not None)

    def check(self, folder: str | None) -> None:
        """Raise :func:`rewritten_error` when ``folder`` was written again since it was
        pinned; a folder not held (or None) is not checked."""
        held = self._held.get(folder) if folder is not None else None
        if held is not None and current_key(folder) != held[1]:
            raise rewritten_error(folder, self.reader)

    def check_all(self) -> None:
        """Raise :func:`rewritten_error` when any folder held was written again."""
        changed = self.changed()
        if changed:
            raise rewritten_error(changed[0], self.reader)

    def close(self) -> None:
        """Close every descriptor held (idempotent)."""
        self._finalizer()
