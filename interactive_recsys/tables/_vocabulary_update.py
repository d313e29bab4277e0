"""Extending a fitted vocabulary with new data, keeping every id it gave (``Workflow.update``).

A vocabulary (:mod:`.vocabulary`) is ``value, count, index`` in split files. Updating it with
the counts of the new data only (a fit of the new data without threshold or size cap):

* every value already in the vocabulary keeps its index; its count becomes the cumulative
  count;
* values not in it are *candidates*, ordered by their count in the new data, ties by value
  (the order of the new data's own vocabulary);
* with ``freq_threshold``, a candidate's cumulative count is its new count plus its *pending*
  count: the values below the threshold are kept with their counts next to the vocabulary
  (``pending.NNNNN.parquet``), so a value that crosses the threshold on day 3 gets its id on
  day 3; the others stay pending with their summed counts;
* with ``max_frequency``, a value whose cumulative count exceeds it is *cut*: kept with its
  count next to the vocabulary (``cut.NNNNN.parquet``), never given an id; a value of the
  vocabulary that crosses it is cut too, and its id *retired* (no value has it any more: the
  ids of the others never move), so that the cut is exactly the one a fit on all the data
  makes;
* with ``max_size``, candidates are appended only while the vocabulary has room (ids issued,
  retired ones included): the rest are refused and counted in the report;
* appended candidates get the indices after the last one issued, in candidate order.

The result is written as new split files (by the same value hash as the fit, so lookups work
unchanged); the old files are only read.

>>> import pyarrow as pa
>>> old = pa.table({"value": ["a", "b"], "count": [5, 3], "index": [3, 4]})
>>> new = pa.table({"value": ["c", "b", "d", "e"], "count": [4, 2, 1, 1], "index": [3, 4, 5, 6]})
>>> out = extend(old, new, pa.table({"value": ["d"], "count": [1]}), threshold=2)
>>> out.vocabulary.to_pylist()[2:]   # b counted 5 times; c appended, then d (1 + 1 pending)
[{'value': 'c', 'count': 4, 'index': 5}, {'value': 'd', 'count': 2, 'index': 6}]
>>> out.pending.to_pylist(), out.appended, out.promoted
([{'value': 'e', 'count': 1}], 2, 1)
>>> capped = extend(old, new, max_frequency=4)   # a (5 + 0) and b (3 + 2) now exceed 4
>>> capped.vocabulary.to_pydict()   # their ids 3 and 4 retired; c (4) appended after them
{'value': ['c', 'd', 'e'], 'count': [4, 1, 1], 'index': [5, 6, 7]}
>>> sorted(capped.cut.to_pylist(), key=str), capped.retired
([{'value': 'a', 'count': 5}, {'value': 'b', 'count': 5}], 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.hashing import hash_array
from interactive_recsys.store import storage
from interactive_recsys.tables._vocabulary import split_counts, split_path, write_table_file
from interactive_recsys.tables._vocabulary_check import read_checked


def pending_path(directory: str, split: int) -> str:
    """The file of one split's values below the threshold (``value, count``)."""
    return storage.join(directory, f"pending.{split:05d}.parquet")


def read_pending(directory: str, splits: int, storage_options: Any = None) -> pa.Table:
    """Every split's pending values and counts."""
    tables = [read_checked(pending_path(directory, s), storage_options) for s in range(splits)]
    return pa.concat_tables(tables, promote_options="permissive")


def cut_path(directory: str, split: int) -> str:
    """The file of one split's values cut by ``max_frequency`` (``value, count``)."""
    return storage.join(directory, f"cut.{split:05d}.parquet")


def read_cut(directory: str, splits: int, storage_options: Any = None) -> pa.Table:
    """Every split's values cut by ``max_frequency``, with their counts."""
    tables = [read_checked(cut_path(directory, s), storage_options) for s in range(splits)]
    return pa.concat_tables(tables, promote_options="permissive")


@dataclass
class Extended:
    """An extended vocabulary: the table (sorted by index), the values still below the
    threshold, and what the update did."""

    vocabulary: pa.Table
    pending: pa.Table
    appended: int
    refused: int
    promoted: int
    #: the values cut by ``max_frequency`` (``value, count``: cumulative counts)
    cut: pa.Table | None = None
    #: ids of the vocabulary whose value this update cut (no value has them any more)
    retired: int = 0


