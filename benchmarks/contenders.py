"""The contenders: each runs the standard Criteo workflow (or, for the floor, only its I/O).

Standard workflow, identical for every contender:

* ``C1..C26``: Categorify. Index 0 is padding, 1 null, 2 out-of-vocabulary; the vocabulary
  starts at 3, by descending frequency, ties by ascending value; counts over the whole data.
* ``I1..I13``: fill nulls with 0, clip below at 0, ``log1p`` (as float32), then standardise
  with the mean and the population std of those float32 values; output float32.
* ``label``: kept as is.

Run one contender in its own process (the harness does this)::

    python -m benchmarks.contenders NAME INPUT_DIR OUTPUT_DIR RESULT_JSON

The process writes ``{"seconds": ..., "fit_s": ...}`` to RESULT_JSON: ``seconds`` is the work
from the first read to the last write, without interpreter start-up, imports and Dask cluster
start-up. Imports are lazy so that the NVTabular contender can run in its own venv with old
pandas/numpy (no ``interactive_recsys`` there).
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

LABEL = "label"
CONTS = [f"I{i}" for i in range(1, 14)]
CATS = [f"C{i}" for i in range(1, 27)]
NULL_INDEX, OOV_INDEX, FIRST_INDEX = 1, 2, 3


@dataclass(frozen=True)
class Contender:
    name: str
    run: Callable[[str, str], dict | None]
    description: str
    cluster: bool = False  # runs on a 2-worker LocalCluster (started outside the timing)
    workflow: bool = True  # False: not the workflow (the I/O floor), no correctness gate
    venv: str | None = None  # run with this venv's python (relative to the repository root)
    default: bool = True  # run when no --contenders are given
    ties_unordered: bool = False  # equally frequent values may get their ids in any order
    imports: tuple[str, ...] = ()  # the libraries it uses, imported before the timing starts
    gpu: bool = False  # needs a GPU with cuDF (skipped elsewhere); its cluster: LocalCUDACluster


def natural_key(path: str) -> list:
    """Sort key that puts part.2 before part.10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", os.path.basename(path))]


def parquet_files(directory: str) -> list[str]:
    """The data files of a directory (no ``_``/``.`` names), in natural order."""
    found = glob.glob(os.path.join(directory, "**", "*.parquet"), recursive=True)
    found = [p for p in found if not os.path.basename(p).startswith(("_", "."))]
    return sorted(found, key=natural_key)


def part_path(out: str, i: int) -> str:
    return os.path.join(out, f"part.{i:05d}.parquet")


# ---- pandas helpers (shared by the pandas and dask contenders) --------------------------------
def log_counts(df) -> np.ndarray:
    """float64 array (rows, 13) of the float32 ``log1p(max(fillna(I, 0), 0))`` values."""
    x = np.empty((len(df), len(CONTS)), dtype=np.float64)
    for j, c in enumerate(CONTS):
        v = df[c].to_numpy(dtype="float64", na_value=0.0)
        np.maximum(v, 0.0, out=v)
        x[:, j] = np.log1p(v).astype(np.float32)
    return x


def log_frame(df):
    import pandas as pd

    return pd.DataFrame(log_counts(df), columns=CONTS, index=df.index)


def vocab_index(counts):
    """A pd.Index of values by descending count, ties by ascending value (id = position + 3).

    ``counts`` is a Series of counts indexed by value, possibly with repeated values.
    """
    import pandas as pd

    total = counts.groupby(level=0, sort=False).sum()
    frame = pd.DataFrame({"value": total.index.array, "count": total.to_numpy()})
    frame = frame.sort_values(["count", "value"], ascending=[False, True])
    return pd.Index(frame["value"].array)


def encode(values, vocab) -> np.ndarray:
    """Categorify ids of a Series with a vocabulary from :func:`vocab_index`."""
    import pandas as pd

    codes, uniques = pd.factorize(values)  # nulls: code -1
    pos = vocab.get_indexer(uniques)  # -1: not in the vocabulary
    lut = np.append(np.where(pos >= 0, pos + FIRST_INDEX, OOV_INDEX), NULL_INDEX)
    return lut[codes]  # code -1 picks the trailing NULL_INDEX


