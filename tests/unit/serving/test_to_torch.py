"""``Workflow.to_torch()``: the fitted per-row steps as a TorchScript module, against
``wf.transform`` on the same rows.

The reference is always the offline transform of the same raw rows (pandas in, pandas out).
Ids (Categorify of strings, integers and floats, with and without out-of-vocabulary buckets;
HashBucket) must be equal, OOV and null ids included; FillMissing, FillMedian, Clip,
Normalize and NormalizeMinMax values equal bit for bit; LogOp within 1 ulp of float32. The
strings are drawn with unseen values, unicode, the empty string and nulls; the numbers with
nulls, NaN, -0.0 and infinities. The saved module is run in a child process where importing
this package fails.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import NotFittedError, SchemaError
from interactive_recsys.hashing import hash_array

torch = pytest.importorskip("torch")

from interactive_recsys.serving import _hash  # noqa: E402  (needs torch)

SETTINGS = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
pytestmark = [pytest.mark.filterwarnings("ignore:`torch.jit.(script|save)` is deprecated"),
              pytest.mark.filterwarnings("ignore::interactive_recsys.errors.ParameterWarning")]


# ---- helpers --------------------------------------------------------------------------------
def frame(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def inputs(table: pa.Table) -> tuple[dict, dict, dict]:
    """A table's rows as the module takes them: tensors (NaN for float nulls), string lists
    (None for null), and the null masks of the integer columns."""
    tensors, strings, nulls = {}, {}, {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            strings[name] = col.to_pylist()
        elif pa.types.is_floating(col.type):
            tensors[name] = torch.from_numpy(col.to_numpy(zero_copy_only=False).copy())
        else:
            tensors[name] = torch.from_numpy(pc.fill_null(col, 0).to_numpy().copy())
            nulls[name] = torch.from_numpy(pc.is_null(col).to_numpy(zero_copy_only=False))
    return tensors, strings, nulls


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 ulp distance per value (NaN against NaN and inf against inf count 0)."""
    with np.errstate(over="ignore"):
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
    d = np.abs(a32.view(np.int32).astype(np.int64) - b32.view(np.int32).astype(np.int64))
    return np.where((np.isnan(a32) & np.isnan(b32)) | (a32 == b32), 0, d)


#: The integer column of :func:`every_step` whose steps keep its nulls (Clip alone).
KEEPS_NULLS = ("i_clip",)


def assert_like_transform(out: dict, want: pd.DataFrame, schema, max_ulp: int = 1) -> None:
    """The module's output against ``wf.transform``'s frame: the same columns in order,
    ids equal, floats equal (LogOp's within ``max_ulp``), NaN where the frame has a null;
    in the frame's dtype, but float64 for an integer column whose steps keep its nulls."""
    assert list(out) == [c for c in want.columns if c in out]
    for name, got in out.items():
        offline = want[name]
        expected = offline.to_numpy(dtype=np.float64, na_value=np.nan)
        dtype = schema[name].dtype
        if name in KEEPS_NULLS:
            assert got.dtype == torch.float64, name
        else:
            assert str(got.dtype) == f"torch.{dtype}", (name, got.dtype, dtype)
        values = got.to(torch.float64).numpy()
        assert np.array_equal(np.isnan(values), np.isnan(expected)), name
        if dtype.startswith("int") and not offline.isna().any():  # ids: as integers
            assert got.tolist() == offline.astype("int64").tolist(), name
        elif dtype.startswith("int"):
            assert np.array_equal(values, expected, equal_nan=True), name
        else:
            assert int(ulps(values, expected).max(initial=0)) <= max_ulp, (name, values,
                                                                           expected)


# ---- strategies -----------------------------------------------------------------------------
strings = st.one_of(st.none(), st.text(alphabet="abé€😀", min_size=0, max_size=12))
ints = st.one_of(st.none(), st.integers(-50, 200), st.sampled_from([2**40, -2**40, 0]))
floats = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, width=32),
                   st.sampled_from([0.0, -0.0, float("nan"), float("inf"), -float("inf")]))


