"""Tests for the ``profile="kaggle"`` synthetic Criteo: widths, skew and nulls of real Criteo."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from interactive_recsys.datasets import (
    CRITEO_CATEGORICAL,
    CRITEO_COLUMNS,
    CRITEO_KAGGLE_CARDINALITIES,
    synthetic_criteo,
)
from interactive_recsys.datasets._criteo_kaggle import (
    KAGGLE_SHAPES,
    expected_column_distinct,
    expected_distinct,
    kaggle_null_rates,
)

ROWS = 200_000
# Distinct values of C1..C26 in the first 9,999 rows of the Kaggle train set (head10k sample).
HEAD10K_DISTINCT = (
    175, 386, 5519, 4032, 56, 7, 3184, 93, 3, 2986, 2084, 5282, 1725, 24, 2035, 4722, 9,
    1149, 546, 3, 5035, 7, 12, 2524, 39, 1938,
)  # fmt: skip
TINY = {"C6", "C14", "C17", "C22", "C23"}  # steeper than the fitted family allows at 10k rows


@pytest.fixture(scope="module")
def kaggle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kaggle") / "criteo"
    return synthetic_criteo(ROWS, seed=3, path=path, rows_per_file=80_000, profile="kaggle")


@pytest.fixture(scope="module")
def kaggle(kaggle_dir: Path) -> pa.Table:
    return pq.read_table(kaggle_dir)


def _bounded_power_law(exponent: float, vocabulary: int, ranks: np.ndarray) -> np.ndarray:
    """P(rank) of the sampler, written out from its CDF ((x**a - 1) / ((V + 1)**a - 1))."""
    x = ranks.astype(float) + 1.0
    if exponent == 1.0:
        cdf = lambda v: np.log(v) / np.log(vocabulary + 1.0)  # noqa: E731
    else:
        a = 1.0 - exponent
        cdf = lambda v: (v**a - 1.0) / ((vocabulary + 1.0) ** a - 1.0)  # noqa: E731
    return cdf(x + 1.0) - cdf(x)


def test_distinct_counts_follow_the_model(kaggle: pa.Table) -> None:
    expected = expected_distinct(ROWS)
    for name in CRITEO_CATEGORICAL:
        observed = pc.count_distinct(kaggle[name]).as_py()  # nulls not counted
        # The variance of a distinct count is below its mean: 4 sd plus 1 % model error.
        tolerance = 4.0 * math.sqrt(expected[name]) + 0.01 * expected[name]
        assert abs(observed - expected[name]) <= tolerance, (name, observed, expected[name])
    # the widest columns are wide: more than a third of their non-null rows at 200k
    assert pc.count_distinct(kaggle["C3"]).as_py() > 0.35 * ROWS


def test_model_matches_the_real_counts() -> None:
    full = expected_distinct(45_840_617)
    rates = kaggle_null_rates()
    for name, real in zip(CRITEO_CATEGORICAL, CRITEO_KAGGLE_CARDINALITIES, strict=True):
        non_null = real - (name in rates)  # the missing value is one of the real count
        # C3 and C12 hit the 2**30 vocabulary cap and fall 13 % and 2 % short
        assert 0.85 * non_null <= full[name] <= 1.001 * non_null, (name, full[name], real)
    head = expected_distinct(9_999)
    for name, real in zip(CRITEO_CATEGORICAL, HEAD10K_DISTINCT, strict=True):
        if name not in TINY:
            assert abs(head[name] - real) <= 0.02 * real + 1, (name, head[name], real)
    # grows like the real logs: about 700k distinct values of C3 in 2M rows
    assert 550_000 < expected_distinct(2_000_000)["C3"] < 750_000


def test_expected_column_distinct_against_exact_sum() -> None:
    for exponent, vocabulary in [(1.1, 5_000), (1.0, 300), (2.0, 70_000), (0.0, 10)]:
        p = _bounded_power_law(exponent, vocabulary, np.arange(vocabulary))
        assert p.sum() == pytest.approx(1.0)
        for draws in (10.0, 1e4, 1e6):
            exact = float(np.sum(1.0 - (1.0 - p) ** draws))
            got = expected_column_distinct(draws, exponent, vocabulary)
            assert got == pytest.approx(exact, rel=1e-3, abs=1e-6)
    # beyond the exact head the quadrature stays within 1 % of the full sum
    p = _bounded_power_law(1.08, 3_000_000, np.arange(3_000_000))
    exact = float(np.sum(-np.expm1(2e5 * np.log1p(-p))))
    assert expected_column_distinct(2e5, 1.08, 3_000_000) == pytest.approx(exact, rel=0.01)


def test_skew_of_the_most_frequent_value(kaggle: pa.Table) -> None:
    rates = kaggle_null_rates()
    for name in ("C3", "C10", "C24"):
        exponent, vocabulary = KAGGLE_SHAPES[int(name[1:]) - 1]
        p0 = float(_bounded_power_law(exponent, vocabulary, np.array([0]))[0])
        counts = pc.value_counts(kaggle[name].drop_null())
        top = max(c.as_py() for c in counts.field("counts"))
        n = ROWS * (1.0 - rates.get(name, 0.0))
        assert abs(top - n * p0) <= 5 * math.sqrt(n * p0) + 0.01 * n * p0, (name, top, n * p0)


def test_null_rates(kaggle: pa.Table) -> None:
    rates = kaggle_null_rates()
    for name in CRITEO_COLUMNS:
        rate = rates.get(name, 0.0)
        observed = kaggle[name].null_count / ROWS
        assert abs(observed - rate) <= 5 * math.sqrt(rate * (1 - rate) / ROWS) + 1e-9, name
    # columns that are missing together in the real sample share one mask
    assert pc.all(pc.equal(pc.is_null(kaggle["C3"]), pc.is_null(kaggle["C24"]))).as_py()
    assert pc.all(pc.equal(pc.is_null(kaggle["I7"]), pc.is_null(kaggle["I11"]))).as_py()


def test_kaggle_profile_is_deterministic(tmp_path: Path, kaggle: pa.Table) -> None:
    again = synthetic_criteo(ROWS, seed=3, path=tmp_path / "a", rows_per_file=80_000,
                             profile="kaggle")
    assert pq.read_table(again).equals(kaggle)
    other = synthetic_criteo(20_000, seed=4, path=tmp_path / "b", profile="kaggle")
    assert not pq.read_table(other)["C3"].equals(kaggle["C3"].slice(0, 20_000))
    default = synthetic_criteo(20_000, seed=3, path=tmp_path / "c")
    assert pc.count_distinct(pq.read_table(default)["C3"]).as_py() < 0.2 * 20_000


@pytest.mark.parametrize(
    "kwargs",
    [{"profile": "tb"}, {"profile": "kaggle", "zipf_exponent": 1.2},
     {"profile": "kaggle", "cardinalities": [5] * 26}],
)
def test_kaggle_profile_rejects_bad_arguments(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(ValueError, match="profile"):
        synthetic_criteo(100, path=tmp_path / "x", **kwargs)