def transform_frame(df, vocabs, mean: np.ndarray, std: np.ndarray):
    import pandas as pd

    out = {c: encode(df[c], vocabs[c]) for c in CATS}
    x = (log_counts(df) - mean) / std
    out.update({c: x[:, j].astype(np.float32) for j, c in enumerate(CONTS)})
    out[LABEL] = df[LABEL].to_numpy()
    return pd.DataFrame(out, index=df.index)


def finish_moments(n: float, total: np.ndarray, sumsq: np.ndarray) -> tuple[np.ndarray, ...]:
    mean = total / n
    std = np.sqrt(np.maximum(sumsq / n - mean * mean, 0.0))
    return mean, np.where(std > 0, std, 1.0)


# ---- contenders -------------------------------------------------------------------------------
def run_pyarrow_floor(src: str, out: str) -> dict:
    """Read every file with pyarrow and write it back: the I/O floor of any workflow."""
    import pyarrow.parquet as pq

    os.makedirs(out, exist_ok=True)
    for i, f in enumerate(parquet_files(src)):
        pq.write_table(pq.read_table(f), part_path(out, i))
    return {}


def run_pandas(src: str, out: str) -> dict:
    """Two passes file by file: value_counts + moments, then factorize/get_indexer and write."""
    import pandas as pd

    started = time.perf_counter()
    files = parquet_files(src)
    counts: dict[str, list] = {c: [] for c in CATS}
    n, total, sumsq = 0, np.zeros(len(CONTS)), np.zeros(len(CONTS))
    for f in files:
        df = pd.read_parquet(f, dtype_backend="pyarrow")
        for c in CATS:
            counts[c].append(df[c].value_counts())
        x = log_counts(df)
        n, total, sumsq = n + len(x), total + x.sum(0), sumsq + np.square(x).sum(0)
    vocabs = {c: vocab_index(pd.concat(counts.pop(c))) for c in CATS}
    mean, std = finish_moments(n, total, sumsq)
    fit_s = time.perf_counter() - started
    os.makedirs(out, exist_ok=True)
    for i, f in enumerate(files):
        df = pd.read_parquet(f, dtype_backend="pyarrow")
        transform_frame(df, vocabs, mean, std).to_parquet(part_path(out, i), index=False)
    return {"fit_s": fit_s}


def _polars_fit(src: str):
    """The scan, the float64 log expression, the moments and the vocabularies (fit pass)."""
    import polars as pl

    lf = pl.scan_parquet(parquet_files(src))

    def log(c: str) -> pl.Expr:
        return (pl.col(c).fill_null(0).clip(lower_bound=0).cast(pl.Float64).log1p()
                .cast(pl.Float32).cast(pl.Float64))

    stats = lf.select([log(c).mean().alias(f"{c}_mean") for c in CONTS]
                      + [log(c).std(ddof=0).alias(f"{c}_std") for c in CONTS])
    vocab_queries = [lf.select(c).drop_nulls().group_by(c).len()
                     .sort(["len", c], descending=[True, False])
                     .with_row_index(f"{c}__id", offset=FIRST_INDEX).select(c, f"{c}__id")
                     for c in CATS]
    stats_df, *vocabs = pl.collect_all([stats, *vocab_queries])
    row = stats_df.row(0, named=True)
    conts = [((log(c) - row[f"{c}_mean"]) / (row[f"{c}_std"] or 1.0)).cast(pl.Float32).alias(c)
             for c in CONTS]
    return lf, vocabs, conts


def _polars_ids(c: str, ids):
    import polars as pl

    return (pl.when(pl.col(c).is_null()).then(NULL_INDEX).otherwise(ids.fill_null(OOV_INDEX))
            .cast(pl.Int64).alias(c))


