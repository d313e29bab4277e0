"""``irs.hash_collision_rate`` equals what ``HashBucket`` gives: each test applies HashBucket
itself and counts, with pandas, the non-null rows whose bucket holds more than one distinct
source value."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.stats import _hash_collisions
from interactive_recsys.stats._hash_collisions import power_of_two_rates
from tests.conftest import partitioned


def _skewed(seed: int, rows: int = 4000) -> pd.DataFrame:
    """Zipf-like ids (a few hot, a long tail), ints, floats with NaN and -0.0, nulls."""
    rng = np.random.default_rng(seed)
    ids = rng.zipf(1.3, rows) % 5000
    text = pd.Series([f"id{v}" for v in ids], dtype="string[pyarrow]")
    text[rng.random(rows) < 0.05] = None
    floats = rng.choice([0.0, -0.0, 1.5, 2.25, np.nan, 7.0, -3.0], rows)
    return pd.DataFrame({"s": text, "i": pd.array(ids * 7919, dtype="int64[pyarrow]"),
                         "f": floats})


def _rate_by_hash_bucket(frame: pd.DataFrame, column: str, num_buckets: int) -> float:
    """pandas over HashBucket's own output: group by bucket, count distinct source values."""
    out = irs.Workflow([column] >> ops.HashBucket(num_buckets)).fit_transform(frame)
    pairs = pd.DataFrame({"value": frame[column].to_numpy(dtype=object),
                          "bucket": out[column].to_numpy()})
    if isinstance(frame[column].dtype, pd.ArrowDtype) and \
            pa.types.is_list(frame[column].dtype.pyarrow_dtype):  # one lookup per element
        pairs = pd.DataFrame({"value": frame[column].explode().to_numpy(dtype=object),
                              "bucket": out[column].explode().to_numpy()})
        pairs = pairs[pairs["bucket"].notna()]  # an empty or null list: no element
    pairs = pairs[pairs["bucket"] != 1]  # 1: null (and NaN), not a lookup
    distinct = pairs.groupby("bucket")["value"].transform("nunique")
    return float((distinct > 1).sum() / len(pairs)) if len(pairs) else 0.0


@pytest.mark.parametrize("column", ["s", "i", "f"])
@pytest.mark.parametrize("num_buckets", [1, 7, 100, 1000, 4096, 2**20])
def test_equals_the_rate_of_hash_bucket_output(column, num_buckets):
    frame = _skewed(1)
    expected = _rate_by_hash_bucket(frame, column, num_buckets)
    assert irs.hash_collision_rate(frame, column, num_buckets) == expected
    if column == "s" and num_buckets in (4096, 2**20):
        assert 0 < expected < 1  # a real mix of shared and own buckets


def test_a_list_column_counts_each_element():
    rng = np.random.default_rng(3)
    lists = [[f"t{v}" for v in rng.integers(0, 400, rng.integers(0, 5))] for _ in range(600)]
    lists[5] = None
    frame = pd.DataFrame({"tags": pd.Series(lists, dtype=pd.ArrowDtype(pa.list_(pa.string())))})
    for buckets in (64, 500):
        expected = _rate_by_hash_bucket(frame, "tags", buckets)
        assert 0 < expected < 1
        assert irs.hash_collision_rate(frame, "tags", buckets) == expected


@pytest.mark.parametrize("splits", [1, 5])
def test_a_dataset_of_many_partitions_and_splits(monkeypatch, splits):
    """Counts cut into splits by the bucket (forced to 5 here) give the same exact rate."""
    monkeypatch.setattr(_hash_collisions, "num_splits", lambda *args: splits)
    frame = _skewed(2)
    ds = partitioned(frame, 6)
    for buckets in (10, 333, 2048):
        assert irs.hash_collision_rate(ds, "s", buckets) == \
            _rate_by_hash_bucket(frame, "s", buckets)
    rates = power_of_two_rates(ds, {"s": (16, 2**16)})["s"]
    assert list(rates) == [2**k for k in range(4, 17)]
    for buckets, rate in rates.items():
        assert rate == _rate_by_hash_bucket(frame, "s", buckets), buckets
    values = list(rates.values())
    assert values == sorted(values, reverse=True)  # more buckets never collide more


