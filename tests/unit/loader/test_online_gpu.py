"""The online transform and the loader on a CUDA device: no hidden sync, the offline ids.

Marker ``cuda``: needs PyTorch with a CUDA device (skipped otherwise; ``pytest -m cuda``,
run by ``scripts/device_check.sh`` on the GPU machine).
"""

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.hashing import hash_array
from interactive_recsys.loader import _kernels as kernels

pytestmark = pytest.mark.cuda
torch = pytest.importorskip("torch")

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


@pytest.fixture(scope="module")
def criteo(tmp_path_factory):
    """Raw kaggle-profile data, the standard workflow fitted on it, and its offline copy."""
    work = tmp_path_factory.mktemp("online-gpu")
    raw = irs.datasets.synthetic_criteo(rows=150_000, seed=7, path=work / "raw",
                                        rows_per_file=50_000, profile="kaggle")
    ds = irs.Dataset(str(raw), tags={"label": ["target"]})
    cats = CATS >> ops.Categorify(freq_threshold=2)
    conts = CONTS >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    wf = irs.Workflow(cats + conts + ["label"], artifacts_dir=str(work / "wf"))
    wf.fit(ds)
    wf.transform(ds).to_parquet(str(work / "processed"))
    return str(raw), str(work / "processed"), wf


def ulp_distance(a, b):
    a, b = a.cpu().contiguous(), b.cpu().contiguous()
    d = (a.view(torch.int32).long() - b.view(torch.int32).long()).abs()
    return torch.where(torch.isnan(a) & torch.isnan(b), torch.zeros_like(d), d)


def test_sync_debug_mode_catches_a_sync_here():
    """The guard of the next test works on this machine: ``.item()`` raises under it."""
    x = torch.ones(1, device="cuda")
    torch.cuda.set_sync_debug_mode("error")
    try:
        with pytest.raises(RuntimeError):
            x.item()
    finally:
        torch.cuda.set_sync_debug_mode(0)


def test_an_epoch_on_cuda_runs_with_no_hidden_sync_and_gives_the_offline_batches(criteo):
    raw, processed, wf = criteo
    online = irs.Loader(raw, 16_384, workflow=wf, device="cuda", seed=3)
    offline = irs.Loader(processed, 16_384, device="cuda", seed=3)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        got = list(online)
        want = list(offline)
        kjts = [b.sparse for b in got]  # the metadata TorchRec needs: Python ints already
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    assert len(got) == len(want) == online.batches_per_epoch
    for g, w, kjt in zip(got, want, kjts, strict=True):
        assert g.dense.device.type == g.sparse.values.device.type == "cuda"
        assert g.sparse.lengths.device.type == g.sparse.offsets.device.type == "cuda"
        assert all(type(v) is int for v in kjt.length_per_key + kjt.offset_per_key)
        assert torch.equal(g.sparse.values.cpu(), w.sparse.values.cpu())
        assert torch.equal(g.sparse.offsets.cpu(), w.sparse.offsets.cpu())
        assert torch.equal(g.labels.cpu(), w.labels.cpu())
        assert g.dense.dtype == torch.float32
        assert int(ulp_distance(g.dense, w.dense).max()) <= 1  # log1p: within 1 ulp


def test_hash_kernels_on_cuda_are_the_numpy_hash_bit_for_bit():
    rng = np.random.default_rng(0)
    ints = np.concatenate([rng.integers(-2**63, 2**63 - 1, 10_000, dtype=np.int64),
                           np.array([0, 1, -1, 2**63 - 1, -2**63], np.int64)])
    got = kernels.hash_int(torch.from_numpy(ints).cuda()).cpu().numpy().view(np.uint64)
    assert (got == hash_array(pa.array(ints))).all()
    floats = np.concatenate([rng.normal(0, 1e6, 10_000), [0.0, -0.0, np.inf, -np.inf, 1e-310]])
    got = kernels.hash_float(torch.from_numpy(floats).cuda()).cpu().numpy().view(np.uint64)
    assert (got == hash_array(pa.array(floats))).all()
    h = hash_array(pa.array(ints))
    for n in (1, 7, 10, 1_000_003, 2**31 - 1, 2**62 + 12345, 2**63 - 3):
        got = kernels.umod(torch.from_numpy(h.view(np.int64)).cuda(), n).cpu().numpy()
        assert (got.astype(np.uint64) == h % np.uint64(n)).all(), n


@pytest.mark.parametrize("node", [
    ["c"] >> ops.HashBucket(1000),
    ["n"] >> ops.Categorify(num_buckets=5, freq_threshold=2),
    ["x"] >> ops.FillMedian() >> ops.NormalizeMinMax(),
    ["n"] >> ops.Clip(min_value=3, max_value=40) >> ops.FillMissing(-1) >> ops.LogOp(),
], ids=["hash_bucket", "categorify_int_buckets", "median_minmax", "clip_fill_log"])
def test_online_on_cuda_equals_offline(tmp_path, node):
    rng = np.random.default_rng(1)
    n = 5000
    frame = pa.table({
        "c": pa.array([None if i % 11 == 0 else f"v{i % 97}" for i in rng.integers(0, 10**6, n)]),
        "n": pa.array([None if i % 13 == 0 else int(i) for i in rng.zipf(1.5, n)], pa.int64()),
        "x": pa.array([None if i % 7 == 0 else float(v) for i, v in
                       enumerate(rng.normal(3, 2, n).astype(np.float32))], pa.float32()),
        "y": pa.array(rng.integers(0, 2, n)),
    })
    raw = tmp_path / "raw"
    irs.Dataset(frame.to_pandas(types_mapper=pd.ArrowDtype)).to_parquet(raw)
    wf = irs.Workflow(node + ["y"], artifacts_dir=str(tmp_path / "wf"))  # noqa: RUF005
    wf.fit(irs.Dataset(str(raw), tags={"y": ["target"]}))
    wf.transform(irs.Dataset(str(raw), tags={"y": ["target"]})).to_parquet(tmp_path / "out")
    got = list(irs.Loader(str(raw), 1024, workflow=wf, device="cuda", seed=1))
    want = list(irs.Loader(str(tmp_path / "out"), 1024, seed=1))
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g.sparse.values.cpu(), w.sparse.values)
        if g.dense.numel():
            assert int(ulp_distance(g.dense, w.dense).max()) <= 1
