"""The embedding tables within the memory budget: thresholds only as far as each column's
lookup budget allows, then smaller dimensions for the largest tables, and a plain account of
what it would take when even that does not fit.

From every column's options (:func:`~._vocab_budget.column_options`: by rising
``freq_threshold``, smaller tables, more lookups lost), :func:`choose` goes in three steps:

1. **Every value at NVTabular's dimension**
   (:func:`~interactive_recsys.embedding_dim`), while all the tables together fit
   ``memory_budget`` bytes of fp32 weights (16 GiB by default).
2. **Thresholds within the lookup budget.** Past the memory budget, thresholds rise where
   they save the most memory per lookup lost, but no column loses more than ``max_loss``
   (1%) of its non-null lookups (its upper bound ``lost_bound``, when estimated from a
   sample). The lookups a threshold ``t`` loses are those of the values seen fewer than ``t``
   times: exact from measured counts.
3. **Mixed dimensions** (Ginart et al., 2019, *Mixed Dimension Embedding Representations*).
   When every column is at its lookup budget and the tables still do not fit, the largest
   table (in bytes) takes the next smaller power of two as its dimension (77 -> 64 -> 32,
   512 -> 256), never under :data:`DIM_FLOOR` (16); then the largest again, until they fit.
   A hot table keeps its width as long as a larger one can give.

Once the tables fit, thresholds are taken back (most lookups regained per byte first) while
they still fit at the dimensions chosen: thresholds overshoot by a step, and halving a
dimension frees more than needed. A column whose whole table is under
``SMALL_TABLE`` (1 MiB) keeps every value and the rule's dimension.

When even every large table at :data:`DIM_FLOOR`, thresholded to the lookup budget, does not
fit, the plan is that one (the nearest to the budget that loses no more than ``max_loss``
anywhere), ``fits`` is ``False``, and :func:`shortfall` says by how much and what share of
lookups lost per column would fit: no column is crushed without the user asking for it.

>>> from interactive_recsys.ui.builder.suggest._vocab_budget import column_options
>>> wide = column_options({1: 1000, 2: 2_000, 400: 1}, 5400, 5400, 3001)  # a long tail
>>> head = column_options({1: 5, 500: 2}, 1005, 1005, 7)                    # small
>>> chosen, fits = choose({"wide": (wide, 3001), "head": (head, 7)}, memory_budget=200_000)
>>> [(c.column, c.option.freq_threshold, c.option.dim, c.option.rule_dim) for c in chosen]
[('wide', 0, 16, 142), ('head', 0, 16, 16)]
>>> fits   # 3004 rows x 16 x 4 bytes: no threshold loses <= 1%, the dimension gives
True
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from interactive_recsys.stats._memory_plan import parse_memory
from interactive_recsys.ui.builder.suggest._vocab_budget import (
    MAX_LOSS,
    MEMORY_BUDGET,
    SMALL_TABLE,
    VocabChoice,
    VocabOption,
)

#: Suggest never lowers an embedding dimension under this.
DIM_FLOOR = 16
GIB = 2**30
_BYTES_PER_WEIGHT = 4

Columns = Mapping[str, tuple[Sequence[VocabOption], int]]


def smaller_dim(dim: int) -> int:
    """The next dimension down: the largest power of two below ``dim``, not under
    :data:`DIM_FLOOR`.

    >>> [smaller_dim(d) for d in (512, 142, 77, 64, 17, 16)]
    [256, 128, 64, 32, 16, 16]
    """
    return max(DIM_FLOOR, 1 << ((dim - 1).bit_length() - 1))


def _nbytes(option: VocabOption, cap: int | None) -> int:
    dim = option.rule_dim if cap is None else min(option.rule_dim, cap)
    return option.table_rows * dim * _BYTES_PER_WEIGHT


class _Plan:
    """Per column the index of its option and its dimension cap, and the total bytes."""

    def __init__(self, columns: Columns) -> None:
        self.options = {n: list(opts) for n, (opts, _) in columns.items()}
        self.small = {n for n, opts in self.options.items() if opts[0].nbytes < SMALL_TABLE}
        self.index = dict.fromkeys(self.options, 0)
        self.cap: dict[str, int | None] = dict.fromkeys(self.options)
        self.total = sum(self.nbytes(n) for n in self.options)

    def nbytes(self, name: str, step: int = 0) -> int:
        """Bytes of ``name``'s table at its option ``index + step``."""
        return _nbytes(self.options[name][self.index[name] + step], self.cap[name])

    def move(self, name: str, step: int) -> None:
        self.total += self.nbytes(name, step) - self.nbytes(name)
        self.index[name] += step

    def option(self, name: str) -> VocabOption:
        option = self.options[name][self.index[name]]
        return option if self.cap[name] is None else replace(option, dim_cap=self.cap[name])


