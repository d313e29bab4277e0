"""The commit protocol of outputs in object storage, against a real S3-protocol server
(moto's, in its own process): issue 40, items 5, 6, 10, 11 and 13.

* ``irs clean`` never removes a live writer's staging (its lease is fresh) and refuses an
  ``--older-than`` below the lease age; a writer checks its staging before it publishes.
* Deletion acts on checked, exact names only: a ``*`` in any manifest or claim deletes
  nothing.
* Only the writer that claimed a publish, or a roll-forward once its lease expired, may
  finish it; readers only read; a writer whose publish was finished for it says so truly.
* Readers with a stale listing re-list; local and remote folders are both read as the
  files their manifest lists.
"""

from __future__ import annotations

import json
import threading
import time

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import s3fs

import interactive_recsys as irs
from interactive_recsys.cli._main import main
from interactive_recsys.errors import DatasetError
from interactive_recsys.store import _lease as lease
from interactive_recsys.store import commit, storage
from tests import s3_server


def _raw(s3: s3_server.S3Server) -> s3fs.S3FileSystem:
    """The store as another process sees it: its own client, no shared listing cache."""
    return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False,
                             **s3.options())


def _keys(s3, prefix: str) -> dict[str, int]:
    return {k: v["size"] for k, v in _raw(s3).find(prefix, detail=True).items()}


def _frame(rows: int, start: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"x": np.arange(start, start + rows, dtype="float64"),
                         "label": np.arange(rows) % 2})


def _write(df: pd.DataFrame, url: str, opts: dict, parts: int = 3, **kwargs) -> dict:
    return irs.Dataset(dd.from_pandas(df, npartitions=parts)).to_parquet(
        url, storage_options=opts, **kwargs)


def _read(url: str, opts: dict) -> list[float]:
    return sorted(irs.Dataset(url, storage_options=opts).compute()["x"].tolist())


def _interrupt(url: str, opts: dict, new: pd.DataFrame, monkeypatch) -> None:
    """Overwrite ``url`` with ``new`` while the store drops the connection at the second
    copy into the folder: committed, not finished; the writer gives up its lease."""
    _interrupted_save(url, opts, lambda: _write(new, url, opts, parts=2, overwrite=True),
                      monkeypatch)


# ---- item 5: irs clean and a live writer ------------------------------------------------------
@pytest.mark.parametrize("hours", ["0", "-1", "nan", "inf", "0.1"])
def test_clean_refuses_an_older_than_below_the_lease_age(hours, s3, bucket, capsys, tmp_path):
    url, opts = f"s3://{bucket}/out", s3.options()
    stale = f"{bucket}/out/_temporary/20200101000000-0123abcd/part.00000.parquet"
    _raw(s3).pipe_file(stale, b"x")
    for path in (url, str(tmp_path / "local")):
        assert main(["clean", path, "--older-than", hours, "--storage-options",
                     json.dumps(opts)]) == 2
        err = capsys.readouterr().err
        assert "--older-than" in err and "lease" in err and "10 minutes" in err
    assert _raw(s3).exists(stale)  # refused before anything was touched
    assert main(["clean", url, "--older-than", "0.17", "--storage-options",
                 json.dumps(opts)]) == 0
    assert not _raw(s3).exists(stale)  # a dead writer's (no lease, started long ago)


def test_clean_keeps_the_staging_of_a_writer_whose_lease_is_fresh(s3, bucket, monkeypatch):
    url, opts = f"s3://{bucket}/live", s3.options()
    _write(_frame(40), url, opts)
    # a long write: its id says it started years ago, only its lease says it runs
    monkeypatch.setattr(commit, "_new_write_id", lambda: "20200101000000-0123abcd")
    new = _frame(25, 1000)
    with commit.remote_atomic_directory(url, opts, overwrite=True) as staging:
        import pyarrow as pa

        storage.write_table(pa.Table.from_pandas(new, preserve_index=False),
                            f"{staging}/part.00000.parquet", opts)
        commit.expect(staging, {"part.00000.parquet": None})
        for hours in ("0.17", "24"):
            assert main(["clean", url, "--older-than", hours, "--storage-options",
                         json.dumps(opts)]) == 0
        assert _raw(s3).exists(f"{storage.strip(staging)}/part.00000.parquet")
        assert lease.state(_raw(s3), f"{bucket}/live", "20200101000000-0123abcd") == "fresh"
    assert _read(url, opts) == sorted(new["x"])  # published whole, not a manifest of nothing
    assert not any("_temporary" in k for k in _keys(s3, f"{bucket}/live"))


