"""The GPU path against the installed cuDF / dask-cuDF / dask-cuda / NVML, without a device.

Run by ``scripts/check-gpu-api.sh`` in a fresh venv with the ``gpu`` extra (marker
``gpu_api``). Two kinds of checks:

* **API**: the GPU backend's source (and the GPU parts of cluster.py, monitor.py and the
  dask-cuDF benchmark contender) is read with ``ast``; every attribute it uses on a cuDF
  object must be listed in :data:`CUDF_API` (so the list cannot fall behind the code),
  and every listed name, and every keyword passed to it, must exist in the installed
  release (``hasattr``, ``inspect.signature``). Skipped where cuDF is not installed.
* **Arrow helpers on cuDF-shaped inputs**: the backend's pure-Arrow helpers run on what
  cuDF's ``to_arrow()`` returns (``large_string``, ``large_list``, NaN next to null) and
  must give what they give on the CPU's ``string`` / ``list`` inputs. These need no cuDF.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pathlib
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import interactive_recsys
from interactive_recsys.backend import _arrow as ax
from interactive_recsys.hashing import hash_array

pytestmark = pytest.mark.gpu_api

ROOT = pathlib.Path(interactive_recsys.__file__).parent
GPU_BACKEND = ROOT / "backend" / "gpu.py"
#: Frame-level code the GPU backend calls with cuDF frames (written once for pandas and cuDF).
SHARED_FRAMES = ROOT / "backend" / "frames.py"
BENCHMARK = ROOT.parent / "benchmarks" / "contenders.py"

#: Receivers that are not cuDF objects (NumPy, pyarrow, our helpers): not checked here.
NOT_CUDF = {"np", "pa", "pq", "pd", "ax", "frames", "cupy", "time", "dask", "dd", "os"}
#: Attributes the GPU backend reads on non-cuDF objects (Arrow results of ``to_arrow``,
#: NumPy dtypes and masks, Python mappings), with the types that have them.
OTHER_OWNERS: dict[str, tuple[Any, ...]] = {
    "type": (pa.ChunkedArray,), "combine_chunks": (pa.ChunkedArray,),
    "to_pylist": (pa.ChunkedArray,), "replace_schema_metadata": (pa.Table,),
    "to_pandas": (pa.Table,), "cast": (pa.Table,), "schema": (pa.Table,),
    "empty_table": (pa.Schema,), "to_pandas_dtype": (pa.DataType,), "kind": (np.dtype,), "any": (np.ndarray,),
    "__module__": (type,), "split": (str,), "items": (dict,), "get": (dict,),
    "values": (),  # VocabTable.values (a pa.Array), an instance attribute
}
#: Every cuDF name the GPU code uses -> where it must exist. ``S`` Series, ``D`` DataFrame,
#: ``M`` the cudf module, ``I`` Index, ``G`` groupby objects, ``L`` the ``.list`` accessor,
#: ``LD`` ListDtype.
CUDF_API: dict[str, tuple[str, ...]] = {
    # module
    "DataFrame": ("M",), "Series": ("M",), "concat": ("M",), "ListDtype": ("M",),
    # frames and columns
    "from_arrow": ("S", "D"), "to_arrow": ("S", "D", "I"), "head": ("S", "D"),
    "copy": ("D",), "rename": ("D",), "take": ("S", "D"), "reset_index": ("S", "D"),
    "assign": ("D",), "sort_values": ("S", "D"), "drop": ("D",), "merge": ("D",),
    "groupby": ("S", "D"), "columns": ("D",), "index": ("S", "D"), "dtype": ("S",),
    "nans_to_nulls": ("S", "D"), "isna": ("S", "D"), "fillna": ("S", "D"),
    "to_numpy": ("S",), "clip": ("S",), "astype": ("S", "D"),
    "is_monotonic_increasing": ("S",), "value_counts": ("S",), "count": ("S", "G"),
    "min": ("S", "G"), "max": ("S", "G"), "shift": ("S", "G"), "list": ("S",),
    "sum": ("S", "G"), "mean": ("S", "G"),
    # groupby
    "size": ("G",), "var": ("G",), "agg": ("G",),
    # lists
    "leaves": ("L",), "len": ("L",), "element_type": ("LD",),
}
#: Aggregations reached through ``getattr(grouped[col], func)`` (keyed_aggregate callers).
DYNAMIC_GROUPBY = ("sum", "min", "max", "mean", "count")


@pytest.fixture(scope="module")
def cudf() -> Any:
    return pytest.importorskip("cudf", reason="needs the gpu extra (scripts/check-gpu-api.sh)")


def _owners(cudf: Any) -> dict[str, list[Any]]:
    from cudf.core.accessors.lists import ListMethods
    from cudf.core.groupby.groupby import DataFrameGroupBy, SeriesGroupBy

    return {"M": [cudf], "S": [cudf.Series], "D": [cudf.DataFrame], "I": [cudf.Index],
            "G": [SeriesGroupBy, DataFrameGroupBy], "L": [ListMethods],
            "LD": [cudf.ListDtype]}


def used_attributes(path: pathlib.Path, functions: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Attribute name -> keywords passed when it is called, over the source of ``path``
    (only inside the named top-level ``functions`` when given). Attributes of ``self``
    (the backend's own methods) and of :data:`NOT_CUDF` receivers are left out; ``self.cudf.X``
    counts as ``X``."""
    tree = ast.parse(path.read_text())
    if functions:
        tree = ast.Module([n for n in tree.body if getattr(n, "name", None) in functions], [])
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    used: dict[str, set[str]] = defaultdict(set)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id == "self":
            continue  # the backend's own methods
        root = value
        while isinstance(root, ast.Attribute | ast.Call):
            root = root.value if isinstance(root, ast.Attribute) else root.func
        if isinstance(root, ast.Name) and root.id in NOT_CUDF:
            continue  # np.random.default_rng(...).permutation, pa.types.is_integer...
        call = calls.get(id(node))
        used[node.attr] |= {k.arg for k in call.keywords if k.arg} if call else set()
    return dict(used)


