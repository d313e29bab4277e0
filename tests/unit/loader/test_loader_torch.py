"""irs.Loader with PyTorch: tensor batches, TorchRec KeyedJaggedTensor, GPU copies."""

from __future__ import annotations

import numpy as np
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ParameterError
from interactive_recsys.loader._jagged import JaggedBatch

torch = pytest.importorskip("torch")

from tests.unit.loader.test_loader import make_frame, write  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write(make_frame(150, seed=4), tmp_path_factory.mktemp("loader-torch") / "out",
                 parts=2, row_group_size=33)


def test_torch_batches_equal_the_numpy_ones(data):
    kwargs = {"batch_size": 32, "seed": 9, "extra_cols": ["row_id"]}
    as_numpy = list(irs.Loader(data, output="numpy", **kwargs))
    as_torch = list(irs.Loader(data, output="torch", **kwargs))
    assert len(as_numpy) == len(as_torch) == 5
    for n, t in zip(as_numpy, as_torch, strict=True):
        assert isinstance(t.dense, torch.Tensor) and t.dense.dtype == torch.float32
        assert t.labels.dtype == torch.float32 and t.labels.shape == (len(n),)
        assert t.sparse.values.dtype == torch.int64 and t.sparse.lengths.dtype == torch.int32
        assert t.sparse.offsets.dtype == torch.int32
        np.testing.assert_array_equal(t.dense.numpy(), n.dense)
        np.testing.assert_array_equal(t.labels.numpy(), n.labels)
        np.testing.assert_array_equal(t.extras["row_id"].numpy(), n.extras["row_id"])
        for name in ("values", "lengths", "offsets"):
            np.testing.assert_array_equal(getattr(t.sparse, name).numpy(),
                                          getattr(n.sparse, name))
        assert t.sparse.length_per_key == n.sparse.length_per_key  # still Python ints
        assert all(type(x) is int for x in t.sparse.offset_per_key)


def test_feature_pools_with_embedding_bag(data):
    batch = next(iter(irs.Loader(data, 16, shuffle=False, output="torch")))
    values, offsets = batch.sparse.feature("T")
    bag = torch.nn.EmbeddingBag(50, 3, mode="sum")
    pooled = bag(values, offsets[:-1])
    lengths = torch.diff(offsets)
    expected = torch.stack([bag.weight[values[s:s + n]].sum(0) for s, n in
                            zip(offsets[:-1].tolist(), lengths.tolist(), strict=True)])
    torch.testing.assert_close(pooled, expected)


def test_to_torchrec_builds_a_keyed_jagged_tensor(data):
    pytest.importorskip("torchrec")
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    loader = irs.Loader(data, 20, seed=1, output="torch")
    batch = next(iter(loader))
    frame_batch = next(iter(irs.Loader(data, 20, seed=1, output="numpy")))
    kjt = batch.sparse.to_torchrec()
    assert isinstance(kjt, KeyedJaggedTensor)
    assert kjt.keys() == ["C1", "C2", "T"]
    assert kjt.stride() == 20
    assert kjt.values().tolist() == frame_batch.sparse.values.tolist()
    assert kjt.lengths().tolist() == frame_batch.sparse.lengths.tolist()
    assert kjt.length_per_key() == frame_batch.sparse.length_per_key
    assert kjt.offset_per_key() == frame_batch.sparse.offset_per_key
    assert kjt.length_per_key()[:2] == [20, 20]
    t_values, t_offsets = frame_batch.sparse.feature("T")
    assert kjt["T"].values().tolist() == t_values.tolist()
    assert kjt["T"].lengths().tolist() == np.diff(t_offsets).tolist()
    # NumPy batches convert too, and the KJT feeds a real EmbeddingBagCollection
    kjt_np = frame_batch.sparse.to_torchrec()
    assert kjt_np.values().tolist() == kjt.values().tolist()
    ebc = EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(name=f"t_{k}", embedding_dim=4, num_embeddings=100,
                           feature_names=[k]) for k in kjt.keys()])
    pooled = ebc(kjt)
    assert pooled.values().shape == (20, 12)
    weight = ebc.embedding_bags["t_T"].weight
    t_lengths = np.diff(t_offsets)
    row = int(np.flatnonzero(t_lengths)[0])
    start = int(t_offsets[row])
    expected = weight[t_values[start:start + t_lengths[row]]].sum(0)
    torch.testing.assert_close(pooled["T"][row], expected)


