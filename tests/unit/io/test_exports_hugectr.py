"""HugeCTR parquet output, read back by a reader ported from HugeCTR's own C++ source.

HugeCTR does not install on a CPU machine, so ``HugeCTRReader`` below follows its code line by
line (NVIDIA-Merlin/HugeCTR):

* ``include/data_readers/file_list.hpp`` ``FileList``: first line ``std::stoi`` = number of
  files (must be > 0), then that many ``getline`` paths;
* ``include/data_readers/file_source_parquet.hpp`` ``get_metada_filename``: drop everything up
  to the first ``:``, then ``path.substr(0, path.find_last_of("/\\"))`` + ``/_metadata.json``
  of the *first* listed file; ``get_filename``: the base name, used to look up file stats;
* ``src/data_readers/metadata.cpp`` ``get_parquet_metadata`` (with ``ENABLE_ARROW_PARQUET``):
  each ``file_stats`` entry's base name is opened in the json's directory (missing files are
  skipped), its footer row count must equal ``num_rows``; ``cats``/``conts``/``labels`` are
  ``col_name`` + ``index``;
* ``src/data_readers/dataframe_container.cu``: dense columns (labels then conts) must be
  ``float``; slot columns int32/int64/uint32/uint64 of ``sizeof(key)`` bytes (8 with
  ``i64_input_key``), or lists of those with int32 offsets;
* the keyset loader (``ParameterServer::load_keyset_from_file``, HugeCTR 23.x): an empty
  file is an error, else ``file size / sizeof(key)`` raw keys.
"""

from __future__ import annotations

import json
import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError, ParameterError
from interactive_recsys.io import _hugectr as hugectr_export


class HugeCTRReader:
    """What HugeCTR's Parquet DataReader sees of a ``_file_list.txt`` (see module docstring)."""

    def __init__(self, file_list: str, key_bytes: int = 8) -> None:
        with open(file_list) as f:
            lines = f.read().split("\n")
        n = int(lines[0])  # std::stoi
        if n <= 0:
            raise ValueError("The file format is invalid or there is no data file in the list.")
        self.files = lines[1:1 + n]
        assert len(self.files) == n and all(self.files), "getline ran out of names"
        first = self.files[0]
        if ":" in first:
            first = first[first.index(":") + 1:]
        cut = max(first.rfind("/"), first.rfind("\\"))
        meta_path = (first[:cut] if cut >= 0 else first) + "/_metadata.json"
        with open(meta_path) as f:  # throws FileCannotOpen in HugeCTR
            config = json.load(f)
        json_dir = meta_path[:max(meta_path.rfind("/"), meta_path.rfind("\\")) + 1]
        self.file_stats: dict[str, int] = {}
        for entry in config["file_stats"]:
            fname = os.path.basename(entry["file_name"])
            path = json_dir + "/" + fname
            if not os.path.exists(path):
                continue  # metadata.cpp skips files it cannot open
            footer_rows = pq.ParquetFile(path).metadata.num_rows
            assert footer_rows == int(entry["num_rows"]), \
                "Parquet file number of rows mismatch with _metadata.json"
            self.file_stats[fname] = footer_rows
        self.cats = [(c["col_name"], int(c["index"])) for c in config["cats"]]
        self.conts = [(c["col_name"], int(c["index"])) for c in config["conts"]]
        self.labels = [(c["col_name"], int(c["index"])) for c in config["labels"]]
        self.key_bytes = key_bytes

    def read(self, path: str) -> dict[str, list]:
        """One file as HugeCTR converts it: dense by index, slots by index, type-checked."""
        assert os.path.basename(path) in self.file_stats, "failed to get file stats"
        table = pq.read_table(path)
        out: dict[str, list] = {"dense": [], "slots": []}
        for _, index in self.labels + self.conts:
            col = table.column(index)
            assert col.type == pa.float32(), "Vector Dense KeyType Must be float"
            assert col.null_count == 0, "missing values are not allowed"
            out["dense"].append(col.to_numpy())
        for _, index in self.cats:
            col = table.column(index)
            value_type = col.type.value_type if pa.types.is_list(col.type) else col.type
            if pa.types.is_list(col.type):
                assert pa.types.is_list(col.type) and not pa.types.is_large_list(col.type), \
                    "list offsets are int32"
            assert value_type in (pa.int32(), pa.int64(), pa.uint32(), pa.uint64()), \
                "cat KeyType should be uint64/int64/int32/uint32"
            assert value_type.bit_width // 8 == self.key_bytes, \
                "type is not consistent with solver.i64_input_key"
            out["slots"].append(col.to_pylist())
        return out


