"""irs.Loader: every row once per epoch, jagged layout, shuffling, sharding, shutdown, errors.

The data is written by the project's own writer (``Dataset.to_parquet``) in tmp_path, with
a ``row_id`` column passed through as an extra so that every produced row can be traced
back to the frame it came from.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError, ParameterError, SchemaError
from interactive_recsys.loader._pipeline import THREAD_PREFIX
from tests.helpers import HANG_S

TAGS = {"C1": ["categorical"], "C2": ["categorical"], "T": ["categorical", "list"],
        "I1": ["continuous"], "I2": ["continuous"], "label": ["target"]}


def make_frame(rows: int, seed: int = 0) -> pd.DataFrame:
    """Single-hot ids C1/C2, a multi-hot list T (empty and null rows included), two
    continuous columns, a 0/1 label and a unique row id."""
    rng = np.random.default_rng(seed)
    lists = []
    for i in range(rows):
        n = int(rng.integers(0, 4))
        lists.append(None if i % 11 == 5 else rng.integers(2, 50, n).tolist())
    return pd.DataFrame({
        "row_id": pd.Series(np.arange(rows) * 3 + 7, dtype="int64"),
        "C1": pd.Series(rng.integers(2, 100, rows), dtype="int64"),
        "C2": pd.Series(rng.integers(2, 10, rows), dtype="int32"),
        "T": pd.Series(lists, dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        "I1": pd.Series(rng.normal(size=rows), dtype="float64"),
        "I2": pd.Series(rng.integers(0, 5, rows), dtype="int64"),
        "label": pd.Series(rng.integers(0, 2, rows), dtype="int64"),
    })


def write(df: pd.DataFrame, path: os.PathLike, parts: int, row_group_size: int = 64) -> str:
    ds = irs.Dataset(dd.from_pandas(df, npartitions=parts, sort=False), tags=TAGS)
    assert ds.npartitions == parts
    ds.to_parquet(path, row_group_size=row_group_size)
    return str(path)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return make_frame(203)


@pytest.fixture(scope="module")
def data(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> str:
    return write(frame, tmp_path_factory.mktemp("loader") / "out", parts=3, row_group_size=29)


def loader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


def ids_of(loader: irs.Loader) -> list[np.ndarray]:
    return [np.asarray(b.extras["row_id"]) for b in loader]


# ---- every row exactly once --------------------------------------------------------------------
@pytest.mark.parametrize("parts,row_group_size", [(1, 1000), (3, 29), (5, 7)])
@pytest.mark.parametrize("batch_size", [1, 16, 50, 500])
@pytest.mark.parametrize("drop_last", [False, True])
def test_every_row_once_per_epoch(frame, tmp_path, parts, row_group_size, batch_size, drop_last):
    path = write(frame, tmp_path / "out", parts, row_group_size)
    n = len(frame)
    loader = irs.Loader(path, batch_size, seed=3, drop_last=drop_last, epochs=2,
                        extra_cols=["row_id"], output="numpy", shuffle_window=40)
    batches = ids_of(loader)
    per_epoch = n // batch_size if drop_last else -(-n // batch_size)
    assert len(batches) == len(loader) == 2 * per_epoch
    for epoch in (batches[:per_epoch], batches[per_epoch:]):
        assert all(len(b) == batch_size for b in epoch[:-1])
        got = np.concatenate(epoch) if epoch else np.zeros(0, np.int64)
        assert len(np.unique(got)) == len(got)  # no duplicates
        if drop_last:
            assert len(got) == (n // batch_size) * batch_size
            assert set(got) <= set(frame["row_id"])
        else:
            assert sorted(got) == sorted(frame["row_id"])  # nothing lost


@pytest.mark.parametrize("world_size", [2, 3, 4])
@pytest.mark.parametrize("batch_size,drop_last", [(8, False), (8, True), (64, False)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_ranks_get_disjoint_equal_shards(data, frame, world_size, batch_size, drop_last,
                                         shuffle):
    n = len(frame)
    shards = []
    for rank in range(world_size):
        loader = irs.Loader(data, batch_size, shuffle=shuffle, seed=5, drop_last=drop_last,
                            rank=rank, world_size=world_size, extra_cols=["row_id"],
                            output="numpy", shuffle_window=30)
        batches = ids_of(loader)
        assert len(batches) == len(loader)
        shards.append(np.concatenate(batches))
    per_rank = n // world_size
    expected = (per_rank // batch_size) * batch_size if drop_last else per_rank
    assert [len(s) for s in shards] == [expected] * world_size  # equal: same number of steps
    every = np.concatenate(shards)
    assert len(np.unique(every)) == len(every)  # disjoint
    assert set(every) <= set(frame["row_id"])
    if not drop_last:  # only the remainder (< world_size rows) is left out
        assert len(every) == n - n % world_size


def test_shards_rotate_the_left_out_rows_over_epochs(data, frame):
    """With 203 rows and 2 ranks one row is left out per epoch, not always the same one."""
    left_out = set()
    for epoch in range(6):
        got = set()
        for rank in range(2):
            loader = irs.Loader(data, 32, seed=1, rank=rank, world_size=2,
                                extra_cols=["row_id"], output="numpy")
            loader.set_epoch(epoch)
            got |= set(np.concatenate(ids_of(loader)).tolist())
        missing = set(frame["row_id"]) - got
        assert len(missing) == 1
        left_out |= missing
    assert len(left_out) > 1


# ---- jagged layout ---------------------------------------------------------------------------
def expected_jagged(frame: pd.DataFrame, ids: np.ndarray, keys: list[str]):
    """values, lengths, length_per_key of the rows ``ids``, rebuilt from the frame."""
    rows = frame.set_index("row_id").loc[ids]
    values, lengths, per_key = [], [], []
    for key in keys:
        if key == "T":
            lists = [[] if v is None or v is pd.NA else list(v) for v in rows["T"].tolist()]
        else:
            lists = [[int(v)] for v in rows[key]]
        lengths += [len(v) for v in lists]
        flat = [x for v in lists for x in v]
        values += flat
        per_key.append(len(flat))
    return values, lengths, per_key


@pytest.mark.parametrize("shuffle", [False, True])
def test_jagged_batches_match_the_frame(data, frame, shuffle):
    loader = irs.Loader(data, 24, shuffle=shuffle, seed=2, extra_cols=["row_id"],
                        output="numpy")
    assert loader.columns.cat == ("C1", "C2", "T")
    assert loader.columns.multi_hot == (False, False, True)
    seen = 0
    by_id = frame.set_index("row_id")
    for batch in loader:
        ids = batch.extras["row_id"]
        sparse = batch.sparse
        values, lengths, per_key = expected_jagged(frame, ids, sparse.keys)
        assert sparse.keys == ["C1", "C2", "T"]
        assert sparse.batch_size == len(ids)
        assert sparse.values.dtype == np.int64 and sparse.values.tolist() == values
        assert sparse.lengths.dtype == sparse.offsets.dtype == np.int32
        assert sparse.lengths.tolist() == lengths
        assert sparse.offsets.tolist() == [0, *np.cumsum(lengths).tolist()]
        assert sparse.length_per_key == per_key
        assert sparse.offset_per_key == [0, *np.cumsum(per_key).tolist()]
        t_values, t_offsets = sparse.feature("T")
        assert t_values.tolist() == values[per_key[0] + per_key[1]:]
        assert np.diff(t_offsets).tolist() == lengths[2 * len(ids):]
        assert batch.dense.dtype == np.float32 and batch.dense.shape == (len(ids), 2)
        expected_dense = by_id.loc[ids, ["I1", "I2"]].to_numpy(np.float32)
        np.testing.assert_array_equal(batch.dense, expected_dense)
        assert batch.labels.dtype == np.float32
        np.testing.assert_array_equal(batch.labels, by_id.loc[ids, "label"].to_numpy())
        assert batch.dense_names == ["I1", "I2"] and batch.label_names == ["label"]
        seen += len(ids)
    assert seen == len(frame)
    if not shuffle:  # no shuffling: the order of the files
        first = next(iter(irs.Loader(data, 5, shuffle=False, extra_cols=["row_id"],
                                     output="numpy")))
        assert first.extras["row_id"].tolist() == frame["row_id"][:5].tolist()


def test_roles_given_explicitly_and_labels_kept_as_ints(data, frame):
    loader = irs.Loader(data, 10, shuffle=False, cat_cols=["T"], cont_cols=["I2"],
                        label_cols=["label", "C2"], label_dtype=None, output="numpy")
    batch = next(iter(loader))
    assert batch.sparse.keys == ["T"] and batch.dense_names == ["I2"]
    assert batch.labels.shape == (10, 2) and batch.labels.dtype == np.int64
    np.testing.assert_array_equal(batch.labels, frame[["label", "C2"]][:10].to_numpy())


def test_no_labels_and_no_continuous(data):
    batch = next(iter(irs.Loader(data, 4, cat_cols=["C1"], cont_cols=[], label_cols=[],
                                 output="numpy")))
    assert batch.labels is None and batch.dense.shape == (4, 0)
    assert batch.sparse.lengths.tolist() == [1, 1, 1, 1]


# ---- shuffling -------------------------------------------------------------------------------
def order(loader: irs.Loader) -> list[int]:
    return np.concatenate(ids_of(loader)).tolist()


def test_shuffle_is_deterministic_per_seed_and_differs_across_epochs(data, frame):
    def make(seed):
        return irs.Loader(data, 16, seed=seed, extra_cols=["row_id"], output="numpy",
                          shuffle_window=64)

    a, b = make(7), make(7)
    first_a, first_b = order(a), order(b)
    assert first_a == first_b  # same seed, same epoch: same order
    assert first_a != frame["row_id"].tolist()  # shuffled
    second_a = order(a)  # the next iteration is the next epoch
    assert second_a != first_a and sorted(second_a) == sorted(first_a)
    assert order(b) == second_a
    assert order(make(8)) != first_a  # another seed
    c = make(7)
    c.set_epoch(1)
    assert order(c) == second_a  # set_epoch resumes at an epoch
    # rows move between windows too: the first window is not the first rows of the files
    assert set(first_a[:64]) != set(frame["row_id"][:64])


def test_epochs_in_one_iteration_use_successive_shuffles(data):
    two = irs.Loader(data, 203, seed=4, epochs=2, extra_cols=["row_id"], output="numpy")
    e0, e1 = (b.tolist() for b in ids_of(two))
    one = irs.Loader(data, 203, seed=4, extra_cols=["row_id"], output="numpy")
    assert order(one) == e0 and order(one) == e1 and e0 != e1


def test_endless_epochs(data, frame):
    loader = irs.Loader(data, 100, epochs=None, extra_cols=["row_id"], output="numpy")
    with pytest.raises(TypeError, match="forever"):
        len(loader)
    it = iter(loader)
    got = [next(it) for _ in range(7)]  # 3 batches per epoch: into the third epoch
    it.close()
    assert [len(b) for b in got] == [100, 100, 3, 100, 100, 3, 100]
    assert loader_threads() == []


# ---- sources ---------------------------------------------------------------------------------
def test_workflow_output_dataset_and_its_parquet(tmp_path):
    df = make_frame(150, seed=1).drop(columns=["T"])
    df["C1"] = df["C1"].astype(str)  # raw strings, encoded by the workflow
    ds = irs.Dataset(dd.from_pandas(df, npartitions=3, sort=False), tags={"label": ["target"]})
    graph = ((["C1", "C2"] >> ops.Categorify()) + (["I1", "I2"] >> ops.Normalize())
             + ["label", "row_id"])
    wf = irs.Workflow(graph, artifacts_dir=str(tmp_path / "art"))
    wf.fit(ds)
    out = wf.transform(ds)
    written = out.to_parquet(tmp_path / "processed")
    expected = wf.transform(df).set_index("row_id")
    for source in (out, written, str(tmp_path / "processed")):
        for world_size in (1, 2):
            got = []
            for rank in range(world_size):
                loader = irs.Loader(source, 32, rank=rank, world_size=world_size,
                                    extra_cols=["row_id"], output="numpy")
                assert loader.columns.cat == ("C1", "C2")
                assert loader.columns.cont == ("I1", "I2")
                assert loader.columns.label == ("label",)
                for batch in loader:
                    ids = batch.extras["row_id"]
                    assert batch.sparse.values.tolist() == (
                        expected.loc[ids, "C1"].tolist() + expected.loc[ids, "C2"].tolist())
                    np.testing.assert_allclose(batch.dense, expected.loc[ids, ["I1", "I2"]]
                                               .to_numpy(np.float32), rtol=1e-6)
                    got.extend(ids.tolist())
            assert len(got) == len(set(got)) == 150 - 150 % world_size


def test_plain_parquet_files_without_schema_file(tmp_path, frame):
    path = tmp_path / "plain.parquet"
    frame.to_parquet(path, row_group_size=50)
    with pytest.raises(SchemaError, match="cat_cols"):
        irs.Loader(str(path), 8)  # no tags: roles must be given
    loader = irs.Loader([str(path)], 64, cat_cols=["C1", "T"], cont_cols=["I1"],
                        label_cols=["label"], extra_cols=["row_id"], output="numpy")
    assert loader.source.unit_rows == [50, 50, 50, 50, 3]
    assert sorted(order(loader)) == sorted(frame["row_id"])


# ---- threads and errors ----------------------------------------------------------------------
def test_abandoned_iterator_stops_its_threads(data):
    assert loader_threads() == []
    loader = irs.Loader(data, 4, output="numpy", prefetch=1)
    for _ in loader:
        assert loader_threads()  # reading ahead in the background
        break
    gc.collect()
    assert loader_threads() == []

    it = iter(loader)
    next(it)
    del it  # dropped without close(): garbage collection stops the threads
    gc.collect()
    assert loader_threads() == []

    with pytest.raises(ZeroDivisionError):
        for _ in loader:
            1 / 0  # noqa: B018 - an error in the training loop
    gc.collect()
    assert loader_threads() == []

    it1, it2 = iter(loader), iter(loader)
    loader.close()
    assert loader_threads() == []
    assert list(it1) == [] and list(it2) == []


def test_corrupt_file_raises_in_the_consumer_with_the_file_named(frame, tmp_path):
    path = write(frame, tmp_path / "out", parts=2, row_group_size=40)
    damaged = os.path.join(path, "part.00001.parquet")
    size = os.path.getsize(damaged)
    with open(damaged, "r+b") as f:  # keep the footer: the damage shows only when read
        f.seek(4)
        f.write(os.urandom(size // 2))
    loader = irs.Loader(path, 16, shuffle=False, output="numpy")
    produced = 0
    with pytest.raises(DatasetError, match="part.00001.parquet") as info:
        for batch in loader:
            produced += len(batch)
    assert 0 < produced < len(frame)  # the first file's rows came through first
    assert "row group" in str(info.value)
    gc.collect()
    assert loader_threads() == []


def test_damaged_footer_is_reported_when_opening(frame, tmp_path):
    path = write(frame, tmp_path / "out", parts=2)
    damaged = os.path.join(path, "part.00000.parquet")
    with open(damaged, "r+b") as f:
        f.truncate(os.path.getsize(damaged) - 20)
    with pytest.raises(DatasetError, match="part.00000.parquet"):
        irs.Loader(path, 16)


def test_nulls_in_a_categorical_column_are_named(tmp_path):
    df = pd.DataFrame({"c": pd.array([1, None, 3], dtype="Int64"), "x": [1.0, 2.0, 3.0]})
    irs.Dataset(df).to_parquet(tmp_path / "out")
    loader = irs.Loader(str(tmp_path / "out"), 2, cat_cols=["c"], output="numpy")
    with pytest.raises(DatasetError, match=r"'c' has 1 null.*part.00000.parquet.*Categorify"):
        list(loader)


@pytest.mark.parametrize("kwargs,error,match", [
    ({"batch_size": 0}, ParameterError, "'batch_size' parameter must be an integer >= 1. Got 0"),
    ({"batch_size": -5}, ParameterError, "batch_size"),
    ({"batch_size": 2.5}, ParameterError, "batch_size"),
    ({"batch_size": 8, "rank": 2, "world_size": 2}, ParameterError, r"'rank'.*\[0, 1\]. Got 2"),
    ({"batch_size": 8, "world_size": 0}, ParameterError, "world_size"),
    ({"batch_size": 8, "epochs": 0}, ParameterError, "epochs"),
    ({"batch_size": 8, "cat_cols": ["nope"]}, SchemaError, "'nope' of cat_cols is not in the"),
    ({"batch_size": 8, "cont_cols": ["I1", "missing"]}, SchemaError, "'missing'"),
    ({"batch_size": 8, "label_cols": "zzz"}, SchemaError, "'zzz' of label_cols"),
    ({"batch_size": 8, "cont_cols": ["T"]}, SchemaError, "'T' of cont_cols has dtype 'list<int64>'"),
    ({"batch_size": 8, "cat_cols": ["I1"]}, SchemaError, "'I1' has dtype 'float64'.*Categorify"),
    ({"batch_size": 8, "cat_cols": ["C1"], "cont_cols": ["C1"]}, ParameterError, "both"),
    ({"batch_size": 8, "cat_cols": ["C1", "C1"]}, ParameterError, "more than once"),
    ({"batch_size": 8, "output": "jax"}, ParameterError, "'output'"),
    ({"batch_size": 8, "output": "numpy", "device": "cuda"}, ParameterError, "device"),
    ({"batch_size": 8, "label_dtype": "notatype"}, ParameterError, "label_dtype"),
])
def test_bad_input_gives_clear_errors(data, kwargs, error, match):
    with pytest.raises(error, match=match):
        irs.Loader(data, **kwargs)


def test_bad_sources(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        irs.Loader(str(tmp_path / "nothing"), 8)
    with pytest.raises(DatasetError, match="cannot read a int"):
        irs.Loader(42, 8)
    (tmp_path / "a.csv").write_text("x\n1\n")
    with pytest.raises(DatasetError, match="parquet files only"):
        irs.Loader(str(tmp_path / "a.csv"), 8)


@pytest.mark.parametrize("workflow,kind", [
    (pd.DataFrame({"C1": [1]}), "DataFrame"), ("dataset", "Dataset"), (3, "int"),
    ({"path": "wf"}, "dict"),
])
def test_a_workflow_that_is_no_workflow_nor_path_is_a_type_error(data, workflow, kind):
    if isinstance(workflow, str):
        workflow = irs.Dataset(data)
    with pytest.raises(TypeError, match=f"'workflow' parameter of Loader must be a fitted "
                       f"irs.Workflow or the path of a folder it was saved to .* Got a value "
                       f"of type '{kind}' instead"):
        irs.Loader(data, 8, workflow=workflow)


def test_numpy_batches_without_torch(data):
    """With PyTorch not importable, output='auto' gives NumPy arrays."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import numpy as np, interactive_recsys as irs\n"
            f"loader = irs.Loader({data!r}, 16)\n"
            "b = next(iter(loader))\n"
            "assert loader.output == 'numpy' and isinstance(b.dense, np.ndarray)\n"
            "assert isinstance(b.sparse.values, np.ndarray)\n"
            "print('ok', len(loader))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "13"]