def test_on_the_cluster_from_parquet(tmp_path, client):
    frame = _skewed(4)
    (tmp_path / "data").mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 4)):
        frame.iloc[rows].to_parquet(tmp_path / "data" / f"part-{i}.parquet")
    ds = irs.Dataset(str(tmp_path / "data"))
    assert irs.hash_collision_rate(ds, "s", 1500) == _rate_by_hash_bucket(frame, "s", 1500)
    assert irs.hash_collision_rate(str(tmp_path / "data"), "i", 999) == \
        _rate_by_hash_bucket(frame, "i", 999)
    both = power_of_two_rates(ds, {"s": (1024, 1024), "i": (64, 128)})
    assert both["s"] == {1024: _rate_by_hash_bucket(frame, "s", 1024)}
    assert both["i"] == {b: _rate_by_hash_bucket(frame, "i", b) for b in (64, 128)}


def test_no_lookups_is_a_rate_of_zero():
    frame = pd.DataFrame({"c": pd.Series([None, None], dtype="string[pyarrow]")})
    assert irs.hash_collision_rate(frame, "c", 4) == 0.0
    assert irs.hash_collision_rate(pd.DataFrame({"c": ["a", "a", "a"]}), "c", 1) == 0.0


def test_a_missing_column_is_named_with_the_columns_there():
    frame = pd.DataFrame({"a": ["x"], "b": [1]})
    with pytest.raises(SchemaError, match=r"Column 'z' is not in the data; its columns are "
                                          r"'a', 'b'\. Pass one of them"):
        irs.hash_collision_rate(frame, "z", 8)


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "8", None])
def test_a_bad_bucket_count_is_refused(bad):
    with pytest.raises(ParameterError, match=rf"num_buckets must be a whole number of hash "
                                             rf"buckets, at least 1 .* got {bad!r}"):
        irs.hash_collision_rate(pd.DataFrame({"a": ["x"]}), "a", bad)


def test_a_struct_column_is_refused():
    frame = pd.DataFrame({"s": pd.Series([{"x": 1}], dtype=pd.ArrowDtype(
        pa.struct([("x", pa.int64())])))})
    with pytest.raises(SchemaError, match="Column 's' of dtype .* cannot be hashed"):
        irs.hash_collision_rate(frame, "s", 8)


def test_power_of_two_rates_refuses_other_counts():
    frame = pd.DataFrame({"a": ["x"]})
    with pytest.raises(ParameterError, match="smallest bucket count of 'a' must be a power "
                                             "of two; got 12"):
        power_of_two_rates(frame, {"a": (12, 64)})
    with pytest.raises(ParameterError, match="largest bucket count of 'a' .32. is below its "
                                             "smallest .64."):
        power_of_two_rates(frame, {"a": (64, 32)})
    with pytest.raises(SchemaError, match="Column 'b' is not in the data"):
        power_of_two_rates(frame, {"b": (64, 64)})


def test_about_one_minus_exp_of_values_per_bucket_whatever_the_frequencies():
    """The guide's rule of thumb: about ``1 - exp(-D / B)`` of the lookups collide (each
    value's bucket holds one of the ``D - 1`` others with that chance, however often it is
    looked up): 63% at ``B = D``, 1% near ``B = 100 D``."""
    rng = np.random.default_rng(12)
    distinct = 20_000
    uniform = np.repeat(np.arange(distinct), 3)
    skewed = np.repeat(np.arange(distinct), 1 + np.minimum(rng.pareto(1.5, distinct) * 3, 200)
                       .astype(int))  # no value holds more than 0.4% of the lookups
    for values in (uniform, skewed):
        frame = pd.DataFrame({"v": values})
        for buckets, within in ((distinct, 0.02), (100 * distinct, 0.003)):
            expected = 1 - np.exp(-distinct / buckets)  # 0.632, 0.00995
            assert abs(irs.hash_collision_rate(frame, "v", buckets) - expected) < within
