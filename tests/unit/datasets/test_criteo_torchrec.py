"""``irs criteo`` / ``criteo_to_torchrec``: raw Criteo day files to TorchRec's npy files.

The reference is TorchRec's own code (``BinaryCriteoUtils.tsv_to_npys`` and
``sparse_to_contiguous``) run on the same generated day files: dense, sparse and labels must
be the same bytes, the contiguous ids the same up to a one-to-one relabeling per column.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from interactive_recsys.cli._main import main
from interactive_recsys.datasets import (
    CRITEO_CATEGORICAL,
    CRITEO_COLUMNS,
    criteo_to_torchrec,
    synthetic_criteo,
)
from interactive_recsys.datasets._criteo_torchrec import parse_days
from interactive_recsys.datasets._criteo_tsv import hex_to_int64, write_criteo_tsv
from interactive_recsys.errors import DatasetError, ParameterError

KINDS = ("dense", "sparse", "labels")

# Edge rows: negative and missing counts, upper-case / short / empty / zero ids.
EDGE_ROWS = [
    ["1", "-3", "", "7"] + ["0"] * 10 + ["ABCDEF12", "", "0", "00000000", "f"] + ["1a"] * 21,
    ["", "2147483647", "-2"] + [""] * 11 + ["abcdef12", "FFFFFFFF", "", "0", "F"] + [""] * 21,
]


def _days(root: str, days: int = 3, rows: int = 2000) -> str:
    """``days`` Criteo day files (kaggle profile: hex ids, missing values, negative I2),
    the first with the edge rows appended."""
    folder = os.path.join(root, "in")
    os.makedirs(folder)
    for d in range(days):
        path = os.path.join(folder, f"day_{d}")
        write_criteo_tsv(synthetic_criteo(rows, seed=d, path=os.path.join(root, f"pq{d}"),
                                          profile="kaggle"), path)
        if d == 0:
            with open(path, "a") as f:
                f.writelines("\t".join(r) + "\n" for r in EDGE_ROWS)
    return folder


def _torchrec_reference(folder: str, out: str, days: int, threshold: int) -> None:
    criteo = pytest.importorskip("torchrec.datasets.criteo")
    pytest.importorskip("iopath")  # TorchRec's file loading needs it
    os.makedirs(out)
    for d in range(days):
        criteo.BinaryCriteoUtils.tsv_to_npys(os.path.join(folder, f"day_{d}"),
                                             *(os.path.join(out, f"day_{d}_{k}.npy")
                                               for k in KINDS))
    criteo.BinaryCriteoUtils.sparse_to_contiguous(
        [os.path.join(out, f"day_{d}_sparse.npy") for d in range(days)], out,
        frequency_threshold=threshold)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("threshold", [0, 3])
def test_equal_to_torchrec_own_scripts(tmp_path, threshold):
    days = 3
    folder = _days(str(tmp_path), days)
    ref, out = str(tmp_path / "ref"), str(tmp_path / "out")
    _torchrec_reference(folder, ref, days, threshold)
    # small blocks and chunks: several per file, as a big day would be cut
    summary = criteo_to_torchrec(folder, out, frequency_threshold=threshold, progress=False,
                                 block_size=64 << 10, chunk_rows=700)
    for d in range(days):
        for kind in KINDS:  # the same bytes: dtype, shape, header and values
            assert _read(f"{out}/day_{d}_{kind}.npy") == _read(f"{ref}/day_{d}_{kind}.npy"), \
                (d, kind)
    theirs = np.concatenate([np.load(f"{ref}/day_{d}_sparse_contig_freq.npy")
                             for d in range(days)])
    ours = np.concatenate([np.load(f"{out}/day_{d}_sparse_contig_freq.npy")
                           for d in range(days)])
    assert ours.dtype == theirs.dtype == np.int64 and ours.shape == theirs.shape
    assert np.array_equal(ours == 1, theirs == 1)  # the same ids are infrequent
    if threshold > 1:
        assert (ours == 1).any()
    for j in range(ours.shape[1]):  # one-to-one per column
        pairs = pd.DataFrame({"ours": ours[:, j], "theirs": theirs[:, j]}).drop_duplicates()
        assert pairs["ours"].is_unique and pairs["theirs"].is_unique, j
        frequent = np.unique(ours[:, j][ours[:, j] != 1])
        assert np.array_equal(frequent, np.arange(2, 2 + len(frequent)))  # contiguous from 2
        assert summary["num_embeddings"][f"cat_{j}"] == ours[:, j].max() + 1
    assert summary["rows"] == days * 2000 + len(EDGE_ROWS)
    assert summary["files"]["day_0"] == 2000 + len(EDGE_ROWS)
    assert set(summary["seconds"]) == {"parse", "dense", "fit", "map"}
    assert sorted(os.listdir(out)) == sorted(
        ["_SUCCESS", "_summary.json"]
        + [f"day_{d}_{k}.npy" for d in range(days) for k in (*KINDS, "sparse_contig_freq")])


def test_contiguous_ids_by_descending_frequency(tmp_path):
    """Independent of TorchRec: id 2 is the most frequent value of a column (ties by value),
    ids below the threshold are 1, and the id space is shared by all days."""
    folder = tmp_path / "in"
    folder.mkdir()
    base = ["0"] + ["1"] * 13
    day0 = [["b"], ["a"], ["b"], ["c"], ["d"]]
    day1 = [["a"], ["c"], ["c"], ["e"]]
    for d, ids in enumerate([day0, day1]):
        (folder / f"day_{d}").write_text(
            "".join("\t".join(base + i * 26) + "\n" for i in ids))
    criteo_to_torchrec(folder, tmp_path / "out", frequency_threshold=2, progress=False)
    got = [np.load(tmp_path / "out" / f"day_{d}_sparse_contig_freq.npy")[:, 0].tolist()
           for d in range(2)]
    # counts: c 3, a 2, b 2, d 1, e 1 -> c=2, a=3 (tie with b, smaller value first), b=4
    assert got == [[4, 3, 4, 2, 1], [3, 2, 2, 1]]


@pytest.mark.parametrize(("threshold", "budget"), [(0, 500), (2, 20_000), (4, 2_000)])
def test_counts_spilled_in_hash_buckets_give_the_same_ids(tmp_path, monkeypatch, threshold,
                                                          budget):
    """Counts summed in memory and written to staging many times per file (tiny budgets)
    and split into 32 hash buckets per column give the ids that a numpy reference computes
    from all the days at once: id 2 for the most frequent value (ties by value), 1 below the
    threshold."""
    from interactive_recsys.datasets import _criteo_torchrec as ct

    folder = _days(str(tmp_path), days=2, rows=3000)
    monkeypatch.setattr(ct, "COUNT_BUDGET", budget)
    monkeypatch.setattr(ct, "BUCKET_BYTES", 1 << 16)  # inputs of ~1.4 MB: 32 buckets
    files = ct.criteo_input_files(folder)
    assert ct._bucket_bits(files, [os.path.getsize(f) for f, _ in files]) == 5
    out = tmp_path / "out"
    criteo_to_torchrec(folder, out, frequency_threshold=threshold, progress=False,
                       block_size=1 << 16)
    assert not (out / "_staging").exists()
    calls = []  # the same run again, watching the counter
    for name in ("flush", "_sum"):
        real = getattr(ct._IdCounter, name)
        monkeypatch.setattr(ct._IdCounter, name, lambda self, real=real, name=name: (
            calls.append(name), real(self))[1])
    criteo_to_torchrec(folder, tmp_path / "again", frequency_threshold=threshold,
                       progress=False, block_size=1 << 16)
    assert calls.count("flush") > 2  # counts files written mid-file, not only at the end
    assert all(_read(str(out / name)) == _read(str(tmp_path / "again" / name))
               for name in os.listdir(out) if name.endswith(".npy"))
    sparse = np.concatenate([np.load(out / f"day_{d}_sparse.npy") for d in range(2)])
    got = np.concatenate([np.load(out / f"day_{d}_sparse_contig_freq.npy") for d in range(2)])
    for j in range(sparse.shape[1]):
        values, counts = np.unique(sparse[:, j], return_counts=True)
        order = np.lexsort((values, -counts))
        kept = order[counts[order] >= threshold]
        ids = dict(zip(values[kept].tolist(), range(2, len(kept) + 2), strict=True))
        want = [ids.get(v, 1) for v in sparse[:, j].tolist()]
        assert got[:, j].tolist() == want, CRITEO_CATEGORICAL[j]


def test_id_counter_sums_in_memory_before_it_writes(tmp_path):
    """Past the budget the blocks' counts are summed; they are written only if the sum
    still holds more than half the budget. The file holds each column's counts, by bucket."""
    from interactive_recsys.datasets import _criteo_id_counts as ct

    rng = np.random.default_rng(0)
    block = rng.integers(0, 40, size=(100, 3)).astype(np.int64)
    distinct = sum(len(np.unique(block[:, j])) for j in range(3))
    counter = ct._IdCounter(str(tmp_path / "c"), 3, bits=1, budget=int(2.5 * distinct))
    for _ in range(3):
        counter.add(block)
    assert counter.files == [] and counter.size == distinct  # summed, not written
    counter.flush()
    (prefix,) = counter.files
    counts = np.load(prefix + "_counts.npy")
    offsets = np.load(prefix + "_offsets.npy")
    assert len(offsets) == 3 * 2 + 1
    for j in range(3):
        got = counts[:, offsets[2 * j]:offsets[2 * j + 2]]
        values, want = np.unique(block[:, j], return_counts=True)
        order = np.argsort(got[0])
        assert got[0][order].tolist() == values.tolist()
        assert got[1][order].tolist() == (3 * want).tolist()
        buckets = ct._bucket_of(got[0], 1)
        assert (np.diff(buckets) >= 0).all()  # grouped by bucket
        assert len(got[0][buckets == 0]) == offsets[2 * j + 1] - offsets[2 * j]