def extend(old: pa.Table, new: pa.Table, pending: pa.Table | None = None, *,
           first_vocab_index: int = 3, threshold: int = 0, max_size: int | None = None,
           max_frequency: int | None = None, cut: pa.Table | None = None,
           next_index: int | None = None) -> Extended:
    """``old`` (``value, count, index`` sorted by index, the indices from
    ``first_vocab_index`` up to ``next_index``, the next one to issue: the first after
    ``old``'s when None) extended with ``new``, the new data's vocabulary (``value, count,
    index``: its own ranking), as the module says; ``cut``: the values ``max_frequency``
    cut before, with their counts."""
    kind = old["value"].type
    none = pa.table({"value": pa.array([], kind), "count": pa.array([], pa.int64())})
    next_index = first_vocab_index + old.num_rows if next_index is None else next_index
    new = new.filter(pc.is_valid(new["value"]))
    new = new.take(pc.sort_indices(new, sort_keys=[("index", "ascending")]))
    new = new.set_column(0, "value", _cast(new["value"], kind))
    counts = new["count"].to_numpy(zero_copy_only=False).astype(np.int64)
    # the old values: cumulative counts, same indices
    kept = pa.table({"value": old["value"], "count": _plus(old, new, counts),
                     "index": old["index"]})
    cut = _values_table(cut if cut is not None else none, kind)
    cut = cut.set_column(1, "count", pa.array(_plus(cut, new, counts), pa.int64()))
    retired = 0
    if max_frequency is not None:  # a value of the vocabulary past it: cut, its id retired
        over = kept["count"].to_numpy(zero_copy_only=False) > max_frequency
        retired = int(over.sum())
        cut = pa.concat_tables([cut, kept.filter(pa.array(over)).select(["value", "count"])
                                .cast(cut.schema)])
        kept = kept.filter(pa.array(~over))
    # the candidates, in the new data's order
    fresh = ~(pc.is_in(new["value"], value_set=old["value"]).to_numpy(zero_copy_only=False)
              | pc.is_in(new["value"], value_set=cut["value"]).to_numpy(zero_copy_only=False))
    candidates = new.filter(pa.array(fresh))
    cumulative = counts[fresh]
    promoted = np.zeros(candidates.num_rows, dtype=bool)
    still = none
    if threshold > 1:
        pending = _values_table(pending if pending is not None else none, kind)
        at = pc.index_in(candidates["value"], value_set=pending["value"])
        seen = pc.is_valid(at).to_numpy(zero_copy_only=False)
        before = np.zeros(candidates.num_rows, dtype=np.int64)
        before[seen] = pending["count"].to_numpy(zero_copy_only=False)[
            pc.filter(at, pc.is_valid(at)).to_numpy()]
        cumulative = cumulative + before
        enough = cumulative >= threshold
        promoted = seen & enough
        untouched = pending.filter(pc.invert(pc.is_in(pending["value"],
                                                      value_set=candidates["value"])))
        below = pa.table({"value": candidates["value"].filter(pa.array(~enough)),
                          "count": pa.array(cumulative[~enough], pa.int64())})
        still = pa.concat_tables([untouched.select(["value", "count"]).cast(below.schema),
                                  below])
        candidates, cumulative = candidates.filter(pa.array(enough)), cumulative[enough]
        promoted = promoted[enough]
    if max_frequency is not None:  # a new value past it: cut, never given an id
        over = cumulative > max_frequency
        cut = pa.concat_tables([cut, pa.table({
            "value": candidates["value"].filter(pa.array(over)),
            "count": pa.array(cumulative[over], pa.int64())}).cast(cut.schema)])
        candidates, cumulative = candidates.filter(pa.array(~over)), cumulative[~over]
        promoted = promoted[~over]
    refused = 0
    if max_size is not None:
        room = max(max_size - (next_index - first_vocab_index), 0)
        refused = max(candidates.num_rows - room, 0)
        candidates, cumulative = candidates.slice(0, room), cumulative[:room]
        promoted = promoted[:room]
    appended = pa.table({"value": candidates["value"],
                         "count": pa.array(cumulative, pa.int64()),
                         "index": pa.array(np.arange(candidates.num_rows, dtype=np.int64)
                                           + next_index, pa.int64())})
    vocabulary = pa.concat_tables([kept.cast(appended.schema), appended])
    return Extended(vocabulary, still, candidates.num_rows, refused, int(promoted.sum()),
                    cut if max_frequency is not None else None, retired)


def _plus(table: pa.Table, new: pa.Table, counts: np.ndarray) -> np.ndarray:
    """``table``'s counts plus the new data's ``counts`` of the same values."""
    at = pc.index_in(table["value"], value_set=new["value"])
    found = pc.is_valid(at).to_numpy(zero_copy_only=False)
    added = np.zeros(table.num_rows, dtype=np.int64)
    added[found] = counts[pc.filter(at, pc.is_valid(at)).to_numpy()]
    return table["count"].to_numpy(zero_copy_only=False).astype(np.int64) + added


def _values_table(table: pa.Table, kind: pa.DataType) -> pa.Table:
    """A ``value, count`` table (pending or cut values) with values of type ``kind``."""
    return pa.table({"value": _cast(table["value"], kind),
                     "count": pc.cast(table["count"], pa.int64())})


def write(extended: Extended, directory: str, splits: int, first_vocab_index: int,
          storage_options: Any = None, pending: bool = False) -> dict[str, int]:
    """Write the extended vocabulary (and the pending counts, and the values cut by
    ``max_frequency``) as ``splits`` split files under ``directory``, split by the fit's
    value hash; its size and in-vocabulary count."""
    table = extended.vocabulary
    if table.num_rows and int(pc.min(table["index"]).as_py()) < first_vocab_index:
        raise ValueError("a vocabulary index below the reserved rows")  # never: a bug
    for s, piece in enumerate(split_counts(table, splits)):
        piece = piece.take(pa.array(np.argsort(hash_array(piece["value"]))))
        write_table_file(piece, split_path(directory, s), storage_options,
                         use_dictionary=["count"])
    if pending:
        for s, piece in enumerate(split_counts(extended.pending, splits)):
            write_table_file(piece, pending_path(directory, s), storage_options)
    if extended.cut is not None:
        for s, piece in enumerate(split_counts(extended.cut, splits)):
            write_table_file(piece, cut_path(directory, s), storage_options)
    return {"size": table.num_rows,
            "count": int(pc.sum(table["count"]).as_py() or 0) if table.num_rows else 0}


def _cast(values: Any, kind: pa.DataType) -> Any:
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values if values.type == kind else pc.cast(values, kind)

