"""The cuDF backend gives exactly the CPU results (run with `pytest -m gpu` on a GPU machine)."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli import standard_criteo_workflow
from interactive_recsys.datasets import synthetic_criteo

pytestmark = pytest.mark.gpu


def both_backends(node, source, tmp_path):
    """Fit and transform on CPU and on GPU; return both outputs as Arrow tables."""
    outputs = []
    for backend in ("cpu", "gpu"):
        ds = irs.Dataset(source, backend=backend, part_size="8MB")
        wf = irs.Workflow(node, artifacts_dir=tmp_path / backend)
        wf.fit(ds)
        out = wf.transform(ds).compute()
        outputs.append(irs.get_backend(backend).to_arrow(out))
        assert irs.get_backend(backend).schema_of(out).dtypes == wf.output_schema.dtypes
    return outputs


def test_auto_backend_picks_the_gpu():
    assert irs.get_backend("auto").name == "gpu"
    assert irs.Dataset(pd.DataFrame({"a": [1]})).backend.name == "gpu"


def test_standard_criteo_workflow_is_identical_on_cpu_and_gpu(tmp_path):
    data = synthetic_criteo(rows=300_000, seed=5, path=tmp_path / "in", rows_per_file=100_000)
    wf_node = standard_criteo_workflow().output_node
    cpu, gpu = both_backends(wf_node, str(data), tmp_path)
    for name in cpu.column_names:
        if name.startswith("I"):
            np.testing.assert_allclose(cpu[name].to_numpy(), gpu[name].to_numpy(), rtol=1e-6)
        else:
            assert cpu[name].equals(gpu[name]), name


def test_hashes_buckets_and_lists_are_identical(tmp_path):
    rng = np.random.default_rng(0)
    n = 5000
    table = pa.table({
        "s": pa.array(rng.choice(["a", "bb", "ccc", None], n).tolist()),
        "i": pa.array(rng.integers(-50, 50, n)),
        "tags": pa.array([[f"t{j}" for j in rng.integers(0, 30, rng.integers(0, 4))]
                          for _ in range(n)]),
    })
    node = ((["s", "i"] >> ops.HashBucket(97)) +
            (["tags"] >> ops.Categorify(num_buckets=5, freq_threshold=3)))
    cpu, gpu = both_backends(node, table, tmp_path)
    assert cpu.equals(gpu)


def _feature_table(n: int = 20_000) -> pa.Table:
    rng = np.random.default_rng(1)
    return pa.table({
        "item": pa.array(rng.choice(["a", "bb", "ccc", "d", None], n).tolist()),
        "user": pa.array(rng.integers(0, 300, n)),
        "price": pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.normal(10, 3, n))),
        "qty": pa.array(rng.integers(0, 100, n)),
        "y": pa.array(rng.integers(0, 2, n).astype(np.float64)),
        "rid": pa.array(np.arange(n)),
    })


def test_join_groupby_target_encoding_and_crosses_are_identical(tmp_path):
    """The keyed_aggregate / lookup kernels of both backends give the same statistics."""
    node = ((["item", "user", "price", "qty"] >> ops.JoinGroupby(["price", "qty"], split_out=3))
            + ([["item", "user"], "y", "rid"] >> ops.TargetEncoding(
                "y", fold_cols=["rid"], out_dtype="float64"))
            + ([["item", "user"], ["user", "qty"]] >> ops.HashedCross(1000)))
    cpu, gpu = both_backends(node, _feature_table(), tmp_path)
    assert cpu.column_names == gpu.column_names
    for name in cpu.column_names:
        if pa.types.is_floating(cpu[name].type):
            np.testing.assert_allclose(cpu[name].to_numpy(zero_copy_only=False),
                                       gpu[name].to_numpy(zero_copy_only=False), rtol=1e-9)
        else:
            assert cpu[name].equals(gpu[name]), name


def test_out_of_fold_target_encoding_is_identical(tmp_path):
    table = _feature_table()
    node = ["item", "y", "rid"] >> ops.TargetEncoding("y", fold_cols=["rid"],
                                                      out_dtype="float64")
    outputs = []
    for backend in ("cpu", "gpu"):
        ds = irs.Dataset(table, backend=backend, part_size="8MB")
        wf = irs.Workflow(node, artifacts_dir=tmp_path / backend)
        outputs.append(irs.get_backend(backend).to_arrow(wf.fit_transform(ds).compute()))
    np.testing.assert_allclose(outputs[0]["TE_item_y"].to_numpy(),
                               outputs[1]["TE_item_y"].to_numpy(), rtol=1e-12)


def test_join_external_and_schema_statistics_are_identical(tmp_path):
    side = pd.DataFrame({"user": np.arange(0, 300, 2), "group": [f"g{i % 7}" for i in range(150)]})
    node = ((["user"] >> ops.JoinExternal(side, on="user"))
            + (["price", "qty"] >> ops.ReduceDtypeSize())
            + (["item", "rid"] >> ops.DropLowCardinality(6) >> ops.DataStats()))
    cpu, gpu = both_backends(node, _feature_table(), tmp_path)
    assert cpu.schema == gpu.schema
    assert cpu.column_names == ["user", "group", "price", "qty", "rid"]  # item: 4 values
    assert str(cpu.schema.field("qty").type) == "int8"
    for name in cpu.column_names:  # (price holds NaN: compared as arrays, NaN == NaN)
        np.testing.assert_array_equal(cpu[name].to_numpy(zero_copy_only=False),
                                      gpu[name].to_numpy(zero_copy_only=False), err_msg=name)
