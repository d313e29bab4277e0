"""``irs.torchrec.managed_collision_collection``: TorchRec's zero-collision hashing from a fitted
workflow, fed raw values through ``hashed_ids``/``hashed_features``.

The expectations are independent of the code under test: Categorify's own ids (what
``wf.transform`` writes), pandas' distinct counts, and sizes computed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import NotFittedError, ParameterError, SchemaError
from tests.conftest import new_workflow, partitioned

torch = pytest.importorskip("torch")
torchrec = pytest.importorskip("torchrec")
from torchrec.modules.mc_embedding_modules import (  # noqa: E402
    ManagedCollisionEmbeddingBagCollection,
)
from torchrec.modules.mc_modules import (  # noqa: E402
    DistanceLFU_EvictionPolicy,
    LFU_EvictionPolicy,
    LRU_EvictionPolicy,
    ManagedCollisionCollection,
    MCHManagedCollisionModule,
)
from torchrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor  # noqa: E402

INT64_MAX = 2**63 - 1
EVICTION_POLICIES = ("distance_lfu", "lfu", "lru")


def _frame(rows: int = 300, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "user": rng.choice([f"u{k}" for k in range(40)], rows),
        "item": rng.integers(100, 160, rows),
        "src": rng.choice([f"p{k}" for k in range(9)], rows),
        "dst": rng.choice([f"p{k}" for k in range(12)], rows),
        "label": rng.integers(0, 2, rows),
    })
    df.loc[[4, 9], "user"] = None
    return df


def _workflow(tmp_path, df: pd.DataFrame, **categorify) -> irs.Workflow:
    wf = new_workflow((["user", "item"] >> ops.Categorify(**categorify))
                      + ([["src", "dst"]] >> ops.Categorify(encode_type="joint"))
                      + ["label"], tmp_path)
    wf.fit(df)
    return wf


def _remapped(kjt: KeyedJaggedTensor) -> dict[str, list[int]]:
    return {k: v.values().tolist() for k, v in kjt.to_dict().items()}


def test_zch_size_is_the_formula_on_the_measured_cardinality(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", "a", "c", None, "d", "e", "a"],
                       "j1": ["x", "y", "x", "x", "y", "z", "x", "y"],
                       "j2": ["y", "w", "w", "x", "y", "y", "x", "y"]})
    wf = new_workflow((["c"] >> ops.Categorify())
                      + ([["j1", "j2"]] >> ops.Categorify(encode_type="joint", num_buckets=3)),
                      tmp_path)
    wf.fit(df)
    # by hand: c has 5 distinct values -> padding + null + 1 OOV + 5 = 8 rows;
    # j1/j2 share {x, y, z, w} -> padding + null + 3 OOV buckets + 4 = 9 rows
    assert wf.output_schema["c"].cardinality == 8 == 3 + df["c"].nunique()
    assert wf.output_schema["j1"].cardinality == 9
    expected = {2.0: {"c": 17, "j1_j2": 19},   # ceil(2 * 8) + 1, ceil(2 * 9) + 1
                1.1: {"c": 10, "j1_j2": 11},   # ceil(8.8) + 1, ceil(9.9) + 1
                1: {"c": 9, "j1_j2": 10},
                1.5: {"c": 13, "j1_j2": 15}}   # ceil(12) + 1, ceil(13.5) + 1
    for headroom, sizes in expected.items():
        mcc = irs.torchrec.managed_collision_collection(wf, headroom=headroom, dims=4)
        got = {c.name: c.num_embeddings for c in mcc.embedding_configs()}
        assert got == sizes, headroom
        for name, module in mcc._managed_collision_modules.items():
            assert module.output_size() == sizes[name]
    assert irs.torchrec.zch_size(8) == 17  # the documented default headroom, 2
    assert irs.torchrec.managed_collision_collection(wf).embedding_configs()[1].feature_names \
        == ["j1", "j2"]


def test_torchrec_builds_one_mch_module_per_vocabulary(tmp_path):
    wf = _workflow(tmp_path, _frame())
    mcc = irs.torchrec.managed_collision_collection(wf, dims={"user": 8}, pooling="MEAN")
    assert isinstance(mcc, ManagedCollisionCollection)
    modules = dict(mcc._managed_collision_modules.items())
    assert list(modules) == ["user", "item", "src_dst"]
    for name, module in modules.items():
        assert isinstance(module, MCHManagedCollisionModule) and module._name == name
        assert module.input_size() == irs.torchrec.HASH_SPACE == INT64_MAX
        assert isinstance(module._eviction_policy, DistanceLFU_EvictionPolicy)
        assert module._eviction_interval == 1
    configs = {c.name: c for c in mcc.embedding_configs()}
    assert isinstance(configs["user"], torchrec.EmbeddingBagConfig)
    assert configs["user"].pooling == torchrec.PoolingType.MEAN
    assert configs["user"].embedding_dim == 8
    # the other dims follow NVTabular's rule on the *fixed* cardinality, as embedding_configs
    fixed = {c.name: c for c in irs.torchrec.embedding_configs(wf)}
    assert configs["item"].embedding_dim == fixed["item"].embedding_dim
    report = irs.stats.EmbeddingReport(wf)
    report.set_dim("item", 6)
    with_report = irs.torchrec.managed_collision_collection(wf, dims=report)
    assert [c.embedding_dim for c in with_report.embedding_configs()] == [
        c.embedding_dim for c in irs.torchrec.embedding_configs(wf, dims=report)]
    assert with_report.embedding_configs()[1].embedding_dim == 6
    sequence = irs.torchrec.managed_collision_collection(wf, pooling=None, dims=4)
    assert all(type(c) is torchrec.EmbeddingConfig for c in sequence.embedding_configs())
    one = irs.torchrec.managed_collision_collection(wf, ["dst", "user"], dims=4)
    assert [(c.name, c.feature_names) for c in one.embedding_configs()] == [
        ("user", ["user"]), ("src_dst", ["dst"])]


def test_fitted_values_keep_their_categorify_ids(tmp_path):
    """keep_ids=True (the default): a batch of raw values, hashed, maps to exactly the ids
    ``wf.transform`` writes, in [0, zch_size) per table; an unseen value maps to the last
    row in eval mode."""
    df = _frame()
    wf = _workflow(tmp_path, df)
    mcc = irs.torchrec.managed_collision_collection(wf, dims=4).eval()
    sizes = {f: c.num_embeddings for c in mcc.embedding_configs() for f in c.feature_names}
    batch = df.head(64)
    kjt = irs.torchrec.hashed_features(wf, batch)
    assert kjt.keys() == ["user", "item", "src", "dst"]
    assert kjt.lengths().tolist() == [1] * 64 * 4
    got = _remapped(mcc(kjt))
    ids = wf.transform(batch)
    for key in kjt.keys():
        assert got[key] == ids[key].tolist(), key
        assert all(0 <= i < sizes[key] for i in got[key])
    assert got["user"][4] == 1  # the null row
    unseen = pd.DataFrame({"user": ["nobody", "u1"], "item": [999, 100],
                           "src": ["p0", "new"], "dst": ["new", "p3"], "label": [0, 1]})
    got = _remapped(mcc(irs.torchrec.hashed_features(wf, unseen)))
    known = wf.transform(unseen)
    assert got["user"] == [sizes["user"] - 1, known["user"][1]]
    assert got["item"] == [sizes["item"] - 1, known["item"][1]]
    assert got["src"] == [known["src"][0], sizes["src"] - 1]
    assert got["dst"] == [sizes["dst"] - 1, known["dst"][1]]


def test_new_values_take_free_rows_and_keep_them_after_training_updates(tmp_path):
    df = _frame()
    wf = _workflow(tmp_path, df)
    mcc = irs.torchrec.managed_collision_collection(wf, dims=4).train()
    zch = {c.name: c.num_embeddings for c in mcc.embedding_configs()}
    fixed = {c.name: c.num_embeddings for c in irs.torchrec.embedding_configs(wf)}
    new_users = [f"new{k}" for k in range(12)]
    batch = pd.DataFrame({"user": new_users + new_users[:5] + ["u1", "u2"],
                          "item": [100 + k % 3 for k in range(19)],
                          "src": ["p1"] * 19, "dst": ["p2"] * 19, "label": [0] * 19})
    first = _remapped(mcc(irs.torchrec.hashed_features(wf, batch)))
    users = first["user"]
    new_rows = dict(zip(batch["user"], users, strict=True))
    # one row per new value (the repeated ones included), none of them a fitted value's,
    # none the miss row, all inside the table
    assert [new_rows[u] for u in batch["user"]] == users
    assert len({new_rows[u] for u in new_users}) == len(new_users)
    fitted_rows = set(range(3, fixed["user"]))
    assert not {new_rows[u] for u in new_users} & fitted_rows
    assert all(0 <= new_rows[u] < zch["user"] - 1 for u in new_users)
    assert users[-2:] == wf.transform(batch.tail(2))["user"].tolist()  # fitted ids stay
    # the next training batches (another update each) and eval mode give the same rows
    again = _remapped(mcc(irs.torchrec.hashed_features(wf, batch.iloc[::-1])))
    assert again["user"] == users[::-1]
    assert _remapped(mcc.eval()(irs.torchrec.hashed_features(wf, batch)))["user"] == users


def test_profile_then_remap_as_torchrecs_own_tests(tmp_path):
    """One module, driven as TorchRec's tests drive it: ``profile`` in training mode updates
    the table, ``remap`` then maps each repeated id to one slot."""
    wf = _workflow(tmp_path, _frame())
    mcc = irs.torchrec.managed_collision_collection(wf, ["item"], keep_ids=False,
                                                    headroom=1, dims=4)
    module = mcc._managed_collision_modules["item"].train()
    size = module.output_size()
    assert module._mch_sorted_raw_ids.tolist() == [INT64_MAX] * size  # starts empty
    raw = irs.torchrec.hashed_ids(pd.Series([500, 501, 500, 502, 500, 501]))
    features = {"item": JaggedTensor(values=torch.from_numpy(raw),
                                     lengths=torch.ones(6, dtype=torch.int64))}
    module.eval()
    assert module.remap(features)["item"].values().tolist() == [size - 1] * 6
    module.train()
    module.profile(features)
    slots = module.remap(features)["item"].values().tolist()
    assert slots[0] == slots[2] == slots[4] and slots[1] == slots[5]
    assert len({slots[0], slots[1], slots[3]}) == 3
    assert all(0 <= s < size - 1 for s in slots)
    assert sorted(module._mch_sorted_raw_ids.tolist()[:3]) == sorted(set(raw.tolist()))
    assert module._mch_counts.tolist()[:3] == [
        {int(r): c for r, c in zip(*np.unique(raw, return_counts=True), strict=True)}[r]
        for r in module._mch_sorted_raw_ids.tolist()[:3]]


def test_each_eviction_policy_keeps_the_fitted_ids(tmp_path):
    df = _frame()
    wf = _workflow(tmp_path, df)
    batch = df.head(40)
    ids = wf.transform(batch)
    for name, cls in [("lfu", LFU_EvictionPolicy), ("lru", LRU_EvictionPolicy),
                      ("distance_lfu", DistanceLFU_EvictionPolicy)]:
        mcc = irs.torchrec.managed_collision_collection(wf, eviction_policy=name,
                                                        eviction_interval=3, dims=4)
        module = mcc._managed_collision_modules["user"]
        assert isinstance(module._eviction_policy, cls)
        assert module._eviction_interval == 3
        got = _remapped(mcc.train()(irs.torchrec.hashed_features(wf, batch)))
        assert got["user"] == ids["user"].tolist(), name
    # as many new values as the table has free rows: each takes one, no fitted value leaves
    zch = 2 * (3 + df["user"].nunique()) + 1
    free = zch - 1 - (df["user"].nunique() + 1)  # the miss row, the values and null are taken
    newcomers = pd.DataFrame({"user": [f"new{k}" for k in range(free)], "item": 100,
                              "src": "p1", "dst": "p1", "label": 0})
    for name in EVICTION_POLICIES:
        mcc = irs.torchrec.managed_collision_collection(wf, eviction_policy=name, dims=4)
        rows = _remapped(mcc.train()(irs.torchrec.hashed_features(wf, newcomers)))["user"]
        assert len(set(rows)) == free and max(rows) < zch - 1, name
        assert {0, 2} <= set(rows)  # the padding and out-of-vocabulary rows were free
        got = _remapped(mcc.eval()(irs.torchrec.hashed_features(wf, batch)))
        assert got["user"] == ids["user"].tolist(), name
    # between two updates a new id goes to the miss row; the update gives it a row
    mcc = irs.torchrec.managed_collision_collection(wf, eviction_interval=3, dims=4).train()
    one = irs.torchrec.hashed_features(wf, newcomers.head(1))
    assert [_remapped(mcc(one))["user"] for _ in range(3)][:2] == [[zch - 1]] * 2
    assert _remapped(mcc(one))["user"][0] < zch - 1
    mine = LRU_EvictionPolicy(decay_exponent=2.0)
    mcc = irs.torchrec.managed_collision_collection(wf, eviction_policy=mine, dims=4)
    assert mcc._managed_collision_modules["item"]._eviction_policy is mine
    # the fitted counts are the LFU history: a fitted value's count is pandas' count
    lfu = irs.torchrec.managed_collision_collection(wf, eviction_policy="lfu", dims=4)
    module = lfu._managed_collision_modules["user"]
    raw = irs.torchrec.hashed_ids(pd.Series(["u7"]))[0]
    position = module._mch_sorted_raw_ids.tolist().index(int(raw))
    assert module._mch_counts[position].item() == int((df["user"] == "u7").sum())


def test_an_mc_embedding_bag_collection_runs_and_a_trained_table_carries_over(tmp_path):
    df = _frame()
    wf = _workflow(tmp_path, df)
    fixed = torchrec.EmbeddingBagCollection(tables=irs.torchrec.embedding_configs(wf, dims=4))
    mcc = irs.torchrec.managed_collision_collection(wf, dims=4)
    model = ManagedCollisionEmbeddingBagCollection(
        torchrec.EmbeddingBagCollection(tables=mcc.embedding_configs()), mcc,
        return_remapped_features=True)
    with torch.no_grad():  # the fixed table's rows, then new ones
        for config in mcc.embedding_configs():
            trained = fixed.embedding_bags[config.name].weight
            model._embedding_module.embedding_bags[config.name].weight.copy_(
                irs.torchrec.grow_weights(trained, config.num_embeddings))
    batch = df.head(32)
    pooled, remapped = model.eval()(irs.torchrec.hashed_features(wf, batch))
    assert pooled.keys() == ["user", "item", "src", "dst"]
    assert tuple(pooled.values().shape) == (32, 16)
    ids = wf.transform(batch)
    expected = fixed(KeyedJaggedTensor.from_lengths_sync(  # the fixed model on Categorify's ids
        keys=pooled.keys(), lengths=torch.ones(4 * 32, dtype=torch.int64),
        values=torch.tensor(np.concatenate([ids[k].to_numpy() for k in pooled.keys()]))))
    torch.testing.assert_close(pooled.values(), expected.values())
    assert _remapped(remapped)["item"] == ids["item"].tolist()
    pooled, _ = model.train()(irs.torchrec.hashed_features(wf, batch))  # training mode too
    pooled.values().sum().backward()


def test_multi_hot_columns_and_float_read_int_columns(tmp_path):
    lists = pd.Series([["a", "b"], ["a"], None, ["c", "a", "b"], []], dtype=object)
    df = pd.DataFrame({"tags": lists, "n": [5, 6, 5, 7, 8]})
    wf = new_workflow(["tags", "n"] >> ops.Categorify(), tmp_path)
    ids = wf.fit_transform(df)
    mcc = irs.torchrec.managed_collision_collection(wf, dims=4).eval()
    # pandas makes an int column with a null float: it is cast back and hashes as at the fit
    raw = pd.DataFrame({"tags": lists, "n": pd.Series([5.0, np.nan, 7.0, 8.0, 6.0])})
    kjt = irs.torchrec.hashed_features(wf, raw)
    assert kjt.lengths().tolist() == [2, 1, 0, 3, 0] + [1] * 5
    got = _remapped(mcc(kjt))
    assert got["tags"] == [i for row in ids["tags"] if row is not None for i in row]
    n_ids = dict(zip(df["n"], ids["n"], strict=True))
    assert got["n"] == [n_ids[5], 1, n_ids[7], n_ids[8], n_ids[6]]
    with pytest.raises(SchemaError, match="'n' holds string values, but the workflow was "
                                          "fitted on int64"):
        irs.torchrec.hashed_features(wf, raw.assign(n=["5", "6", "5", "7", "8"]))


def test_hashed_ids_are_defined_on_values():
    ints = irs.torchrec.hashed_ids(np.array([3, 4, 3], dtype=np.int32))
    assert ints.dtype == np.int64 and ints[0] == ints[2] != ints[1]
    assert ints.tolist() == irs.torchrec.hashed_ids([3, 4, 3]).tolist()  # any int width
    assert irs.torchrec.hashed_ids(["3"])[0] != ints[0]     # "3" is not 3,
    assert irs.torchrec.hashed_ids([3.0])[0] != ints[0]     # nor is 3.0, as for Categorify
    nulls = irs.torchrec.hashed_ids(pd.Series(["a", None, None]))
    assert nulls[1] == nulls[2] != nulls[0]
    big = irs.torchrec.hashed_ids(pd.Series([f"v{k}" for k in range(20_000)]))
    assert big.min() >= 0 and big.max() < irs.torchrec.HASH_SPACE
    assert len(np.unique(big)) == 20_000


def test_fitted_on_the_cluster_keeps_the_same_ids(tmp_path, client):
    df = _frame(rows=400, seed=8)
    wf = new_workflow(["user", "item"] >> ops.Categorify(freq_threshold=8), tmp_path)
    ids = wf.fit_transform(partitioned(df, 4)).compute()
    mcc = irs.torchrec.managed_collision_collection(wf, dims=4).eval()
    got = _remapped(mcc(irs.torchrec.hashed_features(wf, df)))
    sizes = {c.name: c.num_embeddings for c in mcc.embedding_configs()}
    for key in ("user", "item"):
        oov = ids[key].to_numpy() == 2   # below the threshold: not in the vocabulary,
        expected = np.where(oov, sizes[key] - 1, ids[key].to_numpy())  # so the miss row
        assert got[key] == expected.tolist()
        assert oov.any()


def test_bad_input_is_named(tmp_path):
    df = _frame()
    with pytest.raises(NotFittedError, match="needs a fitted workflow"):
        irs.torchrec.managed_collision_collection(irs.Workflow(["user"] >> ops.Categorify()))
    wf = new_workflow((["user"] >> ops.Categorify())
                      + (["item"] >> ops.HashBucket(num_buckets=10))
                      + ([["src", "dst"]] >> ops.Categorify(encode_type="combo")), tmp_path)
    wf.fit(df)
    with pytest.raises(SchemaError, match="'item' is not encoded by Categorify"):
        irs.torchrec.managed_collision_collection(wf, ["item"])
    with pytest.raises(SchemaError, match="'nope' is not an output"):
        irs.torchrec.managed_collision_collection(wf, ["nope"])
    with pytest.raises(SchemaError, match="'src_dst' is Categorify\\(encode_type='combo'\\)"):
        irs.torchrec.managed_collision_collection(wf)
    assert len(irs.torchrec.managed_collision_collection(wf, ["user"]).embedding_configs()) == 1
    with pytest.raises(ParameterError, match="'headroom' parameter .* must be >= 1 with "
                                             "keep_ids=True"):
        irs.torchrec.managed_collision_collection(wf, ["user"], headroom=0.5)
    small = irs.torchrec.managed_collision_collection(wf, ["user"], headroom=0.5, keep_ids=False)
    assert wf.output_schema["user"].cardinality == 43 == 3 + df["user"].nunique()
    assert small.embedding_configs()[0].num_embeddings == 23  # ceil(0.5 * 43) + 1
    for bad in (0, -1.0, float("nan"), "2"):
        with pytest.raises(ParameterError, match="'headroom' parameter"):
            irs.torchrec.managed_collision_collection(wf, ["user"], headroom=bad)
    with pytest.raises(ParameterError, match="'eviction_policy' parameter .* Got 'LFU'"):
        irs.torchrec.managed_collision_collection(wf, ["user"], eviction_policy="LFU")
    with pytest.raises(ParameterError, match="'eviction_interval' parameter"):
        irs.torchrec.managed_collision_collection(wf, ["user"], eviction_interval=0)
    with pytest.raises(ParameterError, match="'pooling' parameter"):
        irs.torchrec.managed_collision_collection(wf, ["user"], pooling="max")
    plain = new_workflow(["label"] >> ops.HashBucket(num_buckets=4), tmp_path)
    plain.fit(df)
    with pytest.raises(SchemaError, match="no Categorify column"):
        irs.torchrec.managed_collision_collection(plain)
