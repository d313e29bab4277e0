"""The online transform (``irs.Loader(raw, workflow=wf)``) gives the offline batches, on CPU.

Every per-row operator is checked by property tests: random raw columns (nulls, NaN, -0.0,
infinities, strings of mixed lengths), a workflow fitted on them, and the batches of the
loader over ``wf.transform(ds).to_parquet(...)`` (the reference) against the online
loader's, with the transform run per batch (``transform_at="batch"``, PyTorch) and per row
group (``"read"``). Ids and FillMissing / FillMedian / Clip / Normalize / NormalizeMinMax
values must be identical bit for bit; LogOp's within 1 ulp of float32.

The no-hidden-sync test's CPU analogue is here too: an epoch of the per-batch transform runs
under a ``TorchFunctionMode`` that records every call that reads a tensor back to the host
(``item``, ``tolist``, ``cpu``, ``nonzero``, a boolean mask index...); none may happen, and
the jagged metadata must be plain Python ints computed before the copy.
"""

import shutil
import tempfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError, SchemaError
from interactive_recsys.loader import _kernels as kernels
from interactive_recsys.loader._online import WORD, online_operators
from interactive_recsys.loader._reader import open_source

torch = pytest.importorskip("torch")

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---- helpers --------------------------------------------------------------------------------
#: Folders made by the running test, removed after it (hypothesis runs many examples in one).
_SCRATCH: list[str] = []


def scratch() -> str:
    path = tempfile.mkdtemp(prefix="irs-online-")
    _SCRATCH.append(path)
    return path


@pytest.fixture(autouse=True)
def _remove_scratch():
    yield
    while _SCRATCH:
        shutil.rmtree(_SCRATCH.pop(), ignore_errors=True)


def write_raw(table: pa.Table) -> str:
    path = scratch() + "/raw"
    irs.Dataset(table.to_pandas(types_mapper=pd.ArrowDtype)).to_parquet(path)
    return path


def dataset(raw: str) -> irs.Dataset:
    """The raw data with its roles: ``y`` the target, ``x`` (when there) continuous."""
    names = pq.ParquetDataset(raw).schema.names
    return irs.Dataset(raw, tags={"y": ["target"],
                                  **({"x": ["continuous"]} if "x" in names else {})})


def fitted(node, raw: str, workdir: str, label: bool = True) -> irs.Workflow:
    wf = irs.Workflow(node + ["y"] if label else node,  # noqa: RUF005
                      artifacts_dir=workdir + "/wf")
    wf.fit(dataset(raw))
    return wf


def offline_batches(wf, raw: str, workdir: str, batch_size: int) -> list:
    out = workdir + "/processed"
    wf.transform(dataset(raw)).to_parquet(out)
    return list(irs.Loader(out, batch_size, shuffle=False))


def ulps(a, b):
    """float32 ulp distance per value (NaN against NaN counts 0)."""
    d = (a.contiguous().view(torch.int32).long() - b.contiguous().view(torch.int32).long()).abs()
    return torch.where(torch.isnan(a) & torch.isnan(b), torch.zeros_like(d), d)


def assert_online_equals_offline(node, table: pa.Table, max_ulp: int = 0,
                                 batch_size: int = 16) -> None:
    workdir = scratch()
    raw = write_raw(table)
    wf = fitted(node, raw, workdir)
    want = offline_batches(wf, raw, workdir, batch_size)
    for at in ("batch", "read"):
        got = list(irs.Loader(raw, batch_size, shuffle=False, workflow=wf, transform_at=at))
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.sparse.keys == w.sparse.keys and g.dense_names == w.dense_names
            assert torch.equal(g.sparse.values, w.sparse.values), (at, g.sparse.values,
                                                                   w.sparse.values)
            assert torch.equal(g.sparse.lengths, w.sparse.lengths)
            assert g.sparse.length_per_key == w.sparse.length_per_key
            assert torch.equal(g.labels, w.labels)
            assert g.dense.dtype == w.dense.dtype == torch.float32
            assert torch.equal(torch.isnan(g.dense), torch.isnan(w.dense)), at
            if g.dense.numel():
                assert int(ulps(g.dense, w.dense).max()) <= max_ulp, (at, g.dense, w.dense)


def labels(n: int) -> pa.Array:
    return pa.array(np.arange(n) % 2, pa.int64())