def test_torchrec_datapipe_reads_the_output(tmp_path):
    criteo = pytest.importorskip("torchrec.datasets.criteo")
    pytest.importorskip("iopath")
    folder = _days(str(tmp_path), days=2, rows=500)
    out = tmp_path / "out"
    criteo_to_torchrec(folder, out, frequency_threshold=2, progress=False)
    paths = {k: [str(out / f"day_{d}_{k}.npy") for d in range(2)] for k in KINDS}
    paths["sparse"] = [str(out / f"day_{d}_sparse_contig_freq.npy") for d in range(2)]
    pipe = criteo.InMemoryBinaryCriteoIterDataPipe(
        "train", paths["dense"], paths["sparse"], paths["labels"], batch_size=128, rank=0,
        world_size=1)
    batches = list(pipe)
    dense = np.concatenate([b.dense_features.numpy() for b in batches])
    labels = np.concatenate([b.labels.numpy() for b in batches])
    ids = np.concatenate([b.sparse_features.to_dict()["cat_3"].values().numpy()
                          for b in batches])
    expected = [np.concatenate([np.load(p) for p in paths[k]]) for k in KINDS]
    assert len(batches) == len(pipe) == int(np.ceil((1000 + len(EDGE_ROWS)) / 128))
    assert np.array_equal(dense, expected[0], equal_nan=True)  # the edge rows overflow int32
    assert np.array_equal(labels, expected[2][:, 0])
    assert np.array_equal(ids, expected[1][:, 3])