def test_some_files_of_a_written_directory_keep_its_tags(tmp_path, frame):
    path = write(frame, tmp_path / "out", parts=3)
    files = sorted(str(p) for p in (tmp_path / "out").glob("part.*.parquet"))
    train = irs.Loader(files[:2], 16, extra_cols=["row_id"], output="numpy")
    valid = irs.Loader(files[2:], 16, extra_cols=["row_id"], output="numpy")
    assert train.columns == valid.columns == irs.Loader(path, 16, extra_cols=["row_id"]).columns
    got = order(train) + order(valid)
    assert sorted(got) == sorted(frame["row_id"]) and len(order(valid)) < len(frame) / 2


def test_readers_0_runs_inline_with_the_same_batches(data):
    threaded = irs.Loader(data, 16, seed=6, extra_cols=["row_id"], output="numpy")
    inline = irs.Loader(data, 16, seed=6, extra_cols=["row_id"], output="numpy", readers=0)
    before = threading.active_count()
    it = iter(inline)
    first = next(it)
    assert threading.active_count() == before and loader_threads() == []
    rest = list(it)
    assert order(threaded) == np.concatenate([first.extras["row_id"]]
                                             + [b.extras["row_id"] for b in rest]).tolist()


@pytest.mark.parametrize("shuffle", [False, True])
def test_cache_skips_reading_after_the_first_epoch(data, monkeypatch, shuffle):
    kwargs = {"seed": 3, "epochs": 2, "extra_cols": ["row_id"], "output": "numpy",
              "shuffle": shuffle, "shuffle_window": 50}
    plain = irs.Loader(data, 20, **kwargs)
    cached = irs.Loader(data, 20, cache=True, **kwargs)
    reads = []
    read = cached.source.read
    monkeypatch.setattr(cached.source, "read", lambda *a, **k: reads.append(a[0]) or read(*a, **k))
    got = list(cached)
    assert order(plain) == np.concatenate([b.extras["row_id"] for b in got]).tolist()
    assert sorted(reads) == list(range(cached.source.units))  # each row group read once
    if shuffle:  # gathered into fresh arrays
        assert all(b.dense.flags.writeable for b in got)
    else:  # batches are views of the cache: read-only, so it cannot be changed
        with pytest.raises(ValueError, match="read-only"):
            got[0].dense[0, 0] = 1.0
    assert order(cached) == order(plain)  # the next epochs too, still from the cache
    assert sorted(reads) == list(range(cached.source.units))
