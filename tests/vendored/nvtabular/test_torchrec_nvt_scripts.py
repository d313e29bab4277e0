"""TorchRec's NVTabular Criteo scripts, run with only their imports changed.

``convert_tsv_to_parquet.py`` and ``process_criteo_parquet.py`` of pytorch/torchrec
(``torchrec/datasets/scripts/nvt/``, BSD 3-Clause; stored unchanged under
``tests/vendored/nvtabular/examples/torchrec_nvt/``) run on 24 small Criteo day files, as their
``nvt_preproc.sh`` runs them. What the runner changes, and nothing else:

* ``import nvtabular as nvt`` and ``from merlin.io import Shuffle`` point at
  ``interactive_recsys.compat.nvtabular``;
* ``utils.dask.setup_dask`` gives a CPU ``LocalCluster`` (theirs starts a
  ``LocalCUDACluster``); ``utils.criteo_constant`` is their file.

The outputs are checked against pandas on the same TSV.
"""

from __future__ import annotations

import glob
import os
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from interactive_recsys.datasets import synthetic_criteo
from interactive_recsys.datasets._criteo_tsv import write_criteo_tsv

HERE = Path(__file__).parent / "examples" / "torchrec_nvt"
COMPAT = "interactive_recsys.compat.nvtabular"
IMPORTS = {
    "import nvtabular as nvt": f"import {COMPAT} as nvt",
    "from merlin.io import Shuffle": f"from {COMPAT}.io import Shuffle",
}
ROWS_PER_DAY = 120


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _run(script: str, argv: list[str], clients: list) -> None:
    """Run ``script`` as ``__main__`` with ``argv``, its imports mapped (:data:`IMPORTS`)."""
    source = (HERE / f"{script}.py.txt").read_text()
    assert "import nvtabular as nvt" in source
    for old, new in IMPORTS.items():
        source = source.replace(old, new)

    def setup_dask(dask_workdir: str):
        import warnings

        import distributed

        os.makedirs(dask_workdir, exist_ok=True)
        with warnings.catch_warnings():  # another test's cluster may hold the usual port
            warnings.filterwarnings("ignore", message="Port .* is already in use")
            cluster = distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                memory_limit="1GB", local_directory=dask_workdir)
        client = distributed.Client(cluster)
        clients.append(client)
        return client

    utils = types.ModuleType("utils")
    utils.__path__ = []  # a package
    constants = _module("utils.criteo_constant",
                        (HERE / "utils_criteo_constant.py.txt").read_text())
    dask_module = types.ModuleType("utils.dask")
    dask_module.setup_dask = setup_dask
    saved = {k: sys.modules.get(k) for k in ("utils", "utils.criteo_constant", "utils.dask")}
    sys.modules.update({"utils": utils, "utils.criteo_constant": constants,
                        "utils.dask": dask_module})
    old_argv = sys.argv
    sys.argv = [f"{script}.py", *argv]
    try:
        exec(compile(source, f"torchrec_nvt/{script}.py", "exec"),
             {"__name__": "__main__"})
    finally:
        sys.argv = old_argv
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _read_tsv(path: str) -> pd.DataFrame:
    names = ["label"] + [f"int_{i}" for i in range(13)] + [f"cat_{i}" for i in range(26)]
    return pd.read_csv(path, sep="\t", names=names, header=None,
                       dtype={n: "string" for n in names[14:]})


@pytest.fixture
def clients():
    """The clients the scripts' ``setup_dask`` made, closed after the test; Dask's config
    (which a new default client changes) restored for the next tests."""
    import copy

    import dask

    saved = copy.deepcopy(dask.config.config)
    made: list = []
    yield made
    for client in made:
        cluster = client.cluster
        client.close()
        cluster.close()
    dask.config.config.clear()
    dask.config.config.update(saved)


def test_torchrec_nvt_scripts_run_on_the_compat_layer(tmp_path, clients):
    raw = tmp_path / "raw"
    raw.mkdir()
    table = synthetic_criteo(24 * ROWS_PER_DAY, seed=3, path=str(tmp_path / "pq"),
                             profile="kaggle")
    import pyarrow.dataset as pads

    rows = pads.dataset(str(table), format="parquet").to_table()
    for day in range(24):
        write_criteo_tsv(rows.slice(day * ROWS_PER_DAY, ROWS_PER_DAY), raw / f"day_{day}")
    base = str(tmp_path / "out") + "/"

    _run("convert_tsv_to_parquet", ["-i", str(raw), "-o", base], clients)
    parquet = Path(base) / "criteo_parquet"
    expected_files = [f"day_{d}.parquet" for d in range(23)] + [
        "day_23.part0.parquet", "day_23.part1.parquet"]
    assert sorted(p.name for p in parquet.glob("*.parquet")) == sorted(expected_files)
    day5 = pd.read_parquet(parquet / "day_5.parquet")
    tsv5 = _read_tsv(str(raw / "day_5"))
    assert len(day5) == ROWS_PER_DAY
    for name in ("cat_0", "cat_2", "cat_25"):  # hex -> integers, empty -> null
        want = tsv5[name].map(lambda v: pd.NA if pd.isna(v) else int(v, 16))
        assert day5[name].astype("Int64").tolist() == want.astype("Int64").tolist(), name
    assert day5["int_1"].astype("Int64").tolist() == tsv5["int_1"].astype("Int64").tolist()

    _run("process_criteo_parquet", ["-b", base, "-s"], clients)
    preproc = Path(base) / "criteo_preproc"
    parts = {split: pd.concat([pd.read_parquet(f) for f in sorted(
        glob.glob(str(preproc / split / "*.parquet")))]) for split in
        ("train", "validation", "test")}
    half = ROWS_PER_DAY // 2
    assert {k: len(v) for k, v in parts.items()} == {
        "train": 23 * ROWS_PER_DAY, "validation": ROWS_PER_DAY - half, "test": half}
    train = parts["train"]
    assert train["label"].dtype == np.float32 and train["int_0"].dtype == np.float32
    assert train["cat_0"].dtype == np.int32
    # conts: FillMissing (0) -> + 2 -> LogOp (log1p): log(x + 3)
    raw_train = pd.concat([_read_tsv(str(raw / f"day_{d}")) for d in range(23)])
    for name in ("int_0", "int_1", "int_12"):
        want = np.sort(np.log1p(raw_train[name].fillna(0).to_numpy(np.float64) + 2))
        assert np.allclose(np.sort(train[name].to_numpy(np.float64)), want, rtol=1e-6), name
    assert sorted(train["label"].tolist()) == sorted(raw_train["label"].astype(float).tolist())
    # cats: the train rows (shuffled per worker) keep one id per raw value, per column
    validation = parts["validation"]
    head = _read_tsv(str(parquet.parent.parent / "raw" / "day_23")).iloc[:ROWS_PER_DAY - half]
    assert np.allclose(validation["int_3"].to_numpy(),  # not shuffled: row order kept
                       np.log1p(head["int_3"].fillna(0).to_numpy(np.float64) + 2), rtol=1e-6)
    for name in ("cat_0", "cat_5", "cat_20"):
        raw_ids = head[name].map(lambda v: 0 if pd.isna(v) else int(v, 16))
        pairs = pd.DataFrame({"raw": raw_ids.to_numpy(), "id": validation[name].to_numpy()})
        assert pairs.drop_duplicates()["raw"].is_unique, name  # a raw value: one id
    assert train[[f"cat_{i}" for i in range(26)]].min().min() >= 0