def test_a_writer_whose_staging_lost_files_publishes_nothing(s3, bucket, monkeypatch):
    url, opts = f"s3://{bucket}/lost", s3.options()
    old = _frame(40)
    _write(old, url, opts)
    before = _keys(s3, f"{bucket}/lost")
    real_upload = storage.upload_directory

    def delete_parts_then_upload(local, staging, options=None):
        raw = _raw(s3)  # another process (say an older irs clean) removes the staged parts
        for key in raw.find(storage.strip(staging)):
            raw.rm_file(key)
        return real_upload(local, staging, options)

    monkeypatch.setattr(storage, "upload_directory", delete_parts_then_upload)
    with pytest.raises(DatasetError, match=r"Refusing to publish .*staged file\(s\) are gone.*"
                                           r"existing output.*untouched"):
        _write(_frame(30, 500), url, opts, overwrite=True)
    monkeypatch.undo()
    assert _keys(s3, f"{bucket}/lost") == before  # the old output, whole; no staging left
    assert _read(url, opts) == sorted(old["x"])
    with pytest.raises(DatasetError, match="holds no files"):
        with commit.remote_atomic_directory(f"s3://{bucket}/empty", opts):
            pass  # nothing staged: never a manifest without data
    assert not _keys(s3, f"{bucket}/empty")


# ---- item 6: a pattern in a manifest or a claim deletes nothing ------------------------------
def test_a_star_in_the_old_manifest_deletes_nothing(s3, bucket):
    url, opts = f"s3://{bucket}/star", s3.options()
    _write(_frame(40), url, opts)
    raw = _raw(s3)
    doc = json.loads(raw.cat_file(f"{bucket}/star/_SUCCESS"))
    doc["files"]["*"] = 0
    raw.pipe_file(f"{bucket}/star/_SUCCESS", json.dumps(doc).encode())
    before = _keys(s3, f"{bucket}/star")
    with pytest.raises(DatasetError, match=r"manifest 's3://.*/star/_SUCCESS' is damaged.*'\*'"):
        _write(_frame(10, 100), url, opts, overwrite=True)
    assert _keys(s3, f"{bucket}/star") == before
    with pytest.raises(DatasetError, match="glob character"):
        irs.Dataset(url, storage_options=opts)


def test_a_star_in_a_replaced_manifest_deletes_nothing_on_roll_forward(s3, bucket,
                                                                     monkeypatch):
    url, opts = f"s3://{bucket}/replaced", s3.options()
    _write(_frame(40), url, opts)
    new = _frame(12, 300)
    _interrupt(url, opts, new, monkeypatch)
    raw = _raw(s3)
    replaced = [k for k in raw.find(f"{bucket}/replaced") if k.endswith("/_REPLACED")]
    assert len(replaced) == 1
    raw.pipe_file(replaced[0], json.dumps({"format": "interactive-recsys-output",
                                           "files": {"*": 0}}).encode())
    before = _keys(s3, f"{bucket}/replaced")
    with pytest.raises(DatasetError, match=r"_REPLACED' is damaged.*glob"):
        commit.roll_forward(url, opts)
    assert _keys(s3, f"{bucket}/replaced") == before
    assert _read(url, opts) == sorted(new["x"])  # readers still read the committed output


def test_patterns_in_the_staging_folder_are_never_expanded(s3, bucket):
    url, opts = f"s3://{bucket}/pattern", s3.options()
    _write(_frame(40), url, opts)
    raw = _raw(s3)
    raw.pipe_file(f"{bucket}/pattern/_temporary/_publishing", b"*")  # a claim naming a glob
    raw.pipe_file(f"{bucket}/pattern/_temporary/*/_SUCCESS", b"")
    live = f"{bucket}/pattern/_temporary/20200101000000-0a0b0c0d"
    raw.pipe_file(f"{live}/part.00000.parquet", b"x")
    raw.pipe_file(f"{live}.lease", json.dumps({"renewed": time.time(),
                                               "lease_seconds": 600}).encode())
    published = {k: v for k, v in _keys(s3, f"{bucket}/pattern").items() if "_temporary" not in k}
    assert main(["clean", url, "--storage-options", json.dumps(opts)]) == 0
    left = _keys(s3, f"{bucket}/pattern")
    assert f"{bucket}/pattern/_temporary/_publishing" not in left  # a dead claim: removed
    assert f"{bucket}/pattern/_temporary/*/_SUCCESS" in left  # not a writer's: left alone
    assert f"{live}/part.00000.parquet" in left  # a fresh lease: kept
    assert {k: v for k, v in left.items() if "_temporary" not in k} == published


