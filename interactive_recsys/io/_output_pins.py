"""The local outputs an ``irs.Dataset`` reads, held from before it lists them.

A local overwrite swaps the output folder in one step and keeps the file names
(:mod:`~interactive_recsys.store._outputs`), so a Dataset that opened its listed files by
path after the swap would read the new output's files: a mix of two outputs. A Dataset
over local paths therefore holds the ``_SUCCESS`` manifest of each output folder it names
(:class:`~interactive_recsys.store._pinned.PinnedOutputs`) from before it lists them, and
every read of a piece checks after reading that its folder still holds that manifest
(:class:`OutputCheck`, one ``stat``), else raises the "open the Dataset again" error:

* an output written again while the Dataset is being opened (listed, its footers read) is
  opened again, up to :data:`OPEN_ATTEMPTS` times;
* the check travels to Dask worker processes with the tasks (the manifest's identity, not
  the descriptor); the descriptor stays with the Dataset, and with the Dask graphs made
  from it, so the inode is not given to another file while they may still read.

Folders without ``_SUCCESS`` and URLs are read as before: nothing is held.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import pyarrow as pa

from interactive_recsys.errors import DatasetError
from interactive_recsys.store import storage
from interactive_recsys.store._pinned import (
    HOST,
    PinnedOutputs,
    folders_of,
    rewritten_error,
    same_output,
)

__all__ = ["OPEN_ATTEMPTS", "OutputCheck", "check_unchanged", "open_pinned"]

#: Openings of a Dataset whose output is written again meanwhile, before it gives up.
OPEN_ATTEMPTS = 3
READER = "Dataset"

T = TypeVar("T")


def _named_folders(source: Any) -> set[str]:
    """The local folders ``source`` names: a folder itself, a file's or a glob's folder."""
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    return folders_of(
        storage.local_path(p)
        for p in items
        if isinstance(p, str | os.PathLike) and not storage.is_remote(p)
    )


def open_pinned(source: Any, open_files: Callable[[], T]) -> tuple[T, PinnedOutputs]:
    """``open_files()`` (which lists and opens the files of ``source``) with the manifests
    of the outputs ``source`` names held from before; opened again when one of them was
    written again meanwhile.

    Raises
    ------
    DatasetError
        ``open_files``'s own error when no output changed, else after
        :data:`OPEN_ATTEMPTS` openings that each saw an output written again.
    """
    folders = _named_folders(source)
    pins = PinnedOutputs(READER)
    changed: list[str] = []
    for _ in range(OPEN_ATTEMPTS):
        pins.pin(folders)
        try:
            opened = open_files()
        except (DatasetError, OSError, pa.ArrowException):  # e.g. a listed file gone
            changed = pins.changed() or pins.unheld(folders)
            if not changed:
                pins.close()
                raise
            pins.release(changed)
            continue
        changed = pins.changed() or pins.unheld(folders)
        if not changed:
            return opened, pins
        pins.release(changed)
    pins.close()
    raise DatasetError(
        f"The output {changed[0]!r} was written again while the Dataset was "
        f"being opened, {OPEN_ATTEMPTS} times in a row. Open the Dataset when no "
        "writer is replacing it."
    )


def _output_of(folder: str, keys: Mapping[str, Any]) -> str | None:
    """The held output folder that holds ``folder`` (absolute): itself or a parent."""
    while folder not in keys:
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return folder


class OutputCheck:
    """What each read of a Dataset's piece checks after reading: that the output its file
    belongs to was not written again since the Dataset was opened.

    It travels with the tasks to Dask worker processes (pickled without ``pins``, whose
    descriptors stay in this process and keep the manifests' inodes taken).

    Parameters
    ----------
    pins : PinnedOutputs
        The manifests held when the Dataset was opened.
    files : iterable of str
        The files the Dataset reads, as its pieces name them.
    """

    def __init__(self, pins: PinnedOutputs, files: Iterable[str]) -> None:
        keys = pins.keys
        self.host = HOST
        #: each data file's folder (as the pieces name it) -> its output folder and key
        self.where: dict[str, tuple[str, tuple[int, int]]] = {}
        for folder in {os.path.dirname(f) for f in files}:
            output = _output_of(os.path.abspath(folder), keys)
            if output is not None:
                self.where[folder] = (output, keys[output])
        self.pins: PinnedOutputs | None = pins

    def __bool__(self) -> bool:
        return bool(self.where)

    def __getstate__(self) -> dict[str, Any]:
        return {"host": self.host, "where": self.where}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.host, self.where, self.pins = state["host"], state["where"], None

    def check(self, path: str) -> None:
        """Raise the "open the Dataset again" error when the output of the file ``path``
        (as a piece names it) no longer holds the manifest held; nothing for a file of no
        held output."""
        pin = self.where.get(os.path.dirname(path))
        if pin is not None and not same_output(pin[0], pin[1], self.host):
            raise rewritten_error(pin[0], READER, "open")

    def check_all(self) -> None:
        """Raise the "open the Dataset again" error when any output held was written again."""
        for folder, key in dict(self.where.values()).items():
            if not same_output(folder, key, self.host):
                raise rewritten_error(folder, READER, "open")

    def close(self) -> None:
        """Close the descriptors held (here only; idempotent)."""
        if self.pins is not None:
            self.pins.close()


def check_unchanged(ds: Any) -> None:
    """Raise the "open the Dataset again" error when a local output the Dataset ``ds`` reads
    was written again since it was opened: for code that reads its files by path itself
    (the fingerprints of a fit's reuse key), after it read them."""
    outputs = getattr(ds, "_outputs", None)
    if outputs is not None:
        outputs.check_all()
