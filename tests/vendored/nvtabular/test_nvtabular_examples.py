"""NVTabular's example ETL notebooks, run with only their imports changed.

The code cells of five notebooks of NVIDIA-Merlin/NVTabular (Apache-2.0; Getting started,
Advanced workflow, Running on CPU, the MovieLens ETL and the scaling-Criteo ETL) are
stored unchanged under ``tests/vendored/nvtabular/examples/`` (``extract.py`` regenerates them).
Each test writes small data of the notebook's schema where the notebook downloads it,
runs the cells in order in one namespace, and checks the outputs against pandas. What the
runner changes, and nothing else:

* the imports, line by line (:data:`IMPORTS`): ``nvtabular`` and the ``merlin.*`` helpers
  become ``interactive_recsys.compat.nvtabular``; ``numba`` and ``dask_cuda`` (the GPU
  cluster) are dropped;
* IPython lines: ``%time`` / ``%%time`` are dropped, ``! mkdir -p $x`` runs as
  ``os.makedirs(x, exist_ok=True)``;
* the cells each file's header lists as left out (downloads, GPU cluster set-up, model
  training, display only).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).parent / "examples"
COMPAT = "interactive_recsys.compat.nvtabular"
IMPORTS = {
    "import nvtabular as nvt": f"import {COMPAT} as nvt",
    "from nvtabular.ops import (": f"from {COMPAT}.ops import (",
    "from nvtabular.utils import pynvml_mem_size, device_mem_size":
        f"from {COMPAT}.utils import pynvml_mem_size, device_mem_size",
    "from merlin.core.compat import pynvml_mem_size, device_mem_size":
        f"from {COMPAT}.utils import pynvml_mem_size, device_mem_size",
    "from merlin.core.dispatch import get_lib": f"from {COMPAT}.dispatch import get_lib",
    "from merlin.schema.tags import Tags": f"from {COMPAT}.tags import Tags",
    "import numba": "",
    "from dask_cuda import LocalCUDACluster": "",
}
_MKDIR = re.compile(r"^!\s*mkdir -p \$(\w+)$")


def cells(name: str) -> list[tuple[int, str]]:
    """``(index, source)`` of the notebook's cells that run, imports mapped."""
    text = (HERE / f"{name}.py.txt").read_text()
    left_out = {int(m) for m in re.findall(r"^#   (\d+): ", text, re.M)}
    out = []
    for block in re.split(r"^# %% cell ", text, flags=re.M)[1:]:
        index, _, source = block.partition("\n")
        if int(index) in left_out:
            continue
        lines = []
        for line in source.splitlines():
            stripped = line.strip()
            if stripped.startswith("%"):
                continue
            mkdir = _MKDIR.match(stripped)
            if mkdir:
                line = f"os.makedirs({mkdir[1]}, exist_ok=True)"
            elif stripped.startswith("!"):
                raise AssertionError(f"cell {index}: a shell line the runner cannot map: {line}")
            lines.append(IMPORTS.get(stripped, line))
        out.append((int(index), "\n".join(lines)))
    return out


