"""Every operator against an independent reference computed here with pandas, NumPy or
scikit-learn, on small seeded Criteo-shaped data (ints, floats, strings, list<string>).

The references implement the documented semantics, not the package's code: e.g. the
Categorify reference is ``value_counts`` + a sort by (count desc, value asc) + the index
layout 0 pad / 1 null / 2..2+B-1 OOV / vocabulary.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from distributed import get_task_stream
from sklearn.preprocessing import MinMaxScaler, StandardScaler

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.hashing import hash_array
from interactive_recsys.tables._vocabulary import read_vocabulary
from tests.conftest import (
    FLOAT64,
    INT64,
    LIST_STRING,
    STRING,
    assert_frames_equal,
    make_criteo_frame,
    new_workflow,
    output_dtypes,
    partitioned,
)


# ---- helpers ---------------------------------------------------------------------------------
def pylist(frame: pd.DataFrame, name: str) -> list:
    """A column as Python objects, nulls as None."""
    return pa.Table.from_pandas(frame[[name]], preserve_index=False)[name].to_pylist()


def floats(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as float64 with NaN for nulls."""
    return frame[name].to_numpy(dtype=np.float64, na_value=np.nan)


def run(node: Any, data: Any, root: str) -> tuple[irs.Workflow, pd.DataFrame]:
    wf = new_workflow(node, root)
    out = wf.fit_transform(data)
    if isinstance(out, irs.Dataset):
        out = out.compute()
    return wf, out


def vocabulary(wf: irs.Workflow, key: str) -> pd.DataFrame:
    """The ``value, count, index`` table Categorify wrote for vocabulary ``key``."""
    info = next(wf.fitted_steps(ops.Categorify)).state["vocabs"][key]
    table = read_vocabulary(os.path.join(wf.artifacts_dir, info["path"]), info["splits"])
    return table.to_pandas()


def _hash_one(value: Any, arrow_type: pa.DataType) -> int:
    return int(hash_array(pa.array([value], type=arrow_type))[0])


class CategorifyReference:
    """The documented Categorify layout, from pandas ``value_counts``."""

    def __init__(self, fit_values: Sequence[Any], *, freq_threshold: int = 0,
                 max_size: int | None = None, num_buckets: int | None = None,
                 arrow_type: pa.DataType = pa.string()) -> None:
        counts = pd.Series([v for v in fit_values if v is not None], dtype=object).value_counts()
        table = pd.DataFrame({"value": list(counts.index), "count": counts.to_numpy()})
        if freq_threshold:
            table = table[table["count"] >= freq_threshold]
        # descending frequency, ties by ascending value (Python order of ints / strings)
        ordered = sorted(zip(table["value"], table["count"], strict=True),
                         key=lambda vc: (-vc[1], vc[0]))
        if max_size is not None:
            ordered = ordered[:max_size]
        self.buckets = num_buckets or 1
        self.num_buckets = num_buckets
        self.arrow_type = arrow_type
        self.first = 2 + self.buckets
        self.table = pd.DataFrame({"value": [v for v, _ in ordered],
                                   "count": [c for _, c in ordered],
                                   "index": list(range(self.first, self.first + len(ordered)))})
        self.mapping = dict(zip(self.table["value"], self.table["index"], strict=True))
        self.cardinality = self.first + len(ordered)

    def encode_one(self, value: Any) -> int:
        if value is None:
            return 1
        if value in self.mapping:
            return self.mapping[value]
        if self.num_buckets:
            return 2 + _hash_one(value, self.arrow_type) % self.num_buckets
        return 2

    def encode(self, values: Sequence[Any], is_list: bool = False) -> list[Any]:
        """Encode plain values, or rows of a list column (null rows stay null)."""
        if is_list:
            return [None if v is None else [self.encode_one(x) for x in v] for v in values]
        return [self.encode_one(v) for v in values]


def flat(rows: Sequence[list | None]) -> list[Any]:
    """Elements of a list column's rows (null rows skipped, null elements kept)."""
    return [x for row in rows if row is not None for x in row]


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return make_criteo_frame(rows=240, seed=11)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("ref"))


# ---- Categorify ------------------------------------------------------------------------------
@pytest.mark.parametrize("column", ["C1", "C2", "C3", "I1", "I3"])
def test_categorify_matches_value_counts_reference(df: pd.DataFrame, root: str,
                                                   column: str) -> None:
    wf, out = run([column] >> ops.Categorify(), df, root)
    arrow_type = pa.int64() if column.startswith("I") else pa.string()
    ref = CategorifyReference(pylist(df, column), arrow_type=arrow_type)
    assert pylist(out, column) == ref.encode(pylist(df, column))
    assert wf.output_schema[column].cardinality == ref.cardinality
    assert output_dtypes(out) == {column: "int64"}
    vocab = vocabulary(wf, column)
    assert vocab["value"].tolist() == ref.table["value"].tolist()
    assert vocab["count"].tolist() == ref.table["count"].tolist()
    assert vocab["index"].tolist() == ref.table["index"].tolist()


