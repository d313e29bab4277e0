"""Suggest and ``Categorify(max_frequency=N)``: what a cut at ``N`` would send out of
vocabulary, and a cut proposed where one value holds an outsized share of a large column.

From the exact counts Suggest measured (:class:`.MeasuredColumn`'s histogram: how many values
occur ``k`` times), a cut at ``N`` removes the values seen more than ``N`` times: their number
and the share of the column's non-null rows they hold follow exactly
(:func:`frequency_cut`).

A value is *outsized* when it holds at least :data:`OUTSIZED_SHARE` (10%) of the non-null
rows of a column of at least :data:`MIN_DISTINCT` (1,000) distinct values, and is seen at
least :data:`OUTSIZED_GAP` (10) times as often as the most frequent value below that share.
In a column that large no real value (an item, a user) stands that far above the rest: the
head of a long-tailed (Zipf-like) column falls off gradually, its first value about twice as
frequent as its second; a placeholder (``"unknown"``, ``-1``), a bot or a spammer stands
apart. For such a column Suggest proposes the largest ``N`` that
cuts only the outsized values (:func:`outsized_cut`); it shows the proposal under its card,
and never sets it: whether those rows should train the out-of-vocabulary row is the
user's call (see ``tables._frequency_cut``). Columns with few values (a country, a device)
are never flagged: there one value often holds most rows.

>>> from interactive_recsys.ui.builder.suggest._vocab_measure import MeasuredColumn
>>> m = MeasuredColumn("user", ((1, 1500), (2, 500), (3000, 1)), 5500, 0, 5500)
>>> print(outsized_cut(m).text())   # one value holds 3,000 of the 5,500 rows
user: max_frequency=2 would cut 1 value holding 54.55% of its non-null rows
>>> frequency_cut(m, 1).values, round(frequency_cut(m, 1).share, 4)
(501, 0.7273)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from interactive_recsys.ui.builder.suggest._vocab_measure import MeasuredColumn

#: A value holding at least this share of a column's non-null rows is outsized...
OUTSIZED_SHARE = 0.10
#: ... in a column of at least this many distinct values, and seen at least this many times
#: as often as the most frequent value below that share.
MIN_DISTINCT = 1_000
OUTSIZED_GAP = 10


@dataclass(frozen=True)
class FrequencyCut:
    """``Categorify(max_frequency=max_frequency)`` on ``column``: the ``values`` it cuts
    and their ``share`` of the column's non-null rows."""

    column: str
    max_frequency: int
    values: int
    share: float

    def text(self) -> str:
        return (f"{self.column}: max_frequency={self.max_frequency:,} would cut "
                f"{self.values:,} value{'s' if self.values != 1 else ''} holding "
                f"{self.share:.2%} of its non-null rows")


def frequency_cut(measured: MeasuredColumn, max_frequency: int) -> FrequencyCut:
    """What ``max_frequency`` cuts of the column ``measured``, exactly."""
    nonnull = measured.nonnull
    cut = [(k, f) for k, f in measured.histogram if k > max_frequency]
    rows = sum(k * f for k, f in cut)
    return FrequencyCut(measured.name, int(max_frequency), sum(f for _, f in cut),
                        rows / nonnull if nonnull else 0.0)


def outsized_cut(measured: MeasuredColumn, share: float = OUTSIZED_SHARE,
                 min_distinct: int = MIN_DISTINCT,
                 gap: float = OUTSIZED_GAP) -> FrequencyCut | None:
    """The cut of the outsized values of ``measured`` (see the module docstring): the
    largest ``max_frequency`` that keeps every other value; None when it has none."""
    if measured.distinct < min_distinct or not measured.nonnull:
        return None
    limit = share * measured.nonnull
    kept = [k for k, _ in measured.histogram if k < limit]
    above = [k for k, _ in measured.histogram if k >= limit]
    if not kept or not above or min(above) < gap * max(kept):
        return None
    return frequency_cut(measured, max(kept))


def frequency_hints(measured: Mapping[str, MeasuredColumn] | None,
                    columns: Iterable[str] | None = None) -> list[FrequencyCut]:
    """The proposed cuts of the measured columns (of ``columns`` when given), in order."""
    measured = measured or {}
    names = list(measured) if columns is None else [c for c in columns if c in measured]
    return [cut for name in names if (cut := outsized_cut(measured[name])) is not None]
