"""Reuse keys cover everything that changes a fit (issue 40, item 8): the csv reading
options, each file's content (not its size and time), and the saved artifacts' checksums."""

from __future__ import annotations

import hashlib
import json
import os
import warnings

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ChecksumWarning, DatasetError, WorkflowFormatError


def _reused(wf: irs.Workflow) -> list[str]:
    return wf.fit_stats.get("reused", [])


def _encoded_like_pandas(wf: irs.Workflow, ds: irs.Dataset, frame: pd.DataFrame,
                         column: str) -> None:
    """Categorify's ids: 3 + the rank by descending count, ties by value (pandas)."""
    counts = frame[column].value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    expected = [3 + order.index(v) for v in frame[column]]
    assert wf.transform(ds).compute()[column].tolist() == expected


def test_fixing_swapped_csv_names_refits(tmp_path):
    path = tmp_path / "raw.csv"
    frame = pd.DataFrame({"user": ["u1", "u2", "u1", "u3"], "item": [7, 8, 8, 8]})
    frame.to_csv(path, header=False, index=False)
    swapped = irs.Dataset(str(path), names=["item", "user"], dtypes={"item": "string",
                                                                     "user": "string"})
    first = irs.Workflow(["user", "item"] >> ops.Categorify()).fit(swapped)
    fixed = irs.Dataset(str(path), names=["user", "item"], dtypes={"item": "string",
                                                                   "user": "string"})
    again = irs.Workflow(["user", "item"] >> ops.Categorify()).fit(fixed, reuse=first)
    assert _reused(again) == []  # same files, same schema: only the options changed
    _encoded_like_pandas(again, fixed, frame.astype(str), "user")
    same = irs.Workflow(["user", "item"] >> ops.Categorify()).fit(fixed, reuse=again)
    assert _reused(same) == ["categorify-1"]  # the key still matches itself


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_a_file_replaced_with_the_same_size_and_time_refits(tmp_path, kind):
    path = str(tmp_path / f"part.{kind}")

    def write(values: list[str]) -> None:
        frame = pd.DataFrame({"c": values})
        if kind == "parquet":
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
        else:
            frame.to_csv(path, index=False)

    write(["aa", "bb", "aa"])
    stat = os.stat(path)
    first = irs.Workflow(["c"] >> ops.Categorify()).fit(irs.Dataset(path))
    write(["bb", "aa", "bb"])  # as many bytes, other counts
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(path).st_size == stat.st_size
    ds = irs.Dataset(path)
    again = irs.Workflow(["c"] >> ops.Categorify()).fit(ds, reuse=first)
    assert _reused(again) == []
    _encoded_like_pandas(again, ds, pd.DataFrame({"c": ["bb", "aa", "bb"]}), "c")


def _tamper(saved: str, fix_checksum: bool = False) -> str:
    """Swap the ids of the saved vocabulary's two values (same size, same rows)."""
    path = os.path.join(saved, "artifacts", "categorify-1", "vocab-000", "part.00000.parquet")
    table = pq.read_table(path)
    ids = table["index"].to_pylist()
    pq.write_table(table.set_column(2, "index", pa.array(ids[::-1], pa.int64())), path)
    if fix_checksum:
        config_path = os.path.join(saved, "workflow.json")
        config = json.load(open(config_path))
        rel = "categorify-1/vocab-000/part.00000.parquet"
        config["artifacts"][rel] = hashlib.sha256(open(path, "rb").read()).hexdigest()
        json.dump(config, open(config_path, "w"))
    return path


def test_a_tampered_vocabulary_in_a_saved_workflow_is_never_reused(tmp_path):
    frame = pd.DataFrame({"c": ["x", "y", "x"]})
    saved = irs.Workflow(["c"] >> ops.Categorify()).fit(frame).save(tmp_path / "saved")
    assert _reused(irs.Workflow(["c"] >> ops.Categorify()).fit(frame, reuse=saved)) == \
        ["categorify-1"]
    _tamper(saved)
    with pytest.raises(WorkflowFormatError, match="changed after the workflow was saved") \
            as info:
        irs.Workflow(["c"] >> ops.Categorify()).fit(frame, reuse=saved)
    assert "categorify-1/vocab-000/part.00000.parquet" in str(info.value)
    with pytest.raises(WorkflowFormatError, match="changed after"):
        irs.Workflow.load(saved)