def test_categorify_ties_by_ascending_string_value(root: str) -> None:
    data = pd.DataFrame({"c": pd.Series(["b", "d", "a", "c", "a", "b", None, "e"], dtype=STRING)})
    wf, out = run(["c"] >> ops.Categorify(), data, root)
    # a, b: 2 each -> 3, 4; c, d, e: 1 each -> 5, 6, 7
    assert pylist(out, "c") == [4, 6, 3, 5, 3, 4, 1, 7]
    assert wf.output_schema["c"].cardinality == 8


def test_categorify_ties_by_ascending_numeric_value_not_text(root: str) -> None:
    data = pd.DataFrame({"i": pd.Series([10, 2, 10, 2, 7, 100, 9], dtype=INT64)})
    _, out = run(["i"] >> ops.Categorify(), data, root)
    # 2, 10: 2 each -> 3, 4 (2 < 10 numerically); then 7, 9, 100 -> 5, 6, 7
    assert pylist(out, "i") == [4, 3, 4, 3, 5, 7, 6]


@pytest.mark.parametrize("threshold", [2, 5])
def test_categorify_freq_threshold_makes_rare_values_oov(df: pd.DataFrame, root: str,
                                                         threshold: int) -> None:
    wf, out = run(["C1"] >> ops.Categorify(freq_threshold=threshold), df, root)
    ref = CategorifyReference(pylist(df, "C1"), freq_threshold=threshold)
    assert pylist(out, "C1") == ref.encode(pylist(df, "C1"))
    assert wf.output_schema["C1"].cardinality == ref.cardinality
    assert 2 in pylist(out, "C1")  # some rare values exist in this data


@pytest.mark.parametrize("max_size", [1, 3, 1000])
def test_categorify_max_size_keeps_top_k(df: pd.DataFrame, root: str, max_size: int) -> None:
    wf, out = run(["C2"] >> ops.Categorify(max_size=max_size), df, root)
    ref = CategorifyReference(pylist(df, "C2"), max_size=max_size)
    assert pylist(out, "C2") == ref.encode(pylist(df, "C2"))
    assert wf.output_schema["C2"].cardinality == ref.cardinality


@pytest.mark.parametrize(("column", "kwargs"), [
    ("C1", {"num_buckets": 1}),
    ("C1", {"num_buckets": 7, "freq_threshold": 3}),
    ("C2", {"num_buckets": 5, "max_size": 4}),
    ("I2", {"num_buckets": 4, "freq_threshold": 10}),
])
def test_categorify_num_buckets_hashes_oov_with_hash_array(df: pd.DataFrame, root: str,
                                                           column: str, kwargs: dict) -> None:
    arrow_type = pa.int64() if column.startswith("I") else pa.string()
    wf, out = run([column] >> ops.Categorify(**kwargs), df, root)
    ref = CategorifyReference(pylist(df, column), arrow_type=arrow_type, **kwargs)
    assert pylist(out, column) == ref.encode(pylist(df, column))
    assert wf.output_schema[column].cardinality == ref.cardinality
    # unseen values at transform time are hashed into the same buckets
    unseen = ["zz-unseen-1", "zz-unseen-2", None] if arrow_type == pa.string() else \
        [10_001, 10_002, None]
    new = pd.DataFrame({column: pd.Series(unseen, dtype=STRING if arrow_type == pa.string()
                                          else INT64)})
    got = pylist(wf.transform(new), column)
    assert got == ref.encode(unseen)
    assert all(2 <= g < 2 + kwargs["num_buckets"] for g in got[:2])


def test_categorify_unseen_value_is_oov_and_null_is_1(df: pd.DataFrame, root: str) -> None:
    wf = new_workflow(["C3"] >> ops.Categorify(), root)
    wf.fit(df)
    new = pd.DataFrame({"C3": pd.Series(["never-seen", None, "c3_001"], dtype=STRING)})
    ref = CategorifyReference(pylist(df, "C3"))
    assert pylist(wf.transform(new), "C3") == [2, 1, ref.mapping["c3_001"]]


