"""Statistics of one embedding table, gathered from a fitted workflow or from a dataset.

From a fitted workflow, every Categorify vocabulary is one table: its ``count`` column
(the lookups of each id in the fit data) and the null and out-of-vocabulary counts kept in
the fitted state; columns encoded with only a known cardinality (``HashBucket``) are tables
without a frequency distribution. From a dataset, the values of every categorical column
are counted (:mod:`.counting`) and the vocabulary Categorify would build is derived.

Index layout (see :mod:`interactive_recsys.ops._categorify`): ``0`` padding, ``1`` null,
``2 .. 2+B-1`` out-of-vocabulary (``B`` hashed buckets, or one), then the vocabulary by
descending count, so ``cardinality = 2 + B + vocabulary size``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interactive_recsys.errors import NotFittedError, SchemaError
from interactive_recsys.io._dataset import Dataset
from interactive_recsys.ops._categorify import Categorify
from interactive_recsys.schema import Tags, is_list_dtype
from interactive_recsys.stats._counting import column_counts
from interactive_recsys.stats._frequency import CountHistogram
from interactive_recsys.stats._list_lengths import LengthStats, add_histograms
from interactive_recsys.stats._lookup_loss import LookupLoss
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._layout import FIRST_FREE_INDEX

RESERVED = FIRST_FREE_INDEX  # padding and null
INDEX_BYTES = {"int32": 4, "int64": 8}


@dataclass
class TableStats:
    """One embedding table.

    ``frequency`` is the histogram of the vocabulary ids' lookup counts (``None`` when
    unknown, e.g. hashed columns); ``lookups`` counts every value looked up (rows, or list
    elements), nulls and out-of-vocabulary values included.
    """

    name: str
    columns: list[str]
    cardinality: int
    oov_buckets: int
    vocab_size: int
    lookups: int | None = None
    null_count: int | None = None
    oov_count: int | None = None
    frequency: CountHistogram | None = None
    lengths: LengthStats | None = None
    index_dtype: str = "int64"
    source: str = "vocabulary"
    notes: list[str] = field(default_factory=list)
    #: the vocabulary's version (1: fitted; +1 per ``Workflow.update``) and the ids the last
    #: update appended, ``(start, stop)`` (None before any update)
    vocabulary_version: int = 1
    new_rows: tuple[int, int] | None = None

    @property
    def is_list(self) -> bool:
        return self.lengths is not None

    @property
    def null_rate(self) -> float | None:
        """Nulls among all lookups (nulls included)."""
        return self.null_count / self.lookups if self.lookups else None

    @property
    def oov_rate(self) -> float | None:
        """Out-of-vocabulary lookups among *all* lookups (nulls included); the views show
        :attr:`oov_share` instead."""
        return self.oov_count / self.lookups if self.lookups else None

    @property
    def loss(self) -> LookupLoss | None:
        """The out-of-vocabulary lookups among the non-null ones (None when not counted)."""
        if self.lookups is None or self.null_count is None or self.oov_count is None:
            return None
        return LookupLoss.of_counts(self.name, self.oov_count, self.lookups, self.null_count)

    @property
    def oov_share(self) -> float | None:
        """Out-of-vocabulary lookups among the *non-null* lookups: the Build tab's "lookups
        lost" and ``irs run --oov-budget``'s share (``LookupLoss.share``)."""
        loss = self.loss
        return None if loss is None or not loss.lookups else loss.share

    def lookup_histogram(self) -> CountHistogram | None:
        """Lookups per table row, reserved rows included: the null row serves the nulls and
        the out-of-vocabulary rows the unseen values (spread evenly over ``B`` hashed
        buckets: the split between buckets is not recorded)."""
        if self.frequency is None:
            return None
        extra_counts, extra_ids = [self.null_count or 0], [1]
        if self.oov_count:
            base, rest = divmod(self.oov_count, self.oov_buckets)
            extra_counts += [base + 1, base]
            extra_ids += [rest, self.oov_buckets - rest]
        return CountHistogram.combine([self.frequency, CountHistogram(extra_counts, extra_ids)])


