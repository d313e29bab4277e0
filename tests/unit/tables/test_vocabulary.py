"""Vocabulary building blocks: exact split reduction, global ranks, collision-safe lookups."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.tables import _cache as cache
from interactive_recsys.tables import _ranking as ranking
from interactive_recsys.tables import _vocabulary as vocab


def table(values, counts):
    return pa.table({"value": values, "count": pa.array(counts, pa.int64())})


def rank_by_ranges(splits, count=None):
    """The ranks of every split as the fit's graph computes them (tables/ranking.py), with
    ``count`` ranges of value (as many as splits by default)."""
    n = len(splits)
    count = count or n
    plan = ranking.bounds([ranking.sample(s, points=7) for s in splits], count)
    cuts = [ranking.cut(s, plan) for s in splits]
    ranges = [ranking.sort_range([c[r] for c in cuts]) for r in range(count)]
    base = ranking.bases([r["histogram"] for r in ranges])
    done = [ranking.finish_range(ranges[r], base[r], n) for r in range(count)]
    return [ranking.gather_ranks([d[s] for d in done]) for s in range(n)]


def _random_values(kind, rng, n):
    if kind == "int":
        pool = np.unique(np.r_[-(2**63), 2**63 - 1, rng.integers(-500, 500, 400)])
        return pa.array(rng.choice(pool, n, replace=False))
    if kind == "uint64":
        pool = np.unique(np.r_[np.array([0, 2**63 - 1], np.uint64),
                               rng.integers(0, 2**62, 400).astype(np.uint64)])
        return pa.array(rng.choice(pool, n, replace=False))
    if kind == "float":
        return pa.array(np.unique(np.r_[-0.5, 0.0, 1e300, -1e300, rng.normal(size=n)])[:n])
    if kind == "hex":
        return pa.array(sorted({f"{v:08x}" for v in rng.integers(0, 2**32, n)}))
    if kind == "long":
        return pa.array(sorted({f"id-{v:012d}" for v in rng.integers(0, 10**12, n)}))
    alphabet = [b"", b"\x00", b"a", b"a\x00", b"ab", b"\x7f", b"\x80", b"\xff", b"zz"]
    words = {b"".join(rng.choice(alphabet, rng.integers(1, 4))) for _ in range(4 * n)}
    words = sorted(w for w in words if len(w) <= 8)[:n]
    return pa.array([w.decode("latin-1") for w in words], pa.string())


@pytest.mark.parametrize("kind", ["int", "uint64", "float", "hex", "long", "string"])
@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("count", [None, 2, 9])
def test_ranks_by_ranges_equal_one_arrow_sort(kind, keyed, count):
    """Every split's global ranks equal the rank in one Arrow sort of the whole vocabulary
    (descending count, ascending value), keyed or not, with many ties."""
    rng = np.random.default_rng(1)
    values = _random_values(kind, rng, 300)
    whole = pa.table({"value": values,
                      "count": pa.array(rng.integers(1, 4, len(values)), pa.int64())})
    order = pc.sort_indices(whole, sort_keys=vocab.SORT_KEYS).to_numpy()
    expected = dict(zip(whole["value"].take(pa.array(order)).to_pylist(), range(len(order)),
                        strict=True))
    counts = kc.encode(whole) if keyed else whole
    splits = vocab.split_counts(counts, 4)
    assert sum(s.num_rows for s in splits) == len(values)
    for split, ranks in zip(splits, rank_by_ranges(splits, count), strict=True):
        assert ranks.tolist() == [expected[v] for v in kc.decode(split)["value"].to_pylist()]
    assert ranking.local_rank(counts).tolist() == [
        expected[v] for v in kc.decode(counts)["value"].to_pylist()]


def test_ranks_by_ranges_with_empty_and_mixed_splits():
    """Splits of different kinds (one holds a long string) and empty splits rank by value."""
    mixed = [kc.encode(pa.table({"value": ["aaaaaaaa", "bbbbbbbb"], "count": [3, 1]})),
             pa.table({"value": ["a-long-value", "cc"], "count": pa.array([1, 3], pa.int64())}),
             kc.encode(pa.table({"value": pa.array([], pa.string()),
                                 "count": pa.array([], pa.int64())}))]
    ranks = rank_by_ranges(mixed)
    assert [r.tolist() for r in ranks] == [[0, 3], [2, 1], []]


def test_rank_orders_by_count_then_value():
    t = table(["b", "a", "c", "d"], [2, 2, 5, 1])
    assert ranking.local_rank(t).tolist() == [2, 1, 0, 3]


def test_lookup_never_maps_a_colliding_value_to_another_id(monkeypatch):
    values = pa.array(["a", "b", "c"])
    t = vocab.VocabTable(values, np.array([10, 11, 12]))
    # pretend "zz" collides with "b" (same 64-bit hash): it must not get b's row
    hashes = vocab.hash_array(pa.array(["zz", "c", "b"]))
    hashes[0] = vocab.hash_array(pa.array(["b"]))[0]
    assert t.positions(pa.array(["zz", "c", "b"]), hashes).tolist() == [-1, 2, 1]


def test_lookup_falls_back_to_exact_matching_when_vocabulary_hashes_collide(monkeypatch):
    monkeypatch.setattr(vocab, "hash_array", lambda arr: np.zeros(len(arr), dtype=np.uint64))
    t = vocab.VocabTable(pa.array(["a", "b"]), np.array([3, 4]))
    got = t.positions(pa.array(["b", "x", None]), np.zeros(3, dtype=np.uint64))
    assert got.tolist() == [1, -1, -1]


@pytest.mark.parametrize("splits", [1, 3])
def test_write_split_keeps_the_top_max_size(tmp_path, splits):
    t = table(["a", "b", "c"], [5, 3, 1])
    info = vocab.write_split(t, ranking.local_rank(t), first_index=3, max_size=2,
                             directory=str(tmp_path), split=0)
    assert info == {"size": 2, "count": 8}
    back = vocab.read_vocabulary(str(tmp_path), 1)
    assert back.to_pydict() == {"value": ["a", "b"], "count": [5, 3], "index": [3, 4]}


def _three_splits(tmp_path):
    for split in range(3):
        t = table([f"s{split}-{i}" for i in range(1000)], list(range(1000, 0, -1)))
        vocab.write_split(t, ranking.local_rank(t), 3, None, str(tmp_path), split)
    return vocab.load_split(str(tmp_path), 0).nbytes


def test_table_cache_stays_within_its_byte_budget(tmp_path, monkeypatch):
    one = _three_splits(tmp_path)
    monkeypatch.setenv("IRS_VOCAB_CACHE_BYTES", str(int(one * 2.5)))
    monkeypatch.setattr(cache, "STALE_S", -1.0)  # every table unused: least recently used out
    vocab.TABLES.clear()
    first = vocab.load_split(str(tmp_path), 0)
    vocab.load_split(str(tmp_path), 1)
    assert vocab.load_split(str(tmp_path), 0) is first  # cached
    vocab.load_split(str(tmp_path), 2)  # over budget: the least recently used (1) goes
    assert len(vocab.TABLES._tables) == 2
    assert vocab.load_split(str(tmp_path), 0) is first
    monkeypatch.setenv("IRS_VOCAB_CACHE_BYTES", "1")  # a tiny budget still keeps one table
    again = vocab.load_split(str(tmp_path), 1)
    assert len(vocab.TABLES._tables) == 1
    pos = again.positions(pa.array(["s1-0", "nope"]), vocab.hash_array(pa.array(["s1-0", "nope"])))
    assert pos[1] == -1 and again.index[pos[0]] == 3  # the most frequent value: the first id
    vocab.TABLES.clear()


@pytest.mark.parametrize("stale_s, loads", [(-1.0, 12), (60.0, 7)])
def test_table_cache_re_reads_only_the_overflow_of_a_cycle_in_use(tmp_path, monkeypatch,
                                                                    stale_s, loads):
    """A transform visits the same tables in turn on every partition: with room for two of
    three, least-recently-used eviction misses every time (12 reads in 4 rounds); evicting
    the latest used instead re-reads only the overflow. By hand, cache after each round:
    0 1 2 -> {0, 2} (3 reads); 0 hit, 1 read evicts 0, 2 hit -> {1, 2} (1); 0 read evicts
    2, 1 hit, 2 read evicts 1 -> {0, 2} (2); as round 2 (1): 7 reads."""
    one = _three_splits(tmp_path)
    monkeypatch.setenv("IRS_VOCAB_CACHE_BYTES", str(int(one * 2.5)))
    monkeypatch.setattr(cache, "STALE_S", stale_s)
    reads = []
    real = cache.storage.read_table
    monkeypatch.setattr(cache.storage, "read_table", lambda *a: reads.append(a) or real(*a))
    vocab.TABLES.clear()
    for _ in range(4):
        for split in range(3):
            t = vocab.load_split(str(tmp_path), split)
            assert t.index[t.positions(pa.array([f"s{split}-0"]),
                                       vocab.hash_array(pa.array([f"s{split}-0"])))[0]] == 3
    assert len(reads) == loads and vocab.TABLES._bytes <= one * 2.5
    vocab.TABLES.clear()


def test_verification_is_skipped_only_where_the_hash_is_a_bijection():
    same_width = vocab.VocabTable(pa.array(["68fd1e64", "05db9164"]), np.array([3, 4]))
    assert not same_width._may_collide(pa.array(["68fd1e64", None, "aaaaaaaa"]))
    assert same_width._may_collide(pa.array(["68fd1e6", "68fd1e64"]))  # other lengths
    long = vocab.VocabTable(pa.array(["0123456789", "abcdefghij"]), np.array([3, 4]))
    assert long._may_collide(pa.array(["0123456789"]))  # two words: the sum may collide
    mixed = vocab.VocabTable(pa.array(["a", "bb"]), np.array([3, 4]))
    assert mixed._may_collide(pa.array(["a"]))
    ints = vocab.VocabTable(pa.array([5, 7]), np.array([3, 4]))
    assert not ints._may_collide(pa.array([1, 2]))
    got = same_width.positions(pa.array(["05db9164", "zzzzzzzz", None]),
                               vocab.hash_array(pa.array(["05db9164", "zzzzzzzz", None])))
    assert got.tolist() == [1, -1, -1]


def test_split_count_follows_rows_or_partitions():
    from interactive_recsys.backend import get_backend
    from interactive_recsys.ops import Categorify
    from interactive_recsys.tables._context import OpContext, RunFacts

    def ctx(**facts):
        return OpContext(get_backend("cpu"), [("c",)], run=RunFacts(**facts))

    op = Categorify()
    assert op.splits(ctx(num_rows=1_000)) == 1
    assert op.splits(ctx(num_rows=20_000_000)) == 3  # about 8M rows per split
    assert op.splits(ctx(num_rows=None, npartitions=64)) == 4  # 64 x ~500k rows = 32M
    assert Categorify(split_out=5).splits(ctx(num_rows=10)) == 5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), st.sampled_from(["68fd1e64", "05db9164"])),
                unique=True, max_size=40),
       st.lists(st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["68fd1e64"])),
                max_size=40),
       st.randoms())
def test_lookup_equals_a_dict_lookup_in_any_row_order(values, queries, rnd):
    rnd.shuffle(values)  # any file order: hash order or not
    t = vocab.VocabTable(pa.array(values, pa.string()), np.arange(len(values)) + 3)
    q = pa.array(queries, pa.string())
    pos = t.positions(q, vocab.hash_array(q))
    row = {v: i for i, v in enumerate(values)}
    assert pos.tolist() == [row.get(v, -1) if v is not None else -1 for v in queries]


def test_fixed_width_ids_keep_no_values_and_twelve_bytes_a_value():
    ids = [f"{i:08x}" for i in range(0, 50_000 * 7919, 7919)]
    t = vocab.VocabTable(pa.array(ids), np.arange(len(ids), dtype=np.int64) + 3)
    assert t.values is None and t.nbytes <= 16 * len(ids)  # hashes, ids (+ rows if unsorted)
    q = pa.array([ids[5], ids[5][:7], ids[5] + "0", None, "zzzzzzzz"])
    assert t.positions(q, vocab.hash_array(q)).tolist() == [5, -1, -1, -1, -1]
    ints = vocab.VocabTable(pa.array([7, 5, 9]), np.array([3, 4, 5]))
    assert ints.values is None
    assert ints.positions(pa.array([9, 1, 7]), vocab.hash_array(pa.array([9, 1, 7]))).tolist() \
        == [2, -1, 0]


def _fit_graph_tasks(partitions: int, split_out: int, keys: int = 2) -> dict[str, int]:
    """Tasks of Categorify's fit graph over ``partitions`` partials, by kind (the middle
    part of their keys: ``count``, ``pick``, ...)."""
    from dask import delayed

    from interactive_recsys.backend import get_backend
    from interactive_recsys.ops import Categorify
    from interactive_recsys.tables._context import OpContext, RunFacts

    ctx = OpContext(get_backend("cpu"), [(f"c{k}",) for k in range(keys)], "categorify-1",
                    "/nonexistent", RunFacts(num_rows=5, npartitions=partitions))
    partials = [delayed(dict, pure=False)(dask_key_name=f"partial-{i}")
                for i in range(partitions)]
    graph = Categorify(split_out=split_out).fit_graph(partials, ctx).__dask_graph__()
    kinds: dict[str, int] = {}
    for key in graph:
        if str(key).startswith("categorify-1-"):
            kind = str(key).split("-")[2]
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def test_first_level_of_the_count_trees_serves_every_key_and_split():
    """512 partials, 2 keys, 4 splits. The first level sums 8 partials at a time, every key
    and split at once: 64 tasks (at least MIN_FIRST_TASKS = 32 already, so the keys stay
    together). Each key's pick of those (64 each), then per key and split a tree over the
    64 picks: 8 + 1 tasks (72 for 2 x 4). A first level per key and split would make
    2 x 4 x 64 first-level tasks, growing with splits x partitions."""
    tasks = _fit_graph_tasks(512, 4)
    assert tasks["count"] == 64 + 2 * 4 * (8 + 1)
    assert tasks["pick"] >= 2 * 64  # (the ranking picks come on top)
    assert tasks["pick"] < 2 * 512
    # twice the partitions and twice the splits: the count tasks about triple
    assert _fit_graph_tasks(1024, 8)["count"] == 128 + 2 * 8 * (16 + 2 + 1)


def test_few_partitions_sum_each_chunk_of_keys_apart():
    """8 partials and 26 keys (Criteo's columns in 8 files of 1M rows): one task summing
    every key of the 8 would leave the other workers idle, so the first level sums one key
    each: 26 tasks (32 wanted, at most one a key). 64 partials, 26 keys: 8 groups of 8, the
    keys cut into 32 // 8 = 4 chunks: 32 tasks. Each chunk's keys are cut out of every
    partial first (26 x 8 and 4 x 64 cut tasks); with one chunk nothing is cut."""
    few, more = _fit_graph_tasks(8, 1, keys=26), _fit_graph_tasks(64, 1, keys=26)
    assert (few["count"], few["chunk"]) == (26 + 26 * 1, 26 * 8)
    assert (more["count"], more["chunk"]) == (8 * 4 + 26 * 1, 4 * 64)
    assert _fit_graph_tasks(1, 1, keys=26)["count"] == 26  # one partial: no first level
    assert "chunk" not in _fit_graph_tasks(512, 4)  # 64 groups: the keys stay together


def test_vocabulary_of_many_partitions_and_splits_equals_counts_by_hand():
    """More partitions than a tree node takes (21, not a multiple of 8), three hash splits:
    the ids equal the ones computed by hand (descending count, ties by ascending value)."""
    import pandas as pd

    import interactive_recsys as irs
    from interactive_recsys import ops
    from tests.conftest import partitioned
    from tests.helpers import expected_ids

    rng = np.random.default_rng(11)
    pool = [f"{v:08x}" for v in rng.integers(0, 2**32, 700)]
    a = rng.choice(pool, 4200, p=np.linspace(1, 3, len(pool)) / np.linspace(1, 3, 700).sum())
    b = rng.integers(0, 90, 4200)
    values = [None if i % 17 == 0 else str(v) for i, v in enumerate(a)]
    df = pd.DataFrame({"a": values, "b": b})
    out = irs.Workflow(["a", "b"] >> ops.Categorify(split_out=3)).fit_transform(
        partitioned(df, 21)).compute()

    assert out["a"].tolist() == expected_ids(values)
    assert out["b"].tolist() == expected_ids(b.tolist())


@pytest.mark.parametrize("kind", ["int", "uint64", "float", "hex", "long", "string", "mixed"])
@pytest.mark.parametrize("hash_ordered", [True, False])
def test_split_ids_find_each_value_in_its_split(kind, hash_ordered):
    """split_ids gives every value of the vocabulary the id its split holds, and
    ``otherwise`` to values of no split (here: those hashed to split 3, left empty, and
    values never seen), for splits in hash order (as written) or not, for value types whose
    tables keep their values (long strings, mixed widths) and types whose tables do not."""
    rng = np.random.default_rng(3)
    if kind == "mixed":  # 8-byte and 7-byte ids: no common width
        values = pa.array([f"{v:08x}" for v in range(200)] + [f"{v:07x}" for v in range(200)])
    else:
        values = _random_values(kind, rng, 300)
    ids = rng.permutation(len(values)) + 5
    splits = 4
    which = vocab.hash_array(values) % np.uint64(splits)
    tables = []
    for s in range(splits):
        rows = np.flatnonzero(which == s) if s < 3 else np.zeros(0, np.int64)
        if hash_ordered:
            rows = rows[np.argsort(vocab.hash_array(values.take(pa.array(rows, pa.int64()))))]
        tables.append(vocab.VocabTable(values.take(pa.array(rows, pa.int64())), ids[rows]))
    seen = set(values.to_pylist())
    extra = {"int": [2**40 + 1], "uint64": [2**40 + 1], "float": [12345.5]}.get(
        kind, ["", "zzzzzzzzz", "0000000", "0", "abcdefgh"])
    extra = [v for v in extra if v not in seen] + [None]
    queries = pa.concat_arrays([values, pa.array(extra).cast(values.type)])
    expected = np.r_[np.where(which < 3, ids, -1), [-1] * len(extra)]
    found = vocab.split_ids(tables, queries, vocab.hash_array(queries),
                            np.full(len(queries), -1))
    assert found.tolist() == expected.tolist()


def test_categorify_looks_a_partition_up_without_cutting_it_by_split(tmp_path, monkeypatch):
    """With split_out=5 no split's table is asked for its values' positions one by one
    (split_ids merges each split's sorted block in), and the ids equal split_out=1's."""
    import pandas as pd

    import interactive_recsys as irs
    from interactive_recsys import ops

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": [f"{v:08x}" for v in rng.zipf(1.3, 5000) % 3000],
                       "b": rng.integers(0, 700, 5000)})
    calls = []
    positions = vocab.VocabTable.positions
    monkeypatch.setattr(vocab.VocabTable, "positions",
                        lambda self, *a: calls.append(1) or positions(self, *a))
    unseen = pd.DataFrame({"a": ["abcdefg", "0", None], "b": [10**6, 701, None]})
    out = {}
    for split_out in (1, 5):
        wf = irs.Workflow(["a", "b"] >> ops.Categorify(split_out=split_out),
                          artifacts_dir=str(tmp_path / f"s{split_out}"))
        wf.fit(irs.Dataset(df))
        calls.clear()
        out[split_out] = wf.transform(irs.Dataset(pd.concat([df, unseen]))).compute()
        assert len(calls) == (2 if split_out == 1 else 0)  # split 1: one lookup per column
    pd.testing.assert_frame_equal(out[1], out[5])
    assert out[5]["a"].tolist()[-3:] == [2, 2, 1]  # other widths: out of vocabulary; null
    assert out[5]["b"].tolist()[-3:] == [2, 2, 1]
