"""Property-based tests (hypothesis) of Categorify and Normalize.

Categorify: indices lie in ``[1, cardinality)``; each distinct kept value gets its own
index ``>= 2 + B``; more frequent values never get larger indices; the encoding does not
depend on the fit data's row order, on partitioning, on ``split_out``, or on the run.
Normalize: mean 0 and population std 1 on the fit data (when std > 0); partitioning does
not matter.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops

SETTINGS = settings(max_examples=30, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

STRINGS = st.sampled_from(["a", "b", "c", "d", "e", "ab", "B", "", "zz", "é"])
INTS = st.integers(min_value=-3, max_value=12)


@st.composite
def categorical_columns(draw: Any, min_size: int = 1) -> tuple[pa.DataType, list]:
    """A column of strings or of ints with some nulls (as Python values)."""
    kind = draw(st.sampled_from(["string", "int"]))
    element = STRINGS if kind == "string" else INTS
    values = draw(st.lists(st.one_of(element, element, element, st.none()),
                           min_size=min_size, max_size=40))
    return (pa.string() if kind == "string" else pa.int64()), values


def frame(values: list, arrow_type: pa.DataType, name: str = "c") -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series(pd.arrays.ArrowExtensionArray(
        pa.array(values, type=arrow_type)))})


def dataset(df: pd.DataFrame, npartitions: int) -> irs.Dataset:
    return irs.Dataset(dd.from_pandas(df, npartitions=max(1, min(npartitions, len(df))),
                                      sort=False))


def workflow(node: Any, root: str) -> irs.Workflow:
    return irs.Workflow(node, artifacts_dir=tempfile.mkdtemp(prefix="prop-", dir=root))


def column(out: pd.DataFrame, name: str = "c") -> list:
    return pa.Table.from_pandas(out[[name]], preserve_index=False)[name].to_pylist()


# ---- Categorify ------------------------------------------------------------------------------
@SETTINGS
@given(col=categorical_columns(), npartitions=st.integers(1, 4),
       num_buckets=st.one_of(st.none(), st.integers(1, 5)),
       freq_threshold=st.integers(0, 3))
def test_categorify_layout_distinctness_and_frequency_order(artifacts_root: str, col: tuple,
                                                            npartitions: int,
                                                            num_buckets: int | None,
                                                            freq_threshold: int) -> None:
    arrow_type, values = col
    df = frame(values, arrow_type)
    wf = workflow(["c"] >> ops.Categorify(num_buckets=num_buckets,
                                          freq_threshold=freq_threshold), artifacts_root)
    out = wf.fit_transform(dataset(df, npartitions)).compute()
    got = column(out)
    card = wf.output_schema["c"].cardinality
    first = 2 + (num_buckets or 1)
    counts = Counter(v for v in values if v is not None)
    kept = {v for v, n in counts.items() if n >= max(freq_threshold, 1)}

    assert len(got) == len(values)
    assert all(1 <= g < card for g in got)
    assert card == first + len(kept)
    index: dict[Any, int] = {}
    for v, g in zip(values, got, strict=True):
        if v is None:
            assert g == 1
        elif v in kept:
            assert g >= first
            assert index.setdefault(v, g) == g  # same value, same index
        else:
            assert 2 <= g < first  # out of vocabulary
    assert len(set(index.values())) == len(index)  # distinct values, distinct indices
    assert sorted(index.values()) == list(range(first, card))  # contiguous
    for a in index:
        for b in index:
            if counts[a] > counts[b]:
                assert index[a] < index[b]
            elif counts[a] == counts[b] and a < b:
                assert index[a] < index[b]  # ties by ascending value


@SETTINGS
@given(col=categorical_columns(min_size=2), seed=st.integers(0, 2**16),
       npartitions=st.integers(1, 5), split_out=st.integers(1, 4),
       max_size=st.one_of(st.none(), st.integers(1, 6)))
def test_categorify_is_deterministic_and_invariant_to_row_order_and_partitioning(
        artifacts_root: str, col: tuple, seed: int, npartitions: int, split_out: int,
        max_size: int | None) -> None:
    arrow_type, values = col
    df = frame(values, arrow_type)
    probe = frame([*values, None] + ([99] if arrow_type == pa.int64() else ["unseen"]),
                  arrow_type)

    def encode(fit_df: pd.DataFrame, parts: int, splits: int) -> list:
        wf = workflow(["c"] >> ops.Categorify(max_size=max_size, split_out=splits),
                      artifacts_root)
        wf.fit(dataset(fit_df, parts))
        return column(wf.transform(probe))

    baseline = encode(df, 1, 1)
    assert encode(df, 1, 1) == baseline  # deterministic
    shuffled = df.iloc[np.random.default_rng(seed).permutation(len(df))].reset_index(drop=True)
    assert encode(shuffled, npartitions, split_out) == baseline


@SETTINGS
@given(rows=st.lists(st.lists(st.one_of(STRINGS, st.none()), max_size=4) | st.none(),
                     min_size=1, max_size=25),
       npartitions=st.integers(1, 3))
def test_categorify_list_column_elementwise_matches_flat_column(artifacts_root: str,
                                                                rows: list,
                                                                npartitions: int) -> None:
    """Encoding a list column equals encoding its flattened elements as a plain column."""
    lists = pd.DataFrame({"c": pd.Series(pd.arrays.ArrowExtensionArray(
        pa.array(rows, type=pa.list_(pa.string()))))})
    flat_values = [x for r in rows if r is not None for x in r]
    assume(flat_values)
    wf_list = workflow(["c"] >> ops.Categorify(), artifacts_root)
    got = column(wf_list.fit_transform(dataset(lists, npartitions)).compute())
    wf_flat = workflow(["c"] >> ops.Categorify(), artifacts_root)
    flat_out = column(wf_flat.fit_transform(frame(flat_values, pa.string())))
    it = iter(flat_out)
    assert got == [None if r is None else [next(it) for _ in r] for r in rows]
    assert wf_list.output_schema["c"].cardinality == wf_flat.output_schema["c"].cardinality


# ---- Normalize -------------------------------------------------------------------------------
FINITE = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@SETTINGS
@given(xs=st.lists(st.one_of(FINITE, FINITE, FINITE, st.none()), min_size=2, max_size=50),
       npartitions=st.integers(2, 5))
def test_normalize_gives_mean_0_std_1_and_ignores_partitioning(artifacts_root: str, xs: list,
                                                               npartitions: int) -> None:
    finite = np.array([x for x in xs if x is not None], dtype=np.float64)
    assume(len(finite) >= 2)
    scale = np.abs(finite).max() or 1.0  # scaled: the squares of ~1e-238 underflow to 0
    std = (finite / scale).std(ddof=0) * scale
    df = frame(xs, pa.float64(), "x")
    wf1 = workflow(["x"] >> ops.Normalize(), artifacts_root)
    one = wf1.fit_transform(dataset(df, 1)).compute()
    wfk = workflow(["x"] >> ops.Normalize(), artifacts_root)
    many = wfk.fit_transform(dataset(df, npartitions)).compute()

    z1 = one["x"].to_numpy(dtype=np.float64, na_value=np.nan)
    zk = many["x"].to_numpy(dtype=np.float64, na_value=np.nan)
    assert np.array_equal(np.isnan(z1), np.array([x is None for x in xs]))
    np.testing.assert_allclose(zk, z1, rtol=1e-5, atol=1e-5, equal_nan=True)
    z = z1[~np.isnan(z1)]
    if std > 1e-2:
        assert abs(z.mean()) < 1e-4
        assert abs(z.std(ddof=0) - 1.0) < 1e-4
    elif std == 0:
        assert np.all(z == 0.0)  # constant column: x - mean


@pytest.mark.parametrize(("xs", "expected"), [
    ([0.0, 1.9234278162524789e-305], [0.0, 0.0]),       # subnormal spread: a constant column
    ([5e-324, 0.0], [0.0, 0.0]),
    ([1e-200, 3e-200, 2e-200], [-1.2247449, 1.2247449, 0.0]),  # squares underflow: scaled
    ([1e200, 3e200], [-1.0, 1.0]),                      # squares overflow: scaled
])
def test_normalize_of_tiny_and_huge_values_ignores_partitioning(artifacts_root: str, xs: list,
                                                                expected: list) -> None:
    """Found by the property above: a single partition's sum of squares underflowed to 0
    while the merged one did not. Hand-computed z-scores, the same for 1..3 partitions."""
    df = frame(xs, pa.float64(), "x")
    for npartitions in range(1, len(xs) + 1):
        out = workflow(["x"] >> ops.Normalize(), artifacts_root).fit_transform(
            dataset(df, npartitions)).compute()
        np.testing.assert_allclose(out["x"].to_numpy(dtype=np.float64), expected, atol=1e-6)


@SETTINGS
@given(xs=st.lists(FINITE, min_size=2, max_size=30),
       specials=st.lists(st.sampled_from([np.inf, -np.inf, np.nan]), min_size=1, max_size=3),
       seed=st.integers(0, 2**16))
def test_normalize_statistics_skip_non_finite(artifacts_root: str, xs: list, specials: list,
                                              seed: int) -> None:
    """Adding inf/-inf/NaN anywhere does not change the finite values' output."""
    assume(np.std(xs) > 1e-2)
    values = np.array(xs + specials, dtype=np.float64)
    order = np.random.default_rng(seed).permutation(len(values))
    with_specials = pd.DataFrame({"x": pd.Series(pd.arrays.ArrowExtensionArray(
        pa.array(values[order], from_pandas=False)))})  # NaN stays NaN (not null)
    wf_clean = workflow(["x"] >> ops.Normalize(), artifacts_root)
    clean = wf_clean.fit_transform(frame(xs, pa.float64(), "x"))["x"].to_numpy(np.float64)
    wf = workflow(["x"] >> ops.Normalize(), artifacts_root)
    got = wf.fit_transform(dataset(with_specials, 3)).compute()["x"].to_numpy(np.float64)
    restored = np.empty_like(got)
    restored[order] = got
    np.testing.assert_allclose(restored[: len(xs)], clean, rtol=1e-5, atol=1e-5)
    tail = restored[len(xs):]
    for special, z in zip(specials, tail, strict=True):
        assert (np.isnan(z) and np.isnan(special)) or z == special  # inf stays inf