def read_keyset(path: str, key_bytes: int = 8) -> np.ndarray:
    size = os.path.getsize(path)
    if size == 0:
        raise ValueError(f"{path} is empty")
    return np.fromfile(path, dtype=f"<i{key_bytes}", count=size // key_bytes)


def _frame(rows: int = 300, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "C1": rng.choice([f"a{i}" for i in range(12)], rows),
        "C2": rng.choice(["x", "y", "z"], rows),
        "I1": rng.poisson(4, rows).astype("float64"),
        "tags": pd.Series([list(rng.choice(list("pqrst"), rng.integers(0, 4))) for _ in range(rows)],
                          dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        "label": rng.integers(0, 2, rows),
    })


def _processed(tmp_path, npartitions: int = 3):
    df = _frame()
    ds = irs.Dataset(dd.from_pandas(df, npartitions=npartitions, sort=False),
                     tags={"label": ["target"]}).to_parquet(tmp_path / "raw")
    raw = irs.Dataset(str(tmp_path / "raw"), tags={"label": ["target"]})
    wf = irs.Workflow((["C1", "C2", "tags"] >> ops.Categorify())
                      + (["I1"] >> ops.LogOp()) + ["label"],
                      artifacts_dir=str(tmp_path / "wf"))
    out = wf.fit_transform(raw)
    assert ds["num_rows"] == len(df) and out.npartitions == npartitions
    return wf, out, out.compute(dtype_backend="pyarrow")  # list cells as lists


def test_file_list_metadata_and_columns_as_hugectr_reads_them(tmp_path):
    _wf, out, expected = _processed(tmp_path)
    summary = out.to_parquet(tmp_path / "hugectr", hugectr=True)
    reader = HugeCTRReader(str(tmp_path / "hugectr" / "_file_list.txt"))
    names = summary["files"]
    assert len(names) == 3
    assert [os.path.basename(f) for f in reader.files] == names
    assert all(os.path.isabs(f) for f in reader.files)
    assert sum(reader.file_stats.values()) == len(expected)
    assert [c for c, _ in reader.cats] == ["C1", "C2", "tags"]
    assert [c for c, _ in reader.conts] == ["I1"] and [c for c, _ in reader.labels] == ["label"]
    # the values HugeCTR gets by column index are the workflow's output, as int64 / float32
    parts = [reader.read(f) for f in reader.files]
    label = np.concatenate([p["dense"][0] for p in parts])
    i1 = np.concatenate([p["dense"][1] for p in parts])
    np.testing.assert_array_equal(label, expected["label"].to_numpy().astype(np.float32))
    np.testing.assert_allclose(i1, expected["I1"].to_numpy().astype(np.float32), rtol=1e-6)
    for k, name in enumerate(["C1", "C2", "tags"]):
        got = [v for p in parts for v in p["slots"][k]]
        assert got == expected[name].tolist()
    # slot_size_array: the cardinalities Categorify found (2 reserved + OOV + vocabulary)
    df = _frame()
    want = [3 + df["C1"].nunique(), 3 + df["C2"].nunique(),
            3 + len({t for ts in df["tags"] for t in ts})]
    assert summary["hugectr"]["slot_size_array"] == want
    assert summary["hugectr"]["slot_offsets"] == [0, want[0], want[0] + want[1]]
    assert summary["hugectr"]["reader_slot_size_array"] == want
    stored = json.loads((tmp_path / "hugectr" / "_hugectr.json").read_text())
    # every extra file is hidden from pyarrow: the directory still reads as a parquet dataset
    assert pd.read_parquet(tmp_path / "hugectr").shape == expected.shape
    assert stored["slot_size_array"] == want
    assert "slot_size_array=" + str(want) in hugectr_export.describe(stored)


def test_keysets_hold_each_files_unique_keys_with_slot_offsets(tmp_path):
    _wf, out, _ = _processed(tmp_path)
    summary = out.to_parquet(tmp_path / "h", hugectr=True)
    sizes = summary["hugectr"]["slot_size_array"]
    offsets = np.cumsum([0, *sizes[:-1]])
    everything = []
    for name in summary["files"]:
        table = pq.read_table(tmp_path / "h" / name).to_pandas()
        want = []
        for k, col in enumerate(["C1", "C2", "tags"]):
            values = table[col]
            if col == "tags":
                values = [v for row in values for v in row]
            want.append(np.unique(np.asarray(values, dtype=np.int64)) + offsets[k])
        np.testing.assert_array_equal(read_keyset(str(tmp_path / "h" / "_keysets" /
                                                      (name + ".keyset"))),
                                      np.concatenate(want))
        everything.append(want)
    union = np.concatenate([np.unique(np.concatenate([w[k] for w in everything]))
                            for k in range(3)])
    np.testing.assert_array_equal(read_keyset(str(tmp_path / "h" / "_file_list.keyset")), union)
    assert summary["hugectr"]["keys_per_slot"] == [
        len(np.unique(np.concatenate([w[k] for w in everything]))) for k in range(3)]


def test_one_key_space_adds_the_offsets_in_the_files(tmp_path):
    _wf, out, expected = _processed(tmp_path)
    summary = out.to_parquet(tmp_path / "one", hugectr={"one_key_space": True})
    info = summary["hugectr"]
    assert info["reader_slot_size_array"] == []  # HugeCTR must not add them again
    reader = HugeCTRReader(str(tmp_path / "one" / "_file_list.txt"))
    parts = [reader.read(f) for f in reader.files]
    for k, name in enumerate(["C1", "C2", "tags"]):
        got = [v for p in parts for v in p["slots"][k]]
        offset = info["slot_offsets"][k]
        if name == "tags":
            assert got == [[v + offset for v in row] for row in expected[name]]
        else:
            assert got == (expected[name] + offset).tolist()
    # the key ranges of the slots do not overlap: one key space
    keys = read_keyset(str(tmp_path / "one" / "_file_list.keyset"))
    assert len(np.unique(keys)) == len(keys)
    assert keys.max() < sum(info["slot_size_array"])


def test_slot_size_from_the_largest_key_when_no_cardinality(tmp_path):
    df = pd.DataFrame({"u": [3, 9, 4, 3], "v": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    ds = irs.Dataset(df, tags={"u": ["categorical"], "v": ["continuous"], "y": ["target"]})
    summary = ds.to_parquet(tmp_path / "o", hugectr=True)
    assert summary["hugectr"]["slot_size_array"] == [10]
    np.testing.assert_array_equal(read_keyset(str(tmp_path / "o" / "_file_list.keyset")),
                                  [3, 4, 9])
    reader = HugeCTRReader(str(tmp_path / "o" / "_file_list.txt"))
    assert reader.read(reader.files[0])["slots"][0] == [3, 9, 4, 3]


def test_hugectr_output_rejects_what_hugectr_cannot_read(tmp_path):
    strings = irs.Dataset(pd.DataFrame({"c": ["a", "b"], "y": [0, 1]}),
                          tags={"c": ["categorical"], "y": ["target"]})
    with pytest.raises(DatasetError, match="'c' has dtype string.*Categorify"):
        strings.to_parquet(tmp_path / "a", hugectr=True)
    nulls = irs.Dataset(pd.DataFrame({"c": [1, 2], "x": [1.0, None], "y": [0, 1]}),
                        tags={"c": ["categorical"], "x": ["continuous"], "y": ["target"]})
    with pytest.raises(DatasetError, match="missing values.*'x'"):
        nulls.to_parquet(tmp_path / "b", hugectr=True)
    assert not (tmp_path / "b").exists()  # nothing half-written
    with pytest.raises(ParameterError, match="one_key_space"):
        nulls.to_parquet(tmp_path / "c", hugectr={"offsets": True})


def test_irs_run_hugectr_prints_and_stores_the_slot_sizes(tmp_path, capsys):
    from interactive_recsys.cli import _main as cli

    wf, _, expected = _processed(tmp_path)
    wf.save(tmp_path / "saved")
    assert cli.main(["run", "--workflow", str(tmp_path / "saved"), "--local", "--input",
                     str(tmp_path / "raw"), "--output", str(tmp_path / "h"), "--hugectr"]) == 0
    printed = capsys.readouterr().out
    sizes = [wf.output_schema[c].cardinality for c in ("C1", "C2", "tags")]
    assert f"slot_size_array (3 slots): {sizes}" in printed
    reader = HugeCTRReader(str(tmp_path / "h" / "_file_list.txt"))
    # the label keeps the 'target' tag the workflow was fitted with
    assert [c for c, _ in reader.labels] == ["label"]
    assert sum(reader.file_stats.values()) == len(expected)
    stored = json.loads((tmp_path / "h" / "_hugectr.json").read_text())
    assert stored["slot_size_array"] == sizes