def test_categorify_all_null_column_gives_null_index_and_empty_vocabulary(root: str) -> None:
    data = pd.DataFrame({"c": pd.Series([None] * 6, dtype=STRING),
                         "i": pd.Series([None] * 6, dtype=INT64)})
    wf, out = run(["c", "i"] >> ops.Categorify(), data, root)
    assert pylist(out, "c") == [1] * 6
    assert pylist(out, "i") == [1] * 6
    assert wf.output_schema["c"].cardinality == 3  # 0 pad, 1 null, 2 OOV
    new = pd.DataFrame({"c": pd.Series(["x", None], dtype=STRING),
                        "i": pd.Series([5, None], dtype=INT64)})
    assert pylist(wf.transform(new), "c") == [2, 1]
    assert pylist(wf.transform(new), "i") == [2, 1]


def test_categorify_list_column_encodes_elements(df: pd.DataFrame, root: str) -> None:
    wf, out = run(["L1"] >> ops.Categorify(), df, root)
    values = pylist(df, "L1")
    ref = CategorifyReference(flat(values))
    assert pylist(out, "L1") == ref.encode(values, is_list=True)
    assert output_dtypes(out) == {"L1": "list<int64>"}
    assert wf.output_schema["L1"].cardinality == ref.cardinality
    assert any(v is None for v in values) and any(v == [] for v in values)
    assert any(v and None in v for v in values)  # null elements -> 1


def test_categorify_joint_group_shares_one_vocabulary(df: pd.DataFrame, root: str) -> None:
    wf, out = run([["C1", "C2"]] >> ops.Categorify(encode_type="joint"), df, root)
    ref = CategorifyReference(pylist(df, "C1") + pylist(df, "C2"))
    assert list(out.columns) == ["C1", "C2"]
    assert pylist(out, "C1") == ref.encode(pylist(df, "C1"))
    assert pylist(out, "C2") == ref.encode(pylist(df, "C2"))
    assert wf.output_schema["C1"].cardinality == wf.output_schema["C2"].cardinality \
        == ref.cardinality
    assert wf.output_schema["C1"].properties["domain"] == "C1_C2"


def test_categorify_joint_group_of_string_and_list_column(df: pd.DataFrame, root: str) -> None:
    data = df[["C3", "L1"]]
    _, out = run([["C3", "L1"]] >> ops.Categorify(encode_type="joint"), data, root)
    ref = CategorifyReference(pylist(df, "C3") + flat(pylist(df, "L1")))
    assert pylist(out, "C3") == ref.encode(pylist(df, "C3"))
    assert pylist(out, "L1") == ref.encode(pylist(df, "L1"), is_list=True)
    assert output_dtypes(out) == {"C3": "int64", "L1": "list<int64>"}


def test_categorify_combo_group_encodes_combinations(df: pd.DataFrame, root: str) -> None:
    data = df[["C2", "C3", "label"]].dropna().reset_index(drop=True)
    node = ([["C2", "C3"]] >> ops.Categorify(encode_type="combo")) + ["label"]
    wf, out = run(node, data, root)
    combos = list(zip(pylist(data, "C2"), pylist(data, "C3"), strict=True))
    ref = CategorifyReference(combos)
    assert list(out.columns) == ["C2_C3", "label"]
    assert pylist(out, "C2_C3") == ref.encode(combos)
    assert wf.output_schema["C2_C3"].cardinality == ref.cardinality


def test_categorify_combo_with_null_parts_is_consistent(df: pd.DataFrame, root: str) -> None:
    """A combination with a null part is encoded consistently: equal combinations get
    equal indices, different ones different indices, never 0."""
    wf, out = run([["C2", "C3"]] >> ops.Categorify(encode_type="combo"), df, root)
    combos = list(zip(pylist(df, "C2"), pylist(df, "C3"), strict=True))
    got = pylist(out, "C2_C3")
    by_combo: dict[tuple, set] = {}
    for c, g in zip(combos, got, strict=True):
        by_combo.setdefault(c, set()).add(g)
    assert all(len(s) == 1 for s in by_combo.values())
    assert len({next(iter(s)) for s in by_combo.values()}) == len(by_combo)
    assert min(got) >= 1 and max(got) < wf.output_schema["C2_C3"].cardinality


def test_categorify_int32_dtype(df: pd.DataFrame, root: str) -> None:
    _, out64 = run(["C1", "L1"] >> ops.Categorify(), df, root)
    wf, out32 = run(["C1", "L1"] >> ops.Categorify(dtype="int32"), df, root)
    assert output_dtypes(out32) == {"C1": "int32", "L1": "list<int32>"}
    assert wf.output_schema.dtypes == {"C1": "int32", "L1": "list<int32>"}
    assert pylist(out32, "C1") == pylist(out64, "C1")
    assert pylist(out32, "L1") == pylist(out64, "L1")



@pytest.mark.parametrize("kwargs", [{}, {"max_size": 5}, {"num_buckets": 3, "freq_threshold": 2},
                                    {"encode_type": "combo"}])
