"""Parquet output: atomic writes, schema.json/_SUCCESS, shuffle modes keep every row once."""

import json
import os

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys.io import _writer as writer


def dataset(n=1000, parts=5):
    df = pd.DataFrame({"row": np.arange(n), "v": np.arange(n) * 0.5})
    return irs.Dataset(dd.from_pandas(df, npartitions=parts))


def read_files(path, summary):
    return [pq.read_table(path / f).to_pandas() for f in summary["files"]]


@pytest.mark.parametrize("shuffle", [None, "partition", "worker", "full"])
def test_every_row_written_exactly_once(tmp_path, shuffle):
    out = tmp_path / "out"
    summary = dataset().to_parquet(out, shuffle=shuffle, out_files_per_proc=3 if shuffle else None)
    assert (out / "_SUCCESS").exists()
    meta = json.loads((out / "_schema.json").read_text())
    assert meta["num_rows"] == 1000 and meta["files"] == summary["files"]
    frames = read_files(out, summary)
    rows = pd.concat(frames)["row"].to_numpy()
    assert sorted(rows.tolist()) == list(range(1000))
    assert sum(len(f) for f in frames) == summary["num_rows"] == 1000
    if shuffle is None:
        assert rows.tolist() == list(range(1000))
    else:
        assert rows.tolist() != list(range(1000))


def test_full_shuffle_mixes_rows_across_files(tmp_path):
    summary = dataset(2000, parts=4).to_parquet(tmp_path / "o", shuffle="full",
                                                out_files_per_proc=4)
    frames = read_files(tmp_path / "o", summary)
    # with a full shuffle every output file holds rows from every input partition
    for f in frames:
        assert len(set(f["row"] // 500)) == 4
    again = dataset(2000, parts=4).to_parquet(tmp_path / "o2", shuffle="full",
                                              out_files_per_proc=4)
    assert [f["row"].tolist() for f in frames] == \
        [f["row"].tolist() for f in read_files(tmp_path / "o2", again)]  # seeded


def test_partition_shuffle_keeps_rows_in_their_partition(tmp_path):
    summary = dataset(1000, parts=4).to_parquet(tmp_path / "o", shuffle="partition")
    for i, f in enumerate(read_files(tmp_path / "o", summary)):
        assert sorted(f["row"]) == list(range(i * 250, (i + 1) * 250))


def test_failed_write_leaves_no_output(tmp_path, monkeypatch):
    calls = {"n": 0}
    original = writer._write_part

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return original(*args, **kwargs)

    monkeypatch.setattr(writer, "_write_part", failing)
    with pytest.raises(OSError, match="disk full"):
        dataset().to_parquet(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_existing_output_needs_overwrite(tmp_path):
    dataset().to_parquet(tmp_path / "out")
    with pytest.raises(irs.DatasetError, match="already exists.*overwrite=True"):
        dataset().to_parquet(tmp_path / "out")
    dataset(10, 1).to_parquet(tmp_path / "out", overwrite=True)
    assert json.loads((tmp_path / "out" / "_schema.json").read_text())["num_rows"] == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_bad_shuffle_mode():
    with pytest.raises(irs.ParameterError, match="'shuffle' parameter.*'sideways'"):
        dataset().to_parquet("/tmp/never-written", shuffle="sideways")


def test_output_files_follow_the_predicted_schema(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", None], "x": [1, 2, 3]})
    wf = irs.Workflow((["c"] >> irs.ops.Categorify(dtype="int32")) + (["x"] >> irs.ops.LogOp()))
    wf.fit(df)
    wf.transform(irs.Dataset(df)).to_parquet(tmp_path / "o")
    schema = pq.read_schema(tmp_path / "o" / "part.00000.parquet")
    assert str(schema.field("c").type) == "int32" and str(schema.field("x").type) == "float"
    saved = irs.Schema.from_dict(json.loads((tmp_path / "o" / "_schema.json").read_text())["schema"])
    assert saved == wf.output_schema


def test_the_generic_writer_knows_files_not_formats(tmp_path):
    """``writer.write_parquet`` writes parquet, ``_schema.json`` and ``_SUCCESS`` only; the
    Merlin schema is an output step above it (``_export.write_dataset``, which
    ``Dataset.to_parquet`` runs) that adds its files to the staged output before the rename."""
    write_parquet = writer.write_parquet
    ds = irs.Dataset(pd.DataFrame({"a": range(10), "b": [0.5] * 10}), part_size=40)
    plain = write_parquet(ds, tmp_path / "plain")
    assert sorted(os.listdir(tmp_path / "plain")) == sorted(
        [*plain["files"], "_schema.json", "_SUCCESS"])
    seen = []

    def finish(directory, final_dir, files):
        seen.append((os.path.basename(directory) != "hooked", final_dir, list(files),
                     sorted(os.listdir(directory))))
        return {"extra": len(files)}

    with writer.staged_parquet(ds, tmp_path / "hooked") as staged:
        staged.summary.update(finish(staged.directory, staged.final, staged.files))
    hooked = staged.summary
    [(in_temporary, final_dir, files, listed)] = seen
    assert in_temporary and final_dir == str(tmp_path / "hooked") and files == hooked["files"]
    assert "_SUCCESS" not in listed and set(files) <= set(listed)  # before the rename
    assert hooked["extra"] == len(files)
    ds.to_parquet(tmp_path / "merlin")
    assert os.path.isfile(tmp_path / "merlin" / ".merlin" / "schema.json")


def test_local_output_has_a_manifest_and_readers_refuse_it_incomplete(tmp_path):
    """The ``_SUCCESS`` manifest lists every file with its size (written last, before the
    rename), so a local folder damaged after the write is refused like a remote one."""
    out = tmp_path / "out"
    irs.Dataset(pd.DataFrame({"a": range(300)}), part_size="1kB").to_parquet(str(out))
    manifest = json.loads((out / "_SUCCESS").read_text())
    on_disk = {p.relative_to(out).as_posix(): p.stat().st_size for p in out.rglob("*")
               if p.is_file() and p.name != "_SUCCESS"}
    assert manifest["files"] == on_disk and len(on_disk) > 3
    assert irs.Dataset(str(out)).num_rows == 300
    (out / "part.00001.parquet").unlink()
    with pytest.raises(irs.errors.DatasetError, match=r"out' is not a complete output.*"
                                                      r"part.00001.parquet"):
        irs.Dataset(str(out))
    with pytest.raises(irs.errors.DatasetError, match="not a complete output"):
        irs.Loader(str(out), 8, output="numpy")


def test_folders_without_a_manifest_or_with_an_empty_marker_still_read(tmp_path):
    df = pd.DataFrame({"a": range(10)})
    (tmp_path / "theirs").mkdir()
    df.to_parquet(tmp_path / "theirs" / "x.parquet")  # another tool: no _SUCCESS
    assert irs.Dataset(str(tmp_path / "theirs")).num_rows == 10
    (tmp_path / "theirs" / "_SUCCESS").write_text("")  # Spark's (and older versions') marker
    assert irs.Dataset(str(tmp_path / "theirs")).num_rows == 10