def run_polars(src: str, out: str) -> dict:
    """Lazy scan; group_by counts and moments in one collect_all; replace_strict; sink."""
    import polars as pl

    started = time.perf_counter()
    lf, vocabs, conts = _polars_fit(src)
    fit_s = time.perf_counter() - started
    cats = [_polars_ids(c, pl.col(c).replace_strict(v[c], v[f"{c}__id"], default=None,
                                                     return_dtype=pl.Int64))
            for c, v in zip(CATS, vocabs, strict=True)]
    return _polars_sink(lf, cats, conts, out, fit_s)


def _polars_sink(query: object, cats: list, conts: list, out: str, fit_s: float) -> dict:
    """Write the encoded columns of a polars lazy query as one parquet file."""
    import polars as pl

    os.makedirs(out, exist_ok=True)
    query.select([*cats, *conts, pl.col(LABEL)]).sink_parquet(part_path(out, 0),
                                                             compression="snappy")
    return {"fit_s": fit_s}


def run_polars_join(src: str, out: str) -> dict:
    """As run_polars, but the ids come from 26 order-keeping left joins (3x slower)."""
    import polars as pl

    started = time.perf_counter()
    lf, vocabs, conts = _polars_fit(src)
    fit_s = time.perf_counter() - started
    q = lf
    for c, vocab in zip(CATS, vocabs, strict=True):
        q = q.join(vocab.lazy(), on=c, how="left", maintain_order="left")
    cats = [_polars_ids(c, pl.col(f"{c}__id")) for c in CATS]
    return _polars_sink(q, cats, conts, out, fit_s)


def run_dask(src: str, out: str) -> dict:
    """Plain dask.dataframe: value_counts and moments in one compute, then map_partitions."""
    import dask
    import dask.dataframe as dd
    import pandas as pd

    started = time.perf_counter()
    ddf = dd.read_parquet(parquet_files(src), dtype_backend="pyarrow")
    logs = ddf.map_partitions(log_frame, meta=pd.DataFrame(columns=CONTS, dtype="float64"))
    counts = [ddf[c].value_counts(split_out=1) for c in CATS]  # default: P2P shuffle
    *counts, mean, std = dask.compute(*counts, logs.mean(), logs.std(ddof=0))
    vocabs = dask.delayed({c: vocab_index(v) for c, v in zip(CATS, counts, strict=True)})
    mean, std = mean[CONTS].to_numpy(), std[CONTS].to_numpy()
    std = np.where(std > 0, std, 1.0)
    fit_s = time.perf_counter() - started
    meta = {c: np.zeros(0, np.int64) for c in CATS}
    meta.update({c: np.zeros(0, np.float32) for c in CONTS})
    meta = pd.DataFrame(meta).assign(**{LABEL: ddf._meta[LABEL]})
    result = ddf.map_partitions(transform_frame, vocabs, mean, std, meta=meta)
    result.to_parquet(out, write_index=False, name_function=lambda i: f"part.{i:05d}.parquet")
    return {"fit_s": fit_s}


def irs_workflow(artifacts_dir: str):
    import interactive_recsys as irs
    from interactive_recsys import ops

    cats = CATS >> ops.Categorify()
    conts = CONTS >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    return irs.Workflow(cats + conts + [LABEL], artifacts_dir=artifacts_dir)


def run_irs(src: str, out: str, backend: str = "cpu") -> dict:
    """interactive_recsys: Dataset -> Workflow.fit -> transform -> to_parquet."""
    import interactive_recsys as irs

    started = time.perf_counter()
    wf = irs_workflow(out.rstrip("/") + "-artifacts")
    ds = irs.Dataset(src, backend=backend)
    wf.fit(ds)
    fit_s = time.perf_counter() - started
    wf.transform(ds).to_parquet(out)
    return {"fit_s": fit_s, "npartitions": ds.npartitions, "package": package_dirs()}


def run_irs_gpu(src: str, out: str) -> dict:
    """interactive_recsys with the cuDF backend (on the LocalCUDACluster of ``main``)."""
    return run_irs(src, out, backend="gpu")