# ---- item 13: only the claiming writer, or a roll-forward of a dead one, finishes -------------
class _BlockedCopy:
    """Holds a writer inside its first copy into the folder (after its commit)."""

    def __init__(self, fs, monkeypatch) -> None:
        self.started, self.release, self.real = threading.Event(), threading.Event(), fs.copy
        monkeypatch.setattr(fs, "copy", self)

    def __call__(self, src, dst, **kwargs):
        if not self.started.is_set():
            self.started.set()
            assert self.release.wait(120)
        return self.real(src, dst, **kwargs)


def _writer_in_thread(df, url, opts) -> tuple[threading.Thread, list]:
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(_write(df, url, opts, parts=2, overwrite=True))
        except BaseException as exc:  # reported to the test
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_a_live_writers_publish_is_left_to_it(s3, bucket, monkeypatch):
    url, opts = f"s3://{bucket}/busy", s3.options()
    _write(_frame(40), url, opts)
    new = _frame(16, 700)
    blocked = _BlockedCopy(storage.filesystem(url, opts), monkeypatch)
    thread, outcome = _writer_in_thread(new, url, opts)
    try:
        assert blocked.started.wait(120)
        assert commit.roll_forward(url, opts) is False  # its lease is fresh
        with pytest.raises(DatasetError, match="being published by another writer") as err:
            _write(_frame(5, 900), url, opts, overwrite=True)
        assert "delete" not in str(err.value)
        assert main(["clean", url, "--storage-options", json.dumps(opts)]) == 0
        assert _raw(s3).exists(f"{bucket}/busy/{storage.CLAIM}")
        assert _read(url, opts) == sorted(new["x"])  # readers read the committed output
        assert _raw(s3).exists(f"{bucket}/busy/{storage.CLAIM}")  # and finish nothing
    finally:
        blocked.release.set()
        thread.join(120)
    assert isinstance(outcome[0], dict), outcome  # no false PublishInterrupted
    assert _read(url, opts) == sorted(new["x"])
    assert not any("_temporary" in k for k in _keys(s3, f"{bucket}/busy"))


def test_a_writer_whose_publish_a_roll_forward_finished_reports_success(s3, bucket,
                                                                      monkeypatch):
    url, opts = f"s3://{bucket}/taken", s3.options()
    _write(_frame(40), url, opts)
    new = _frame(16, 800)
    blocked = _BlockedCopy(storage.filesystem(url, opts), monkeypatch)
    thread, outcome = _writer_in_thread(new, url, opts)
    try:
        assert blocked.started.wait(120)
        raw = _raw(s3)
        (lease_key,) = [k for k in raw.find(f"{bucket}/taken/_temporary")
                        if k.endswith(".lease")]
        raw.pipe_file(lease_key, json.dumps({"renewed": time.time() - 3600,
                                             "lease_seconds": 600}).encode())  # stalled
        assert commit.roll_forward(url, opts) is True  # the claim is dead: finished
        assert _read(url, opts) == sorted(new["x"])
    finally:
        blocked.release.set()
        thread.join(120)
    assert isinstance(outcome[0], dict), outcome  # published, and it says so
    assert outcome[0]["num_rows"] == 16
    assert _read(url, opts) == sorted(new["x"])
    assert not any("_temporary" in k for k in _keys(s3, f"{bucket}/taken"))


def test_readers_of_a_half_finished_publish_only_read(s3, bucket, monkeypatch):
    url, opts = f"s3://{bucket}/half", s3.options()
    _write(_frame(40), url, opts)
    new = _frame(14, 600)
    _interrupt(url, opts, new, monkeypatch)
    before = _keys(s3, f"{bucket}/half")
    ds = irs.Dataset(url, storage_options=opts)
    batches = list(irs.Loader(url, 8, storage_options=opts, output="numpy", cont_cols=["x"],
                              cat_cols=[], label_cols=["label"]))
    assert sorted(np.concatenate([b.dense[:, 0] for b in batches])) == sorted(new["x"])
    assert _keys(s3, f"{bucket}/half") == before  # nothing finished, nothing deleted
    assert main(["clean", url, "--storage-options", json.dumps(opts)]) == 0  # dead: finished
    assert not any("_temporary" in k for k in _keys(s3, f"{bucket}/half"))
    # the Dataset opened on the staged copy reads the published copy of the same files
    assert sorted(ds.compute()["x"].tolist()) == sorted(new["x"])


# ---- items 10 and 11: listings, and what a folder holds ---------------------------------------
def test_a_process_with_a_stale_listing_re_lists(s3, bucket):
    url, opts = f"s3://{bucket}/stale", s3.options()
    _write(_frame(40), url, opts)
    here = storage.filesystem(url, opts)
    here.find(f"{bucket}/stale")  # this process lists (and caches) the old output
    opened = irs.Dataset(url, storage_options=opts)
    other = {**opts, "default_block_size": 2**23}  # another client: as another process
    new = _frame(9, 400)
    _write(new, url, other, parts=1, overwrite=True)
    assert _read(url, opts) == sorted(new["x"])  # re-listed: the new output, whole
    with pytest.raises(DatasetError, match=r"is gone: the output it belongs to was written "
                                           r"again.*Open the Dataset again") as err:
        opened.compute()
    assert "_temporary" not in str(err.value) and "delete" not in str(err.value)