def test_on_a_cluster_and_gz_days(tmp_path, client):
    import gzip
    import shutil

    folder = _days(str(tmp_path), days=2, rows=800)
    plain = criteo_to_torchrec(folder, tmp_path / "plain", frequency_threshold=2,
                               progress=False)
    for d in range(2):
        with open(f"{folder}/day_{d}", "rb") as src, gzip.open(f"{folder}/day_{d}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(f"{folder}/day_{d}")
    summary = criteo_to_torchrec(folder, tmp_path / "out", frequency_threshold=2,
                                 client=client, progress=False, chunk_rows=300)
    assert summary["cluster"] == "2 workers" and summary["rows"] == plain["rows"]
    for name in sorted(os.listdir(tmp_path / "plain")):
        if name.endswith(".npy"):
            assert _read(tmp_path / "plain" / name) == _read(tmp_path / "out" / name), name


def test_cli_and_its_errors(tmp_path, capsys):
    folder = _days(str(tmp_path), days=3, rows=300)
    out = tmp_path / "out"
    assert main(["criteo", folder, str(out), "--days", "0,2", "--local", "--quiet",
                 "--frequency-threshold", "2"]) == 0
    text = capsys.readouterr().out
    assert f"Wrote {600 + len(EDGE_ROWS):,} rows of 2 file(s)" in text and "phases: parse" in text
    assert sorted(f for f in os.listdir(out) if f.startswith("day_1")) == []
    assert len([f for f in os.listdir(out) if f.endswith(".npy")]) == 8
    before = _read(out / "day_2_sparse_contig_freq.npy")
    assert main(["criteo", folder, str(out), "--local", "--quiet"]) == 2  # exists
    assert "already exists" in capsys.readouterr().err
    assert _read(out / "day_2_sparse_contig_freq.npy") == before
    assert main(["criteo", folder, str(tmp_path / "o2"), "--days", "7", "--local"]) == 2
    assert "no day_7 file" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="days must look like"):
        parse_days("3-1")