def test_checksums_are_recorded_for_every_saved_artifact(tmp_path):
    frame = pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, 2.0, 4.0]})
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.Normalize())).fit(frame)
    saved = wf.save(tmp_path / "saved")
    sums = json.load(open(os.path.join(saved, "workflow.json")))["artifacts"]
    for rel, digest in sums.items():
        with open(os.path.join(saved, "artifacts", *rel.split("/")), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest
    assert list(sums) == ["categorify-1/vocab-000/part.00000.parquet"]


def test_a_workflow_saved_without_checksums_loads_with_a_warning_naming_the_fix(tmp_path):
    """An older save (no "artifacts" record): loaded, its files unchecked, and said, as an
    older model folder is (issue 50, item 6)."""
    frame = pd.DataFrame({"c": ["x", "y", "x"]})
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(frame)
    saved = wf.save(tmp_path / "saved")
    config_path = os.path.join(saved, "workflow.json")
    config = json.load(open(config_path))
    del config["artifacts"]
    json.dump(config, open(config_path, "w"))
    with pytest.warns(ChecksumWarning) as caught:
        loaded = irs.Workflow.load(saved)
    text = str(caught[0].message)
    assert config_path in text and "'categorify-1/vocab-000'" in text
    assert "older version" in text and "save the workflow again" in text
    assert caught[0].filename == __file__
    pd.testing.assert_frame_equal(loaded.transform(frame), wf.transform(frame))
    stateless = irs.Workflow(["c"] >> ops.Rename(postfix="_r")).fit(frame).save(tmp_path / "s")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no artifact files: nothing unchecked, no warning
        irs.Workflow.load(stateless)


def test_a_large_parquet_file_rewritten_with_an_equal_footer_refits(tmp_path, monkeypatch):
    """Past WHOLE_FILE_BYTES a parquet file is known by its footer and inode change time:
    the same rewrite (its footer equal, its mtime set back) still changes the key."""
    from interactive_recsys.workflow import _keys as reuse

    monkeypatch.setattr(reuse, "WHOLE_FILE_BYTES", 0)
    path = str(tmp_path / "part.parquet")

    def write(values: list[str]) -> None:
        pq.write_table(pa.table({"c": values}), path)

    write(["aa", "bb", "aa"])
    stat, before = os.stat(path), reuse.content_fingerprint(path)
    first = irs.Workflow(["c"] >> ops.Categorify()).fit(irs.Dataset(path))
    write(["bb", "aa", "bb"])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = reuse.content_fingerprint(path)
    assert before[0] == after[0] == "footer" and before[2] == after[2]  # footers equal
    again = irs.Workflow(["c"] >> ops.Categorify()).fit(irs.Dataset(path), reuse=first)
    assert _reused(again) == []


def test_a_tampered_vocabulary_at_a_url_is_refused_before_reuse_and_update(s3, tmp_path):
    import s3fs

    bucket, options = s3.new_bucket(), s3.options()
    frame = pd.DataFrame({"c": ["x", "y", "x"]})
    url = f"s3://{bucket}/wf"
    irs.Workflow(["c"] >> ops.Categorify()).fit(frame).save(url, storage_options=options)
    loaded = irs.Workflow.load(url, storage_options=options)  # not downloaded at load
    assert _reused(irs.Workflow(["c"] >> ops.Categorify(), storage_options=options).fit(
        frame, reuse=loaded)) == ["categorify-1"]
    local = _tamper(str(irs.Workflow(["c"] >> ops.Categorify()).fit(frame).save(
        tmp_path / "local")))
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
    fs.put_file(local, f"{bucket}/wf/artifacts/categorify-1/vocab-000/part.00000.parquet")
    tampered = irs.Workflow.load(url, storage_options=options)
    with pytest.raises(WorkflowFormatError, match="changed after the workflow was saved"):
        irs.Workflow(["c"] >> ops.Categorify()).fit(frame, reuse=tampered)
    with pytest.raises(WorkflowFormatError, match="changed after the workflow was saved"):
        tampered.update(frame)


@pytest.mark.parametrize("files", [1, 3], ids=["same-names", "a-file-gone"])
def test_a_dataset_of_an_output_written_again_is_not_keyed_by_the_new_files(tmp_path, files):
    """The key of a Dataset over a local output is of the files it opened: after the output
    was written again (same names, new bytes), a fit of the new output is not reused for it,
    and a file gone is the "open the Dataset again" error, not a raw FileNotFoundError."""
    path = str(tmp_path / "out")
    irs.Dataset(pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})).to_parquet(
        path, out_files_per_proc=files, shuffle=None)
    stale = irs.Dataset(path)
    irs.Dataset(pd.DataFrame({"x": [10.0, 20.0, 30.0, 40.0]})).to_parquet(  # as many rows
        path, overwrite=True, out_files_per_proc=1, shuffle=None)
    of_new = irs.Workflow(["x"] >> ops.Normalize()).fit(irs.Dataset(path))
    with pytest.raises(DatasetError, match="after this Dataset was opened.*Open the Dataset "
                                           "again"):
        irs.Workflow(["x"] >> ops.Normalize()).fit(stale, reuse=of_new)