def test_categorify_split_out_does_not_change_results(df: pd.DataFrame, root: str,
                                                      kwargs: dict) -> None:
    sel = [["C1", "C2"]] if kwargs.get("encode_type") == "combo" else ["C1", "I1", "L1"]
    ds = partitioned(df, 5)
    wf1, out1 = run(sel >> ops.Categorify(split_out=1, **kwargs), ds, root)
    wf4, out4 = run(sel >> ops.Categorify(split_out=4, **kwargs), ds, root)
    assert_frames_equal(out1, out4)
    assert wf1.output_schema == wf4.output_schema
    key = "C1_C2" if kwargs.get("encode_type") == "combo" else "C1"
    pd.testing.assert_frame_equal(vocabulary(wf1, key), vocabulary(wf4, key))
    if kwargs.get("encode_type") != "combo":  # unseen values take the same path too
        new = pd.DataFrame({"C1": pd.Series(["nope", None, "c1_001"], dtype=STRING),
                            "I1": pd.Series([99_999, None, 3], dtype=INT64),
                            "L1": pd.Series([["nope", None], None, ["t1"]], dtype=LIST_STRING)})
        assert_frames_equal(wf1.transform(new), wf4.transform(new))


# ---- HashBucket ------------------------------------------------------------------------------
@pytest.mark.parametrize(("column", "arrow_type"), [("C1", pa.string()), ("I2", pa.int64())])
@pytest.mark.parametrize("num_buckets", [1, 10, 1000])
def test_hash_bucket_matches_hash_array(df: pd.DataFrame, root: str, column: str,
                                        arrow_type: pa.DataType, num_buckets: int) -> None:
    wf, out = run([column] >> ops.HashBucket(num_buckets), df, root)
    values = pylist(df, column)
    expected = [1 if v is None else 2 + _hash_one(v, arrow_type) % num_buckets for v in values]
    assert pylist(out, column) == expected
    assert wf.output_schema[column].cardinality == 2 + num_buckets
    assert output_dtypes(out) == {column: "int64"}


def test_hash_bucket_list_column_and_int32(df: pd.DataFrame, root: str) -> None:
    _, out = run(["L1"] >> ops.HashBucket(16, dtype="int32"), df, root)
    expected = [None if v is None else
                [1 if x is None else 2 + _hash_one(x, pa.string()) % 16 for x in v]
                for v in pylist(df, "L1")]
    assert pylist(out, "L1") == expected
    assert output_dtypes(out) == {"L1": "list<int32>"}


@pytest.mark.parametrize("cls", [ops.HashBucket, ops.Categorify])
def test_int32_indices_never_overflow(root: str, cls: type) -> None:
    data = pd.DataFrame({"x": pd.Series(np.arange(500), dtype=INT64)})
    try:
        wf = new_workflow(["x"] >> cls(num_buckets=2**40, dtype="int32"), root)
        wf.fit(data)
    except irs.ParameterError as exc:  # refusing the combination is fine
        assert "num_buckets" in str(exc) or "dtype" in str(exc)
        return
    got = np.asarray(pylist(wf.transform(data), "x"))
    card = wf.output_schema["x"].cardinality
    assert got.min() >= 1 and got.max() < card <= 2**31 - 1


def test_hash_bucket_is_value_defined_across_int_widths(root: str) -> None:
    a = pd.DataFrame({"x": pd.Series([1, -5, 70000], dtype=pd.ArrowDtype(pa.int32()))})
    b = pd.DataFrame({"x": pd.Series([1, -5, 70000], dtype=INT64)})
    _, out_a = run(["x"] >> ops.HashBucket(97), a, root)
    _, out_b = run(["x"] >> ops.HashBucket(97), b, root)
    assert pylist(out_a, "x") == pylist(out_b, "x")


# ---- Normalize / NormalizeMinMax -------------------------------------------------------------
@pytest.mark.parametrize("column", ["I1", "I3", "F1"])
def test_normalize_matches_standard_scaler(df: pd.DataFrame, root: str, column: str) -> None:
    _, out = run([column] >> ops.Normalize(), df, root)
    x = floats(df, column)
    expected = StandardScaler().fit_transform(x[:, None]).ravel()  # NaN ignored in fit
    assert output_dtypes(out) == {column: "float32"}
    np.testing.assert_allclose(floats(out, column), expected, rtol=1e-5, atol=1e-6)


def test_normalize_ddof_1_divides_by_the_sample_std_as_pandas(df: pd.DataFrame,
                                                              root: str) -> None:
    wf, out = run(["F1"] >> ops.Normalize(ddof=1), df, root)
    x = pd.Series(floats(df, "F1"))
    np.testing.assert_allclose(floats(out, "F1"), ((x - x.mean()) / x.std()).to_numpy(),
                               rtol=1e-5, atol=1e-6)
    (step,) = wf.fitted_steps()
    assert step.state["stds"]["F1"] == pytest.approx(x.std(), rel=1e-12)