def test_a_file_added_to_an_output_folder_is_ignored_locally_and_in_s3(s3, bucket, tmp_path):
    opts, df = s3.options(), _frame(40)
    local, url = tmp_path / "out", f"s3://{bucket}/added"
    _write(df, str(local), opts)
    _write(df, url, opts)
    extra = _frame(6, 5000)
    extra.to_parquet(local / "added.parquet")
    extra.to_parquet(f"{url}/added.parquet", storage_options=opts)
    assert irs.Dataset(str(local)).num_rows == irs.Dataset(url, storage_options=opts).num_rows \
        == len(df)  # both sides trust the manifest
    # pandas knows no manifest: it reads the added file on both sides
    assert len(pd.read_parquet(local)) == len(pd.read_parquet(url, storage_options=opts)) \
        == len(df) + 6


def _interrupted_save(url: str, opts: dict, save, monkeypatch) -> None:
    """Run ``save()`` while the store drops the connection at its second copy into ``url``."""
    fs = storage.filesystem(url, opts)
    real, calls = fs.copy, []

    def drop(src, dst, **kwargs):
        calls.append(dst)
        if len(calls) == 2:
            raise ConnectionError("Connection was closed before the request completed")
        return real(src, dst, **kwargs)

    monkeypatch.setattr(fs, "copy", drop)
    try:
        with pytest.raises(commit.PublishInterrupted):
            save()
    finally:
        monkeypatch.undo()


def test_saved_models_and_workflows_being_published_are_only_read(s3, bucket, monkeypatch):
    from interactive_recsys import ops
    from interactive_recsys.models import EASE, load

    opts = s3.options()
    rng = np.random.default_rng(0)
    inter = pd.DataFrame({"user_id": rng.integers(0, 30, 400),
                          "item_id": rng.integers(0, 20, 400)})
    model_url = f"s3://{bucket}/model"
    EASE().fit(inter.iloc[:100]).save(model_url, storage_options=opts)
    newer = EASE().fit(inter)
    _interrupted_save(model_url, opts, lambda: newer.save(model_url, overwrite=True,
                                                          storage_options=opts), monkeypatch)
    before = _keys(s3, f"{bucket}/model")
    back = load(model_url, storage_options=opts)  # the committed model, from its staged copy
    np.testing.assert_allclose(back.score_frame(inter)[1], newer.score_frame(inter)[1])
    assert _keys(s3, f"{bucket}/model") == before  # read only

    wf_url = f"s3://{bucket}/wf"
    df = pd.DataFrame({"c": [f"v{i % 5}" for i in range(50)]})
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(df)
    wf.save(wf_url, storage_options=opts)
    _interrupted_save(wf_url, opts, lambda: wf.save(wf_url, overwrite=True,
                                                    storage_options=opts), monkeypatch)
    before = _keys(s3, f"{bucket}/wf")
    with pytest.raises(DatasetError, match=r"is being published.*irs clean"):
        irs.Workflow.load(wf_url, storage_options=opts)
    assert _keys(s3, f"{bucket}/wf") == before
    assert main(["clean", wf_url, "--storage-options", json.dumps(opts)]) == 0
    loaded = irs.Workflow.load(wf_url, storage_options=opts)
    pd.testing.assert_frame_equal(loaded.transform(df), wf.transform(df))


def test_a_reader_drops_cached_listings_of_every_folder_under_the_output(s3, bucket):
    """s3fs's own ``invalidate_cache(folder)`` keeps the listings of the folders under it
    (a staged copy's, say); a reader drops them all before it lists the output."""
    url, opts = f"s3://{bucket}/cached", s3.options()
    _write(_frame(20), url, opts)
    here = storage.filesystem(url, opts)
    sub = f"{bucket}/cached/sub"
    _raw(s3).pipe_file(f"{sub}/a.txt", b"a")
    assert len(here.ls(sub)) == 1  # listed and cached here
    _raw(s3).pipe_file(f"{sub}/b.txt", b"b")  # another process adds a file
    here.invalidate_cache(f"{bucket}/cached")
    assert len(here.ls(sub)) == 1  # what fsspec alone leaves behind: the stale listing
    storage.published_files(url, opts)
    assert len(here.ls(sub)) == 2  # the reader dropped it: listed afresh
