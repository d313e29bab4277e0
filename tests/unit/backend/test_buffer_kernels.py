"""The NumPy kernels on Arrow buffers (``backend/buffers.py``) give the plain kernels' results
bit for bit: Arrow's ``fill_null``, NumPy's ``clip`` and ``log1p`` on whole arrays, and the
moments of the filtered finite values; on nulls, NaN, sliced arrays (offsets that are not a
multiple of 8), several chunks, every integer width and sizes across the block size."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from interactive_recsys.backend import _buffers as buffers
from interactive_recsys.backend._arrow import extremes, moments

SIZES = [0, 1, 9, buffers.BLOCK + 13, 2 * buffers.BLOCK + 8 * 1001 + 3]
TYPES = [pa.int8(), pa.uint16(), pa.int32(), pa.int64(), pa.uint64(), pa.float32(),
         pa.float64()]


def column(t: pa.DataType, n: int, seed: int, nulls: float = 0.3, nan: float = 0.1,
           offset: int = 0, span: int = 100) -> pa.Array:
    """``n`` values of type ``t`` (counters in ``[-5, span)``, NaN in floats), some null,
    seen through a slice at ``offset``."""
    rng = np.random.default_rng(seed)
    size = n + offset
    dtype = np.dtype(t.to_pandas_dtype())
    lo = 0 if dtype.kind == "u" else -5
    v = rng.integers(lo, span, size).astype(dtype)
    if dtype.kind == "f":
        v = v + rng.random(size).astype(dtype)
        v[rng.random(size) < nan] = np.nan
    arr = pa.array(v, type=t, mask=rng.random(size) < nulls, from_pandas=False)
    return arr.slice(offset)


def same(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> None:
    """Equal values (NaN equal to NaN, bits of floats compared) and equal nulls."""
    a, b = pa.chunked_array([a]) if isinstance(a, pa.Array) else a, \
        pa.chunked_array([b]) if isinstance(b, pa.Array) else b
    assert a.type == b.type and len(a) == len(b)
    assert a.is_null().to_pylist() == b.is_null().to_pylist()
    va = pc.fill_null(a, pa.scalar(0, a.type)).to_numpy(zero_copy_only=False)
    vb = pc.fill_null(b, pa.scalar(0, b.type)).to_numpy(zero_copy_only=False)
    assert va.tobytes() == vb.tobytes()


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("offset", [0, 3, 8])
def test_fill_equals_arrow_fill_null_of_nan_as_null(t: pa.DataType, n: int, offset: int):
    arr = column(t, n, seed=n + offset, offset=offset)
    for value in (0, 7):
        fill = pa.scalar(value).cast(t)
        nan_null = pc.if_else(pc.is_nan(arr), pa.scalar(None, t), arr) \
            if pa.types.is_floating(t) else arr
        expected = pc.fill_null(nan_null, fill)
        got = buffers.fill_values(arr, fill.as_py())
        same(got, expected)
        assert got.null_count == 0


def test_fill_of_chunks_and_of_a_column_without_nulls():
    chunks = pa.chunked_array([column(pa.float64(), 1000, 1, offset=5),
                               column(pa.float64(), 10, 2, nulls=0.0, nan=0.0)])
    got = buffers.fill_values(chunks, -1.5)
    assert got.num_chunks == 2
    expected = [-1.5 if v is None or v != v else v for v in chunks.to_pylist()]
    assert got.to_pylist() == expected


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("bounds", [(0, None), (None, 50), (3, 40), (-5, 120), (None, 120)])
def test_clip_equals_numpy_clip_and_keeps_nulls(t: pa.DataType, bounds: tuple):
    arr = column(t, buffers.BLOCK + 77, seed=4, offset=5)
    dtype = np.dtype(t.to_pandas_dtype())
    if dtype.kind == "u" and bounds[0] is not None and bounds[0] < 0:
        pytest.skip("a bound the type cannot hold (the backend clamps it before)")
    raw = arr.to_numpy(zero_copy_only=False)  # NaN where null
    keep = ~arr.is_null().to_numpy(zero_copy_only=False)
    low, high = bounds
    expected = np.clip(raw[keep].astype(dtype), None if low is None else dtype.type(low),
                       None if high is None else dtype.type(high))
    got = buffers.clip_values(arr, low, high)
    assert got.null_count == arr.null_count
    assert got.is_null().to_pylist() == arr.is_null().to_pylist()
    assert got.drop_null().to_numpy().tobytes() == expected.tobytes()


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("span", [10, 10**7])  # a table lookup; a logarithm per value
@pytest.mark.parametrize("offset", [0, 3])
def test_log1p_equals_float64_log1p_stored_as_float32(t: pa.DataType, span: int, offset: int):
    arr = column(t, 3 * buffers.BLOCK + 5, seed=span, offset=offset, span=span)
    keep = ~arr.is_null().to_numpy(zero_copy_only=False)
    dtype = np.dtype(t.to_pandas_dtype())
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.log1p(arr.to_numpy(zero_copy_only=False)[keep].astype(dtype),
                            dtype=np.float64).astype(np.float32)
    got = buffers.log1p_values(arr)
    assert got.type == pa.float32()
    assert got.is_null().to_pylist() == arr.is_null().to_pylist()
    assert got.drop_null().to_numpy().tobytes() == expected.tobytes()


def expected_moments(arr: pa.ChunkedArray) -> dict[str, float]:
    """The moments of the finite values, from the filtered float64 array (Arrow's cast, as
    the kernel before; plain NumPy)."""
    x = pc.cast(arr, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    x = x[~arr.is_null().to_numpy(zero_copy_only=False)]
    x = x[np.isfinite(x)]
    if not len(x):
        return {"count": 0.0, "missing": float(len(arr))}
    mean = float(x[0] + (x - x[0]).mean())
    return {"count": float(len(x)), "mean": mean, "m2": float(np.square(x - mean).sum()),
            "min": float(x.min()), "max": float(x.max()), "missing": float(len(arr) - len(x))}


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("n", [1, 2, 129, 3 * buffers.BLOCK + 1001])
def test_dense_moments_equal_those_of_the_filtered_values_bit_for_bit(t: pa.DataType, n: int):
    dense = pa.chunked_array([column(t, n, seed=n, nulls=0.0, nan=0.0, span=10**6)])
    got = buffers.dense_moments(dense)
    assert got == expected_moments(dense)
    assert moments(dense) == got
    two = pa.chunked_array([column(t, n, seed=1, nulls=0.0, nan=0.0), column(t, 7, 2, 0, 0)])
    assert buffers.dense_moments(two) == expected_moments(two)


@pytest.mark.parametrize("t", TYPES)
def test_dense_moments_of_chunks_that_blocks_straddle_equal_the_filtered_values(t: pa.DataType):
    """Blocks of the sums that start in one chunk and end in a later one (or span a chunk
    whole) are gathered across chunks: still the same sums, bit for bit."""
    sizes = [buffers.BLOCK + 5, 3, 2 * buffers.BLOCK - 11, 0, 1000, buffers.BLOCK]
    chunks = pa.chunked_array([column(t, k, seed=k, nulls=0.0, nan=0.0, span=10**6)
                               for k in sizes], t)
    assert buffers.dense_moments(chunks) == expected_moments(chunks)


def test_dense_moments_of_integers_past_2_to_53_convert_as_arrow_does():
    rng = np.random.default_rng(5)
    big = rng.integers(2**60, 2**62, 50_001) | 1  # odd: not representable, rounded
    for arr in (pa.array(big), pa.array(big.astype(np.uint64)), pa.array(-big)):
        dense = pa.chunked_array([arr])
        assert buffers.dense_moments(dense) == expected_moments(dense)


def test_moments_of_columns_with_nulls_nan_or_infinities_filter_them():
    holes = pa.chunked_array([column(pa.float64(), 5000, seed=3)])
    assert buffers.dense_moments(holes) is None
    with_inf = pa.chunked_array([pa.array([1.0, np.inf, 3.0])])
    assert buffers.dense_moments(with_inf) is None
    for arr in (holes, with_inf):
        got, want = moments(arr), expected_moments(arr)
        assert {k: got[k] for k in want} == want
    assert moments(with_inf)["missing"] == 1.0


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("nulls, nan", [(0.0, 0.0), (0.3, 0.1), (1.0, 0.0)])
def test_extremes_are_the_fields_of_the_moments(t: pa.DataType, nulls: float, nan: float):
    """count, min, max and missing of the finite values: those of the filtered float64
    array, with nulls, NaN, several chunks and a slice."""
    arr = pa.chunked_array([column(t, 3000, seed=4, nulls=nulls, nan=nan, offset=3),
                            column(t, 700, seed=5, nulls=nulls, nan=nan)], t)
    want = expected_moments(arr)
    got = extremes(arr)
    assert set(got) == {"count", "min", "max", "missing"}
    assert {k: got[k] for k in want if k in got} == {k: want[k] for k in want if k in got}
    if not want["count"]:
        assert np.isnan(got["min"]) and np.isnan(got["max"])


@pytest.mark.parametrize("values", [[1.0, np.inf, -3.0], [np.nan, 2.0], [2.0, np.nan],
                                    [2**62 + 1, -(2**61) - 1]])
def test_extremes_skip_infinities_and_nan_and_round_big_integers_as_the_moments(values: list):
    arr = pa.chunked_array([pa.array(values[:1]), pa.array(values[1:])])
    got, want = extremes(arr), moments(arr)
    assert got == {k: want[k] for k in got}


def test_pairwise_sum_is_numpys_sum():
    x = np.random.default_rng(0).standard_normal(5 * buffers.BLOCK + 12345) * 1e6
    for n in (1, 8, 129, buffers.BLOCK, buffers.BLOCK + 1, len(x)):
        assert buffers.pairwise_sum(lambda i, j: x[i:j].sum(), 0, n) == x[:n].sum()


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("out", [pa.float32(), pa.float64()])
def test_affine_equals_arrow_in_float64_cast_to_the_output(t: pa.DataType, out: pa.DataType):
    arr = column(t, 2 * buffers.BLOCK + 99, seed=6, offset=3, span=10**6)
    for shift, scale in ((1.25, 0.75), (-3e5, 1e-40), (0.0, 1.0)):
        x = pc.cast(arr, pa.float64(), safe=False)
        expected = pc.cast(pc.divide(pc.subtract(x, shift), scale), out)
        same(buffers.affine_values(arr, shift, scale, out), expected)
