"""Shared fixtures of the operator tests: a lazy 2-worker cluster, seeded data, helpers.

Everything here is small: the data is generated from NumPy with a seed inside the test
session, and the one Dask cluster is started only by the first test that asks for it.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs

#: Seed of every generated frame unless a test passes its own.
SEED = 20240611

INT_COLUMNS = ["I1", "I2", "I3"]
FLOAT_COLUMNS = ["F1"]
CAT_COLUMNS = ["C1", "C2", "C3"]
LIST_COLUMNS = ["L1"]

STRING = pd.ArrowDtype(pa.string())
INT64 = pd.ArrowDtype(pa.int64())
FLOAT64 = pd.ArrowDtype(pa.float64())
LIST_STRING = pd.ArrowDtype(pa.list_(pa.string()))


def _with_nulls(values: list, rng: np.random.Generator, rate: float) -> list:
    mask = rng.random(len(values)) < rate
    return [None if m else v for v, m in zip(values, mask, strict=True)]


def make_criteo_frame(rows: int = 200, seed: int = SEED) -> pd.DataFrame:
    """A small Criteo-shaped frame with Arrow-backed dtypes.

    * ``label``: int64 0/1, never null;
    * ``I1..I3``: int64 counters (Poisson-like), with nulls;
    * ``F1``: float64 with nulls (no inf/NaN: tests add those themselves);
    * ``C1..C3``: strings with a skewed (Zipf-like) distribution, so frequencies tie
      and differ, with nulls; ``C3`` has few distinct values;
    * ``L1``: ``list<string>`` of 0-3 tags, some rows null, some elements null.
    """
    rng = np.random.default_rng(seed)
    data: dict[str, pd.Series] = {
        "label": pd.Series(rng.integers(0, 2, rows), dtype=INT64),
    }
    for k, name in enumerate(INT_COLUMNS):
        values = rng.poisson(3 + 4 * k, rows).tolist()
        data[name] = pd.Series(_with_nulls(values, rng, 0.1), dtype=INT64)
    data["F1"] = pd.Series(_with_nulls((rng.normal(5.0, 2.0, rows)).tolist(), rng, 0.1),
                           dtype=FLOAT64)
    for name, vocab in (("C1", 40), ("C2", 15), ("C3", 4)):
        ids = np.minimum(rng.zipf(1.6, rows), vocab)
        values = [f"{name.lower()}_{i:03x}" for i in ids]
        data[name] = pd.Series(_with_nulls(values, rng, 0.08), dtype=STRING)
    tags = [f"t{i}" for i in range(6)]
    lists = []
    for _ in range(rows):
        r = rng.random()
        if r < 0.05:
            lists.append(None)
            continue
        n = int(rng.integers(0, 4))
        items = [tags[int(i)] for i in rng.integers(0, len(tags), n)]
        if items and r > 0.95:
            items[0] = None
        lists.append(items)
    data["L1"] = pd.Series(lists, dtype=LIST_STRING)
    return pd.DataFrame(data)


def partitioned(df: pd.DataFrame, npartitions: int) -> irs.Dataset:
    """A Dataset of ``df`` cut into exactly ``npartitions`` partitions (rows in order)."""
    ds = irs.Dataset(dd.from_pandas(df, npartitions=npartitions, sort=False))
    assert ds.npartitions == npartitions
    return ds


def new_workflow(node: object, root: str | os.PathLike | None = None) -> irs.Workflow:
    """A workflow whose artifacts go into a fresh folder under ``root`` (pytest's tmp)."""
    return irs.Workflow(node, artifacts_dir=tempfile.mkdtemp(prefix="wf-", dir=root))


def output_dtypes(frame: pd.DataFrame) -> dict[str, str]:
    """The backend-neutral dtypes of a transformed frame, e.g. ``{'c': 'int64'}``: of its
    Arrow columns, or, for a frame with NumPy dtypes (``dtype_backend="numpy_nullable"``),
    as Arrow reads its values (list cells are NumPy arrays of the element dtype)."""
    if all(isinstance(t, pd.ArrowDtype) for t in frame.dtypes):
        return irs.get_backend("cpu").schema_of(frame).dtypes
    table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    return irs.Schema.from_arrow(table.schema).dtypes


def assert_frames_equal(left: pd.DataFrame, right: pd.DataFrame) -> None:
    """Same columns, dtypes and values (NaN == NaN, null == null), row order included."""
    left = left.reset_index(drop=True)
    right = right.reset_index(drop=True)
    assert list(left.columns) == list(right.columns)
    assert output_dtypes(left) == output_dtypes(right)
    lt = pa.Table.from_pandas(left, preserve_index=False)
    rt = pa.Table.from_pandas(right, preserve_index=False)
    assert lt.num_rows == rt.num_rows
    for name in lt.column_names:
        assert lt[name].to_pylist() == rt[name].to_pylist() or _close(lt[name], rt[name]), name


def _close(a: pa.ChunkedArray, b: pa.ChunkedArray) -> bool:
    if not pa.types.is_floating(a.type):
        return False
    x = a.to_numpy(zero_copy_only=False).astype(np.float64)
    y = b.to_numpy(zero_copy_only=False).astype(np.float64)
    return bool(np.allclose(x, y, rtol=1e-6, atol=1e-6, equal_nan=True))


# ---- fixtures --------------------------------------------------------------------------------
@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


@pytest.fixture(scope="session")
def criteo_df() -> pd.DataFrame:
    """The shared 200-row frame (treat as read-only; copy before changing it)."""
    return make_criteo_frame()


@pytest.fixture(scope="session")
def artifacts_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A session folder for workflow artifacts (usable from hypothesis tests too)."""
    return str(tmp_path_factory.mktemp("artifacts"))


@pytest.fixture(scope="session")
def _session_client() -> Iterator[object]:
    """The 2-worker process cluster, started once, on first use only.

    The client is *not* made the process-wide default: tests that do not ask for the
    ``client`` fixture keep running on Dask's local threaded scheduler.
    """
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():  # the scheduler's HTTP port may be taken: any port does
        warnings.filterwarnings("ignore", message="Port .* is already in use")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, memory_limit="1GB")
    client = distributed.Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture
def client(_session_client: object) -> Iterator[object]:
    """The session's 2-worker ``distributed.Client``, current for the duration of the test."""
    with _session_client.as_current():  # type: ignore[attr-defined]
        yield _session_client


# ---- GPU tests: `pytest -m gpu` runs them where cuDF really works ------------------------------
def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("cuda") is not None for item in items) \
            or _cuda_available():
        pass
    else:
        skip_cuda = pytest.mark.skip(reason="needs PyTorch with a CUDA device")
        for item in items:
            if item.get_closest_marker("cuda") is not None:
                item.add_marker(skip_cuda)
    if irs.gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a working GPU with cuDF (pip install -e '.[gpu]')")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # (keywords also hold folder names)
            item.add_marker(skip)


@pytest.fixture(scope="session")
def s3() -> Iterator[Any]:
    """moto's S3 server (tests/s3_server.py), started once for the session."""
    from tests import s3_server

    server = s3_server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def bucket(s3: Any) -> str:
    """A new, empty bucket on the session's S3 server."""
    return s3.new_bucket()
