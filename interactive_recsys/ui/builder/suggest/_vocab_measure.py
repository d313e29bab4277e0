"""Measured vocabularies: exact value counts of categorical columns, for Suggest.

A sample of the first rows says little about a column's vocabulary at millions of rows:
mid-size vocabularies stop growing where the sample's curve says they go on, long tails grow
where it says they stop. Suggest therefore counts every row, with the engine's own counting
pass (:func:`~interactive_recsys.stats._counting.column_counts`, the tree reduction
``Categorify`` fits with), and keeps only the *count histogram* per column (how many values
occur ``k`` times), which is small however large the vocabulary is. From it the table of
any ``freq_threshold`` and the lookups it loses are exact (``_vocab_budget``).

>>> import pandas as pd, interactive_recsys as irs
>>> ds = irs.Dataset(pd.DataFrame({"c": ["a", "b", "a", None, "c", "a"]}))
>>> m = measure_columns(ds, ["c"])["c"]
>>> m.histogram, m.distinct, m.lookups, m.nulls, m.rows
(((1, 2), (3, 1)), 3, 6, 1, 6)
>>> m.lost(2)   # freq_threshold=2 drops b and c: 2 of the 5 non-null lookups
0.4
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from interactive_recsys.io._dataset import Dataset
from interactive_recsys.stats._counting import column_counts
from interactive_recsys.stats._lookup_loss import LookupLoss


@dataclass(frozen=True)
class MeasuredColumn:
    """The counts of one column over every row: ``histogram`` pairs ``(k, values seen k
    times)`` by rising ``k`` (non-null values), ``lookups`` (values looked up, nulls
    included), ``nulls``, and ``rows`` counted."""

    name: str
    histogram: tuple[tuple[int, int], ...]
    lookups: int
    nulls: int
    rows: int

    @property
    def distinct(self) -> int:
        return sum(f for _, f in self.histogram)

    @property
    def nonnull(self) -> int:
        return self.lookups - self.nulls

    def lost(self, freq_threshold: int) -> float:
        """Share of the non-null lookups that ``Categorify(freq_threshold=...)`` sends out of
        vocabulary (values seen fewer than ``freq_threshold`` times)."""
        lost = sum(k * f for k, f in self.histogram if k < freq_threshold)
        return LookupLoss(self.name, lost, self.nonnull).share


def measure_columns(dataset: Dataset, columns: Sequence[str]) -> dict[str, MeasuredColumn]:
    """Count every value of ``columns`` over the whole ``dataset`` (one pass, on the active
    Dask client or the local scheduler)."""
    columns = list(columns)
    if not columns:
        return {}
    counted = column_counts(dataset, columns)
    out = {}
    for name in columns:
        c = counted[name]
        hist = c["histogram"]
        pairs = tuple(sorted((int(k), int(f)) for k, f in zip(hist.counts, hist.ids,
                                                                      strict=True)))
        out[name] = MeasuredColumn(name, pairs, int(c["lookups"]), int(c["nulls"]),
                                   int(c["lookups"]))
    return out
