"""One backend interface: both backends implement every kernel, neither inherits from the
other, and the GPU class can be inspected without cuDF (it imports cuDF only when built)."""

from __future__ import annotations

import ast
import inspect
import pathlib
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys.backend import Backend, CpuBackend, GpuBackend, convert, kernel_names

GPU_SOURCE = pathlib.Path(inspect.getfile(GpuBackend))


@pytest.mark.parametrize("cls", [CpuBackend, GpuBackend], ids=["cpu", "gpu"])
def test_backend_implements_every_kernel_itself(cls: type) -> None:
    assert issubclass(cls, Backend) and not cls.__abstractmethods__
    names = kernel_names()
    assert len(names) > 50
    own = {n for n in names if n in cls.__dict__}
    assert own == set(names), f"{cls.__name__} lacks {sorted(set(names) - own)}"
    for name in names:  # same parameters as the interface, in the same order
        expected = list(inspect.signature(getattr(Backend, name)).parameters)
        assert list(inspect.signature(getattr(cls, name)).parameters) == expected, name


def test_neither_backend_inherits_from_the_other() -> None:
    assert not issubclass(GpuBackend, CpuBackend) and not issubclass(CpuBackend, GpuBackend)
    assert GpuBackend.__mro__[1] is Backend and CpuBackend.__mro__[1] is Backend


def test_an_incomplete_backend_cannot_be_created() -> None:
    class Partial(Backend):
        name = "partial"
        reads_dictionaries = False

        def lookup(self, col, table, hashes):  # one kernel of many
            return None

    with pytest.raises(TypeError, match="abstract"):
        Partial()


def test_gpu_module_imports_cudf_only_inside_the_backend() -> None:
    """No module-level import of cuDF (nor any use of names removed from cuDF 26.x)."""
    tree = ast.parse(GPU_SOURCE.read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    modules = {a.name for n in top if isinstance(n, ast.Import) for a in n.names} | {
        n.module or "" for n in top if isinstance(n, ast.ImportFrom)}
    assert not any(m.split(".")[0] in ("cudf", "dask_cudf", "cupy", "rmm") for m in modules)
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not attributes & {"values_host", "isnan"}
    code = ("import sys, interactive_recsys, interactive_recsys.backend._gpu; "
            "print('cudf' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_convert_moves_frames_to_the_backend_of_like() -> None:
    plain = pd.DataFrame({"a": [1, 2], "s": ["x", None]})
    out = convert(plain, like=pd.DataFrame())
    assert [str(t) for t in out.dtypes] == ["int64[pyarrow]", "string[pyarrow]"]
    assert out["s"].iloc[0] == "x" and pd.isna(out["s"].iloc[1])
    cast = convert(plain, backend="cpu", schema=pa.schema([("a", pa.float64()),
                                                           ("s", pa.string())]))
    assert cast["a"].tolist() == [1.0, 2.0]
    assert convert(out, backend=irs.get_backend("cpu")).equals(out)