def test_a_bad_id_names_file_and_column_and_writes_nothing(tmp_path):
    folder = _days(str(tmp_path), days=2, rows=200)
    with open(f"{folder}/day_1", "a") as f:
        f.write("\t".join(["0"] + ["1"] * 13 + ["zz"] + ["a"] * 25) + "\n")
    with pytest.raises(DatasetError, match=r"Column 'C1' of 'day_1' holds 'zz'"):
        criteo_to_torchrec(folder, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    assert [p for p in os.listdir(tmp_path) if p.startswith(".out")] == []


def test_count_outside_int32_is_refused_as_numpy_does(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "day_0").write_text("\t".join(["0", "2147483648"] + ["1"] * 12 + ["a"] * 26)
                                  + "\n")
    with pytest.raises(DatasetError, match=r"Column 'I1' of 'day_0' holds 2147483648"):
        criteo_to_torchrec(folder, tmp_path / "out", progress=False)


@pytest.mark.parametrize("to", ["torchrec", "parquet"])
def test_a_truncated_gz_day_names_the_input_not_the_output(tmp_path, capsys, to):
    import gzip

    folder = _days(str(tmp_path), days=2, rows=3000)
    for d in range(2):  # day_0.gz sound, day_1.gz cut at its middle
        with open(f"{folder}/day_{d}", "rb") as f:
            data = gzip.compress(f.read())
        with open(f"{folder}/day_{d}.gz", "wb") as f:
            f.write(data[: len(data) // 2] if d else data)
        os.remove(f"{folder}/day_{d}")
    out = tmp_path / "out"
    assert main(["criteo", folder, str(out), "--to", to, "--local", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"Criteo input '{folder}/day_1.gz' is corrupt or truncated" in err, err
    assert "gzip -t" in err and "Cannot write" not in err and "free space" not in err
    assert not out.exists() and [p for p in os.listdir(tmp_path) if p.startswith(".out")] == []


def test_parquet_target_refuses_the_compressions_it_cannot_read(tmp_path):
    import bz2

    folder = _days(str(tmp_path), days=1, rows=50)
    with open(f"{folder}/day_0", "rb") as f, open(f"{folder}/day_0.bz2", "wb") as g:
        g.write(bz2.compress(f.read()))
    os.remove(f"{folder}/day_0")
    with pytest.raises(DatasetError, match=r"day_0.bz2' is bz2-compressed .*reads plain and "
                                           r"\.gz day files only"):
        criteo_to_torchrec(folder, tmp_path / "out", to="parquet", progress=False)
    assert criteo_to_torchrec(folder, tmp_path / "t", progress=False)["rows"] == 50 + len(
        EDGE_ROWS)


def test_hex_ids_as_python_int_reads_them():
    rng = np.random.default_rng(5)
    values = []
    for _ in range(3000):
        k = int(rng.choice([0, 1, 5, 8, 8, 12, 16, 20]))
        text = "".join(rng.choice(list("0123456789abcdefABCDEF"), k))
        if k == 16:
            text = str(rng.integers(0, 8)) + text[1:]
        if k == 20:
            text = "0000" + text[4:].replace(text[4], "7", 1)
        values.append(None if rng.random() < 0.1 else text)
    expected = [int(v or "0", 16) for v in values]
    assert hex_to_int64(pa.array(values)).tolist() == expected
    assert hex_to_int64(pa.array(values, pa.large_string()).slice(7)).tolist() == expected[7:]
    with pytest.raises(DatasetError, match="2\\*\\*63 or more"):
        hex_to_int64(pa.array(["8000000000000000"]), "C5")
    with pytest.raises(DatasetError, match="'0x1f'.*not a hexadecimal id"):
        hex_to_int64(pa.array(["0x1f"]), "C5")


def test_parquet_target_is_the_standard_workflow(tmp_path):
    import interactive_recsys as irs

    folder = _days(str(tmp_path), days=2, rows=300)
    summary = criteo_to_torchrec(folder, tmp_path / "out", to="parquet", progress=False)
    data = irs.Dataset(str(tmp_path / "out" / "data")).compute()
    assert len(data) == summary["rows"] == 600 + len(EDGE_ROWS)
    assert set(CRITEO_COLUMNS) <= set(data.columns)
    assert data[CRITEO_CATEGORICAL].min().min() >= 1
    assert os.path.isfile(tmp_path / "out" / "_SUCCESS")
    assert irs.Workflow.load(str(tmp_path / "out" / "workflow")).fitted


def test_kaggle_folder_train_and_unlabelled_test(tmp_path):
    folder = tmp_path / "kaggle"
    folder.mkdir()
    row = ["3"] * 13 + ["a1"] * 26
    (folder / "train.txt").write_text("\t".join(["1", *row]) + "\n" + "\t".join(["0", *row])
                                      + "\n")
    (folder / "test.txt").write_text("\t".join(row) + "\n")
    summary = criteo_to_torchrec(folder, tmp_path / "out", progress=False)
    assert summary["files"] == {"train": 2, "test": 1}
    assert np.load(tmp_path / "out" / "train_labels.npy").ravel().tolist() == [1, 0]
    assert np.load(tmp_path / "out" / "test_labels.npy").ravel().tolist() == [-1]
    assert np.load(tmp_path / "out" / "test_sparse.npy")[0, 0] == 0xA1
    assert np.load(tmp_path / "out" / "test_sparse_contig_freq.npy")[0, 0] == 2  # one id
    criteo = pytest.importorskip("torchrec.datasets.criteo")
    pytest.importorskip("iopath")
    import shutil
    import tempfile

    # TorchRec drops the label column of any file whose *path* contains "test" (this test's
    # folder does): its reference for train.txt is made in a folder without that word
    plain = tempfile.mkdtemp(prefix="kaggle-")
    try:
        shutil.copy(folder / "train.txt", plain)
        for stem, src in (("train", os.path.join(plain, "train.txt")),
                          ("test", str(folder / "test.txt"))):
            ref = [os.path.join(plain, f"ref_{stem}_{k}.npy") for k in KINDS]
            criteo.BinaryCriteoUtils.tsv_to_npys(src, *ref, dataset_name="criteo_kaggle")
            for kind, path in zip(KINDS, ref, strict=True):
                assert _read(tmp_path / "out" / f"{stem}_{kind}.npy") == _read(path), \
                    (stem, kind)
    finally:
        shutil.rmtree(plain)
