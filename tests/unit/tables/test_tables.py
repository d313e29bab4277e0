"""The statistics-table engine: tree reduction, split counts, merges, the one cache, atomic files."""

import itertools
import os

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask.sizeof import sizeof

from interactive_recsys.backend import merge_moments, merge_sums, sum_counts
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.tables import _ranking as ranking
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._cache import TABLES
from interactive_recsys.tables._keyed_statistics import _Loaded
from interactive_recsys.tables._reduce import (
    Graph,
    delayed_task,
    delayed_tasks,
    first_level_by_keys,
    num_splits,
    tree,
)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 64, 65, 300])
def test_tree_combines_every_item_once_fan_in_at_a_time(n):
    seen = []

    def combine(chunk):
        assert 1 <= len(chunk) <= 8
        seen.append(len(chunk))
        return sum(chunk)

    items = [delayed_task("t", "item", int, str(i)) for i in range(n)]
    total = tree(items, combine, delayed_tasks("t", "sum")).compute(scheduler="sync")
    assert total == n * (n - 1) // 2
    # a tree of fan-in 8: every level has ceil(items / 8) tasks until one is left
    levels, width = 0, n
    while width > 1:
        width, levels = -(-width // 8), levels + 1
    assert len(seen) == sum(-(-n // 8 ** k) for k in range(1, levels + 1))


def test_tree_first_level_runs_even_on_one_chunk_and_graph_tasks_match_delayed():
    g = Graph("g")
    parts = [g.task("part", dict, [("x", i)]) for i in range(3)]
    key = tree(parts, sum, g.tasks("sum"), first=lambda chunk: sum(p["x"] for p in chunk))
    assert g.delayed(key, []).compute(scheduler="sync") == 3  # one chunk, still "first"
    parts = [delayed_task("d", "part", dict, [("x", i)]) for i in range(20)]
    total = tree(parts, sum, delayed_tasks("d", "sum"),
                 first=lambda chunk: sum(p["x"] for p in chunk))
    assert dask.compute(total, scheduler="sync")[0] == sum(range(20))


def test_each_chunk_of_keys_is_summed_from_its_own_keys_only():
    """3 partials of 4 keys: the keys are cut into chunks, and each chunk's task gets only
    its chunk's keys of each partial (a Dask scheduler weighs what a task fetches: whole
    partials kept the tasks on the worker that had fetched them). The sums equal the sums by
    hand, and every key is served once."""
    partials = [{k: 10 * i + j for j, k in enumerate("abcd")} for i in range(3)]
    seen = []

    def combine(items, keys):
        seen.append((keys, [sorted(i) for i in items]))
        return {k: sum(i[k] for i in items) for k in keys}

    g = Graph("g")
    nodes = first_level_by_keys([g.task("p", dict, p) for p in partials], list("abcd"),
                                combine, g.tasks("sum"), cut=g.tasks("cut"))
    keys = {k: v[0] for k, v in nodes.items()}
    sums = dask.compute({k: g.delayed(v, []) for k, v in keys.items()}, scheduler="sync")[0]
    assert {k: sums[k][k] for k in "abcd"} == {"a": 30, "b": 33, "c": 36, "d": 39}
    assert len(seen) == 4 and all(items == [sorted(keys)] * 3 for keys, items in seen)
    assert sum(str(k).startswith("g-cut-") for k in g.dsk) == 4 * 3


def test_num_splits_takes_plain_arguments():
    assert num_splits(1_000, 1, None) == 1
    assert num_splits(16_000_001, 3, None) == 3  # ceil(16M+1 / 8M)
    assert num_splits(None, 64, None) == 4  # 64 partitions x 500k rows = 32M rows
    assert num_splits(10**12, 1, None) == 64  # automatic choice is capped
    assert num_splits(10, 1, 200) == 200  # split_out wins


def _string_chunks(values, counts, chunks):
    """A value/count table in ``chunks`` chunks (as Acero's group_by hands them back)."""
    bounds = np.linspace(0, len(values), chunks + 1).astype(int)
    return pa.Table.from_batches([pa.record_batch({"value": values[a:b], "count": counts[a:b]})
                                  for a, b in itertools.pairwise(bounds)])


def test_merges_return_one_chunk_whose_size_dask_counts_once():
    rng = np.random.default_rng(0)
    values = [f"value-{i:06d}" for i in range(100_000)]  # Acero hands back several chunks
    a = _string_chunks(values, rng.integers(1, 9, 100_000).tolist(), 5)
    b = _string_chunks(values[::2], rng.integers(1, 9, 50_000).tolist(), 3)
    for merged in (sum_counts([a, b]), merge_sums([a, b])):
        assert all(c.num_chunks == 1 for c in merged.columns)
        assert sizeof(merged) < 2 * merged.nbytes
        got = dict(zip(merged["value"].to_pylist(), merged["count"].to_pylist(), strict=True))
        want = dict(zip(values, a["count"].to_pylist(), strict=True))
        for v, c in zip(b["value"].to_pylist(), b["count"].to_pylist(), strict=True):
            want[v] += c
        assert got == want


def test_merge_moments_matches_numpy_and_is_one_chunk():
    rng = np.random.default_rng(1)
    keys = rng.choice(["a", "b", "c"], 60)
    xs = rng.normal(size=60)
    parts = []
    for chunk in np.array_split(np.arange(60), 4):
        rows = {}
        for k in np.unique(keys[chunk]):
            x = xs[chunk][keys[chunk] == k]
            rows[k] = (len(x), x.sum(), ((x - x.mean()) ** 2).sum(), x.min(), x.max())
        parts.append(pa.table({"value": list(rows), "size": [r[0] for r in rows.values()],
                               "n0": [r[0] for r in rows.values()],
                               "s0": [r[1] for r in rows.values()],
                               "m2_0": [r[2] for r in rows.values()],
                               "lo0": [r[3] for r in rows.values()],
                               "hi0": [r[4] for r in rows.values()]}))
    merged = merge_moments(parts, 1)
    assert all(c.num_chunks == 1 for c in merged.columns)
    for row in merged.to_pylist():
        x = xs[keys == row["value"]]
        assert row["n0"] == len(x) and row["lo0"] == x.min() and row["hi0"] == x.max()
        assert row["s0"] == pytest.approx(x.sum())
        assert row["m2_0"] == pytest.approx(((x - x.mean()) ** 2).sum())


def test_vocabularies_and_keyed_tables_share_one_byte_budget(tmp_path, monkeypatch):
    t = pa.table({"value": [f"v{i}" for i in range(1000)], "count": list(range(1000, 0, -1))})
    vocab.write_split(t, ranking.local_rank(t), 3, None, str(tmp_path / "vocab"), 0)
    keyed = str(tmp_path / "keyed.parquet")
    pq.write_table(pa.table({"value": t["value"], "index": np.arange(1000),
                             "mean": np.ones(1000)}), keyed)
    TABLES.clear()
    loaded = vocab.load_split(str(tmp_path / "vocab"), 0)
    monkeypatch.setenv("IRS_VOCAB_CACHE_BYTES", str(loaded.nbytes + 1))
    stats = TABLES.get(keyed, _Loaded.load)
    assert stats.columns.column_names == ["mean"]
    assert len(TABLES._tables) == 1  # the vocabulary went: one budget for both kinds
    assert TABLES.get(keyed, _Loaded.load) is stats
    TABLES.clear()


def test_cache_counts_its_hits_loads_and_evictions(tmp_path, monkeypatch):
    """Three files, room for two: the third load evicts one, and asking again for the one
    evicted reads it anew (what a job whose tables do not fit pays)."""
    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"t{i}.parquet"))
        pq.write_table(pa.table({"value": np.arange(1000) + i, "index": np.arange(1000),
                                 "mean": np.ones(1000)}), paths[-1])
    TABLES.clear()
    one = TABLES.get(paths[0], _Loaded.load).nbytes
    monkeypatch.setenv("IRS_VOCAB_CACHE_BYTES", str(2 * one))
    TABLES.get(paths[0], _Loaded.load)
    TABLES.get(paths[1], _Loaded.load)
    assert TABLES.stats() == {"hits": 1, "loads": 2, "evictions": 0, "peak_bytes": 2 * one,
                              "tables": 2, "bytes": 2 * one, "budget": 2 * one}
    TABLES.get(paths[2], _Loaded.load)  # over the budget: the most recent other one goes
    evicted = [p for p in paths if (p, os.stat(p).st_mtime_ns) not in TABLES._tables]
    assert len(evicted) == 1
    TABLES.get(evicted[0], _Loaded.load)
    stats = TABLES.stats()
    assert (stats["loads"], stats["evictions"], stats["hits"]) == (4, 2, 1)
    assert stats["peak_bytes"] == 3 * one and stats["bytes"] == 2 * one
    TABLES.clear()
    assert TABLES.stats()["loads"] == 0


def test_atomic_file_replaces_whole_or_leaves_the_old_file(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_file(path) as tmp:
        with open(tmp, "w") as f:
            f.write("half")
        raise RuntimeError("killed mid-write")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["out.json"]
    with atomic_file(path, mode=0o640) as tmp:
        with open(tmp, "w") as f:
            f.write("new")
        assert path.read_text() == "old"  # not visible before the block ends
    assert path.read_text() == "new" and os.listdir(tmp_path) == ["out.json"]
    assert path.stat().st_mode & 0o777 == 0o640


def test_cache_budget_is_a_quarter_of_a_workers_memory_limit(monkeypatch):
    """In a worker the cache may use a quarter of the memory limit (what Dask cannot spill);
    the environment variable overrides it."""
    from distributed import Client, LocalCluster

    from interactive_recsys.tables._cache import cache_budget

    monkeypatch.delenv("IRS_VOCAB_CACHE_BYTES", raising=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="800MB",
                      processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        budget = client.submit(cache_budget, pure=False).result()
    assert budget == 800_000_000 // 4
    assert cache_budget(memory_limit=800_000_000) == budget  # asked from outside a task
    monkeypatch.setenv("IRS_VOCAB_CACHE_BYTES", "12345")
    assert cache_budget() == 12345