def gpu_used_attributes() -> dict[str, set[str]]:
    """:func:`used_attributes` over every source whose code receives cuDF objects."""
    used: dict[str, set[str]] = defaultdict(set)
    for path in (GPU_BACKEND, SHARED_FRAMES):
        for name, keywords in used_attributes(path).items():
            used[name] |= keywords
    return dict(used)


# ---- API -------------------------------------------------------------------------------------
def test_every_cudf_name_of_the_gpu_backend_is_listed_and_exists(cudf: Any) -> None:
    used = gpu_used_attributes()
    assert {"nans_to_nulls", "to_numpy", "leaves", "merge", "rename"} <= set(used)  # the parse works
    unlisted = set(used) - set(CUDF_API) - set(OTHER_OWNERS)
    assert not unlisted, f"add these to CUDF_API (and check them): {sorted(unlisted)}"
    owners = _owners(cudf)
    for name in used.keys() & OTHER_OWNERS.keys():
        assert all(hasattr(owner, name) for owner in OTHER_OWNERS[name]), name
    for name in used.keys() & CUDF_API.keys():
        for key in CUDF_API[name]:
            for owner in owners[key]:
                assert hasattr(owner, name), f"{owner.__name__}.{name} is gone in cuDF " \
                                             f"{cudf.__version__}"


def test_every_keyword_the_gpu_backend_passes_is_accepted(cudf: Any) -> None:
    """Each keyword must be accepted by one of the name's owners (``to_arrow(preserve_index=)``
    is a DataFrame call, the Series method has no such keyword)."""
    owners = _owners(cudf)
    checked = set()
    for name, keywords in gpu_used_attributes().items():
        if not keywords or name not in CUDF_API:
            continue
        accepted: set[str] = set()
        for key in CUDF_API[name]:
            for owner in owners[key]:
                params = inspect.signature(getattr(owner, name)).parameters
                accepted |= set(params)
        missing = keywords - accepted
        assert not missing, f"cuDF {cudf.__version__}: {name}() takes no {sorted(missing)}"
        checked.add(name)
    assert {"to_arrow", "groupby", "sort_values", "merge", "value_counts", "clip",
            "reset_index", "concat", "var"} <= checked


def test_names_removed_from_cudf_are_not_used(cudf: Any) -> None:
    """The defects this check exists for: both were used before cuDF 26.x was read."""
    assert not hasattr(cudf.Series, "values_host") and not hasattr(cudf.Series, "isnan")
    for path in (GPU_BACKEND, SHARED_FRAMES, BENCHMARK):
        assert not set(used_attributes(path)) & {"values_host", "isnan"}, path


def test_dynamic_groupby_aggregations_and_collect_exist(cudf: Any) -> None:
    from cudf.core.groupby.groupby import GroupBy, SeriesGroupBy

    assert all(hasattr(SeriesGroupBy, f) for f in DYNAMIC_GROUPBY)
    assert '"collect"' in inspect.getsource(GroupBy)  # group_aggregate's list aggregation
    assert "ddof" in inspect.signature(SeriesGroupBy.var).parameters