# ---- strategies -----------------------------------------------------------------------------
ROWS = st.integers(1, 40)
strings = st.one_of(st.none(), st.text(alphabet="abcé", min_size=0, max_size=10))
short_strings = st.one_of(st.none(), st.sampled_from(["aaaa", "bbbb", "cccc", "dddd", "eeee"]))
ints = st.one_of(st.none(), st.integers(-50, 200), st.sampled_from([2**20, -2**20, 0]))
big_ints = st.one_of(st.none(), st.integers(-50, 200), st.sampled_from([2**62, -2**63, 0]))
floats = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, width=32),
                   st.sampled_from([0.0, -0.0, float("nan"), float("inf"), -float("inf")]))


def column(values, kind):
    return pa.array(values, {"str": pa.string(), "int": pa.int64(), "f32": pa.float32(),
                             "f64": pa.float64()}[kind])


# ---- per-row operators: property tests ------------------------------------------------------
@SETTINGS
@given(values=st.lists(strings, min_size=1, max_size=40),
       params=st.sampled_from([{}, {"num_buckets": 3}, {"freq_threshold": 2},
                               {"max_size": 2, "num_buckets": 5}]))
def test_categorify_strings_of_any_length(values, params):
    table = pa.table({"c": column(values, "str"), "y": labels(len(values))})
    assert_online_equals_offline(["c"] >> ops.Categorify(**params), table)


@SETTINGS
@given(values=st.lists(short_strings, min_size=1, max_size=40),
       other=st.lists(st.sampled_from(["aaaa", "zz", None, "zzzzzzzzz"]), min_size=1,
                      max_size=5))
def test_categorify_common_width_strings_on_the_device(values, other):
    """Fitted on 4-character ids, looked up by hash on the device; other lengths are
    flagged out of the vocabulary on the CPU."""
    table = pa.table({"c": column(values, "str"), "y": labels(len(values))})
    workdir = scratch()
    wf = fitted(["c"] >> ops.Categorify(num_buckets=4), write_raw(table), workdir)
    later = pa.table({"c": column(values + other, "str"), "y": labels(len(values + other))})
    raw = write_raw(later)
    want = offline_batches(wf, raw, workdir, 8)
    loader = irs.Loader(raw, 8, shuffle=False, workflow=wf, transform_at="batch")
    got = list(loader)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g.sparse.values, w.sparse.values)
    online = loader.online
    chain = online.cat[0]
    if chain.width is not None:  # a 64-bit hash collision cannot be drawn: check the flags
        block = online.block(open_source(raw).read(0, online.input_columns), None, "t")
        bits = (block.extras[f"{WORD}0"] >> chain.absent_bit) & 1
        lengths = [None if v is None else len(v.encode()) for v in values + other]
        assert bits.tolist() == [int(n is not None and n != 4) for n in lengths]


@SETTINGS
@given(values=st.lists(big_ints, min_size=1, max_size=40), kind=st.sampled_from(["int", "f64"]),
       params=st.sampled_from([{}, {"num_buckets": 7}, {"freq_threshold": 2}]))
def test_categorify_numbers(values, kind, params):
    values = [None if v is None else (float(v) if kind == "f64" else v) for v in values]
    table = pa.table({"n": column(values, kind), "y": labels(len(values))})
    assert_online_equals_offline(["n"] >> ops.Categorify(**params), table)


@SETTINGS
@given(values=st.lists(floats, min_size=1, max_size=40))
def test_categorify_floats_with_nan_and_signed_zeros(values):
    table = pa.table({"x": column(values, "f32"), "y": labels(len(values))})
    assert_online_equals_offline(["x"] >> ops.Categorify(num_buckets=3), table)


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(["str", "int", "f64"]),
       buckets=st.sampled_from([1, 10, 2**31 - 1, 2**62 + 1]))
def test_hash_bucket(data, kind, buckets):
    values = data.draw(st.lists({"str": strings, "int": big_ints, "f64": floats}[kind],
                                min_size=1, max_size=40))
    table = pa.table({"c": column(values, kind), "y": labels(len(values))})
    assert_online_equals_offline(["c"] >> ops.HashBucket(buckets), table)


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(["int", "f32", "f64"]),
       fill=st.sampled_from([0, -1, 7]), low=st.sampled_from([None, -3.5, 0, 2]),
       high=st.sampled_from([None, 10, 150.25]))