def every_step() -> irs.Workflow:
    """Every per-row step, on strings, integers, float64 and float32 columns, with steps
    that change only the schema between them."""
    nodes = [
        ["s"] >> ops.Categorify(num_buckets=3, freq_threshold=2),
        ["s"] >> ops.Categorify() >> ops.Rename(postfix="_plain"),
        ["s"] >> ops.HashBucket(5) >> ops.Rename(postfix="_hb"),
        ["i"] >> ops.Categorify(num_buckets=4),
        ["i"] >> ops.HashBucket(2**62 + 1) >> ops.Rename(postfix="_hb"),
        ["f"] >> ops.Categorify(num_buckets=3) >> ops.Rename(postfix="_id"),
        ["i"] >> ops.FillMedian() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
        >> ops.Rename(postfix="_log"),
        ["f"] >> ops.FillMissing(-1) >> ops.Clip(min_value=-0.5, max_value=1e5)
        >> ops.NormalizeMinMax(),
        ["g"] >> ops.FillMedian() >> ops.Clip(min_value=-1e4, max_value=1e4)
        >> ops.Normalize() >> ops.AddProperties({"unit": "g"}),
        ["i"] >> ops.Clip(min_value=0, max_value=100) >> ops.Rename(postfix="_clip"),
        ["f"] >> ops.FillMissing(0) >> ops.Rename(postfix="_raw"),
        ["label"] >> ops.AddTags(["target"]),
    ]
    node = nodes[0]
    for other in nodes[1:]:
        node = node + other
    return irs.Workflow(node)


def table_of(s, i, f, g) -> pa.Table:
    return pa.table({"s": pa.array(s, pa.string()), "i": pa.array(i, pa.int64()),
                     "f": pa.array(f, pa.float64()), "g": pa.array(g, pa.float32()),
                     "label": pa.array(np.arange(len(s)) % 2)})


def rows(draw_list, n):
    return st.lists(draw_list, min_size=n, max_size=n)


# ---- every step, against wf.transform -------------------------------------------------------
@SETTINGS
@given(data=st.data(), fit_rows=st.integers(1, 30), new_rows=st.integers(0, 12))
def test_every_per_row_step_gives_what_transform_gives(data, fit_rows, new_rows):
    n = fit_rows + new_rows
    columns = [data.draw(rows(kind, n)) for kind in (strings, ints, floats, floats)]
    table = table_of(*columns)
    wf = every_step()
    wf.fit(frame(table.slice(0, fit_rows)))  # the rows after are served unseen
    module = torch.jit.script(wf.to_torch())
    tensors, text, nulls = inputs(table.drop_columns(["label"]))
    out = module(tensors, text, nulls)
    want = wf.transform(frame(table))
    assert list(out) == [c for c in wf.output_schema.names if c != "label"]
    assert_like_transform(out, want, wf.output_schema)


def test_criteo_shaped_rows_with_the_standard_workflow(tmp_path):
    """The standard Criteo workflow (Suggest's shape: the label tagged) on synthetic Criteo
    rows, fitted on half the rows and served the other half: unseen hex ids, nulls."""
    table = pa.dataset.dataset(str(irs.datasets.synthetic_criteo(
        rows=4000, path=tmp_path / "criteo", progress=False))).to_table()
    cats = [f"C{i}" for i in range(1, 27)] >> ops.Categorify(freq_threshold=2, num_buckets=7)
    conts = ([f"I{i}" for i in range(1, 14)] >> ops.FillMissing(0) >> ops.Clip(min_value=0)
             >> ops.LogOp() >> ops.Normalize())
    wf = irs.Workflow(cats + conts + (["label"] >> ops.AddTags(["target"])))
    wf.fit(frame(table.slice(0, 2000)))
    served = table.slice(2000)
    out = torch.jit.script(wf.to_torch())(*inputs(served.drop_columns(["label"])))
    assert_like_transform(out, wf.transform(frame(served)), wf.output_schema)
    assert any(bool(((out[c] >= 2) & (out[c] < 9)).any()) for c in out if c[0] == "C")
    # (some served ids are out of the vocabulary: in the 7 buckets from id 2)