def test_cudf_options_the_cluster_and_monitor_use_exist(cudf: Any) -> None:
    assert cudf.get_option("spill") in (True, False)
    assert cudf.get_option("spill_stats") in (0, 1, 2)
    limit = cudf.get_option("spill_device_limit")
    assert limit is None or (isinstance(limit, int) and limit > 0)


def test_local_cuda_cluster_accepts_every_keyword_of_start_cluster(cudf: Any) -> None:
    pytest.importorskip("dask_cuda")
    from dask_cuda import LocalCUDACluster
    from distributed import LocalCluster

    tree = ast.parse((ROOT / "runtime" / "cluster.py").read_text())
    keywords = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", None) == "LocalCUDACluster" for k in n.keywords
                if k.arg}
    assert {"host", "enable_cudf_spill", "cudf_spill_stats", "device_memory_limit"} <= keywords
    assert "ip" not in keywords  # a deprecated alias of host
    own = set(inspect.signature(LocalCUDACluster.__init__).parameters)
    forwarded = set(inspect.signature(LocalCluster.__init__).parameters)  # through **kwargs
    assert keywords <= own | forwarded, sorted(keywords - own - forwarded)
    assert "host" in forwarded and "host" not in own


def test_the_cudf_metric_switch_is_read_when_distributed_worker_is_imported() -> None:
    import dask
    import distributed.worker

    source = inspect.getsource(distributed.worker)
    assert 'if dask.config.get("distributed.diagnostics.cudf"):' in source
    assert dask.config.get("distributed.diagnostics.cudf") in (True, False)
    from interactive_recsys.runtime.cluster import GPU_WORKER_ENV

    key = next(iter(GPU_WORKER_ENV))
    assert dask.config.collect_env({key: GPU_WORKER_ENV[key]}) == {
        "distributed": {"diagnostics": {"cudf": True}}}


def test_device_host_file_keeps_its_limit_in_device_buffer_n(cudf: Any) -> None:
    pytest.importorskip("dask_cuda")
    import zict
    from dask_cuda.device_host_file import DeviceHostFile

    init = inspect.getsource(DeviceHostFile.__init__)
    assert "self.device_buffer = Buffer(" in init and "device_memory_limit" in init
    assert "device_memory_limit" not in {n for n in dir(DeviceHostFile)}
    assert zict.Buffer({}, {}, n=7).n == 7
    # with cuDF spilling on, cuDF frames are kept aside, unspilled by DeviceHostFile
    assert "self.others[key] = value" in inspect.getsource(DeviceHostFile.__setitem__)


def test_nvml_functions_exist() -> None:
    pynvml = pytest.importorskip("pynvml")
    names = set()
    for path in (ROOT / "runtime" / "monitor.py", ROOT / "backend" / "__init__.py"):
        tree = ast.parse(path.read_text())
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                  and getattr(n.value, "id", None) == "pynvml"}
    assert {"nvmlInit", "nvmlDeviceGetCount", "nvmlShutdown"} <= names
    assert all(hasattr(pynvml, n) for n in names), sorted(n for n in names
                                                          if not hasattr(pynvml, n))


def test_the_dask_cudf_contender_uses_existing_names(cudf: Any) -> None:
    pytest.importorskip("dask_cudf")
    import cupy
    import dask.dataframe as dd

    functions = ("_cudf_logs", "_cudf_vocab", "_cudf_transform", "run_dask_cudf")
    used = used_attributes(BENCHMARK, functions)
    owners = _owners(cudf)
    extra = {"values": (cudf.Series,), "map_partitions": (dd.DataFrame,),
             "to_parquet": (dd.DataFrame,), "std": (dd.DataFrame, cudf.Series),
             "mean": (dd.DataFrame,), "delayed": (), "compute": (), "read_parquet": (dd,),
             "config": (), "set": (), "perf_counter": (), "arange": (cupy,),
             "log1p": (cupy,), "float32": (cupy,), "float64": (cupy,), "_meta": (dd.DataFrame,),
             "DataFrame": (cudf,), "Series": (cudf,), "update": (dict,)}
    for name in used:
        if name in extra:
            assert all(hasattr(o, name) for o in extra[name]), name
        else:
            assert name in CUDF_API, f"add {name} to the lists of this test"
            assert all(hasattr(o, name) for k in CUDF_API[name] for o in owners[k]), name
    assert "split_out" in inspect.signature(dd.Series.value_counts).parameters


def test_the_gpu_backend_module_imports_with_cudf_installed(cudf: Any) -> None:
    module = importlib.import_module("interactive_recsys.backend._gpu")
    assert module.GpuBackend.name == "gpu"
    assert importlib.util.find_spec("dask_cudf") is not None


