"""Fixtures of NVTabular's operator tests (its ``tests/conftest.py``), on pandas data.

The ported modules beside this file are NVTabular's ``tests/unit/ops`` with only their
imports changed (``port.py``). They ask for ``datasets``, ``paths``, ``df``, ``dataset``
(parametrized by ``engine``, ``cpu`` and ``gpu_memory_frac``) as in NVTabular: a
timeseries of 4,320 rows (2000-01-01 to 2000-01-04, one a minute) with the columns
``timestamp``, ``name-cat``, ``name-string``, ``id``, ``label``, ``x``, ``y``, ``z``,
written as two parquet files, two csv files and two csv files without a header.

:data:`EXCLUDED` lists the tests (or parametrizations) that are skipped, each with its
reason; docs/guide/nvtabular.md counts them.
"""

from __future__ import annotations

import fnmatch
import os
import random

import numpy as np
import pandas as pd
import pytest

from interactive_recsys.compat import nvtabular
from tests.vendored.nvtabular.ops.helpers import allcols_csv, mycols_csv, mycols_pq, mynames

CUDF_ONLY = "cuDF only"
INTERNALS = "NVTabular internals"
DEVIATION = "documented deviation"

_DEFAULT_OUT_PATH = ("reads ./categories/meta.<col>.parquet: NVTabular writes its category "
                     "files into the working folder by default (out_path='./'); here only "
                     "where out_path is given")
_LIST_SCHEMA_FIRST = ("refused when the schema is computed, naming the column: {op} works "
                      "on list columns and the test gives int32 ones (NVTabular computes a "
                      "schema and would fail at transform)")

#: ``test name``, ``test name[parametrization id]`` or a pattern with ``*`` -> (kind, reason).
#: ``IRS_NVT_OPS_RUN_EXCLUDED=1`` runs them all anyway, to re-check this list.
EXCLUDED: dict[str, tuple[str, str]] = {
    # -- test_schema_out: op.compute_output_schema and the _compute_* hooks (ids:
    #    selection<i>-op<j>-tags<k>-properties<l>; op<j> is the j-th operator of its list)
    "test_schema_out[selection0-op9-*]": (DEVIATION, "HashedCross of one column is refused "
                                          "(a cross needs two or more; HashBucket hashes one)"),
    "test_schema_out[selection0-op10-*]": (DEVIATION, "JoinGroupby(['1']) on the column '1' "
                                           "alone is refused: no category left to group by"),
    "test_schema_out[selection0-op14-*]": (DEVIATION, "TargetEncoding(['1']) on its target "
                                           "'1' alone is refused: no category to encode"),
    "test_schema_out[*-op11-*]": (DEVIATION, _LIST_SCHEMA_FIRST.format(op="ListSlice")),
    "test_schema_out[*-op22-*]": (DEVIATION, _LIST_SCHEMA_FIRST.format(op="ValueCount")),
    "test_schema_out[selection1-op5-*]": (DEVIATION, "DifferenceLag outputs its input and key "
                                          "columns too (it regroups rows by key, so nothing "
                                          "else can stand beside them): the key '1', read "
                                          "from the input, is in the output"),
    # -- category files, fold tables, inference
    "test_categorify_size[24B-*]": (DEVIATION, "expects the UserWarning NVTabular gives when "
                                    "the categories exceed cardinality_memory_limit (24 "
                                    "bytes); the knob has no effect here (vocabularies are "
                                    "built out of core), so nothing warns; the files are "
                                    "checked by the other cases"),
    "test_na_value_count": (DEVIATION, _DEFAULT_OUT_PATH),
    "test_categorify_no_nulls": (DEVIATION, _DEFAULT_OUT_PATH),
    "test_categorify_max_size_null_iloc_check": (DEVIATION, _DEFAULT_OUT_PATH),
    "test_target_encode[*-3-*]": (INTERNALS, "reads the fold-assignment file NVTabular's "
                                  "TargetEncoding writes (op.stats['__fold___<cols>'], a "
                                  "parquet path) and the __fold__ column drop_folds=False "
                                  "keeps; folds here are drawn inside the step, not output"),
    "test_categorify_inference": (DEVIATION, "Triton inference operators "
                                  "(op.inference_initialize, merlin.systems) are not ported"),
    # -- behaviour that differs, each in the porting table of docs/guide/nvtabular.md
    "test_groupby_casting_in_aggregations": (DEVIATION, "Groupby aggregations median and "
                                             "nunique are not supported (list, count, first, "
                                             "last, sum, mean, min, max, std, var are)"),
    "test_groupby_list_first_last": (DEVIATION, "dd.from_pandas turns the list column into "
                                     "text (Dask's dataframe.convert-string default since "
                                     "2024) before the Dataset sees it; nvt.Dataset(df, "
                                     "npartitions=3) keeps the lists"),
    "test_normalize_lists": (DEVIATION, "Normalize of list columns is refused (numeric columns "
                             "only), naming the column"),
    "test_joingroupby_dependency": (DEVIATION, "NormalizeMinMax outputs float32 here (float64 "
                                    "there), so the exact sums differ in the 8th digit"),
    "test_valuecount": (DEVIATION, "a list column carries the 'list' tag here (Merlin keeps it "
                        "in is_list), so its tag set is {'categorical', 'list'}, not "
                        "TagSet([Tags.CATEGORICAL]); its statistics (val_count.stats) and "
                        "properties are checked before and pass"),
    "test_categorify_single_table": (DEVIATION, "Categorify(single_table=True) (one id space "
                                     "for all columns) is refused by the port, naming it"),
}


def _excluded(item: pytest.Item) -> tuple[str, str] | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if params.get("cpu") is False and not nvtabular.dispatch.HAS_GPU:
        return CUDF_ONLY, "cpu=False runs on cuDF; no GPU here"
    if os.environ.get("IRS_NVT_OPS_RUN_EXCLUDED"):
        return None
    name, base = item.name, item.name.split("[")[0]
    for key, why in EXCLUDED.items():
        if "*" in key and fnmatch.fnmatchcase(name, key.replace("[", "[[]")):
            return why
    return EXCLUDED.get(name) or EXCLUDED.get(base)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "vendored/nvtabular/ops" not in str(item.path):
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        gpu_only = any("cudf" in str(m.kwargs.get("reason", ""))
                       for m in item.iter_markers("skipif"))
        if params.get("cpu") is False or gpu_only:
            item.add_marker(pytest.mark.gpu)  # cuDF cases: the project's GPU runs
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