# ---- dask-cuDF (GPU) helpers ------------------------------------------------------------------
def _cudf_logs(df):
    """cuDF frame of the float32 ``log1p(max(fillna(I, 0), 0))`` values, as float64."""
    import cudf
    import cupy

    out = {}
    for c in CONTS:
        v = df[c].astype("float64").fillna(0.0).clip(lower=0.0).values
        out[c] = cupy.log1p(v).astype(cupy.float32).astype(cupy.float64)
    return cudf.DataFrame(out, index=df.index)


def _cudf_vocab(counts):
    """``value``/``id`` cuDF frame: descending count, ties by ascending value, ids from 3."""
    import cudf
    import cupy

    frame = counts.groupby(level=0).sum().rename("count").reset_index()
    frame.columns = ["value", "count"]
    frame = frame.sort_values(["count", "value"], ascending=[False, True])
    return cudf.DataFrame({"value": frame["value"].reset_index(drop=True),
                           "id": cupy.arange(FIRST_INDEX, FIRST_INDEX + len(frame))})


def _cudf_transform(df, vocabs, mean: np.ndarray, std: np.ndarray):
    import cudf
    import cupy

    out = {}
    for c in CATS:
        col = df[c].reset_index(drop=True)
        rows = cudf.DataFrame({"value": col, "row": cupy.arange(len(col))})
        joined = rows.merge(vocabs[c], on="value", how="left").sort_values("row")
        ids = joined["id"].fillna(OOV_INDEX).astype("int64").values
        ids[col.isna().values] = NULL_INDEX
        out[c] = ids
    logs = _cudf_logs(df)
    for j, c in enumerate(CONTS):
        out[c] = ((logs[c].values - mean[j]) / std[j]).astype(cupy.float32)
    out[LABEL] = df[LABEL].reset_index(drop=True)
    return cudf.DataFrame(out)


def run_dask_cudf(src: str, out: str) -> dict:
    """Hand-written dask-cuDF: value_counts and moments in one compute, then map_partitions."""
    import cudf
    import dask
    import dask.dataframe as dd

    started = time.perf_counter()
    with dask.config.set({"dataframe.backend": "cudf"}):
        ddf = dd.read_parquet(parquet_files(src))
    logs = ddf.map_partitions(_cudf_logs, meta=cudf.DataFrame(
        {c: cudf.Series([], dtype="float64") for c in CONTS}))
    counts = [ddf[c].value_counts(split_out=1) for c in CATS]
    *counts, mean, std = dask.compute(*counts, logs.mean(), logs.std(ddof=0))
    vocabs = dask.delayed({c: _cudf_vocab(v) for c, v in zip(CATS, counts, strict=True)})
    mean, std = mean[CONTS].to_numpy(), std[CONTS].to_numpy()  # (values_host: gone in 26.08)
    std = np.where(std > 0, std, 1.0)
    fit_s = time.perf_counter() - started
    meta = {c: cudf.Series([], dtype="int64") for c in CATS}
    meta.update({c: cudf.Series([], dtype="float32") for c in CONTS})
    meta[LABEL] = ddf._meta[LABEL]
    result = ddf.map_partitions(_cudf_transform, vocabs, mean, std, meta=cudf.DataFrame(meta))
    result.to_parquet(out, write_index=False, name_function=lambda i: f"part.{i:05d}.parquet")
    return {"fit_s": fit_s}


def package_dir() -> str:
    import interactive_recsys

    return os.path.dirname(interactive_recsys.__file__)


def package_dirs() -> list[str]:
    """Where this process and the Dask workers, if any, import interactive_recsys from."""
    dirs = {package_dir()}
    with contextlib.suppress(ImportError, ValueError):
        from distributed import default_client

        dirs |= set(default_client().run(package_dir).values())
    return sorted(dirs)


