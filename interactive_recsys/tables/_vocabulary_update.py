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
* with ``max_size``, candidates are appended only while the vocabulary has room: the rest are
  refused and counted in the report;
* appended candidates get the indices after the current last one, in candidate order.

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


@dataclass
class Extended:
    """An extended vocabulary: the table (sorted by index), the values still below the
    threshold, and what the update did."""

    vocabulary: pa.Table
    pending: pa.Table
    appended: int
    refused: int
    promoted: int


def extend(old: pa.Table, new: pa.Table, pending: pa.Table | None = None, *,
           first_vocab_index: int = 3, threshold: int = 0,
           max_size: int | None = None) -> Extended:
    """``old`` (``value, count, index`` sorted by index, the indices contiguous from
    ``first_vocab_index``) extended with ``new``, the new data's vocabulary (``value, count,
    index``: its own ranking), as the module says."""
    kind = old["value"].type
    new = new.filter(pc.is_valid(new["value"]))
    new = new.take(pc.sort_indices(new, sort_keys=[("index", "ascending")]))
    new = new.set_column(0, "value", _cast(new["value"], kind))
    counts = new["count"].to_numpy(zero_copy_only=False).astype(np.int64)
    # the old values: cumulative counts, same indices
    at = pc.index_in(old["value"], value_set=new["value"])
    found = pc.is_valid(at).to_numpy(zero_copy_only=False)
    added = np.zeros(old.num_rows, dtype=np.int64)
    added[found] = counts[pc.filter(at, pc.is_valid(at)).to_numpy()]
    kept = pa.table({"value": old["value"],
                     "count": old["count"].to_numpy(zero_copy_only=False) + added,
                     "index": old["index"]})
    # the candidates, in the new data's order
    fresh = ~pc.is_in(new["value"], value_set=old["value"]).to_numpy(zero_copy_only=False)
    candidates = new.filter(pa.array(fresh))
    cumulative = counts[fresh]
    promoted = np.zeros(candidates.num_rows, dtype=bool)
    still = pa.table({"value": pa.array([], kind), "count": pa.array([], pa.int64())})
    if threshold > 1:
        pending = pending if pending is not None else still
        pending = pending.set_column(0, "value", _cast(pending["value"], kind))
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
    refused = 0
    if max_size is not None:
        room = max(max_size - old.num_rows, 0)
        refused = max(candidates.num_rows - room, 0)
        candidates, cumulative = candidates.slice(0, room), cumulative[:room]
        promoted = promoted[:room]
    start = first_vocab_index + old.num_rows
    appended = pa.table({"value": candidates["value"],
                         "count": pa.array(cumulative, pa.int64()),
                         "index": pa.array(np.arange(candidates.num_rows, dtype=np.int64)
                                           + start, pa.int64())})
    vocabulary = pa.concat_tables([kept.cast(appended.schema), appended])
    return Extended(vocabulary, still, candidates.num_rows, refused, int(promoted.sum()))


def write(extended: Extended, directory: str, splits: int, first_vocab_index: int,
          storage_options: Any = None, pending: bool = False) -> dict[str, int]:
    """Write the extended vocabulary (and the pending counts) as ``splits`` split files under
    ``directory``, split by the fit's value hash; its size and in-vocabulary count."""
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
    return {"size": table.num_rows,
            "count": int(pc.sum(table["count"]).as_py() or 0) if table.num_rows else 0}


def _cast(values: Any, kind: pa.DataType) -> Any:
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values if values.type == kind else pc.cast(values, kind)