# ---- Arrow helpers on cuDF-shaped inputs (no cuDF needed) --------------------------------
STRINGS = ["a", None, "bb", "a", "", None]
FLOATS = [1.5, float("nan"), None, 1.5, -0.0, float("inf")]
LISTS = [["x", "y"], None, [], ["y"], ["z", None, "x"], ["w"]]


def _large(values: list, t: pa.DataType) -> pa.ChunkedArray:
    return pa.chunked_array([pa.array(values[:3], t), pa.array(values[3:], t)])


def test_small_offsets_gives_the_cpu_types_for_cudf_output() -> None:
    large = pa.table({"s": _large(STRINGS, pa.large_string()),
                      "l": _large(LISTS, pa.large_list(pa.large_string())),
                      "f": _large(FLOATS, pa.float64())})
    small = ax.small_offsets(large)
    assert small.schema == pa.schema([("s", pa.string()), ("l", pa.list_(pa.string())),
                                      ("f", pa.float64())])
    assert small.select(["s", "l"]).to_pylist() == large.select(["s", "l"]).to_pylist()
    np.testing.assert_array_equal(small.column("f").to_numpy(), large.column("f").to_numpy())
    already = pa.table({"s": pa.array(STRINGS)})
    assert ax.small_offsets(already) is already


def test_hashes_and_joins_are_the_same_for_large_and_small_strings() -> None:
    large, small = _large(STRINGS, pa.large_string()), pa.chunked_array([STRINGS], pa.string())
    assert hash_array(large).tolist() == hash_array(small).tolist()
    ints = pa.chunked_array([[1, 2, 3, 4, 5, 6]])
    assert ax.join_as_strings([large, ints]).to_pylist() == \
        ax.join_as_strings([small, ints]).to_pylist() == \
        ["a\x1f1", "\x00\x1f2", "bb\x1f3", "a\x1f4", "\x1f5", "\x00\x1f6"]


def test_value_counts_and_missing_treat_nan_as_null() -> None:
    floats = _large(FLOATS, pa.float64())
    counts = ax.value_counts(floats).to_pydict()
    assert dict(zip(counts["value"], counts["count"], strict=True)) == {
        1.5: 2, 0.0: 1, float("inf"): 1}
    assert ax.missing_numpy(floats).tolist() == [False, True, True, False, False, False]
    strings = ax.value_counts(_large(STRINGS, pa.large_string())).to_pydict()
    assert dict(zip(strings["value"], strings["count"], strict=True)) == {"a": 2, "bb": 1,
                                                                           "": 1}


def test_digitize_and_moments_on_nan_null_mixes() -> None:
    floats = _large(FLOATS, pa.float64())
    assert ax.digitize(floats, [0.0, 2.0]).to_pylist() == [1, None, None, 1, 1, 2]
    m = ax.moments(floats)
    finite = np.array([1.5, 1.5, -0.0])
    assert m["count"] == 3 and m["missing"] == 3 and m["mean"] == pytest.approx(finite.mean())
    assert m["m2"] == pytest.approx(((finite - finite.mean()) ** 2).sum())


def test_list_helpers_on_large_lists() -> None:
    large = _large(LISTS, pa.large_list(pa.large_string()))
    small = pa.chunked_array([LISTS], pa.list_(pa.string()))
    flat = [v for row in LISTS if row for v in row]  # 7 values
    assert ax.list_values(large).to_pylist() == ax.list_values(small).to_pylist() == flat
    assert ax.list_length_range(large) == (0, 3)
    rebuilt = ax.list_with_values(large, pa.chunked_array([list(range(len(flat)))]))
    assert rebuilt.to_pylist() == [[0, 1], None, [], [2], [3, 4, 5], [6]]
    assert ax.list_slice(large, -2, None).to_pylist() == [["x", "y"], None, [], ["y"],
                                                          [None, "x"], ["w"]]
    assert ax.list_slice(large, 0, 2, pad_length=2, pad_value="-").to_pylist() == \
        [["x", "y"], None, ["-", "-"], ["y", "-"], ["z", None], ["w", "-"]]


def test_list_values_flattens_one_level_where_cudf_leaves_flattens_all() -> None:
    nested = pa.chunked_array([[[[1, 2], [3]], None, [[4]]]],
                              pa.large_list(pa.large_list(pa.int64())))
    assert ax.list_values(nested).to_pylist() == [[1, 2], [3], [4]]


def test_cast_to_string_gives_32_bit_offsets() -> None:
    out = ax.cast(pa.chunked_array([[1, None, 3]]), "string")
    assert out.type == pa.string() and out.to_pylist() == ["1", None, "3"]
    with pytest.raises(interactive_recsys.SchemaError, match="Cannot cast a float64"):
        ax.cast(pa.chunked_array([[1.5]]), "int64")