def run_nvtabular(src: str, out: str) -> dict:
    """NVTabular 23.08 on CPU (needs benchmarks/.venv-nvtabular, see README.md)."""
    import nvtabular as nvt
    from nvtabular import ops

    started = time.perf_counter()
    cats = CATS >> ops.Categorify(out_path=out.rstrip("/") + "-artifacts")
    conts = CONTS >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    wf = nvt.Workflow(cats + conts + [LABEL])
    ds = nvt.Dataset(parquet_files(src), engine="parquet", cpu=True)
    wf.fit(ds)
    fit_s = time.perf_counter() - started
    wf.transform(ds).to_parquet(out, shuffle=None)
    return {"fit_s": fit_s}


CONTENDERS: dict[str, Contender] = {c.name: c for c in [
    Contender("pyarrow-floor", run_pyarrow_floor, "pyarrow read + write of every file",
              workflow=False, imports=("pyarrow.parquet",)),
    Contender("pandas", run_pandas, "hand-written pandas 3, two passes, file by file",
              imports=("pandas", "pyarrow.parquet")),
    Contender("polars", run_polars, "polars lazy: group_by counts, replace_strict, sink",
              imports=("polars",)),
    Contender("polars-join", run_polars_join, "polars lazy: group_by counts, 26 joins, sink",
              default=False, imports=("polars",)),
    Contender("dask", run_dask, "plain dask.dataframe on a 2-worker LocalCluster", cluster=True,
              imports=("dask.dataframe", "pandas")),
    Contender("irs-local", run_irs, "interactive_recsys, dask threaded scheduler",
              imports=("interactive_recsys",)),
    Contender("irs-cluster", run_irs, "interactive_recsys on a 2-worker LocalCluster",
              cluster=True, imports=("interactive_recsys",)),
    Contender("nvtabular", run_nvtabular, "NVTabular 23.08, cpu=True (optional venv)",
              venv="benchmarks/.venv-nvtabular", ties_unordered=True, imports=("nvtabular",)),
    Contender("irs-gpu", run_irs_gpu, "interactive_recsys, cuDF backend, LocalCUDACluster",
              cluster=True, gpu=True, default=False, imports=("interactive_recsys", "cudf")),
    Contender("dask-cudf", run_dask_cudf, "hand-written dask-cuDF on a LocalCUDACluster",
              cluster=True, gpu=True, default=False, imports=("dask.dataframe", "cudf")),
]}


@contextlib.contextmanager
def local_cluster(scratch: str, ours: bool, gpu: bool = False) -> Iterator[None]:
    """A 2-worker, 1-thread-each local cluster as the default Dask client: a plain
    LocalCluster for peers, ``irs.cluster.start_cluster`` (how our users start one) for ours.
    With ``gpu``: one worker per GPU (``start_cluster(gpu=True)`` / ``LocalCUDACluster``)."""
    if ours:
        import interactive_recsys as irs

        size = {"gpu": True} if gpu else {"n_workers": 2}
        with irs.cluster.start_cluster(**size, dashboard=False,
                                       local_directory=scratch) as client, client.cluster:
            yield
        return
    from distributed import Client, LocalCluster

    if gpu:
        from dask_cuda import LocalCUDACluster

        with LocalCUDACluster(dashboard_address=None, local_directory=scratch) as cluster, \
                Client(cluster):
            yield
        return

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                      local_directory=scratch) as cluster, Client(cluster):
        yield


def main(argv: list[str]) -> None:
    name, src, out, result_path = argv
    contender = CONTENDERS[name]
    scratch = out.rstrip("/") + "-dask-scratch"
    ours = contender.run in (run_irs, run_irs_gpu)
    started = time.perf_counter()
    for module in contender.imports:  # start-up, like the interpreter's: timed apart
        importlib.import_module(module)
    import_s = time.perf_counter() - started
    with (local_cluster(scratch, ours, contender.gpu) if contender.cluster
          else contextlib.nullcontext()):
        started = time.perf_counter()
        extra = contender.run(src, out) or {}
        seconds = time.perf_counter() - started
    with open(result_path, "w") as f:
        json.dump({"seconds": seconds, "import_s": import_s, **extra}, f)


if __name__ == "__main__":
    main(sys.argv[1:])