def test_normalize_stats_skip_non_finite_and_inf_stays_inf(root: str) -> None:
    x = np.array([1.0, 2.0, np.inf, 4.0, -np.inf, np.nan, 7.0])
    data = pd.DataFrame({"x": x})
    _, out = run(["x"] >> ops.Normalize(), data, root)
    finite = x[np.isfinite(x)]
    expected = (x - finite.mean()) / finite.std(ddof=0)
    got = floats(out, "x")
    np.testing.assert_allclose(got[np.isfinite(x)], expected[np.isfinite(x)], rtol=1e-6)
    assert got[2] == np.inf and got[4] == -np.inf and np.isnan(got[5])
    assert pylist(out, "x")[5] is None  # a null (NaN in) stays null


def test_normalize_constant_column_gives_zero_and_all_null_stays_null(root: str) -> None:
    data = pd.DataFrame({"c": [3.0, 3.0, None], "n": pd.Series([None] * 3, dtype=FLOAT64)})
    _, out = run(["c", "n"] >> ops.Normalize(), data, root)
    assert pylist(out, "c") == [0.0, 0.0, None]
    assert pylist(out, "n") == [None, None, None]


def test_normalize_large_offset_matches_standard_scaler(root: str) -> None:
    x = 1e9 + np.array([0.0, 1.0, 2.0, 3.0, 4.0])  # e.g. unix timestamps
    _, out = run(["x"] >> ops.Normalize(), pd.DataFrame({"x": x}), root)
    expected = StandardScaler().fit_transform(x[:, None]).ravel()
    np.testing.assert_allclose(floats(out, "x"), expected, rtol=1e-4)


