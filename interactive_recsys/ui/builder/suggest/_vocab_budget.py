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

How the options of all columns are combined under the memory budget (thresholds within the
lookup budget first, then smaller dimensions for the largest tables) is
``_vocab_choose``. A column whose whole table is under ``SMALL_TABLE`` (1 MiB) is
left alone: dropping its rare values saves nothing worth a lookup.

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
from collections.abc import Mapping
from dataclasses import dataclass

from interactive_recsys.embedding import embedding_dim

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
    #: what :func:`~interactive_recsys.ui.builder.suggest.choose` holds under ``max_loss``
    lost_bound: float = 0.0
    #: the embedding dimension Suggest lowered this table to (a power of two) to fit the
    #: memory budget; ``None``: the rule's (:attr:`rule_dim`)
    dim_cap: int | None = None

    @property
    def rule_dim(self) -> int:
        """NVTabular's dimension for the table
        (:func:`~interactive_recsys.embedding_dim`)."""
        return embedding_dim(self.table_rows)

    @property
    def dim(self) -> int:
        """The table's dimension: the rule's, or the lower :attr:`dim_cap`."""
        rule = self.rule_dim
        return rule if self.dim_cap is None else min(rule, self.dim_cap)

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
    #: the table of every value is under ``SMALL_TABLE``: never thresholded
    small: bool = False

    @property
    def exact(self) -> bool:
        return self.counted_rows is not None

    @property
    def kept_ids(self) -> int:
        """Values the vocabulary keeps (the table less its reserved rows)."""
        return self.option.table_rows - RESERVED_ROWS

    @property
    def lost_text(self) -> str:
        """Lookups lost, with the uncertainty: exact when counted, else estimated with its
        upper bound at two standard errors."""
        o = self.option
        if self.exact or o.lost_bound <= o.lost:
            return f"{o.lost:.2%}"
        return f"~{o.lost:.2%} (≤ {o.lost_bound:.2%})"

    def describe(self) -> str:
        o = self.option
        rule = f"freq_threshold={o.freq_threshold}" if o.freq_threshold else "every value"
        mark = "" if self.exact else "~"
        dim = f"{o.dim}" if o.dim == o.rule_dim else f"{o.dim} (rule: {o.rule_dim})"
        return (f"{self.column}: {mark}{self.distinct:,} distinct, {rule}: {mark}"
                f"{self.kept_ids:,} ids x dim {dim} ({o.nbytes / 2**20:,.1f} MiB), "
                f"{self.lost_text} of non-null lookups lost")


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