def test_jagged_batch_checks_its_parts():
    with pytest.raises(ParameterError, match="sum to 3 but it has 2 values"):
        JaggedBatch.from_segments(["a"], [np.array([1, 2])], [np.array([1, 2])])
    with pytest.raises(ParameterError, match="same number of rows"):
        JaggedBatch.from_segments(["a", "b"], [np.array([1]), np.array([1, 2])],
                                  [np.array([1]), np.array([1, 1])])
    jb = JaggedBatch.from_segments(["a"], [np.array([4])], [np.array([1])])
    with pytest.raises(ParameterError, match="'z' is not in this batch"):
        jb.feature("z")


@pytest.mark.gpu
def test_cuda_batches_are_pinned_copies_on_the_device(data):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    cpu = list(irs.Loader(data, 32, seed=2, output="numpy"))
    gpu = list(irs.Loader(data, 32, seed=2, device="cuda"))
    for c, g in zip(cpu, gpu, strict=True):
        assert g.dense.device.type == "cuda" and g.sparse.values.device.type == "cuda"
        np.testing.assert_array_equal(g.dense.cpu().numpy(), c.dense)
        np.testing.assert_array_equal(g.sparse.values.cpu().numpy(), c.sparse.values)
        kjt = g.sparse.to_torchrec()
        assert kjt.length_per_key() == c.sparse.length_per_key