@pytest.mark.parametrize("params", [{"max_frequency": 3}, {"max_frequency": 3, "num_buckets": 2},
                                    {"vocabulary": {"c": ["b", "zz", "a"]}}])
def test_cut_and_given_vocabularies(params):
    """Values seen too often and values out of a given vocabulary are out of vocabulary."""
    raw = pd.DataFrame({"c": ["spam"] * 4 + ["a", "a", "b", None]})
    wf = irs.Workflow(["c"] >> ops.Categorify(**params))
    wf.fit(raw)
    values = ["spam", "a", "b", "zz", "new", None, ""]
    out = torch.jit.script(wf.to_torch())({}, {"c": values})
    assert out["c"].tolist() == wf.transform(pd.DataFrame({"c": values}))["c"].tolist()


# ---- the hash, in TorchScript ---------------------------------------------------------------
def test_the_torchscript_hash_is_the_package_hash_bit_for_bit():
    rng = np.random.default_rng(0)
    alphabet = list("ab\x00é€😀 ")
    words = ["", "a", "12345678", "123456789", "é" * 40, None] + [
        "".join(rng.choice(alphabet, rng.integers(0, 70))) for _ in range(500)]
    hashes, nulls = _hash.hash_strings(words)
    want = hash_array(pa.array(words, pa.string())).view(np.int64)
    present = np.array([w is not None for w in words])
    assert (hashes.numpy()[present] == want[present]).all()
    assert nulls.tolist() == (~present).tolist()
    x = np.concatenate([rng.integers(-2**63, 2**63 - 1, 2000, dtype=np.int64),
                        [0, -1, 2**63 - 1, -2**63]])
    assert (_hash.hash_int(torch.from_numpy(x)).numpy() == hash_array(pa.array(x))
            .view(np.int64)).all()
    f = np.concatenate([rng.normal(0, 1e9, 2000), [0.0, -0.0, np.inf, -np.inf, 5e-324],
                        rng.integers(-2**63, 2**63 - 1, 5000).view(np.float64)])  # any bits:
    f = f[~np.isnan(f)]  # subnormals, huge exponents
    assert (torch.jit.script(_hash.float_bits)(torch.from_numpy(f)).numpy()
            == f.view(np.int64)).all()
    assert (_hash.hash_float(torch.from_numpy(f)).numpy() == hash_array(pa.array(f))
            .view(np.int64)).all()
    u = hash_array(pa.array(x))
    for n in (1, 3, 1000, 2**31 - 1, 2**62 + 1, 2**63 - 3):
        got = _hash.umod(torch.from_numpy(u.view(np.int64)), n, 2**64 % n)
        assert (got.numpy().astype(np.uint64) == u % np.uint64(n)).all(), n


# ---- saved, loaded and run without the package ----------------------------------------------
CHILD = textwrap.dedent("""
    import importlib.abc, json, math, sys

    class NoPackage(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "interactive_recsys":
                raise ImportError("interactive_recsys is not installed here")

    sys.meta_path.insert(0, NoPackage())
    try:
        import interactive_recsys  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("interactive_recsys could be imported")
    import torch

    module = torch.jit.load(sys.argv[1])
    results = []
    for batch in json.load(open(sys.argv[2])):
        tensors = {k: torch.tensor(v, dtype=getattr(torch, batch["dtypes"][k]))
                   for k, v in batch["tensors"].items()}
        nulls = {k: torch.tensor(v, dtype=torch.bool) for k, v in batch["nulls"].items()}
        out = module(tensors, batch["strings"], nulls)
        results.append({k: {"dtype": str(v.dtype), "values": v.tolist()}
                        for k, v in out.items()})
    assert not any(m.split(".")[0] == "interactive_recsys" for m in sys.modules)
    json.dump(results, open(sys.argv[3], "w"))
""")