def test_fill_and_clip_are_bit_identical(data, kind, fill, low, high):
    values = data.draw(st.lists(ints if kind == "int" else floats, min_size=1, max_size=40))
    table = pa.table({"x": column(values, kind), "y": labels(len(values))})
    node = ["x"] >> ops.FillMissing(fill)
    if low is not None or high is not None:
        node = node >> ops.Clip(min_value=low, max_value=high)
    assert_online_equals_offline(node, table)


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(["int", "f32", "f64"]),
       op=st.sampled_from(["normalize", "normalize1", "minmax", "median"]))
def test_normalize_minmax_and_median_are_bit_identical(data, kind, op):
    values = data.draw(st.lists(ints if kind == "int" else floats, min_size=1, max_size=40))
    if kind != "int":  # statistics of infinities are NaN offline and online alike; keep
        values = [v if v is None or np.isfinite(v) else None for v in values]  # them finite
    table = pa.table({"x": column(values, kind), "y": labels(len(values))})
    if all(v is None for v in values):
        return
    node = {"normalize": ["x"] >> ops.Normalize(),
            "normalize1": ["x"] >> ops.FillMissing(0) >> ops.Normalize(ddof=1),
            "minmax": ["x"] >> ops.NormalizeMinMax(),
            "median": ["x"] >> ops.FillMedian()}[op]
    assert_online_equals_offline(node, table)


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(["int", "f32", "f64"]))
def test_log_is_within_one_ulp(data, kind):
    values = data.draw(st.lists(ints if kind == "int" else floats, min_size=1, max_size=40))
    table = pa.table({"x": column(values, kind), "y": labels(len(values))})
    node = ["x"] >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    assert_online_equals_offline(node, table, max_ulp=1)


def test_log_of_many_counters_matches_offline_within_one_ulp():
    """Beyond the property test's small samples: 200k counters over a wide range."""
    rng = np.random.default_rng(3)
    x = np.floor(rng.pareto(0.7, 200_000)).astype(np.int64)
    x[::17] = -1
    table = pa.table({"x": pa.array(x), "y": labels(len(x))})
    assert_online_equals_offline(["x"] >> ops.LogOp(), table, max_ulp=1, batch_size=65_536)


def test_a_criteo_like_workflow_with_joint_groups_and_passthrough_columns():
    rng = np.random.default_rng(0)
    n = 3000
    table = pa.table({
        "a": pa.array([f"{i:x}" for i in rng.integers(0, 300, n)]),
        "b": pa.array([None if i % 9 == 0 else f"{i:x}" for i in rng.integers(0, 300, n)]),
        "i": pa.array([None if v % 5 == 0 else int(v) for v in rng.integers(0, 10**6, n)]),
        "id": pa.array(np.arange(n)), "y": labels(n)})
    cats = [["a", "b"]] >> ops.Categorify(freq_threshold=2)
    conts = ["i"] >> ops.FillMedian() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    node = cats + conts + ["id"]
    workdir = scratch()
    raw = write_raw(table)
    wf = fitted(node, raw, workdir)
    want = offline_batches(wf, raw, workdir, 512)
    out = workdir + "/processed"
    want = list(irs.Loader(out, 512, seed=4, extra_cols=["id"]))
    got = list(irs.Loader(raw, 512, seed=4, workflow=wf, extra_cols=["id"],
                          transform_at="batch"))
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g.sparse.values, w.sparse.values)
        assert torch.equal(g.extras["id"], w.extras["id"]) and list(g.extras) == ["id"]
        assert int(ulps(g.dense, w.dense).max()) <= 1


# ---- the kernels against NumPy --------------------------------------------------------------
def test_hash_and_modulo_kernels_are_the_numpy_ones_bit_for_bit():
    from interactive_recsys.hashing import hash_array

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.integers(-2**63, 2**63 - 1, 5000, dtype=np.int64),
                        [0, -1, 2**63 - 1, -2**63]])
    assert (kernels.hash_int(torch.from_numpy(x)).numpy().view(np.uint64)
            == hash_array(pa.array(x))).all()
    f = np.concatenate([rng.normal(0, 1e9, 5000), [0.0, -0.0, np.inf, -np.inf, 5e-324]])
    assert (kernels.hash_float(torch.from_numpy(f)).numpy().view(np.uint64)
            == hash_array(pa.array(f))).all()
    h = hash_array(pa.array(x))
    for n in (1, 3, 1000, 2**31 - 1, 2**62 + 1, 2**63 - 3):
        assert (kernels.umod(torch.from_numpy(h.view(np.int64)), n).numpy().astype(np.uint64)
                == h % np.uint64(n)).all(), n


