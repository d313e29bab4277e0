"""Counts merged on 64-bit keys equal counts by value (pandas), for every kind of key."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.hashing import hash_array
from interactive_recsys.tables import _vocabulary as vocab

INTS = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False, width=64)
FIXED8 = st.binary(min_size=8, max_size=8).map(lambda b: b.hex()[:8])
SHORT = st.text(max_size=7).filter(lambda s: len(s.encode()) <= 7)
KINDS = {"int": (INTS, pa.int64()), "float": (FLOATS, pa.float64()),
         "fixed8": (FIXED8, pa.string()), "short": (SHORT, pa.string())}


def table(values: list, type_: pa.DataType) -> pa.Table:
    vc = pc.value_counts(pa.array(values, type_))
    return pa.table({"value": vc.field("values"), "count": vc.field("counts")})


def pandas_counts(values: list) -> dict:
    series = pd.Series(values, dtype=object)
    if len(values) and isinstance(values[0], float):
        series = series.map(lambda v: 0.0 if v == 0.0 else v)  # -0.0 is 0.0
    return series.value_counts().to_dict()


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_merge_by_key_equals_pandas_value_counts(kind: str, data: st.DataObject) -> None:
    strategy, type_ = KINDS[kind]
    parts = data.draw(st.lists(st.lists(strategy, max_size=30), min_size=1, max_size=5))
    keyed = [kc.encode(table(p, type_)) for p in parts]
    assert all(isinstance(k, kc.KeyedCounts) for k in keyed)
    merged = kc.merge(keyed)
    result = kc.decode(merged)
    everything = [v for p in parts for v in p]
    assert dict(zip(result["value"].to_pylist(), result["count"].to_pylist(), strict=True)) \
        == pandas_counts(everything)
    # sorted by key is sorted by value, as Arrow sorts the values
    assert result["value"].to_pylist() == result["value"].take(
        pc.sort_indices(result["value"])).to_pylist()
    # the value hash computed from the keys alone is the hash of the values
    assert kc.value_hashes(merged).tolist() == hash_array(result["value"]).tolist()


def test_strings_of_other_shapes_keep_arrow_tables_and_mixed_merges_stay_exact() -> None:
    long = kc.encode(table(["a-long-identifier", "x"], pa.string()))
    fixed = kc.encode(table(["abcdefgh", "abcdefgh"], pa.string()))
    short = kc.encode(table(["abc", "x"], pa.string()))
    assert isinstance(long, pa.Table) and isinstance(fixed, kc.KeyedCounts)
    assert kc.merge([fixed, short]) is None  # two kinds: the caller sums by value
    summed = vocab.sum_counts([long, fixed, short])
    assert dict(zip(summed["value"].to_pylist(), summed["count"].to_pylist(), strict=True)) == {
        "a-long-identifier": 1, "x": 2, "abcdefgh": 2, "abc": 1}


def test_zero_and_negative_zero_are_one_value_as_in_the_hash() -> None:
    keyed = kc.encode(table([0.0, -0.0, -0.0, 1.5], pa.float64()))
    assert kc.decode(keyed).to_pylist() == [{"value": 0.0, "count": 3},
                                            {"value": 1.5, "count": 1}]


def test_nulls_are_left_out_and_types_come_back() -> None:
    t = pa.table({"value": pa.array([3, None, 1], pa.int32()), "count": pa.array([2, 4, 1],
                                                                                  pa.int32())})
    keyed = kc.encode(t)
    back = kc.decode(keyed)
    assert back.schema.field("value").type == pa.int32()
    assert back.to_pylist() == [{"value": 1, "count": 1}, {"value": 3, "count": 2}]


def test_split_by_hash_matches_the_lookup_side() -> None:
    """Each value lands in the split the transform looks in: ``hash(value) % splits``."""
    rng = np.random.default_rng(0)
    values = [f"{v:08x}" for v in rng.integers(0, 2**32, 500)]
    keyed = kc.encode(table(values, pa.string()))
    parts = vocab.split_counts(keyed, 7)
    for s, part in enumerate(parts):
        decoded = kc.decode(part)["value"]
        assert (hash_array(decoded) % np.uint64(7) == s).all()
    assert sum(p.num_rows for p in parts) == keyed.num_rows


def test_threshold_on_keys() -> None:
    keyed = kc.encode(table(["aa", "aa", "bb", "cc", "cc", "cc"], pa.string()))
    assert kc.decode(kc.at_least(keyed, 2))["value"].to_pylist() == ["aa", "cc"]
    assert kc.total(keyed) == 6


@settings(max_examples=30, deadline=None)
@given(chunks=st.lists(st.lists(st.one_of(st.none(), st.sampled_from(
    ["aaaaaaaa", "bbbbbbbb", "00000000", "zzzzzzzz"])), max_size=20), min_size=1, max_size=5))
def test_row_groups_of_a_dictionary_column_counted_in_one_sort(chunks: list) -> None:
    """The CPU backend's keyed counts of a partition read as several dictionary-encoded row
    groups equal pandas' value counts of the rows (nulls left out)."""
    from interactive_recsys.backend import get_backend

    column = pa.chunked_array([pa.array(c, pa.string()).dictionary_encode() for c in chunks])
    counts = kc.decode(get_backend("cpu").keyed_value_counts(column))
    expected = pd.Series([v for c in chunks for v in c if v is not None],
                         dtype=object).value_counts().to_dict()
    assert dict(zip(counts["value"].to_pylist(), counts["count"].to_pylist(), strict=True)) \
        == expected


def test_parts_of_different_kinds_are_not_keyed() -> None:
    parts = [table(["abcdefgh"], pa.string()), table(["abc"], pa.string()),
             table([], pa.string())]
    assert kc.encode_parts(parts) is None
    assert kc.encode_parts([parts[0], parts[2]]).kind == "fixed8"


@settings(max_examples=200, deadline=None)
@given(labels=st.lists(st.integers(0, 70_000), max_size=200), extra=st.integers(0, 3))
def test_group_rows_is_a_stable_sort_by_label(labels, extra) -> None:
    """Against NumPy's stable argsort of the 64-bit labels and a search for the edges (labels
    past 65,535 take the 64-bit path)."""
    labels = np.array(labels, dtype=np.uint64)
    groups = int(labels.max()) + 1 + extra if len(labels) else extra + 1
    order, edges = kc.group_rows(labels, groups)
    expected = np.argsort(labels, kind="stable")
    assert order.tolist() == expected.tolist()
    assert edges.tolist() == np.searchsorted(labels[expected], np.arange(groups + 1)).tolist()