def test_the_saved_module_runs_where_the_package_cannot_be_imported(tmp_path):
    fit = table_of(["a", "b", "a", "é", "", None, "b", "a"],
                   [1, 2, None, 4, 5, 6, 7, 2**40],
                   [0.5, -0.0, None, 2.0, 3.0, float("nan"), 1e5, -4.0],
                   [1.0, None, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    wf = every_step()
    wf.fit(frame(fit))
    path = str(tmp_path / "transform.pt")
    torch.jit.save(torch.jit.script(wf.to_torch()), path)
    hostile = table_of(["never seen", None, "", "😀é", "a", "b" * 300],
                       [None, -2**63, 2**63 - 1, 0, None, 3],
                       [float("nan"), float("inf"), -float("inf"), None, -0.0, 1e308],
                       [None, float("nan"), float("inf"), -float("inf"), 0.0, 1.0])
    batches = [hostile, hostile.slice(0, 0)]  # and an empty batch
    sent = []
    for table in batches:
        tensors, text, nulls = inputs(table.drop_columns(["label"]))
        sent.append({"tensors": {k: v.tolist() for k, v in tensors.items()},
                     "dtypes": {k: str(v.dtype).removeprefix("torch.")
                                for k, v in tensors.items()},
                     "strings": text, "nulls": {k: v.tolist() for k, v in nulls.items()}})
    (tmp_path / "in.json").write_text(json.dumps(sent))
    (tmp_path / "child.py").write_text(CHILD)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(tmp_path / "child.py"), path,
                           str(tmp_path / "in.json"), str(tmp_path / "out.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for table, result in zip(batches, json.loads((tmp_path / "out.json").read_text()),
                             strict=True):
        out = {k: torch.tensor(v["values"], dtype=getattr(torch, v["dtype"][6:]))
               for k, v in result.items()}
        assert all(len(v) == table.num_rows for v in out.values())
        assert_like_transform(out, wf.transform(frame(table)), wf.output_schema)


# ---- torch.export ---------------------------------------------------------------------------
def test_torch_export_takes_the_numeric_part_with_any_batch_size():
    fit = table_of(["a"] * 6, [1, 2, None, 4, 5, 6], [0.5, None, 2.0, 3.0, 4.0, 5.0],
                   [1.0, None, 2.0, 3.0, 4.0, 5.0])
    wf = every_step()
    wf.fit(frame(fit))
    module = wf.to_torch()
    tensors, _, nulls = inputs(fit.drop_columns(["s", "label"]))
    batch = torch.export.Dim("batch")
    shapes = {"tensors": {k: {0: batch} for k in tensors}, "nulls": {"i": {0: batch}}}
    exported = torch.export.export(module.numeric, (tensors,), {"nulls": nulls},
                                   dynamic_shapes=shapes)
    served = table_of(["a"] * 9, [None, 3, 7, -1, 0, 2**40, 5, 5, None],
                      [float("nan"), -0.0, 9.0, 1e6, -1.0, float("inf"), 0.25, None, 3.0],
                      [None, 2.5, 1.0, 0.0, -3.0, 4.0, 8.0, 1e4, float("-inf")])
    tensors, _, nulls = inputs(served.drop_columns(["s", "label"]))
    out = exported.module()(tensors, nulls=nulls)
    assert sorted(out) == sorted(c for c in wf.output_schema.names
                                 if not c.startswith("s") and c != "label")
    want = wf.transform(frame(served))
    assert_like_transform({c: out[c] for c in want.columns if c in out}, want,
                          wf.output_schema)


# ---- columns passed through, schema-only steps, refusals ------------------------------------
def test_columns_passed_through_are_not_needed_and_come_back_when_given():
    raw = pd.DataFrame({"c": ["a", "b"], "label": [1, 0], "id": [10, 11]})
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["label"] >> ops.AddTags(["target"]))
                      + (["id"] >> ops.Rename(postfix="_kept")))
    wf.fit(raw)
    module = torch.jit.script(wf.to_torch())
    assert list(module({}, {"c": ["b"]})) == ["c"]
    out = module({"label": torch.tensor([1]), "id": torch.tensor([7])}, {"c": ["b"]})
    assert {k: v.tolist() for k, v in out.items()} == {"c": [4], "label": [1], "id_kept": [7]}