def workflow_tables(workflow: Any) -> list[TableStats]:
    """The embedding tables of a fitted workflow, in output order."""
    if not workflow.fitted or workflow.input_schema is None:
        raise NotFittedError("EmbeddingReport needs a fitted workflow (its vocabularies hold "
                             "the counts): call wf.fit(dataset) first, or pass a Dataset.")
    found: list[tuple[list[str], TableStats]] = []  # (direct output names, table)
    for step in workflow.fitted_steps(Categorify):
        op, state = step.op, step.state
        outputs = op.output_names(list(step.groups))
        for key, info in state["vocabs"].items():
            directory = resolve(workflow.artifacts_dir, info["path"], "vocabulary path")
            counted = "value_count" in info  # a given vocabulary (vocabulary=) is not counted
            counts = [storage.read_table(vocab.split_path(directory, s),
                                         workflow.storage_options, ["count"])["count"]
                      .to_numpy() for s in range(info["splits"]) if counted]
            found.append(([c for c, k in outputs.items() if k == key], TableStats(
                name=key, columns=[], cardinality=int(info["cardinality"]),
                oov_buckets=op.oov_buckets, vocab_size=int(info["size"]),
                lookups=int(info["value_count"]) if counted else None,
                null_count=int(info["null_count"]) if counted else None,
                oov_count=int(info["oov_count"]) if counted else None,
                frequency=CountHistogram.from_counts(np.concatenate(counts)) if counted
                else None,
                index_dtype=op.dtype, source="vocabulary",
                vocabulary_version=int(info.get("version", 1)),
                new_rows=tuple(info["new_rows"]) if "new_rows" in info else None)))
    out: list[TableStats] = []
    for col in workflow.output_schema.values():
        if Tags.CATEGORICAL.value not in col.tags or col.cardinality is None:
            continue
        table = _table_of(col, found)
        if table is None:  # e.g. HashBucket: a known number of rows, no counts
            table = TableStats(name=col.name, columns=[], cardinality=col.cardinality,
                               oov_buckets=0, vocab_size=col.cardinality - RESERVED,
                               index_dtype=col.dtype.removeprefix("list<").rstrip(">"),
                               source="schema")
            table.notes.append("no counts: the operator keeps no vocabulary")
        table.columns.append(col.name)
        if all(t is not table for t in out):
            if any(t.name == table.name for t in out):  # one vocabulary key, two tables
                table.name = col.name
            out.append(table)
    for table in out:  # a renamed output names its table
        if table.name not in table.columns and len(table.columns) == 1:
            table.name = table.columns[0]
    return out


def _table_of(col: Any, found: list[tuple[list[str], TableStats]]) -> TableStats | None:
    """The Categorify table of an output column: by its name, else (renamed on the way) by
    its ``domain`` (the vocabulary key) when exactly one table of that size has it."""
    for names, table in found:
        if col.name in names:
            return table
    same = [t for _, t in found if t.name == col.properties.get("domain")
            and t.cardinality == col.cardinality]
    return same[0] if len(same) == 1 else None


def categorical_columns(ds: Dataset) -> list[str]:
    """Columns tagged categorical; else every string and list column."""
    tagged = [c.name for c in ds.schema.values() if Tags.CATEGORICAL.value in c.tags]
    return tagged or [c.name for c in ds.schema.values()
                      if c.dtype == "string" or is_list_dtype(c.dtype)]


def dataset_tables(ds: Dataset, columns: list[str] | None = None, *, freq_threshold: int = 0,
                   max_size: int | None = None, num_buckets: int | None = None,
                   index_dtype: str = "int64", splits: int | None = None) -> list[TableStats]:
    """The tables ``Categorify(freq_threshold, max_size, num_buckets)`` would build for
    ``columns`` (default: :func:`categorical_columns`), from counts over the whole dataset.

    >>> import pandas as pd
    >>> [t] = dataset_tables(Dataset(pd.DataFrame({"c": ["a", "a", "b", "c"]})),
    ...                      freq_threshold=2)
    >>> t.cardinality, t.vocab_size, t.oov_count   # pad, null, one OOV row + {a}
    (4, 1, 2)
    """
    columns = list(columns) if columns is not None else categorical_columns(ds)
    missing = [c for c in columns if c not in ds.schema]
    if missing:
        raise SchemaError(f"EmbeddingReport: columns {missing} are not in the dataset; its "
                          f"columns are {ds.schema.names}.")
    if not columns:
        raise SchemaError("EmbeddingReport found no categorical column in the dataset (no "
                          "column is tagged categorical, none is a string or list); pass "
                          "columns=[...].")
    counts = column_counts(ds, columns, splits)
    buckets = num_buckets or 1
    tables = []
    for name in columns:
        c = counts[name]
        kept = c["histogram"].truncate(freq_threshold, max_size)
        tables.append(TableStats(
            name=name, columns=[name], cardinality=RESERVED + buckets + kept.n_ids,
            oov_buckets=buckets, vocab_size=kept.n_ids, lookups=int(c["lookups"]),
            null_count=int(c["nulls"]), oov_count=c["histogram"].total - kept.total,
            frequency=kept, index_dtype=index_dtype, source="data",
            lengths=None if c["lengths"] is None else LengthStats(c["lengths"],
                                                                  INDEX_BYTES[index_dtype])))
    return tables


def add_list_lengths(tables: list[TableStats], ds: Dataset) -> None:
    """Measure the list lengths of the tables' list columns found in ``ds`` (same names)."""
    wanted = {c: t for t in tables for c in t.columns
              if c in ds.schema and is_list_dtype(ds.schema[c].dtype)}
    if not wanted:
        return
    counts = column_counts(ds, list(wanted), values=False)
    for name, table in wanted.items():
        previous = table.lengths.histogram if table.lengths is not None else None
        hist = add_histograms([counts[name]["lengths"], previous])  # joint groups add up
        table.lengths = LengthStats(hist, INDEX_BYTES.get(table.index_dtype, 8))
