"""The cuDF backend gives exactly the CPU results (run with `pytest -m gpu` on a GPU machine)."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("cudf", reason="needs a working GPU with cuDF (pip install -e '.[gpu]')")

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli._main import standard_criteo_workflow
from interactive_recsys.datasets import synthetic_criteo

pytestmark = pytest.mark.gpu


def both_backends(node, source, tmp_path):
    """Fit and transform on CPU and on GPU; return both outputs as Arrow tables."""
    outputs = []
    for i, backend in enumerate(("cpu", "gpu")):
        ds = irs.Dataset(source, backend=backend, part_size="8MB")
        wf = irs.Workflow(node, artifacts_dir=tmp_path / f"{i}-{backend}")
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


# ---- issue 14: every kernel the CPU/GPU split touches, compared with the CPU exactly -----------
def assert_tables_identical(cpu: pa.Table, gpu: pa.Table) -> None:
    """Same schema, same nulls, same values (NaN equal to NaN, float bits compared)."""
    assert cpu.schema == gpu.schema
    for name in cpu.column_names:
        a, b = cpu[name], gpu[name]
        assert a.is_null().equals(b.is_null()), name
        if pa.types.is_floating(a.type):
            np.testing.assert_array_equal(a.to_numpy(zero_copy_only=False),
                                          b.to_numpy(zero_copy_only=False), err_msg=name)
        else:
            assert a.equals(b), name


def _mixed_table(n: int = 20_000) -> pa.Table:
    """Floats with NaN and null, float keys with NaN, strings, ints and lists."""
    rng = np.random.default_rng(14)
    f = rng.normal(0, 3, n)
    f[rng.random(n) < 0.05] = np.nan
    keys = rng.choice([0.5, 1.5, 2.5, np.nan], n)
    return pa.table({
        "f": pa.array(f, mask=rng.random(n) < 0.05),  # NaN values and nulls
        "g": pa.array(rng.normal(5, 1, n), mask=rng.random(n) < 0.1),
        "k": pa.array(keys, mask=rng.random(n) < 0.03),  # NaN keys and null keys
        "s": pa.array(rng.choice(["a", "bb", "ccc", None], n).tolist()),
        "i": pa.array(rng.integers(-5, 5, n)),
        "tags": pa.array([[f"t{j}" for j in rng.integers(0, 9, rng.integers(0, 4))]
                          for _ in range(n)]),
    })


def _parquet(table: pa.Table, tmp_path, parts: int = 4) -> str:
    import pyarrow.parquet as pq

    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    step = -(-table.num_rows // parts)
    for i in range(parts):
        pq.write_table(table.slice(i * step, step), folder / f"part.{i}.parquet")
    return str(folder)


def test_bucketize_is_identical_and_keeps_nan_missing(tmp_path):
    cpu, gpu = both_backends(["f", "g"] >> ops.Bucketize([-1.0, 0.0, 2.5]), _mixed_table(),
                             tmp_path)
    assert_tables_identical(cpu, gpu)
    assert cpu["f"].null_count > 0.08 * cpu.num_rows  # NaN and null rows both missing


def test_fill_missing_with_binary_columns_is_identical(tmp_path):
    node = ["f", "g", "k"] >> ops.FillMissing(-1, add_binary_cols=True)
    cpu, gpu = both_backends(node, _mixed_table(), tmp_path)
    assert_tables_identical(cpu, gpu)
    assert "f_filled" in cpu.column_names and not np.isnan(cpu["f"].to_numpy()).any()


def test_dropna_on_floats_is_identical(tmp_path):
    cpu, gpu = both_backends(["f", "k", "s"] >> ops.Dropna(), _mixed_table(), tmp_path)
    assert_tables_identical(cpu, gpu)
    assert 0 < cpu.num_rows < 20_000 and not np.isnan(cpu["f"].to_numpy()).any()


def test_nan_keys_get_the_same_ids_on_both_backends(tmp_path):
    table = _mixed_table()
    side = pd.DataFrame({"k": [0.5, 1.5, np.nan], "name": ["half", "one-half", "nan"]})
    for node in (["k"] >> ops.Categorify(), ["k"] >> ops.HashBucket(13),
                 ["k"] >> ops.JoinExternal(side, on="k"),
                 ["k", "i"] >> ops.JoinGroupby(["i"]),
                 [["k", "s"]] >> ops.Categorify(encode_type="combo")):
        cpu, gpu = both_backends(node, table, tmp_path / str(len(list(tmp_path.iterdir()))))
        assert_tables_identical(cpu, gpu)


def test_lists_nested_lists_and_padded_slices_are_identical(tmp_path):
    table = _mixed_table()
    node = ((["tags"] >> ops.Categorify() >> ops.ListSlice(0, 2, pad=True))
            + (["s", "i"] >> ops.HashedCross(101)))
    cpu, gpu = both_backends(node, table, tmp_path)
    assert_tables_identical(cpu, gpu)


def test_csv_input_is_identical(tmp_path):
    frame = _mixed_table().drop_columns(["tags"]).to_pandas()
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    node = (["s"] >> ops.Categorify()) + (["f", "g"] >> ops.FillMissing(0) >> ops.Normalize()) \
        + ["i"]
    cpu, gpu = both_backends(node, str(path), tmp_path)
    assert_tables_identical(cpu, gpu)
    assert cpu.schema.field("i").type == pa.int64()


@pytest.mark.parametrize("shuffle", [None, "partition", "worker", "full"])
def test_writer_shuffles_write_identical_files(tmp_path, shuffle):
    import pyarrow.parquet as pq

    source = _parquet(_mixed_table(), tmp_path)
    node = (["s", "k"] >> ops.Categorify()) + ["f", "i", "tags"]
    written = []
    for i, backend in enumerate(("cpu", "gpu")):
        ds = irs.Dataset(source, backend=backend)
        wf = irs.Workflow(node, artifacts_dir=tmp_path / f"a{i}")
        wf.fit(ds)
        out = tmp_path / f"out{i}"
        wf.transform(ds).to_parquet(out, shuffle=shuffle, seed=3)
        written.append(pa.concat_tables(pq.read_table(f) for f in sorted(out.glob("*.parquet"))))
    assert_tables_identical(*written)
    assert written[0].num_rows == 20_000


@pytest.mark.slow
def test_out_of_core_with_a_small_device_limit_matches_the_cpu(tmp_path):
    """A GPU worker whose device limit is a fraction of the data: cuDF spills to host and
    the written output equals the CPU's."""
    import pyarrow.parquet as pq

    data = synthetic_criteo(rows=2_000_000, seed=8, path=tmp_path / "in",
                            rows_per_file=250_000)
    outputs = []
    for i, backend in enumerate(("cpu", "gpu")):
        size = {"gpu": True, "device_memory_limit": "128MB", "rmm_pool_size": None} \
            if backend == "gpu" else {"gpu": False, "n_workers": 2}
        with irs.start_cluster(dashboard=False, **size) as client, client.cluster:
            ds = irs.Dataset(str(data), backend=backend, part_size="32MB")
            wf = standard_criteo_workflow()
            wf.fit(ds)
            out = tmp_path / f"out{i}"
            wf.transform(ds).to_parquet(out)
            if backend == "gpu":
                info = client.scheduler_info(n_workers=-1)["workers"].values()
                assert all("cudf" in w["metrics"] for w in info)  # the spill metric is on
        outputs.append(pa.concat_tables(pq.read_table(f) for f in sorted(out.glob("*.parquet"))))
    cpu, gpu = outputs
    assert cpu.num_rows == gpu.num_rows == 2_000_000
    for name in cpu.column_names:
        if name.startswith("I"):
            np.testing.assert_allclose(cpu[name].to_numpy(), gpu[name].to_numpy(), rtol=1e-6)
        else:
            assert cpu[name].equals(gpu[name]), name


def test_dask_cudf_contender_matches_the_pandas_contender(tmp_path):
    """The hand-written dask-cuDF benchmark contender writes what the pandas one writes
    (ids exactly; floats within the harness's tolerance: CuPy's log1p is not NumPy's)."""
    from benchmarks import contenders, harness

    data = synthetic_criteo(rows=200_000, seed=9, path=tmp_path / "in", rows_per_file=50_000)
    contenders.run_pandas(str(data), str(tmp_path / "ref"))
    with irs.start_cluster(gpu=True, dashboard=False) as client, client.cluster:
        contenders.run_dask_cudf(str(data), str(tmp_path / "got"))
    positions = np.arange(200_000)
    ref, rows = harness.read_rows(tmp_path / "ref", positions)
    got, got_rows = harness.read_rows(tmp_path / "got", positions)
    assert harness.compare(ref, got, positions, rows, got_rows) == []
    for name in contenders.CATS:
        np.testing.assert_array_equal(ref[name], got[name], err_msg=name)
