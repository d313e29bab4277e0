"""Two fitted vocabularies of one column compared value by value: what :func:`vocabulary_diff`
reports per ``Categorify`` column.

A vocabulary is its split files (``value, count, index``: :mod:`..tables._vocabulary`). Two
vocabularies cut into the same number of splits are compared split by split (a value lives in
split ``hash(value) % splits`` in both, so no task holds more than one split of each); else
whole. Split files that are one file (a step a refit adopted from the other workflow: its files
are hard links) are the same vocabulary and are not read.

Values compare as values: integers of any width alike, floats alike, ``string`` and
``large_string`` alike; values of different kinds (the integer 1 and the string ``"1"``) are
different values.

>>> old = pa.table({"value": ["a", "b", "c"], "count": [5, 3, 1], "index": [3, 4, 5]})
>>> new = pa.table({"value": ["a", "c", "d"], "count": [9, 4, 2], "index": [3, 4, 5]})
>>> compare_tables(old, new)   # d new (2 of its counts); b dropped; c moved from 5 to 4
VocabularyChange(new_values=1, dropped_values=1, changed_ids=1, new_count=2)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.tables._vocabulary_check import read_checked, split_path


@dataclass(frozen=True)
class VocabularyChange:
    """How a new vocabulary differs from an old one: values it has that the old one has not
    (``new_values``, holding ``new_count`` of its counts), values of the old one it has not
    (``dropped_values``), values in both whose id differs (``changed_ids``)."""

    new_values: int = 0
    dropped_values: int = 0
    changed_ids: int = 0
    new_count: int = 0

    def __add__(self, other: VocabularyChange) -> VocabularyChange:
        return VocabularyChange(self.new_values + other.new_values,
                                self.dropped_values + other.dropped_values,
                                self.changed_ids + other.changed_ids,
                                self.new_count + other.new_count)


@dataclass(frozen=True)
class SavedVocabulary:
    """One fitted vocabulary: its split files' folder and count, its state entry (``info``:
    ``size``, ``null_count``, ``value_count``...) and the fsspec options to read it."""

    directory: str
    info: dict[str, Any]
    storage_options: Any = None

    @classmethod
    def of(cls, artifacts_dir: str | None, info: dict[str, Any],
           storage_options: Any = None) -> SavedVocabulary:
        return cls(resolve(artifacts_dir, info["path"], "vocabulary path"), info,
                   storage_options or None)

    @property
    def splits(self) -> int:
        return int(self.info["splits"])

    def paths(self) -> list[str]:
        return [split_path(self.directory, s) for s in range(self.splits)]

    def read(self, split: int | None = None) -> pa.Table:
        """One split's ``value, count, index`` rows, or every split's (``None``)."""
        paths = self.paths() if split is None else [split_path(self.directory, split)]
        tables = [read_checked(p, self.storage_options).select(["value", "count", "index"])
                  for p in paths]
        return pa.concat_tables(tables, promote_options="permissive")


def compare(old: SavedVocabulary, new: SavedVocabulary) -> VocabularyChange:
    """:func:`compare_tables` of two saved vocabularies, split by split when their splits
    match, without reading them when they are the same files."""
    if _same_files(old, new):
        return VocabularyChange()
    if old.splits == new.splits:
        total = VocabularyChange()
        for s in range(old.splits):
            total = total + compare_tables(old.read(s), new.read(s))
        return total
    return compare_tables(old.read(), new.read())


def _same_files(old: SavedVocabulary, new: SavedVocabulary) -> bool:
    """Whether both are the same local files (hard links of one another count: files are
    replaced, never rewritten in place)."""
    if old.splits != new.splits or storage.is_remote(old.directory) \
            or storage.is_remote(new.directory):
        return False
    try:
        return all(os.path.samefile(a, b) for a, b in zip(old.paths(), new.paths(),
                                                             strict=True))
    except OSError:  # a file is missing: reading it names it
        return False


def compare_tables(old: pa.Table, new: pa.Table) -> VocabularyChange:
    """The change from vocabulary table ``old`` to ``new`` (each ``value, count, index``,
    one row per value)."""
    old_values, new_values = comparable(old["value"], new["value"])
    new_counts = new["count"].to_numpy().astype(np.int64)
    if old_values is None:  # values of different kinds: none in common
        return VocabularyChange(new.num_rows, old.num_rows, 0, int(new_counts.sum()))
    position = pc.index_in(new_values, value_set=old_values)
    found = pc.is_valid(position).to_numpy(zero_copy_only=False)
    at = position.to_numpy(zero_copy_only=False)[found].astype(np.int64)
    old_ids = old["index"].to_numpy().astype(np.int64)[at]
    new_ids = new["index"].to_numpy().astype(np.int64)[found]
    common = int(found.sum())
    return VocabularyChange(new.num_rows - common, old.num_rows - common,
                            int((old_ids != new_ids).sum()), int(new_counts[~found].sum()))


_KINDS = ((pa.types.is_integer, pa.int64()), (pa.types.is_floating, pa.float64()),
          (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)
           or pa.types.is_string_view(t), pa.large_string()),
          (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), pa.large_binary()))


def comparable(old: pa.ChunkedArray | pa.Array, new: pa.ChunkedArray | pa.Array
               ) -> tuple[pa.Array | None, pa.Array | None]:
    """Both value columns as arrays of one type, or ``(None, None)`` when their values are of
    different kinds.

    >>> a, b = comparable(pa.array([1, 2], pa.int32()), pa.array([2], pa.int64()))
    >>> a.type, b.type
    (DataType(int64), DataType(int64))
    >>> comparable(pa.array([1]), pa.array(["1"]))
    (None, None)
    """
    old, new = (_plain(c) for c in (old, new))
    if old.type == new.type:
        return old, new
    for is_kind, common in _KINDS:
        if is_kind(old.type) and is_kind(new.type):
            try:
                return old.cast(common), new.cast(common)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # uint64 past int64: as
                return old.cast(pa.string()), new.cast(pa.string())  # exact decimal text
    return None, None


def _plain(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.dictionary_decode() if pa.types.is_dictionary(values.type) else values
