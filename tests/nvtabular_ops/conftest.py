"""Fixtures of NVTabular's operator tests (its ``tests/conftest.py``), on pandas data.

The ported modules beside this file are NVTabular's ``tests/unit/ops`` with only their
imports changed (``port.py``). They ask for ``datasets``, ``paths``, ``df``, ``dataset``
(parametrized by ``engine``, ``cpu`` and ``gpu_memory_frac``) as in NVTabular: a
timeseries of 4,320 rows (2000-01-01 to 2000-01-04, one a minute) with the columns
``timestamp``, ``name-cat``, ``name-string``, ``id``, ``label``, ``x``, ``y``, ``z``,
written as two parquet files, two csv files and two csv files without a header.

:data:`EXCLUDED` lists the tests (or parametrizations) that are skipped, each with its
reason; the README's "From NVTabular" counts them.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from interactive_recsys.compat import nvtabular
from tests.nvtabular_ops.helpers import allcols_csv, mycols_csv, mycols_pq, mynames

CUDF_ONLY = "cuDF only"
INTERNALS = "NVTabular internals"
DEVIATION = "documented deviation"

#: ``test name`` or ``test name[parametrization id]`` -> (kind, reason).
EXCLUDED: dict[str, tuple[str, str]] = {}


def _excluded(item: pytest.Item) -> tuple[str, str] | None:
    name = item.name
    if name in EXCLUDED:
        return EXCLUDED[name]
    base = name.split("[")[0]
    if base in EXCLUDED:
        return EXCLUDED[base]
    params = getattr(getattr(item, "callspec", None), "params", {})
    if params.get("cpu") is False and not nvtabular.dispatch.HAS_GPU:
        return CUDF_ONLY, "cpu=False runs on cuDF; no GPU here"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "nvtabular_ops" not in str(item.path):
            continue
        why = _excluded(item)
        if why is not None:
            item.add_marker(pytest.mark.skip(reason=f"excluded ({why[0]}): {why[1]}"))


@pytest.fixture(scope="session")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    rng = np.random.default_rng(0)
    random.seed(0)
    times = pd.date_range("2000-01-01", "2000-01-04", freq="60s", inclusive="left")
    n = len(times)
    df = pd.DataFrame({
        "timestamp": times,
        "name-cat": rng.choice(mynames, n),
        "name-string": rng.choice(mynames, n).astype("O"),
        "id": rng.poisson(1000, n).astype("int64"),
        "label": rng.poisson(1000, n).astype("int64"),
        "x": rng.uniform(-1, 1, n),
        "y": rng.uniform(-1, 1, n),
        "z": rng.uniform(-1, 1, n),
    })
    # as NVTabular's fixture: two nulls in the first column (its loop stops at name-cat)
    for _ in range(2):
        at = random.randint(1, n - 2)
        df.loc[at + (at == n // 2), "timestamp"] = None
    dirs = {k: tmp_path_factory.mktemp(k) for k in ("parquet", "csv", "csv-no-header", "cats")}
    half = n // 2
    df.iloc[:half].to_parquet(dirs["parquet"] / "dataset-0.parquet", row_group_size=1000)
    df.iloc[half:].to_parquet(dirs["parquet"] / "dataset-1.parquet", row_group_size=1000)
    csv = df[allcols_csv]
    csv.iloc[:half].to_csv(dirs["csv"] / "dataset-0.csv", index=False)
    csv.iloc[half:].to_csv(dirs["csv"] / "dataset-1.csv", index=False)
    csv.iloc[:half].to_csv(dirs["csv-no-header"] / "dataset-0.csv", header=False, index=False)
    csv.iloc[half:].to_csv(dirs["csv-no-header"] / "dataset-1.csv", header=False, index=False)
    return dirs


@pytest.fixture
def paths(engine: str, datasets: dict) -> list[str]:
    return sorted(str(p) for p in datasets[engine].glob("*." + engine.split("-")[0]))


@pytest.fixture
def df(engine: str, paths: list[str]) -> pd.DataFrame:
    if engine == "parquet":
        parts = [pd.read_parquet(p)[mycols_pq] for p in paths]
    elif engine == "csv-no-header":
        parts = [pd.read_csv(p, header=None, names=allcols_csv)[mycols_csv] for p in paths]
    elif engine == "csv":
        parts = [pd.read_csv(p, header=0)[mycols_csv] for p in paths]
    else:
        raise ValueError("unknown engine:" + engine)
    gdf = pd.concat(parts, axis=0)
    gdf["id"] = gdf["id"].astype("int64")
    return gdf


@pytest.fixture
def dataset(request: pytest.FixtureRequest, paths: list[str], engine: str) -> object:
    try:
        gpu_memory_frac = request.getfixturevalue("gpu_memory_frac")
    except pytest.FixtureLookupError:
        gpu_memory_frac = 0.01
    try:
        cpu = request.getfixturevalue("cpu")
    except pytest.FixtureLookupError:
        cpu = None
    kwargs = {"names": allcols_csv} if engine == "csv-no-header" else {}
    return nvtabular.Dataset(paths, part_mem_fraction=gpu_memory_frac, cpu=cpu, **kwargs)