def _raise_thresholds(plan: _Plan, max_loss: float, budget: int) -> None:
    """Step 2: the next threshold where it saves the most bytes per lookup lost, within
    ``max_loss`` of every column, until the tables fit."""
    while plan.total > budget:
        best, best_rate = None, -1.0
        for n, options in plan.options.items():
            i = plan.index[n]
            if n in plan.small or i + 1 >= len(options) or options[i + 1].lost_bound > max_loss:
                continue
            saved = plan.nbytes(n) - plan.nbytes(n, 1)
            cost = max(options[i + 1].lost - options[i].lost, 1e-12)
            if saved > 0 and saved / cost > best_rate:
                best, best_rate = n, saved / cost
        if best is None:
            return
        plan.move(best, 1)


def _shrink_dims(plan: _Plan, budget: int) -> None:
    """Step 3: the largest table to the next smaller power of two, until the tables fit or
    every large table is at :data:`DIM_FLOOR`."""
    while plan.total > budget:
        sizes = {n: plan.nbytes(n) for n in plan.options
                 if n not in plan.small and plan.option(n).dim > DIM_FLOOR}
        if not sizes:
            return
        n = max(sizes, key=sizes.__getitem__)
        plan.cap[n] = smaller_dim(plan.option(n).dim)
        plan.total += plan.nbytes(n) - sizes[n]


def _take_back(plan: _Plan, budget: int) -> None:
    """Lower thresholds again while the tables still fit, most lookups regained per byte
    first."""
    while True:
        best, best_rate = None, -1.0
        for n, options in plan.options.items():
            i = plan.index[n]
            if i == 0:
                continue
            added = plan.nbytes(n, -1) - plan.nbytes(n)
            regained = options[i].lost - options[i - 1].lost
            if plan.total + added <= budget and regained / max(added, 1) > best_rate:
                best, best_rate = n, regained / max(added, 1)
        if best is None:
            return
        plan.move(best, -1)


def choose(columns: Columns, max_loss: float = MAX_LOSS,
           memory_budget: int | str = MEMORY_BUDGET,
           counted_rows: Mapping[str, int] | None = None) -> tuple[list[VocabChoice], bool]:
    """Per column (``name -> (options, distinct)``) the chosen option, its dimension in
    ``option.dim`` (see the module docstring); and whether all the tables fit.

    ``counted_rows``: per column, the rows counted when its options are exact.

    >>> from interactive_recsys.ui.builder.suggest._vocab_budget import column_options
    >>> a = column_options({1: 900, 100: 1}, 1000, 1000, 901)    # a long tail
    >>> b = column_options({1: 5, 500: 2}, 1005, 1005, 7)        # a few values, rare noise
    >>> chosen, fits = choose({"a": (a, 901), "b": (b, 7)})      # all fits: every value
    >>> [(c.column, c.option.freq_threshold, c.small) for c in chosen], fits
    ([('a', 0, True), ('b', 0, True)], True)
    >>> big = column_options({1: 10_000, 2: 10**6, 10**7: 1}, 12_010_000, 12_010_000,
    ...                      1_010_001)   # 10,000 singletons, a million values seen twice
    >>> chosen, fits = choose({"big": (big, 1_010_001), "b": (b, 7)}, memory_budget=256_500_000)
    >>> [(c.column, c.option.freq_threshold, f"{c.option.lost:.3%}", c.option.dim)
    ...  for c in chosen], fits   # the singletons go (0.083%), then dimension 512 -> 64
    ([('big', 2, '0.083%', 64), ('b', 0, '0.000%', 16)], True)
    """
    budget = parse_memory(memory_budget, "memory_budget")
    counted_rows = counted_rows or {}
    plan = _Plan(columns)
    _raise_thresholds(plan, max_loss, budget)
    _shrink_dims(plan, budget)
    if plan.total <= budget:
        _take_back(plan, budget)
    chosen = [VocabChoice(n, columns[n][1], plan.option(n), counted_rows.get(n),
                          n in plan.small) for n in columns]
    return chosen, plan.total <= budget