def run(name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    namespace.setdefault("os", os)
    for index, source in cells(name):
        try:
            exec(compile(source, f"{name} cell {index}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{name}, cell {index} failed: {exc!r}\n{source}") from exc
    return namespace


def ranked(values: pd.Series, first: int = 3) -> dict[Any, int]:
    """Categorify's ids from pandas: by descending count, ties by value, from ``first``."""
    counts = values.value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    return {v: first + i for i, v in enumerate(order)}


def movielens(rows: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ratings with MovieLens-1M's converted columns (Merlin's ``get_movielens``) and its
    ``movies_converted`` table (``movieId``, ``genres`` lists)."""
    rng = np.random.default_rng(seed)
    users, movies = 300, 200
    user = rng.zipf(1.3, rows) % users
    frame = pd.DataFrame({
        "userId": user.astype("int64"),
        "movieId": (rng.zipf(1.2, rows) % movies).astype("int64"),
        "rating": rng.integers(1, 6, rows).astype("int64"),
        "timestamp": rng.integers(956703932, 1046454590, rows),
        "gender": np.array(["F", "M"])[user % 2],
        "age": np.array([1, 18, 25, 35, 45, 50, 56])[user % 7],
        "occupation": (user % 21).astype("int64"),
        "zipcode": np.array([f"{z:05d}" for z in range(40)])[user % 40],
    })
    genres = np.array(["Action", "Comedy", "Drama", "Horror", "Romance", "Sci-Fi"])
    table = pd.DataFrame({"movieId": np.arange(movies, dtype="int64"),
                          "genres": [list(genres[rng.choice(6, 1 + m % 3, replace=False)])
                                     for m in range(movies)]})
    return frame, table


def criteo_day(rows: int, seed: int) -> pd.DataFrame:
    """Rows of Criteo's converted parquet schema: label, I1..I13 (counts with nulls),
    C1..C26 (hashed categories with nulls)."""
    rng = np.random.default_rng(seed)
    frame = {"label": rng.integers(0, 2, rows).astype("int64")}
    for i in range(1, 14):
        values = pd.array(rng.zipf(1.5, rows) - 1, dtype="Int64")
        values[rng.random(rows) < 0.1] = pd.NA
        frame[f"I{i}"] = values
    for i in range(1, 27):
        codes = rng.zipf(1.3, rows) % (5 + 7 * i)
        values = pd.Series([f"{i:02d}{c:06x}" for c in codes], dtype="string")
        values[rng.random(rows) < 0.05] = pd.NA
        frame[f"C{i}"] = values
    return pd.DataFrame(frame)


def read(folder: str | Path) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(f) for f in sorted(Path(folder).glob("*.parquet"))],
                     ignore_index=True)


def test_getting_started(tmp_path, monkeypatch):
    frame, _ = movielens(3000)
    (tmp_path / "ml-1m").mkdir()
    frame.iloc[:2400].to_parquet(tmp_path / "ml-1m" / "train.parquet")
    frame.iloc[2400:].to_parquet(tmp_path / "ml-1m" / "valid.parquet")
    monkeypatch.chdir(tmp_path)
    ns = run("getting_started", {"input_path": f"{tmp_path}/"})
    train = frame.iloc[:2400]
    out = read(tmp_path / "train")
    assert sorted(out.columns) == ["movieId", "rating", "userId"]
    ids = ranked(train["userId"])
    np.testing.assert_array_equal(out["userId"], train["userId"].map(ids))
    valid = read(tmp_path / "valid")  # values unseen in training: the OOV id 2
    want = frame.iloc[2400:]["movieId"].map(ranked(train["movieId"])).fillna(2)
    np.testing.assert_array_equal(valid["movieId"], want.astype("int64"))
    tags = ns["train_transformed"].schema["rating"].tags
    assert {"regression", "target"} <= set(tags)
    assert len(ns["train_transformed"].head()) == 5
    assert "Categorify" in repr(ns["output"].graph)


def test_advanced_workflow(tmp_path):
    frame, movies = movielens(600_400, seed=1)
    (tmp_path / "ml-1m").mkdir()
    frame[["userId", "movieId", "rating"]].to_parquet(tmp_path / "ml-1m" / "train.parquet")
    movies.to_parquet(tmp_path / "ml-1m" / "movies_converted.parquet")
    ns = run("advanced_workflow", {"input_path": f"{tmp_path}/"})
    assert ns["train_ds"].npartitions == 2
    train, valid = ns["train"], ns["valid"]
    out = ns["valid_transformed"].compute()
    assert len(out) == len(valid) == 400
    np.testing.assert_array_equal(out["binary_rating"], valid["rating"].to_numpy() > 3)
    np.testing.assert_array_equal(out["userId"], valid["userId"].map(ranked(train["userId"]))
                                  .fillna(2).astype("int64"))
    # movieId is computed twice (Categorify() and JoinExternal >> Categorify(10)): the first
    # part of the output wins, as in NVTabular's own run of this notebook
    np.testing.assert_array_equal(out["movieId"], valid["movieId"].map(
        ranked(train["movieId"])).fillna(2).astype("int64"))
    joined = train.merge(movies, on="movieId", how="left")["genres"].explode()
    counts = joined.value_counts()  # freq_threshold=10: rarer genres are OOV (2)
    kept = ranked(joined[joined.map(counts) >= 10])
    want = valid.merge(movies, on="movieId", how="left")["genres"]
    assert [list(x) for x in out["genres"]] == [[kept.get(g, 2) for g in row] for row in want]
    schema = ns["train_transformed"].schema
    assert {"user", "id", "categorical"} <= set(schema["userId"].tags)
    assert {"item", "id"} <= set(schema["movieId"].tags)
    assert {"target", "binary_classification"} <= set(schema["binary_rating"].tags)


def test_running_on_cpu(tmp_path, monkeypatch):
    import interactive_recsys.compat.nvtabular as nvt

    frame, _ = movielens(2000, seed=2)
    monkeypatch.chdir(tmp_path)
    train, valid = nvt.Dataset(frame.iloc[:1500]), nvt.Dataset(frame.iloc[1500:])
    ns = run("running_on_cpu", {"train": train, "valid": valid, "cluster": None})
    try:
        out = read(tmp_path / "train")
        src = frame.iloc[:1500]
        np.testing.assert_array_equal(out["age"], np.digitize(src["age"], [0, 10, 21, 45]))
        counts = src["zipcode"].value_counts()
        ids = ranked(src["zipcode"][src["zipcode"].map(counts) >= 10])
        np.testing.assert_array_equal(out["zipcode"], src["zipcode"].map(ids).fillna(2))
        # cells 21-23 refit on the written output: bucket ids bucketized again
        again = ns["example_workflow"].transform(ns["valid"]).compute()
        np.testing.assert_array_equal(again["age"], np.digitize(read(tmp_path / "valid")["age"],
                                                                [0, 10, 21, 45]))
    finally:
        ns["client"].close()


def test_movielens_etl(tmp_path, monkeypatch):
    frame, movies = movielens(4000, seed=3)
    frame.iloc[:3000].to_parquet(tmp_path / "train.parquet")
    frame.iloc[3000:].to_parquet(tmp_path / "valid.parquet")
    movies.to_parquet(tmp_path / "movies_converted.parquet")
    monkeypatch.setenv("INPUT_DATA_DIR", str(tmp_path))
    run("movielens_etl", {})
    out = read(tmp_path / "train")
    assert out.dtypes["userId"] == "int64" and out.dtypes["rating"] == "float32"
    train = frame.iloc[:3000]
    # shuffled within partitions: compare as sets of rows
    want = pd.DataFrame({"userId": train["userId"].map(ranked(train["userId"])),
                         "rating": (train["rating"] > 3).astype("float32")})
    got = out[["userId", "rating"]].sort_values(["userId", "rating"], ignore_index=True)
    pd.testing.assert_frame_equal(got, want.sort_values(["userId", "rating"],
                                                        ignore_index=True))
    assert (tmp_path / "workflow" / "workflow.json").exists()
    assert "genres" in out.columns


def test_criteo_etl(tmp_path, monkeypatch):
    from interactive_recsys.compat.nvtabular.utils import device_mem_size

    raw = tmp_path / "converted"
    raw.mkdir()
    for day in range(3):
        criteo_day(400, seed=day).to_parquet(raw / f"day_{day}.parquet")
    monkeypatch.setenv("BASE_DIR", str(tmp_path))
    monkeypatch.setenv("INPUT_DATA_DIR", str(raw))
    monkeypatch.setenv("OUTPUT_DATA_DIR", str(tmp_path / "output"))
    ns = {"NUM_GPUS": [], "part_size": int(0.15 * device_mem_size(kind="total"))}
    run("criteo_etl", ns)
    train = pd.concat([pd.read_parquet(raw / f"day_{d}.parquet") for d in range(2)],
                      ignore_index=True)
    out = read(tmp_path / "output" / "train")
    assert len(out) == len(train)
    assert all(out.dtypes[f"C{i}"] == "int64" for i in range(1, 27))
    assert all(out.dtypes[f"I{i}"] == "float32" for i in range(1, 14))
    # FillMissing(0) >> Clip(0) >> Normalize(): mean 0 and std 1 over the training rows
    for col in ("I1", "I5"):
        assert abs(out[col].mean()) < 1e-4 and abs(out[col].std(ddof=0) - 1) < 1e-3
    c1 = out["C1"].sort_values(ignore_index=True)
    want = train["C1"].map(ranked(train["C1"])).fillna(1).astype("int64")
    np.testing.assert_array_equal(c1, want.sort_values(ignore_index=True))
    assert len(read(tmp_path / "output" / "valid")) == 400
    assert (tmp_path / "output" / "workflow" / "workflow.json").exists()