def test_cuda_on_a_machine_without_cuda_is_refused_when_the_loader_is_made(data,
                                                                          monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a laptop
    for device in ("cuda", "cuda:0", torch.device("cuda")):
        with pytest.raises(ParameterError, match=r"'device' parameter of Loader is .*cuda.*, "
                           r"but CUDA is not available here .* Pass device='cpu'"):
            irs.Loader(data, 8, device=device)


def test_a_cuda_index_beyond_the_gpus_is_refused(data, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ParameterError, match=r"is 'cuda:3', but this machine has 1 CUDA "
                       r"device\(s\): cuda:0 to cuda:0"):
        irs.Loader(data, 8, device="cuda:3")


@pytest.mark.parametrize("device,match", [
    ("tpu", r"must be a PyTorch device such as .* Got 'tpu' instead \(PyTorch has no device "
            r"type 'tpu'; a TPU is 'xla'"),
    ("gpu", "Got 'gpu' instead"),
    ("cuda:x", "Got 'cuda:x' instead"),
    (1.5, "Got 1.5 instead"),
])
def test_a_device_pytorch_does_not_know_is_refused(data, device, match):
    with pytest.raises(ParameterError, match=match):
        irs.Loader(data, 8, device=device)


def test_a_device_pytorch_cannot_use_here_is_refused(data, monkeypatch):
    def no_such_backend(*args, **kwargs):
        raise RuntimeError("Torch not compiled with XPU enabled")

    monkeypatch.setattr(torch, "empty", no_such_backend)
    with pytest.raises(ParameterError, match=r"is 'xpu', but PyTorch cannot use it here "
                       r"\(Torch not compiled with XPU enabled\). Pass device='cpu'"):
        irs.Loader(data, 8, device="xpu")


def test_cpu_devices_are_accepted(data):
    for device in ("cpu", torch.device("cpu")):
        batch = next(iter(irs.Loader(data, 8, device=device)))
        assert batch.dense.device.type == "cpu"


def test_a_saved_workflow_folder_is_loaded_as_irs_run_loads_it(tmp_path):
    from interactive_recsys import ops
    from interactive_recsys.errors import NotFittedError, VersionError

    raw = str(tmp_path / "raw")
    irs.Dataset(make_frame(40, seed=1)).to_parquet(raw)
    wf = irs.Workflow((["C1"] >> ops.Categorify()) + (["I1"] >> ops.Normalize()) + ["label"])
    wf.fit(irs.Dataset(raw, tags={"label": ["target"]}))
    wf.save(str(tmp_path / "wf"))
    given = list(irs.Loader(raw, 16, seed=1, workflow=wf, output="numpy"))
    for path in (str(tmp_path / "wf"), tmp_path / "wf"):
        loaded = list(irs.Loader(raw, 16, seed=1, workflow=path, output="numpy"))
        assert len(loaded) == len(given) == 3
        for a, b in zip(given, loaded, strict=True):
            np.testing.assert_array_equal(a.sparse.values, b.sparse.values)
            np.testing.assert_array_equal(a.dense, b.dense)
    with pytest.raises(VersionError, match="holds no workflow.json"):
        irs.Loader(raw, 16, workflow=raw)  # data, not a saved workflow
    unfitted = irs.Workflow(["C1"] >> ops.Categorify())
    with pytest.raises(NotFittedError, match=r"not fitted .* call wf.fit\(dataset\) first"):
        irs.Loader(raw, 16, workflow=unfitted)


def test_dlrm_example_learns_a_planted_signal(tmp_path, request):
    """The benchmarks' DLRM trained through the loader: AUC against sklearn, and learning."""
    from sklearn.metrics import roc_auc_score

    from benchmarks import dlrm

    rng = np.random.default_rng(0)
    labels, scores = rng.integers(0, 2, 500), rng.integers(0, 20, 500) / 20  # many ties
    assert dlrm.auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
    with pytest.raises(ValueError, match="both"):
        dlrm.auc(np.ones(3), np.arange(3))

    rows = 4000
    c1 = rng.integers(2, 40, rows)
    frame = make_frame(rows, seed=5)
    frame["C1"] = c1
    frame["label"] = (c1 % 3 == 0).astype("int64")  # the label is a function of C1
    path = write(frame, tmp_path / "out", parts=2, row_group_size=500)
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: more threads only spin
    request.addfinalizer(lambda: torch.set_num_threads(threads))
    loader = irs.Loader(path, 128, seed=0, drop_last=True, cat_cols=["C1", "C2", "T"])
    model = dlrm.make_model({"C1": 100, "C2": 10, "T": 50}, n_dense=2, dim=8)
    before = dlrm.evaluate(model, irs.Loader(path, 1000, shuffle=False,
                                             cat_cols=["C1", "C2", "T"]))
    history = dlrm.train(model, loader, steps=120, lr=0.1, log_every=40)
    after = dlrm.evaluate(model, irs.Loader(path, 1000, shuffle=False,
                                            cat_cols=["C1", "C2", "T"]))
    assert [h["step"] for h in history] == [40, 80, 120]
    assert history[-1]["loss"] < history[0]["loss"]
    assert after["rows"] == rows and after["auc"] > 0.95 > before["auc"]
    assert after["logloss"] < before["logloss"]


def test_cpu_device_gives_cpu_tensors_sharing_the_loader_arrays(data):
    batch = next(iter(irs.Loader(data, 8, shuffle=False, device="cpu")))
    assert batch.dense.device.type == "cpu" and batch.sparse.values.device.type == "cpu"
    moved = batch.to_torch("cpu")
    assert moved.dense.data_ptr() == batch.dense.data_ptr()  # no copy on the CPU


def test_tensors_from_the_cache_are_copies(data):
    loader = irs.Loader(data, 50, shuffle=False, cache=True, output="torch")
    first = [b.dense.clone() for b in loader]
    for b in loader:
        b.dense.zero_()  # a training loop writing into its batch
    again = [b.dense for b in loader]
    for a, b in zip(first, again, strict=True):
        torch.testing.assert_close(a, b)
    assert float(first[0].abs().sum()) > 0
