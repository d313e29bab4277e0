"""``irs.compat.nvtabular``: NVTabular's meanings, checked against pandas, warning-free."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.compat import nvtabular as nvt_ops
from interactive_recsys.errors import ParameterError


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _cats(rows: int = 500, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values = [f"v{k:02d}" for k in range(20)]
    p = np.arange(20, 0, -1) / np.arange(20, 0, -1).sum()
    return pd.DataFrame({"c": rng.choice(values, rows, p=p), "y": rng.integers(0, 2, rows)})


@pytest.mark.parametrize("max_size, num_buckets", [(10, None), (8, 3), (4, None)])
def test_categorify_max_size_counts_table_rows(tmp_path, max_size, num_buckets):
    df = _cats()
    wf = irs.Workflow(["c"] >> nvt_ops.Categorify(max_size=max_size, num_buckets=num_buckets),
                      artifacts_dir=str(tmp_path / "wf"))
    out = wf.fit_transform(df)
    buckets = num_buckets or 1
    assert wf.output_schema["c"].cardinality == max_size  # the whole table: max_size rows
    # pandas: the max_size - 2 - buckets most frequent values (ties by value) get 2 + buckets..
    counts = df["c"].value_counts()
    ranked = sorted(counts.index, key=lambda v: (-counts[v], v))[:max_size - 2 - buckets]
    index = {v: 2 + buckets + i for i, v in enumerate(ranked)}
    kept = df["c"].isin(index)
    np.testing.assert_array_equal(out["c"][kept], df["c"][kept].map(index))
    oov = out["c"][~kept]
    assert oov.between(2, 2 + buckets - 1).all() and len(oov) == (~kept).sum()


def test_categorify_without_max_size_and_bad_sizes():
    assert nvt_ops.Categorify() == ops.Categorify()
    assert nvt_ops.Categorify(max_size=0, out_path="/x", on_host=False) == ops.Categorify()
    with pytest.raises(ParameterError, match=r"max_size=3\).*at least 4"):
        nvt_ops.Categorify(max_size=3)
    with pytest.raises(ParameterError, match="start_index"):
        nvt_ops.Categorify(start_index=1)


@pytest.mark.parametrize("args, pylist", [((2,), slice(None, 2)), ((-2,), slice(-2, None)),
                                          ((1, 3), slice(1, 3)), ((0,), slice(0, None))])
def test_list_slice_has_nvtabulars_meaning(args, pylist):
    rows = [[1, 2, 3, 4], [5], [], [6, 7, 8]]
    df = pd.DataFrame({"h": pd.Series(rows, dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    out = irs.Workflow(["h"] >> nvt_ops.ListSlice(*args)).fit_transform(df)
    assert [v.tolist() for v in out["h"]] == [r[pylist] for r in rows]  # NumPy arrays


def test_list_slice_k_differs_from_the_projects_own():
    assert nvt_ops.ListSlice(3) == ops.ListSlice(0, 3)
    assert nvt_ops.ListSlice(3) != ops.ListSlice(3)


def test_target_encoding_kfold_1_uses_every_row(tmp_path):
    df = _cats()
    wf = irs.Workflow(["c"] >> nvt_ops.TargetEncoding(["y"], kfold=1, p_smooth=5),
                      artifacts_dir=str(tmp_path / "wf"))
    out = wf.fit_transform(df)  # the training data: no folds, so the full statistics
    stats = df.groupby("c")["y"].agg(["sum", "count"])
    mean = df["y"].mean()
    want = ((stats["sum"] + mean * 5) / (stats["count"] + 5)).reindex(df["c"]).to_numpy()
    np.testing.assert_allclose(out["TE_c_y"], want, rtol=1e-6)
    assert nvt_ops.TargetEncoding("y").kfold == 3  # NVTabular's default
    # several targets: one encoding each, equal to one TargetEncoding per target
    two = df.assign(z=df["y"] * 3)
    both = irs.Workflow(["c"] >> nvt_ops.TargetEncoding(["y", "z"], kfold=1, p_smooth=5),
                        artifacts_dir=str(tmp_path / "wf2")).fit_transform(two)
    np.testing.assert_allclose(both["TE_c_y"], want, rtol=1e-6)
    np.testing.assert_allclose(both["TE_c_z"], want * 3, rtol=1e-6)


def test_join_groupby_defaults_to_count(tmp_path):
    df = _cats().assign(x=np.arange(500, dtype=float))
    wf = irs.Workflow(["c"] >> nvt_ops.JoinGroupby(cont_cols=["x"], cat_cache="host"),
                      artifacts_dir=str(tmp_path / "wf"))
    out = wf.fit_transform(df)
    assert list(out.columns) == ["c_count"]
    np.testing.assert_array_equal(out["c_count"], df.groupby("c")["c"].transform("size"))


def test_other_operators_are_the_projects_own():
    op = nvt_ops.FillMissing(1)
    assert isinstance(op, ops.FillMissing) and op == ops.FillMissing(1)
    assert op.to_config() == {"op": "FillMissing", "params": {"fill_val": 1}}  # loads as ours
    with pytest.raises(AttributeError, match="no operator 'Nope'"):
        nvt_ops.Nope  # noqa: B018
