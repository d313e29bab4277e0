"""The fast paths of issue 19 give the same results as the general ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.tables import _vocabulary as vocab

ARROW_ORDER: dict = {}  # Arrow puts nulls at the end by default


def _arrow_order(t: pa.Table) -> list[int]:
    return pc.sort_indices(t, sort_keys=vocab.SORT_KEYS, **ARROW_ORDER).to_numpy().tolist()


@pytest.mark.parametrize("kind", ["hex", "short", "int", "bool", "binary"])
def test_lexsort_order_matches_arrow_sort(kind: str) -> None:
    rng = np.random.default_rng(1)
    n = 3000
    if kind == "hex":
        values = [f"{x:08x}" for x in rng.integers(0, 2**32, n)]
    elif kind == "short":  # different lengths, prefixes of each other
        values = ["".join(rng.choice(list("ab"), rng.integers(0, 5))) for _ in range(n)]
    elif kind == "int":
        values = rng.integers(-(2**40), 2**40, n).tolist()
    elif kind == "bool":
        values = rng.integers(0, 2, n).astype(bool).tolist()
    else:
        values = [bytes(rng.integers(0, 256, rng.integers(0, 9)).astype(np.uint8)) for _ in range(n)]
    values = [None if i % 97 == 0 else v for i, v in enumerate(values)]
    table = pa.table({"value": values, "count": rng.integers(1, 4, n)})
    # unique values, as in a vocabulary (one null at most)
    table = table.group_by("value").aggregate([("count", "sum")]).rename_columns(
        ["value", "count"])
    assert vocab._lexsort_order(table) is not None
    assert vocab.sort_order(table).tolist() == _arrow_order(table)


def test_lexsort_order_declines_long_strings_and_floats() -> None:
    long = pa.table({"value": ["a" * 9, "b"], "count": [1, 1]})
    floats = pa.table({"value": [0.5, 1.5], "count": [1, 2]})
    assert vocab._lexsort_order(long) is None and vocab._lexsort_order(floats) is None
    assert vocab.sort_order(long).tolist() == _arrow_order(long)
    assert vocab.sort_order(floats).tolist() == [1, 0]


def test_wide_categorical_columns_are_written_without_dictionary(tmp_path) -> None:
    rng = np.random.default_rng(0)
    n = 200_000
    df = pd.DataFrame({"wide": [f"{x:08x}" for x in rng.permutation(2**24)[:n]],
                       "narrow": rng.choice(["a", "b", "c"], n),
                       "x": rng.random(n)})
    wf = irs.Workflow((["wide", "narrow"] >> ops.Categorify()) + ["x"],
                      artifacts_dir=str(tmp_path / "art"))
    src = tmp_path / "src"
    src.mkdir()
    for i, part in enumerate(np.array_split(np.arange(n), 2)):
        df.iloc[part].to_parquet(src / f"part.{i}.parquet", index=False)
    ds = irs.Dataset(str(src))
    wf.fit(ds)
    out = tmp_path / "out"
    wf.transform(ds).to_parquet(str(out))
    f = sorted(out.glob("part.*.parquet"))[0]
    meta = pq.ParquetFile(f).metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings
                 for i in range(meta.num_columns)}
    assert "RLE_DICTIONARY" not in encodings["wide"]
    assert "RLE_DICTIONARY" in encodings["narrow"] and "RLE_DICTIONARY" in encodings["x"]
    # the ids are still right: equal to a fresh fit_transform in memory
    expected = wf.fit_transform(df)
    got = pd.read_parquet(out)
    assert got["wide"].tolist() == expected["wide"].tolist()
    assert got["narrow"].tolist() == expected["narrow"].tolist()


@pytest.mark.parametrize("chosen", [None, "system"])
def test_arrow_memory_pool_is_jemalloc_unless_the_user_chose_one(chosen) -> None:
    """Importing the package picks jemalloc (fewer page faults than mimalloc's eager release)
    but never overrides ARROW_DEFAULT_MEMORY_POOL."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    code = ("import interactive_recsys, pyarrow as pa; "
            "print(pa.default_memory_pool().backend_name)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        pa.jemalloc_memory_pool()
        has_jemalloc = True
    except NotImplementedError:
        has_jemalloc = False
    expected = chosen or ("jemalloc" if has_jemalloc else pa.default_memory_pool().backend_name)
    assert out == expected
