"""The ``"kaggle"`` profile of :func:`synthetic_criteo`: real Criteo Kaggle widths and skew.

Each categorical column ``C1..C26`` draws popularity ranks from a bounded power law
``P(r) ~ (r + 1) ** -s`` over a vocabulary of ``V`` ranks (the same sampler as the default
profile, see ``_criteo_columns._power_law_ranks``). ``(s, V)`` were fitted per column so that the
*expected number of distinct values* of such a draw matches two real measurements:

* the distinct counts over the 45,840,617 rows of the Criteo Kaggle train set
  (:data:`~interactive_recsys.datasets.CRITEO_KAGGLE_CARDINALITIES`, the figures used by the
  DLRM Kaggle preprocessing; a column with nulls counts the missing value as one of them, so
  the fit targets one fewer non-null value);
* the distinct counts in the first 9,999 rows of that train set (the
  ``criteo_kaggle_head10k`` sample, ``train.txt`` md5 ``ae37cbdf62d330f2e0b7d6cdd02780cd``):
  175, 386, 5519, 4032, 56, 7, 3184, 93, 3, 2986, 2084, 5282, 1725, 24, 2035, 4722, 9,
  1149, 546, 3, 5035, 7, 12, 2524, 39, 1938.

So a column's distinct count grows with the row count the way the real one does between those
two sizes: at 2M rows the widest column (``C3``) has about 610k distinct values and ``C4``,
``C12``, ``C16``, ``C21`` have 290k-570k. ``C3`` and ``C12`` hit the vocabulary cap (2**30)
and reach 8.9M and 8.2M distinct values at 45.8M rows instead of 10.1M and 8.4M. The tiny
columns (``C6``, ``C14``, ``C17``, ``C22``, ``C23``) are steeper than any fit allows at 10k
rows; they get the steepest exponent tried (3.05) and their full vocabulary.

Examples
--------
>>> round(expected_distinct(2_000_000)["C3"], -4)
610000.0
>>> expected_distinct(2_000_000)["C9"]
3.0
"""

from __future__ import annotations

import math

import numpy as np

#: ``(exponent s, vocabulary V)`` of C1..C26 (fitted as described in the module docstring).
KAGGLE_SHAPES: tuple[tuple[float, int], ...] = (
    (1.984, 1460), (1.51, 583), (1.066, 2**30), (1.104, 3997983), (2.628, 305),
    (3.05, 23), (0.99, 12517), (2.304, 633), (0.0, 3), (1.126, 93145), (1.076, 5683),
    (1.076, 2**30), (1.066, 3194), (3.05, 27), (1.172, 14992), (1.09, 86210664),
    (3.05, 10), (1.308, 5652), (1.386, 2172), (0.0, 3), (1.082, 380672082), (3.05, 17),
    (3.05, 15), (1.188, 288892), (2.704, 104), (1.126, 142571),
)  # fmt: skip

# Columns missing together share one null mask: (columns, rate). Measured once on the
# criteo_kaggle_head10k sample (9,999 rows of the Kaggle train set; see the module docstring):
# the columns in a group have identical null masks there.
KAGGLE_NULL_GROUPS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("I1", "I10"), 0.4480),
    (("I3",), 0.2037),
    (("I4", "I13"), 0.1978),
    (("I5",), 0.0494),
    (("I6",), 0.2511),
    (("I7", "I9", "I11"), 0.0492),
    (("I8",), 0.0010),
    (("I12",), 0.7735),
    (("C3", "C4", "C12", "C16", "C21", "C24"), 0.0357),
    (("C6",), 0.1331),
    (("C19", "C20", "C25", "C26"), 0.4496),
    (("C22",), 0.8182),
)

_HEAD = 1 << 16  # ranks summed exactly; beyond, a log-spaced quadrature


def _cdf(x: np.ndarray, vocabulary: int, exponent: float) -> np.ndarray:
    """CDF of the continuous power law ``x ** -exponent`` truncated to ``[1, V + 1)``."""
    if abs(exponent - 1.0) < 1e-9:
        return np.log(x) / math.log(vocabulary + 1.0)
    a = 1.0 - exponent
    return (x**a - 1.0) / ((vocabulary + 1.0) ** a - 1.0)


def expected_column_distinct(draws: float, exponent: float, vocabulary: int) -> float:
    """Expected distinct ranks in ``draws`` draws of the bounded power law ``(s, V)``.

    ``sum_r 1 - (1 - p_r) ** draws`` with ``p_r = F(r + 2) - F(r + 1)``: exact over the first
    65,536 ranks, a midpoint sum over log-spaced rank intervals beyond.

    Examples
    --------
    >>> expected_column_distinct(1e6, 0.0, 3)  # uniform over 3 values: all seen
    3.0
    >>> round(expected_column_distinct(1.0, 1.1, 1000), 6)  # one draw, one value
    1.0
    """
    head = min(vocabulary, _HEAD)
    ranks = np.arange(head, dtype=np.float64)
    p = _cdf(ranks + 2.0, vocabulary, exponent) - _cdf(ranks + 1.0, vocabulary, exponent)
    total = float(np.sum(-np.expm1(draws * np.log1p(-np.minimum(p, 1.0 - 1e-16)))))
    if vocabulary > head:
        edges = np.unique(np.geomspace(head, vocabulary, 4000).round())
        low, high = edges[:-1], edges[1:]
        mid = (low + high) / 2.0
        p_mid = _cdf(mid + 1.5, vocabulary, exponent) - _cdf(mid + 0.5, vocabulary, exponent)
        total += float(np.sum((high - low) * -np.expm1(draws * np.log1p(-p_mid))))
    return total


def kaggle_null_rates() -> dict[str, float]:
    """Null rate of every column that has nulls in the kaggle profile.

    Examples
    --------
    >>> kaggle_null_rates()["C22"]
    0.8182
    """
    return {name: rate for names, rate in KAGGLE_NULL_GROUPS for name in names}


def expected_distinct(rows: int) -> dict[str, float]:
    """Expected distinct non-null values of C1..C26 in ``rows`` rows of the kaggle profile.

    Parameters
    ----------
    rows : int
        Row count of the generated data set.

    Returns
    -------
    dict
        ``{"C1": ..., ..., "C26": ...}``: the model each column is drawn from, evaluated at
        its expected number of non-null rows.

    Examples
    --------
    >>> d = expected_distinct(10_000)
    >>> 5_000 < d["C3"] < 6_000, d["C9"]
    (True, 3.0)
    """
    nulls = kaggle_null_rates()
    result = {}
    for index, (exponent, vocabulary) in enumerate(KAGGLE_SHAPES):
        name = f"C{index + 1}"
        draws = rows * (1.0 - nulls.get(name, 0.0))
        result[name] = expected_column_distinct(draws, exponent, vocabulary)
    return result