# ---- no hidden sync: the CPU analogue -------------------------------------------------------
HOST_READS = {"item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__",
              "__index__", "nonzero", "masked_select", "unique", "any", "all"}


class HostReads(torch.overrides.TorchFunctionMode):
    """Records the calls that read a tensor's values back to the host (a device sync)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name in HOST_READS:
            self.calls.append(name)
        if name == "__getitem__" and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                and args[1].dtype == torch.bool:
            self.calls.append("boolean mask index")
        return func(*args, **(kwargs or {}))


def test_the_host_read_detector_catches_item_and_mask_indexing():
    x = torch.arange(5)
    with HostReads() as mode:
        x.sum().item()
        _ = x[x > 2]
    assert "item" in mode.calls and "boolean mask index" in mode.calls


def test_an_epoch_of_the_per_batch_transform_reads_nothing_back_from_its_tensors():
    rng = np.random.default_rng(1)
    n = 5000
    table = pa.table({
        "c": pa.array([None if i % 7 == 0 else f"{i:08x}" for i in rng.integers(0, 500, n)]),
        "k": pa.array([None if i % 11 == 0 else f"k{i}" for i in rng.integers(0, 50, n)]),
        "h": pa.array(rng.integers(0, 10**9, n)),
        "x": pa.array([None if i % 5 == 0 else float(i) for i in rng.integers(0, 99, n)]),
        "y": labels(n)})
    cats = ["c", "k"] >> ops.Categorify(num_buckets=3)
    hashed = ["h"] >> ops.HashBucket(100)
    conts = ["x"] >> ops.FillMissing(1) >> ops.Clip(max_value=50) >> ops.LogOp() >> ops.Normalize()
    node = cats + hashed + conts
    workdir = scratch()
    raw = write_raw(table)
    wf = fitted(node, raw, workdir)
    loader = irs.Loader(raw, 1024, workflow=wf, transform_at="batch", readers=0)
    assert loader.online.cat[1].cpu_lookup is not None  # "k": strings of mixed lengths
    with HostReads() as mode:
        batches = list(loader)
    assert mode.calls == []
    for b in batches:
        s = b.sparse
        assert all(type(v) is int for v in s.length_per_key + s.offset_per_key)
        assert s.offset_per_key == [0, *np.cumsum(s.length_per_key).tolist()]
        assert s.lengths.tolist() == [1] * (len(s.keys) * len(b))
    want = offline_batches(wf, raw, workdir, 1024)
    got = list(irs.Loader(raw, 1024, workflow=wf, transform_at="batch", shuffle=False))
    assert all(torch.equal(g.sparse.values, w.sparse.values) for g, w in zip(got, want,
                                                                               strict=True))


def test_the_transform_leaves_the_cpu_metadata_as_it_was_computed():
    table = pa.table({"c": pa.array(["a", "b", None, "a"]), "y": labels(4)})
    raw = write_raw(table)
    wf = fitted(["c"] >> ops.Categorify(), raw, scratch())
    online = irs.Loader(raw, 4, workflow=wf).online
    block = online.block(open_source(raw).read(0, online.input_columns), "float32", "test")
    before = block.to_batch().to_torch()
    after = online.apply(before)
    assert after.sparse.values.tolist() == [3, 4, 1, 3]  # a: 2 times, then b; null: 1
    assert after.sparse.lengths is before.sparse.lengths
    assert after.sparse.offsets is before.sparse.offsets
    assert after.sparse.length_per_key == [4] and after.sparse.offset_per_key == [0, 4]


# ---- steps that change only the schema pass -------------------------------------------------
def test_the_suggested_pipeline_with_its_tagged_label_and_renamed_columns_runs_online():
    """The Studio's Suggest tags the label (``["label"] >> AddTags(["target"])``); that and
    Rename, AddProperties, SelectColumns, DropColumns change no value, so the online
    transform passes them, and gives the offline batches (the label found by the tag the
    workflow adds)."""
    rng = np.random.default_rng(2)
    n = 300
    table = pa.table({
        "c": pa.array([None if i % 6 == 0 else f"{i:04x}" for i in rng.integers(0, 40, n)]),
        "x": pa.array([None if i % 7 == 0 else int(i) for i in rng.integers(0, 500, n)]),
        "z": pa.array(rng.normal(0, 1, n)), "label": labels(n)})
    raw = write_raw(table)  # no tags: the workflow's AddTags makes "label" the target
    cats = ["c"] >> ops.Categorify(freq_threshold=2) >> ops.Rename(postfix="_id")
    conts = (["x", "z"] >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp()
             >> ops.Normalize() >> ops.AddProperties({"unit": "count"})
             >> ops.DropColumns(["z"]) >> ops.SelectColumns(["x"]))
    workdir = scratch()
    wf = irs.Workflow(cats + conts + (["label"] >> ops.AddTags(["target"])),
                      artifacts_dir=workdir + "/wf")
    wf.fit(irs.Dataset(raw))
    wf.transform(irs.Dataset(raw)).to_parquet(workdir + "/processed")
    want = list(irs.Loader(workdir + "/processed", 64, shuffle=False))
    for at in ("batch", "read"):
        got = list(irs.Loader(raw, 64, shuffle=False, workflow=wf, transform_at=at))
        assert len(got) == len(want) == 5
        for g, w in zip(got, want, strict=True):
            assert g.sparse.keys == w.sparse.keys == ["c_id"]
            assert g.dense_names == w.dense_names == ["x"]
            assert g.label_names == w.label_names == ["label"]
            assert torch.equal(g.sparse.values, w.sparse.values)
            assert torch.equal(g.labels, w.labels)
            assert int(ulps(g.dense, w.dense).max()) <= 1


# ---- what is refused ------------------------------------------------------------------------
def test_the_online_operators_are_declared_on_their_classes():
    assert online_operators() == sorted(["Categorify", "Clip", "FillMedian", "FillMissing",
                                         "HashBucket", "LogOp", "Normalize",
                                         "NormalizeMinMax"])


@pytest.mark.parametrize("node, name", [
    (["u", "x", "y"] >> ops.Groupby(groupby_cols=["u"], aggs=["sum"]), "Groupby"),
    (["u"] >> ops.JoinGroupby(cont_cols=["x"], stats=["mean"]), "JoinGroupby"),
    (["u", "x", "y"] >> ops.DifferenceLag(partition_cols=["u"], columns=["x"]),
     "DifferenceLag"),
    (["u"] >> ops.TargetEncoding(target="y"), "TargetEncoding"),
    (["x"] >> ops.Filter(expr="x > 1"), "Filter"),
    (["x"] >> ops.Bucketize(boundaries=[1.0]), "Bucketize"),
])
def test_steps_that_need_more_than_the_row_are_refused_by_name(node, name):
    table = pa.table({"u": pa.array(["a", "b", "a"]), "x": pa.array([1.0, 2.0, 3.0]),
                      "y": labels(3)})
    raw = write_raw(table)
    wf = fitted(node, raw, scratch(), label=name not in ("Groupby", "DifferenceLag"))
    with pytest.raises(SchemaError, match=f"cannot apply {name}.*offline") as info:
        irs.Loader(raw, 2, workflow=wf)
    assert "wf.transform(dataset).to_parquet(path)" in str(info.value)


@pytest.mark.parametrize("node, match", [
    (["x"] >> ops.FillMissing(0, add_binary_cols=True), "not one of its input columns"),
    ([["u", "v"]] >> ops.Categorify(encode_type="combo"), "not one of its input columns"),
])
def test_per_row_steps_whose_parameters_add_columns_are_refused(node, match):
    table = pa.table({"u": pa.array(["a", "b"]), "v": pa.array(["c", "d"]),
                      "x": pa.array([1.0, None]), "y": labels(2)})
    raw = write_raw(table)
    wf = fitted(node, raw, scratch())
    with pytest.raises(SchemaError, match=match):
        irs.Loader(raw, 2, workflow=wf)


def test_list_columns_and_huge_integers_are_refused_with_the_fix():
    table = pa.table({"t": pa.array([["a"], ["b", "c"]]), "y": labels(2)})
    raw = write_raw(table)
    wf = fitted(["t"] >> ops.Categorify(), raw, scratch())
    with pytest.raises(SchemaError, match="list column.*offline"):
        irs.Loader(raw, 2, workflow=wf)
    table = pa.table({"x": pa.array([1, 2**60]), "y": labels(2)})
    raw = write_raw(table)
    wf = fitted(["x"] >> ops.Clip(min_value=0), raw, scratch())
    with pytest.raises(DatasetError, match="beyond 2\\*\\*53"):
        list(irs.Loader(raw, 2, workflow=wf, readers=0))


# ---- the Studio's "Train from raw data" -----------------------------------------------------
def test_the_training_code_of_both_paths_runs_and_gives_the_same_batches(tmp_path):
    from interactive_recsys.ui.builder._codegen import training_code

    rng = np.random.default_rng(5)
    table = pa.table({"c": pa.array([f"{i:04x}" for i in rng.integers(0, 40, 500)]),
                      "x": pa.array(rng.normal(0, 1, 500)), "y": labels(500)})
    raw = write_raw(table)
    cats, conts = ["c"] >> ops.Categorify(), ["x"] >> ops.Normalize()
    wf = fitted(cats + conts, raw, str(tmp_path))
    wf.save(tmp_path / "saved")
    code = training_code(wf, data=raw + "/", workflow_dir=str(tmp_path / "saved"), device="cpu")
    assert "workflow=wf" in code and "to_parquet" in code
    offline, online = code.split("# Train from raw data:")
    namespace: dict = {}
    exec(offline, namespace)
    want = list(irs.Loader(raw.rstrip("/") + "-processed/", 100, seed=2))
    exec("#" + online, namespace)
    got = [b for b in irs.Loader(raw + "/", 100, seed=2, workflow=namespace["wf"])]
    assert namespace["loader"].online is not None and len(got) == len(want) == 5
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g.sparse.values, w.sparse.values) and torch.equal(g.dense, w.dense)


def test_the_training_code_names_a_step_the_online_path_cannot_run():
    from interactive_recsys.ui.builder._codegen import training_code

    code = training_code(["u", "x"] >> ops.Groupby(groupby_cols=["u"], aggs=["sum"]))
    assert "workflow=wf" not in code
    assert "not available, the online transform has no per-batch version of Groupby:" in code


def test_the_studio_exports_the_training_code_after_a_fit():
    from interactive_recsys.ui.builder.model._model import BuilderModel

    table = pa.table({"c": pa.array(["a", "b", "a"]), "y": labels(3)})
    raw = write_raw(table)
    wf = fitted(["c"] >> ops.Categorify(), raw, scratch())
    unfitted = BuilderModel.from_workflow(irs.Workflow(["c"] >> ops.Categorify()), dataset(raw))
    assert "Train from raw data" not in unfitted.export_code()
    code = BuilderModel.from_workflow(wf, dataset(raw)).export_code("saved_wf/")
    assert "irs.Workflow.load('saved_wf/')" in code
    assert f"irs.Loader({raw + '/'!r}, batch_size=65536, workflow=wf, device=device)" in code
    assert 'device = "cuda" if torch.cuda.is_available() else "cpu"' in code


@pytest.mark.parametrize("kind, bound", [("f32", 0.1), ("f32", -2.7), ("f64", 0.1), ("int", 1.5)])
def test_clip_bounds_are_rounded_as_offline_before_the_next_step(kind, bound):
    """A float32 column is clipped to ``float32(bound)``, an integer one to the integer inside
    the bound: visible after NormalizeMinMax (the clipped minimum maps to exactly 0)."""
    values = [-5, -3, 0, 1, 2, 3, None, 7] if kind == "int" else \
        [-5.0, -3.0, 0.0, 0.05, 0.1, 0.3, None, 7.0]
    table = pa.table({"x": column(values, kind), "y": labels(len(values))})
    node = ["x"] >> ops.Clip(min_value=bound) >> ops.NormalizeMinMax()
    assert_online_equals_offline(node, table)


def test_a_dataset_source_and_sharding_give_the_offline_batches():
    rng = np.random.default_rng(9)
    n = 1000
    table = pa.table({"c": pa.array([f"{i:x}" for i in rng.integers(0, 99, n)]),
                      "x": pa.array(rng.integers(0, 50, n)), "y": labels(n)})
    raw = write_raw(table)
    workdir = scratch()
    cats, conts = ["c"] >> ops.Categorify(), ["x"] >> ops.LogOp()
    wf = fitted(cats + conts, raw, workdir)
    offline_batches(wf, raw, workdir, 64)
    for rank in (0, 1):
        want = list(irs.Loader(workdir + "/processed", 64, seed=1, rank=rank, world_size=2))
        got = list(irs.Loader(dataset(raw), 64, seed=1, rank=rank, world_size=2, workflow=wf))
        assert len(got) == len(want) == 8
        for g, w in zip(got, want, strict=True):
            assert torch.equal(g.sparse.values, w.sparse.values)
            assert int(ulps(g.dense, w.dense).max()) <= 1


def test_numpy_batches_with_the_transform_at_read_and_a_clear_error_per_batch():
    from interactive_recsys.errors import ParameterError

    table = pa.table({"c": pa.array(["a", "b", None, "a"]), "x": pa.array([1.0, None, 3.0, 5.0]),
                      "y": labels(4)})
    raw = write_raw(table)
    cats, conts = ["c"] >> ops.Categorify(), ["x"] >> ops.FillMissing(0)
    wf = fitted(cats + conts, raw, scratch())
    batch = next(iter(irs.Loader(raw, 4, shuffle=False, workflow=wf, output="numpy")))
    assert isinstance(batch.dense, np.ndarray)
    assert batch.sparse.values.tolist() == [3, 4, 1, 3]
    assert batch.dense[:, 0].tolist() == [1.0, 0.0, 3.0, 5.0]
    with pytest.raises(ParameterError, match="transform_at='batch' transforms torch batches"):
        irs.Loader(raw, 4, workflow=wf, output="numpy", transform_at="batch")


def test_counters_travel_as_int32_or_float64_and_mix_exactly(tmp_path):
    """Integer counters that fit travel as int32 (nulls as the int32 minimum); a row group
    holding that minimum itself or a value beyond int32 travels as float64; a shuffle window
    gathering both gives the offline values, and each block got the narrowest carrier."""
    from interactive_recsys.loader._block import NULL_INT32

    rng = np.random.default_rng(3)
    raw = tmp_path / "raw"
    raw.mkdir()
    parts = []
    for k, extreme in enumerate([None, NULL_INT32, 2**40, None]):
        x = [None if v % 7 == 0 else int(v) - 50 for v in rng.integers(0, 400, 100)]
        if extreme is not None:
            x[5] = extreme
        parts.append(x)
        pq.write_table(pa.table({"x": pa.array(x, pa.int64()),
                                 "z": pa.array(rng.integers(-9, 9, 100), pa.int32()),
                                 "y": labels(100)}), raw / f"part.{k}.parquet")
    conts = ["x", "z"] >> ops.FillMissing(0) >> ops.Normalize()
    wf = irs.Workflow(conts + ["y"], artifacts_dir=str(tmp_path / "wf"))  # noqa: RUF005
    wf.fit(irs.Dataset(str(raw), tags={"y": ["target"]}))
    wf.transform(irs.Dataset(str(raw), tags={"y": ["target"]})).to_parquet(
        str(tmp_path / "processed"))
    for shuffle in (True, False):  # a shuffled gather; batches straddling two row groups
        loader = irs.Loader(str(raw), 64, seed=4, shuffle=shuffle, workflow=wf,
                            transform_at="batch", cache=True)
        want = list(irs.Loader(str(tmp_path / "processed"), 64, seed=4, shuffle=shuffle))
        got = list(loader)
        assert len(got) == len(want) == 7
        for g, w in zip(got, want, strict=True):
            assert torch.equal(g.labels, w.labels)
            assert torch.equal(g.dense, w.dense), (g.dense, w.dense)
    carriers = [loader._cache[u].dense.dtype for u in sorted(loader._cache)]
    assert carriers == [np.int32, np.float64, np.float64, np.int32]
    x = loader._cache[0].dense[:, 0]
    assert ((x == NULL_INT32) == np.array([v is None for v in parts[0]])).all()
