"""Vocabulary size by effect: how many lookups a ``Categorify`` threshold sends out of vocabulary.

For a categorical column, the sample's *count histogram* (``f_k`` values seen exactly ``k``
times among ``n`` sampled rows of ``N``) tells what a frequency threshold would cost.
With ``p = n / N``, a value seen ``k`` times in the sample occurs about ``k / p`` times in
the whole data. Keeping the values seen at least ``cut`` times in the sample corresponds to
the full-data threshold ``freq_threshold = t`` with ``t * p = cut - 1 + p - sqrt(cut - 1) *
(1 - p)`` (``k / p`` occurrences less one Poisson standard deviation, leaning to keeping the
values the sample cannot place; exactly ``cut`` when the sample is the whole data); every cut
the histogram allows is an option, and:

* **lookups lost** (non-null rows that become out-of-vocabulary): the share of the
  sample's non-null rows whose value was seen fewer than ``cut`` times. Rare values that
  the sample shows once stand for values anywhere around ``1 / p`` occurrences; counting all
  of them lost over-counts more than it misses (rarer values dominate a long tail), so the
  estimate errs on the safe side;
* **table rows**: the values seen at least ``t * p`` times, plus the reserved indices (padding,
  null and out-of-vocabulary). Without a threshold every value is kept: nothing is lost and
  the table holds the estimated distinct count (:func:`.estimate_distinct`).

:func:`choose` keeps every value of every column while all the tables together fit
``memory_budget`` bytes of fp32 weights (dimensions by NVTabular's rule,
:func:`~interactive_recsys.embedding.embedding_dim`). Only when they do not does it raise
thresholds, where that saves the most memory per lookup lost: first within ``max_loss`` of
each column's lookups, then beyond, until they fit; it says so (``fits`` and each column's
``lost``). A column whose whole table is under :data:`SMALL_TABLE` (1 MiB) is never
thresholded: dropping its rare values saves nothing worth a lookup.

With measured counts (``sample_rows == total_rows``: :mod:`._vocab_measure` counts every
row) the options are exact: the lookups a threshold loses are what ``Categorify`` will
send out of vocabulary.

>>> hist = {1: 500, 2: 100, 50: 10, 1000: 1}   # 500 singletons, ..., one value seen 1000x
>>> options = column_options(hist, sample_rows=2200, total_rows=2200, distinct=611)
>>> [(o.freq_threshold, o.table_rows, round(o.lost, 3)) for o in options[:4]]
[(0, 614, 0.0), (2, 114, 0.227), (3, 14, 0.318), (51, 4, 0.545)]
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from interactive_recsys.embedding import embedding_dim
from interactive_recsys.stats._memory_plan import parse_memory

#: Default share of a column's non-null lookups that may become out-of-vocabulary.
MAX_LOSS = 0.01
#: Default memory of all the embedding tables (fp32 weights, no optimizer state).
MEMORY_BUDGET = 16 * 2**30
#: Indices ``Categorify`` reserves before the vocabulary: padding, null, out-of-vocabulary.
RESERVED_ROWS = 3
#: A column whose whole table (every value) is smaller than this is never thresholded.
SMALL_TABLE = 2**20
_BYTES_PER_WEIGHT = 4


@dataclass(frozen=True)
class VocabOption:
    """One choice for a column: a ``freq_threshold`` (0: keep every value) and its effect."""

    freq_threshold: int
    table_rows: int
    #: share of non-null lookups estimated to become out-of-vocabulary
    lost: float
    #: ``lost`` plus two standard errors of the sample (a value's rows are lost together):
    #: what :func:`choose` holds under ``max_loss``
    lost_bound: float = 0.0

    @property
    def dim(self) -> int:
        return embedding_dim(self.table_rows)

    @property
    def nbytes(self) -> int:
        """fp32 weights of the table."""
        return self.table_rows * self.dim * _BYTES_PER_WEIGHT


@dataclass(frozen=True)
class VocabChoice:
    """The option chosen for ``column``, and the distinct-value estimate it came from."""

    column: str
    distinct: int
    option: VocabOption
    #: rows counted to measure the column (exact counts); ``None``: estimated from a sample
    counted_rows: int | None = None
    #: the table of every value is under :data:`SMALL_TABLE`: never thresholded
    small: bool = False

    @property
    def exact(self) -> bool:
        return self.counted_rows is not None

    @property
    def kept_text(self) -> str:
        """Lookups kept, with the uncertainty: exact when counted, else a lower bound."""
        o = self.option
        if self.exact or o.lost_bound <= o.lost:
            return f"{1 - o.lost:.1%}"
        return f"{1 - o.lost:.1%} (≥ {1 - o.lost_bound:.1%})"

    def describe(self) -> str:
        o = self.option
        rule = f"freq_threshold={o.freq_threshold}" if o.freq_threshold else "every value"
        mark = "" if self.exact else "~"
        return (f"{self.column}: {mark}{self.distinct:,} distinct, {rule}: {o.table_rows:,} "
                f"rows x {o.dim} ({o.nbytes / 2**20:,.1f} MiB), {self.kept_text} of lookups "
                "kept")


def column_options(histogram: Mapping[int, int], sample_rows: int, total_rows: int | None,
                   distinct: int) -> list[VocabOption]:
    """Every option for one column, from no threshold to the largest one the sample shows.

    ``histogram`` maps a sample count ``k`` to the number of values seen ``k`` times
    (non-null); ``distinct`` is the column's estimated distinct count. Options come by
    rising threshold (shrinking table, growing loss).
    """
    nonnull = sum(k * f for k, f in histogram.items())
    options = [VocabOption(0, distinct + RESERVED_ROWS, 0.0)]
    if not nonnull:
        return options
    p = min(1.0, sample_rows / total_rows) if total_rows else 1.0
    counts = sorted(histogram)
    # values seen at least counts[i] times in the sample
    at_least = list(itertools.accumulate(histogram[k] for k in reversed(counts)))[::-1]
    lost_rows = lost_squares = 0
    for k in counts[:-1]:  # cut = k + 1: the values seen k times or fewer go
        lost_rows += k * histogram[k]
        lost_squares += k * k * histogram[k]
        lost = lost_rows / nonnull
        # a value's rows are lost together: the sample's standard error of ``lost``
        bound = lost + 2 * math.sqrt(lost_squares) / nonnull if p < 1 else lost
        # the full-data threshold: k / p occurrences, less one Poisson standard deviation
        # (values around it are dropped or kept by chance in the sample; lean to keeping)
        threshold = max(2, math.ceil((k + p - math.sqrt(k) * (1 - p)) / p - 1e-9))
        # the table: values expected at least ``threshold`` times, seen >= threshold * p;
        # below one sighting the sample cannot tell: every value (an upper bound)
        kept = at_least[bisect.bisect_left(counts, threshold * p - 1e-9)] \
            if threshold * p >= 1 else distinct
        if kept + RESERVED_ROWS >= options[-1].table_rows:
            continue  # loses lookups without a smaller table
        options.append(VocabOption(threshold, kept + RESERVED_ROWS, lost, bound))
    return options


def choose(columns: Mapping[str, tuple[Sequence[VocabOption], int]],
           max_loss: float = MAX_LOSS,
           memory_budget: int | str = MEMORY_BUDGET,
           counted_rows: Mapping[str, int] | None = None) -> tuple[list[VocabChoice], bool]:
    """Per column (``name -> (options, distinct)``) the chosen option; and whether all fit.

    ``counted_rows``: per column, the rows counted when its options are exact.

    >>> a = column_options({1: 900, 100: 1}, 1000, 1000, 901)    # a long tail
    >>> b = column_options({1: 5, 500: 2}, 1005, 1005, 7)        # a few values, rare noise
    >>> chosen, fits = choose({"a": (a, 901), "b": (b, 7)})      # all fits: every value
    >>> [(c.column, c.option.freq_threshold, c.small) for c in chosen], fits
    ([('a', 0, True), ('b', 0, True)], True)
    >>> big = column_options({1: 100_000, 10**7: 1}, 10**7 + 10**5, 10**7 + 10**5, 100_001)
    >>> chosen, fits = choose({"big": (big, 100_001), "b": (b, 7)}, memory_budget=2**20)
    >>> [(c.column, c.option.freq_threshold, f"{c.option.lost:.2%}") for c in chosen], fits
    ([('big', 2, '0.99%'), ('b', 0, '0.00%')], True)
    """
    budget = parse_memory(memory_budget, "memory_budget")
    counted_rows = counted_rows or {}
    names = list(columns)
    small = {n for n in names if columns[n][0][0].nbytes < SMALL_TABLE}
    index = dict.fromkeys(names, 0)
    total = sum(columns[n][0][0].nbytes for n in names)
    for limit in (max_loss, math.inf):  # thresholds within max_loss first, then beyond
        while total > budget:
            best, best_rate = None, -1.0
            for n in names:
                options, i = columns[n][0], index[n]
                if n in small or i + 1 >= len(options) or options[i + 1].lost_bound > limit:
                    continue
                saved = options[i].nbytes - options[i + 1].nbytes
                cost = max(options[i + 1].lost - options[i].lost, 1e-12)
                if saved > 0 and saved / cost > best_rate:
                    best, best_rate = n, saved / cost
            if best is None:
                break
            options = columns[best][0]
            total -= options[index[best]].nbytes - options[index[best] + 1].nbytes
            index[best] += 1
    while total <= budget:  # steps overshoot: take back those that still fit, most loss first
        best, best_rate = None, -1.0
        for n in names:
            options, i = columns[n][0], index[n]
            if i == 0:
                continue
            added = options[i - 1].nbytes - options[i].nbytes
            regained = options[i].lost - options[i - 1].lost
            if total + added <= budget and regained / max(added, 1) > best_rate:
                best, best_rate = n, regained / max(added, 1)
        if best is None:
            break
        options = columns[best][0]
        total += options[index[best] - 1].nbytes - options[index[best]].nbytes
        index[best] -= 1
    chosen = [VocabChoice(n, columns[n][1], columns[n][0][index[n]], counted_rows.get(n),
                          n in small) for n in names]
    return chosen, total <= budget