def test_select_and_drop_columns_pass():
    raw = pd.DataFrame({"a": [1.0, None], "b": [2.0, 3.0]})
    both = ["a", "b"] >> ops.FillMissing(0)
    wf = irs.Workflow((both >> ops.SelectColumns(["a"])) + (both >> ops.DropColumns(["a"])
                                                             >> ops.Rename(prefix="x_")))
    wf.fit(raw)
    out = torch.jit.script(wf.to_torch())({"a": torch.tensor([float("nan")]),
                                           "b": torch.tensor([5.0])}, {})
    assert {k: v.tolist() for k, v in out.items()} == {"a": [0.0], "x_b": [5.0]}


@pytest.mark.parametrize("node, name", [
    (["u"] >> ops.TargetEncoding(target="y"), "TargetEncoding"),
    (["x"] >> ops.Filter(expr="x > 1"), "Filter"),
    (["x"] >> ops.Bucketize(boundaries=[1.0]), "Bucketize"),
    (["u", "x", "y"] >> ops.Groupby(groupby_cols=["u"], aggs=["sum"]), "Groupby"),
])
def test_other_steps_are_refused_by_name(node, name):
    wf = irs.Workflow(node)
    wf.fit(pd.DataFrame({"u": ["a", "b", "a"], "x": [1.0, 2.0, 3.0], "y": [0, 1, 1]}))
    with pytest.raises(SchemaError, match=f"cannot apply {name}.*offline"):
        wf.to_torch()


def test_columns_it_cannot_read_and_unfitted_workflows_are_refused():
    with pytest.raises(NotFittedError):
        irs.Workflow(["c"] >> ops.Categorify()).to_torch()
    wf = irs.Workflow(["t"] >> ops.Categorify())
    wf.fit(pd.DataFrame({"t": pd.Series([["a"], ["b", "c"]],
                                        dtype=pd.ArrowDtype(pa.list_(pa.string())))}))
    with pytest.raises(SchemaError, match="'t' is list<string>"):
        wf.to_torch()
    wf = irs.Workflow([["u", "v"]] >> ops.Categorify(encode_type="combo"))
    wf.fit(pd.DataFrame({"u": ["a", "b"], "v": ["c", "d"]}))
    with pytest.raises(SchemaError, match="cannot apply Categorify"):
        wf.to_torch()


def test_a_null_mask_on_a_float_column_counts_as_nan():
    wf = irs.Workflow(["x"] >> ops.FillMissing(-1.0))
    wf.fit(pd.DataFrame({"x": [1.0, 2.0]}))
    module = torch.jit.script(wf.to_torch())
    out = module({"x": torch.tensor([5.0, 6.0, float("nan")])}, {},
                 {"x": torch.tensor([True, False, False])})
    assert out["x"].tolist() == [-1.0, 6.0, -1.0]


def test_columns_of_other_types_are_refused_by_name():
    wf = irs.Workflow(["t"] >> ops.HashBucket(10))
    wf.fit(pd.DataFrame({"t": pd.to_datetime(["2024-01-01", "2024-01-02"])}))
    with pytest.raises(SchemaError, match="reads single numbers, booleans and strings; "
                                          "column 't' is timestamp"):
        wf.to_torch()


def test_bad_inputs_are_named():
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.Categorify()))
    wf.fit(pd.DataFrame({"c": ["a", "b"], "n": [1, 2]}))
    module = torch.jit.script(wf.to_torch())
    cases = [
        (({}, {"c": ["a"]}), "needs column 'n' in tensors"),
        (({"n": torch.tensor([1])}, {}), "needs string column 'c' in strings"),
        (({"n": torch.tensor([1, 2])}, {"c": ["a"]}), "'c' has 1 rows, another column 2"),
        (({"n": torch.tensor([1.5])}, {"c": ["a"]}), "'n' holds integers"),
        (({"n": torch.tensor([[1]])}, {"c": ["a"]}), "'n' must be a 1-D tensor"),
    ]
    for args, message in cases:
        with pytest.raises(torch.jit.Error, match=message):
            module(*args)
    with pytest.raises(torch.jit.Error, match="null mask of column 'n'"):
        module({"n": torch.tensor([1])}, {"c": ["a"]}, {"n": torch.tensor([1])})
