"""For a column too large to keep whole, the hashed table in the same memory: a
``HashBucket`` bucket count and the share of its lookups that would share a row, shown
next to the lookups the threshold loses.

A column is *too large to keep whole* when Suggest had to drop its rare values to fit the
memory budget (its choice has a ``freq_threshold``: :mod:`._vocab_choose`). Hashing every
value instead (``HashBucket``) sends no lookup out of vocabulary, but makes lookups share
embedding rows. The proposal is the smallest power of two whose collision rate
(:func:`~interactive_recsys.hash_collision_rate`, measured on every row) is at most
``target``, the same budget as the lookups a threshold may lose (``max_loss``, 1%), among
the bucket counts whose table (the buckets, and the padding and null rows) fits in the rows
Suggest gave the column; the largest of them when none does.

In practice none does: with ``B`` buckets and ``D`` distinct values, a lookup collides when
one of the ``D - 1`` other values falls in its bucket, whatever the frequencies, about
``1 - exp(-D / B)`` of the lookups (63% at ``B = D``). A rate of 1% needs about ``100 D``
buckets, far more rows than keeping every value. The card says so with numbers: at equal
memory, the threshold loses a few lookups; the hashed table makes most of them share a row.

>>> choose_buckets({1024: 0.9, 2048: 0.6, 4096: 0.3}, target=0.5)
4096
>>> choose_buckets({1024: 0.9, 2048: 0.6, 4096: 0.3}, target=0.01)   # none: the largest
4096
>>> choose_buckets({1024: 0.9, 2048: 0.4, 4096: 0.3}, target=0.5)
2048
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from interactive_recsys.stats._hash_collisions import power_of_two_rates
from interactive_recsys.tables._layout import FIRST_FREE_INDEX
from interactive_recsys.ui.builder.suggest._vocab_budget import VocabChoice

#: The smallest bucket count proposed (smaller tables are not worth a hash).
MIN_BUCKETS = 1024


@dataclass(frozen=True)
class HashProposal:
    """``HashBucket(num_buckets)`` for ``column``: its ``collision_rate`` (share of non-null
    lookups whose bucket holds another value) against ``target``."""

    column: str
    num_buckets: int
    collision_rate: float
    target: float

    @property
    def within_target(self) -> bool:
        return self.collision_rate <= self.target

    def text(self) -> str:
        """``"1,048,576 buckets: 63.21% collide"``."""
        return f"{self.num_buckets:,} buckets: {self.collision_rate:.2%} collide"


def too_large(choice: VocabChoice) -> bool:
    """Whether Suggest dropped values of the column to fit the memory budget."""
    return choice.option.freq_threshold > 0


def largest_buckets(choice: VocabChoice) -> int:
    """The largest power of two whose hashed table fits in the rows of the choice's table.

    >>> from interactive_recsys.ui.builder.suggest._vocab_budget import VocabOption
    >>> largest_buckets(VocabChoice("c", 9000, VocabOption(2, 4099, 0.01)))   # 4096 + 2 rows
    4096
    """
    rows = max(choice.option.table_rows - FIRST_FREE_INDEX, 1)
    return 1 << (rows.bit_length() - 1)


def choose_buckets(rates: Mapping[int, float], target: float) -> int:
    """The smallest bucket count of ``rates`` whose rate is at most ``target``, else the
    largest (see the module docstring)."""
    within = [b for b, rate in rates.items() if rate <= target]
    return min(within) if within else max(rates)


def propose_hashing(dataset: Any, choices: Sequence[VocabChoice], target: float
                    ) -> dict[str, HashProposal]:
    """``{column: HashProposal}`` of every choice :func:`too_large`, from one pass over
    those columns (:func:`~interactive_recsys.stats._hash_collisions.power_of_two_rates`);
    empty when there is none."""
    bounds = {}
    for choice in choices:
        if too_large(choice):
            largest = largest_buckets(choice)
            bounds[choice.column] = (min(MIN_BUCKETS, largest), largest)
    if not bounds:
        return {}
    rates = power_of_two_rates(dataset, bounds)
    out = {}
    for column, by_count in rates.items():
        buckets = choose_buckets(by_count, target)
        out[column] = HashProposal(column, buckets, by_count[buckets], target)
    return out