@dataclass(frozen=True)
class Shortfall:
    """Why the tables do not fit: the plan nearest the budget needs ``needed`` bytes, over
    ``budget``, with no column losing more than ``max_loss``; ``fit_loss`` is the smallest
    share of lookups lost (the same budget for every column, rounded up to 0.01%) at which
    they fit (``None``: no threshold makes them fit), and ``losses`` what each column that
    would lose more than ``max_loss`` then loses, most first.

    >>> print(Shortfall(20 * GIB, 16 * GIB, 0.01, 0.0312, (("C3", 0.0312),)).text())
    ... # doctest: +NORMALIZE_WHITESPACE
    The tables need 20.00 GiB even with every column thresholded to its 1.00% lookup budget
    and every large table at dimension 16: over the 16 GiB budget. Raise the memory budget to
    20.00 GiB, or accept losing up to 3.12% of a column's non-null lookups (OOV ≤ 3.12%): C3
    would lose 3.12%.
    """

    needed: int
    budget: int
    max_loss: float
    fit_loss: float | None = None
    losses: tuple[tuple[str, float], ...] = ()

    def text(self) -> str:
        head = (f"The tables need {self.needed / GIB:,.2f} GiB even with every column "
                f"thresholded to its {self.max_loss:.2%} lookup budget and every large table "
                f"at dimension {DIM_FLOOR}: over the {self.budget / GIB:g} GiB budget.")
        raise_budget = f"Raise the memory budget to {self.needed / GIB:,.2f} GiB"
        if self.fit_loss is None:
            return f"{head} No threshold makes them fit. {raise_budget}."
        each = ", ".join(f"{n} would lose {lost:.2%}" for n, lost in self.losses)
        return (f"{head} {raise_budget}, or accept losing up to {self.fit_loss:.2%} of a "
                f"column's non-null lookups (OOV ≤ {self.fit_loss:.2%}): {each}.")


def _least_bytes(plan: _Plan, bounds: Mapping[str, list[float]], loss: float) -> int:
    """The smallest the tables can be with no column over ``loss``, at :data:`DIM_FLOOR`."""
    total = 0
    for n, options in plan.options.items():
        if n in plan.small:
            total += options[0].nbytes
            continue
        last = bisect.bisect_right(bounds[n], loss) - 1  # options by rising loss
        total += _nbytes(options[max(last, 0)], DIM_FLOOR)
    return total


def shortfall(columns: Columns, max_loss: float = MAX_LOSS,
              memory_budget: int | str = MEMORY_BUDGET) -> Shortfall | None:
    """What :func:`choose` could not fit, in numbers (``None`` when it fits)."""
    budget = parse_memory(memory_budget, "memory_budget")
    plan = _Plan(columns)
    bounds = {n: [o.lost_bound for o in options] for n, options in plan.options.items()}
    needed = _least_bytes(plan, bounds, max_loss)
    if needed <= budget:
        return None
    losses = sorted({b for n, bs in bounds.items() if n not in plan.small for b in bs
                     if b > max_loss})
    first = bisect.bisect_left(losses, True,
                               key=lambda loss: _least_bytes(plan, bounds, loss) <= budget)
    if first == len(losses):
        return Shortfall(needed, budget, max_loss)
    fit_loss = math.ceil(losses[first] * 10_000 - 1e-9) / 10_000  # a value a user can type
    chosen, _ = choose(columns, fit_loss, budget)
    over = sorted(((c.column, c.option.lost) for c in chosen if c.option.lost > max_loss),
                  key=lambda pair: -pair[1])
    return Shortfall(needed, budget, max_loss, fit_loss, tuple(over))