def test_normalize_and_minmax_on_random_data_in_7_partitions(rng: np.random.Generator,
                                                             root: str) -> None:
    x = rng.normal(50.0, 12.0, (500, 2))
    x[rng.random(x.shape) < 0.1] = np.nan
    data = pd.DataFrame({"a": x[:, 0], "b": x[:, 1]})
    ds = partitioned(irs.get_backend("cpu").from_pandas(data), 7)
    node = (["a"] >> ops.Normalize()) + (["b"] >> ops.NormalizeMinMax())
    _, out = run(node, ds, root)
    np.testing.assert_allclose(floats(out, "a"), StandardScaler().fit_transform(x[:, :1]).ravel(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(floats(out, "b"), MinMaxScaler().fit_transform(x[:, 1:]).ravel(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("column", ["I2", "F1"])
def test_normalize_minmax_matches_minmax_scaler(df: pd.DataFrame, root: str, column: str) -> None:
    _, out = run([column] >> ops.NormalizeMinMax(), df, root)
    x = floats(df, column)
    expected = MinMaxScaler().fit_transform(x[:, None]).ravel()
    assert output_dtypes(out) == {column: "float32"}
    np.testing.assert_allclose(floats(out, column), expected, rtol=1e-5, atol=1e-6)


def test_normalize_minmax_stats_skip_inf_and_constant_column_gives_zero(root: str) -> None:
    data = pd.DataFrame({"x": [2.0, np.inf, 4.0, 6.0, None], "c": [5.0] * 5})
    _, out = run(["x", "c"] >> ops.NormalizeMinMax(), data, root)
    got = floats(out, "x")
    np.testing.assert_allclose(got[[0, 2, 3]], [0.0, 0.5, 1.0])
    assert got[1] == np.inf and np.isnan(got[4])
    assert pylist(out, "c") == [0.0] * 5


# ---- FillMissing / FillMedian ----------------------------------------------------------------
@pytest.mark.parametrize("column", ["I1", "F1"])
def test_fill_missing_matches_pandas_fillna(df: pd.DataFrame, root: str, column: str) -> None:
    _, out = run([column] >> ops.FillMissing(fill_val=7, add_binary_cols=True), df, root)
    expected = df[column].fillna(7)
    assert list(out.columns) == [column, f"{column}_filled"]
    assert pylist(out, column) == expected.tolist()
    assert pylist(out, f"{column}_filled") == df[column].isna().tolist()
    assert output_dtypes(out) == {column: output_dtypes(df[[column]])[column],
                                  f"{column}_filled": "bool"}


def test_fill_missing_fills_nan_and_null_but_not_inf(root: str) -> None:
    arr = pa.array([1.0, float("nan"), None, float("inf")], from_pandas=False)
    assert arr.null_count == 1  # a real NaN and a real null
    data = pd.DataFrame({"x": pd.Series(pd.arrays.ArrowExtensionArray(arr))})
    _, out = run(["x"] >> ops.FillMissing(-1.0, add_binary_cols=True), data, root)
    assert pylist(out, "x") == [1.0, -1.0, -1.0, float("inf")]
    assert pylist(out, "x_filled") == [False, True, True, False]


@pytest.mark.parametrize("column", ["F1", "I2"])
@pytest.mark.parametrize("npartitions", [1, 7])
def test_fill_median_matches_pandas_median(df: pd.DataFrame, root: str, column: str,
                                           npartitions: int) -> None:
    data = df[[column]].copy()
    median = float(data[column].median())
    if column == "I2" and median != int(median):  # keep the int case integral
        data = data.iloc[1:]
        median = float(data[column].median())
    assert column != "I2" or median == int(median)
    _, out = run([column] >> ops.FillMedian(add_binary_cols=True), partitioned(data, npartitions),
                  root)
    expected = data[column].fillna(median if column == "F1" else int(median))
    assert pylist(out, column) == pytest.approx(expected.tolist())
    assert pylist(out, f"{column}_filled") == data[column].isna().tolist()


def test_fill_median_exact_midpoint_for_even_count(root: str) -> None:
    data = pd.DataFrame({"x": [4.0, None, 1.0, 10.0, 2.0]})
    _, out = run(["x"] >> ops.FillMedian(), partitioned(data, 3), root)
    assert pylist(out, "x") == [4.0, 3.0, 1.0, 10.0, 2.0]


def test_fill_median_stats_skip_inf_and_all_null_fills_zero(root: str) -> None:
    data = pd.DataFrame({"x": [1.0, np.inf, 2.0, 3.0, None, np.inf, np.inf],
                         "n": pd.Series([None] * 7, dtype=FLOAT64)})
    _, out = run(["x", "n"] >> ops.FillMedian(), data, root)
    assert pylist(out, "x")[4] == 2.0  # median of the finite values 1, 2, 3
    assert pylist(out, "x")[1] == np.inf
    assert pylist(out, "n") == [0.0] * 7


def test_fractional_values_on_int_column_keep_the_dtype_or_fail_clearly(root: str) -> None:
    data = pd.DataFrame({"i": pd.Series([1, 2, None, 3, 4], dtype=INT64)})
    # FillMedian: the median 2.5 is rounded half up, the column stays int64
    wf = new_workflow(["i"] >> ops.FillMedian(), root)
    out = wf.fit_transform(data)
    assert output_dtypes(out) == wf.output_schema.dtypes == {"i": "int64"}
    assert pylist(out, "i") == [1, 2, 3, 3, 4]
    # Clip: a fractional bound on integers is rounded inwards (x >= 1.5 is x >= 2)
    out = new_workflow(["i"] >> ops.Clip(min_value=1.5, max_value=3.5), root).fit_transform(data)
    assert pylist(out, "i") == [2, 2, None, 3, 3]
    # FillMissing: a fractional fill value cannot go into an int column
    with pytest.raises(irs.SchemaError, match="int64 column with 0.5"):
        new_workflow(["i"] >> ops.FillMissing(0.5), root).fit_transform(data)


# ---- Clip / LogOp / Bucketize ----------------------------------------------------------------
@pytest.mark.parametrize(("column", "lo", "hi"), [("I1", 2, 5), ("F1", 3.5, None),
                                                  ("I3", None, 10)])
def test_clip_matches_numpy_and_keeps_dtype(df: pd.DataFrame, root: str, column: str,
                                            lo: float | None, hi: float | None) -> None:
    _, out = run([column] >> ops.Clip(min_value=lo, max_value=hi), df, root)
    assert output_dtypes(out) == output_dtypes(df[[column]])
    x = floats(df, column)
    expected = np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi)
    present = ~np.isnan(x)
    np.testing.assert_array_equal(floats(out, column)[present], expected[present])


@pytest.mark.parametrize(("lo", "hi"), [(2, None), (None, 10), (2, 10)])
def test_clip_keeps_nulls_null(df: pd.DataFrame, root: str, lo: float | None,
                               hi: float | None) -> None:
    _, out = run(["I1", "F1"] >> ops.Clip(min_value=lo, max_value=hi), df, root)
    for column in ("I1", "F1"):
        assert [v is None for v in pylist(out, column)] == df[column].isna().tolist()


def test_clip_keeps_nan_nan_and_null_null_like_numpy() -> None:
    # NaN is a value (numpy, pandas and cuDF keep it through clip); null stays null
    values = pa.array([np.nan, -3.0, 5.0, None, np.inf, -np.inf], pa.float64())
    df = pd.DataFrame({"f": pd.arrays.ArrowExtensionArray(values)})
    out = irs.Workflow(["f"] >> ops.Clip(min_value=0, max_value=4)).fit_transform(
        df, dtype_backend="pyarrow")  # NumPy dtypes would show the null as NaN too
    got = pa.array(out["f"].array)
    assert got.is_null().to_pylist() == [False, False, False, True, False, False]
    expected = np.clip(np.array([np.nan, -3.0, 5.0, 0.0, np.inf, -np.inf]), 0, 4)
    np.testing.assert_array_equal(got.fill_null(0.0).to_numpy(), expected)


@pytest.mark.parametrize("column", ["I1", "F1"])
def test_log_op_matches_numpy_log1p_float32(df: pd.DataFrame, root: str, column: str) -> None:
    data = df[[column]].abs()
    _, out = run([column] >> ops.LogOp(), data, root)
    expected = np.log1p(floats(data, column)).astype(np.float32)
    assert output_dtypes(out) == {column: "float32"}
    np.testing.assert_array_equal(out[column].to_numpy(dtype=np.float32, na_value=np.nan),
                                  expected)


@pytest.mark.parametrize(("column", "boundaries"), [("F1", [2.0, 4.5, 6.0]), ("I1", [1, 3, 4]),
                                                    ("I3", [0])])
def test_bucketize_matches_np_digitize(df: pd.DataFrame, root: str, column: str,
                                       boundaries: list) -> None:
    wf, out = run([column] >> ops.Bucketize(boundaries), df, root)
    x = floats(df, column)
    expected = [None if np.isnan(v) else int(d) for v, d in zip(x, np.digitize(x, boundaries),
                                                                 strict=True)]
    assert pylist(out, column) == expected
    assert wf.output_schema[column].cardinality == len(boundaries) + 1
    assert output_dtypes(out) == {column: "int64"}


def test_bucketize_boundary_values_and_infinities(root: str) -> None:
    x = np.array([-np.inf, -1.0, 0.0, 0.5, 10.0, 11.0, np.inf])
    _, out = run(["x"] >> ops.Bucketize([0, 10]), pd.DataFrame({"x": x}), root)
    assert pylist(out, "x") == np.digitize(x, [0, 10]).tolist()


# ---- Rename / LambdaOp -----------------------------------------------------------------------
def test_rename_mapping_prefix_postfix(df: pd.DataFrame, root: str) -> None:
    node = ["C1", "I1"] >> ops.Rename(mapping={"C1": "cat"}, prefix="p_", postfix="_s")
    wf, out = run(node, df, root)
    assert list(out.columns) == ["p_cat_s", "p_I1_s"]
    assert wf.output_schema.names == ["p_cat_s", "p_I1_s"]
    assert pylist(out, "p_cat_s") == pylist(df, "C1")


def test_lambda_op_expression_and_callable_match_pandas(df: pd.DataFrame, root: str) -> None:
    node = (["I1"] >> ops.LambdaOp("x * 2 + 1")) + \
        (["F1"] >> ops.Rename(postfix="_f") >> ops.LambdaOp(lambda s: s.abs() - 1))
    _, out = run(node, df, root)
    assert pylist(out, "I1") == [None if v is None else v * 2 + 1 for v in pylist(df, "I1")]
    np.testing.assert_allclose(floats(out, "F1_f"), np.abs(floats(df, "F1")) - 1)


def test_lambda_op_dtype_casts(df: pd.DataFrame, root: str) -> None:
    wf, out = run(["I1"] >> ops.LambdaOp("x * 2", dtype="float32"), df, root)
    assert output_dtypes(out) == {"I1": "float32"} == wf.output_schema.dtypes


@pytest.mark.parametrize("expr", ["x / 2", "x > 3"])
def test_lambda_op_predicted_dtype_matches_output(df: pd.DataFrame, root: str, expr: str) -> None:
    wf, out = run(["I1"] >> ops.LambdaOp(expr), df, root)
    assert output_dtypes(out) == wf.output_schema.dtypes


# ---- Filter / Dropna -------------------------------------------------------------------------
FILTER_CASES = {
    "I1 > 3": lambda d: d["I1"] > 3,
    "I1 >= 2 and C3 == 'c3_001'": lambda d: (d["I1"] >= 2) & (d["C3"] == "c3_001"),
    "notnull(I1) | (C3 != 'c3_004')": lambda d: d["I1"].notna() | (d["C3"] != "c3_004"),
    "isnull(I1)": lambda d: d["I1"].isna(),
    "not (I1 * 2 < 5)": lambda d: ~(d["I1"] * 2 < 5),
}


@pytest.mark.parametrize("expr", sorted(FILTER_CASES))
def test_filter_matches_pandas_boolean_indexing(df: pd.DataFrame, root: str, expr: str) -> None:
    """Rows where the expression is null (a null compared) are dropped, as with
    ``df[mask.fillna(False)]`` in pandas."""
    node = (["I1", "C3"] >> ops.Filter(expr)) + ["label", "F1"]
    _, out = run(node, df, root)
    mask = FILTER_CASES[expr](df).fillna(False).astype(bool)
    expected = df[mask][["I1", "C3", "label", "F1"]]
    assert_frames_equal(out, expected)


def test_filter_drops_rows_from_parallel_branches(df: pd.DataFrame, root: str) -> None:
    node = (["I1"] >> ops.Filter("I1 > 4")) + (["C1"] >> ops.HashBucket(50)) + ["label"]
    _, out = run(node, df, root)
    keep = (df["I1"] > 4).fillna(False).astype(bool)
    assert len(out) == int(keep.sum())
    assert pylist(out, "label") == df["label"][keep].tolist()


def test_statistics_downstream_of_filter_see_kept_rows_only(df: pd.DataFrame, root: str) -> None:
    _, out = run(["F1", "I1"] >> ops.Filter("I1 > 3") >> ops.Normalize(), partitioned(df, 4), root)
    kept = df[(df["I1"] > 3).fillna(False).astype(bool)]
    expected = StandardScaler().fit_transform(kept[["F1", "I1"]].to_numpy(
        dtype=np.float64, na_value=np.nan))
    np.testing.assert_allclose(out[["F1", "I1"]].to_numpy(dtype=np.float64, na_value=np.nan),
                               expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("columns", [["I1"], ["I1", "F1", "C1"], ["L1"]])
def test_dropna_matches_pandas_dropna(df: pd.DataFrame, root: str, columns: list) -> None:
    data = df.copy()
    data["F1"] = pd.Series(np.where(np.arange(len(df)) % 9 == 0, np.nan, floats(df, "F1")),
                           dtype=np.float64)  # NaN as well as nulls
    node = (columns >> ops.Dropna()) + ["label"]
    _, out = run(node, data, root)
    expected = data.dropna(subset=columns)[[*columns, "label"]]
    assert len(out) == len(expected)
    assert pylist(out, "label") == expected["label"].tolist()
    assert pylist(out, columns[0]) == pylist(expected, columns[0])


# ---- partitioning, split_out and workers do not change results -------------------------------
def _pipeline() -> Any:
    return ((["C1", "L1"] >> ops.Categorify(freq_threshold=2))
            + ([["C3", "C2"]] >> ops.Categorify(encode_type="joint", max_size=6, split_out=3))
            + (["C3"] >> ops.Rename(postfix="_h") >> ops.HashBucket(11))
            + (["I1", "I2"] >> ops.FillMedian() >> ops.Normalize())
            + (["I3"] >> ops.LogOp() >> ops.NormalizeMinMax())
            + (["F1"] >> ops.Clip(min_value=1.0) >> ops.Bucketize([2.0, 4.0, 6.0]))
            + (["label"] >> ops.Filter("label >= 0")))


def test_pipeline_same_output_for_1_and_7_partitions(df: pd.DataFrame, root: str) -> None:
    wf1, out1 = run(_pipeline(), partitioned(df, 1), root)
    wf7, out7 = run(_pipeline(), partitioned(df, 7), root)
    assert_frames_equal(out1, out7)
    assert wf1.output_schema == wf7.output_schema
    # and a pandas frame in gives the same rows as the lazy dataset
    assert_frames_equal(wf7.transform(df), out7)


def test_pipeline_same_output_on_2_worker_cluster(df: pd.DataFrame, root: str,
                                                  client: Any) -> None:
    ds = partitioned(df, 6)
    with dask.config.set(scheduler="threads"):  # reference: no cluster
        wf_local, out_local = run(_pipeline(), ds, root)
    with get_task_stream(client) as stream:
        wf_cluster, out_cluster = run(_pipeline(), ds, root)
    assert len(client.scheduler_info(n_workers=-1)["workers"]) == 2
    assert len({t["worker"] for t in stream.data}) == 2  # both workers did work
    assert_frames_equal(out_local, out_cluster)
    assert wf_local.output_schema == wf_cluster.output_schema
    # a workflow fitted locally transforms identically on the cluster
    assert_frames_equal(wf_local.transform(ds).compute(), out_cluster)


def test_normalize_constant_column_gives_zeros_for_any_partitioning(root: str) -> None:
    data = pd.DataFrame({"x": pd.Series([683.231396310646] * 3, dtype="float64")})
    for parts in (1, 2, 3):
        out = new_workflow(["x"] >> ops.Normalize(), root).fit_transform(partitioned(data, parts))
        assert out.compute()["x"].tolist() == [0.0, 0.0, 0.0]
