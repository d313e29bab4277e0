"""Inputs, outputs and artifacts in object storage, against a real S3-protocol server.

moto's standalone server runs as its own process (:mod:`tests.s3_server`), reached over HTTP
through s3fs with ``endpoint_url``: what the library sends is what an S3 store receives.
The expectations are independent: the same data and workflow run on local files, pandas
reading the published folders, and the store's own listing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

import s3fs

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError
from interactive_recsys.store import commit, storage
from tests import s3_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _fs(s3: s3_server.S3Server) -> s3fs.S3FileSystem:
    return s3fs.S3FileSystem(skip_instance_cache=True, **s3.options())


def _frame(rows: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"user": rng.integers(0, 50, rows),
                         "c": [f"v{i}" for i in rng.integers(0, 30, rows)],
                         "x": rng.normal(size=rows),
                         "label": rng.integers(0, 2, rows)})


# ---- datasets and the commit protocol --------------------------------------------------------
def test_to_parquet_publishes_a_manifest_that_lists_every_file_and_reads_back(s3, bucket):
    df = _frame()
    url = f"s3://{bucket}/out"
    summary = irs.Dataset(df, part_size="4kB").to_parquet(url, storage_options=s3.options())
    assert summary["path"] == url and len(summary["files"]) > 1
    fs = _fs(s3)
    listed = {k.split("/out/", 1)[1]: v["size"] for k, v in
              fs.find(f"{bucket}/out", detail=True).items()}
    manifest = json.loads(fs.cat_file(f"{bucket}/out/_SUCCESS"))
    del listed["_SUCCESS"]
    assert manifest["files"] == listed  # every file, with its size, nothing else
    assert not any(k.startswith("_temporary") for k in listed)  # staging removed
    back = irs.Dataset(url, storage_options=s3.options())
    pd.testing.assert_frame_equal(back.compute().astype(object),
                                  irs.Dataset(df).compute().astype(object))
    # other tools read the published folder as plain parquet
    theirs = pd.read_parquet(url, storage_options=s3.options())
    assert theirs["x"].tolist() == df["x"].tolist()


def test_csv_and_globs_from_s3_read_like_local_files(s3, bucket, tmp_path):
    df = _frame(120)
    fs = _fs(s3)
    for i in range(2):
        with fs.open(f"{bucket}/raw/day_{i}.csv", "w") as f:
            df.iloc[i * 60:(i + 1) * 60].to_csv(f, index=False)
        df.iloc[i * 60:(i + 1) * 60].to_csv(tmp_path / f"day_{i}.csv", index=False)
    remote = irs.Dataset(f"s3://{bucket}/raw/day_*.csv", storage_options=s3.options())
    local = irs.Dataset(str(tmp_path / "day_*.csv"))
    assert remote.files == [f"s3://{bucket}/raw/day_{i}.csv" for i in range(2)]
    pd.testing.assert_frame_equal(remote.compute(), local.compute())
    folder = irs.Dataset(f"s3://{bucket}/raw/", storage_options=s3.options())
    assert folder.num_rows == 120


def test_an_incomplete_output_is_refused_naming_the_folder(s3, bucket):
    url = f"s3://{bucket}/out"
    irs.Dataset(_frame(), part_size="4kB").to_parquet(url, storage_options=s3.options())
    fs = _fs(s3)
    fs.pipe_file(f"{bucket}/out/part.00001.parquet", b"truncated")  # another size
    with pytest.raises(DatasetError, match=r"'s3://.*/out' is not a complete output.*"
                                           r"part.00001.parquet"):
        irs.Dataset(url, storage_options=s3.options())
    fs.rm_file(f"{bucket}/out/part.00001.parquet")
    with pytest.raises(DatasetError, match="listed in its manifest, is missing"):
        irs.Loader(url, 8, storage_options=s3.options(), output="numpy")


def test_existing_output_input_as_output_and_a_failed_overwrite_keep_the_old_output(
        s3, bucket):
    url = f"s3://{bucket}/out"
    old = _frame(seed=1)
    irs.Dataset(old).to_parquet(url, storage_options=s3.options())
    with pytest.raises(DatasetError, match="already exists"):
        irs.Dataset(_frame()).to_parquet(url, storage_options=s3.options())
    source = irs.Dataset(url, storage_options=s3.options())
    with pytest.raises(DatasetError, match="it is or contains the input"):
        source.to_parquet(url, overwrite=True)
    with pytest.raises(DatasetError, match="whole bucket"):
        irs.Dataset(old).to_parquet(f"s3://{bucket}", storage_options=s3.options())

    def fail_late(part: pd.DataFrame) -> pd.DataFrame:
        if len(part) and part.index[-1] == len(new) - 1:  # the last partition
            raise RuntimeError("the job failed while writing")
        return part

    new = _frame(seed=2)
    failing = irs.Dataset(dd.from_pandas(new, npartitions=4).map_partitions(fail_late))
    with pytest.raises(RuntimeError, match="failed while writing"):
        failing.to_parquet(url, overwrite=True, storage_options=s3.options())
    kept = irs.Dataset(url, storage_options=s3.options()).compute()
    assert kept["x"].tolist() == old["x"].tolist()  # the old output, whole
    assert not _fs(s3).exists(f"{bucket}/out/_temporary")  # staging removed
    irs.Dataset(new).to_parquet(url, overwrite=True, storage_options=s3.options())
    assert irs.Dataset(url, storage_options=s3.options()).compute()["x"].tolist() == \
        new["x"].tolist()


def _interrupt_publishing(s3, url: str, new: pd.DataFrame, monkeypatch) -> None:
    """Overwrite ``url`` with ``new`` while the store drops the connection at the second
    server-side copy into the folder: after the commit, before the new manifest."""
    opts = s3.options()
    fs = storage.filesystem(url, opts)  # fsspec's cached instance: the one the writer uses
    real_copy, calls = fs.copy, []

    def copy_then_drop(src, dst, **kwargs):
        calls.append(dst)
        if len(calls) == 2:
            raise ConnectionError("Connection was closed before the request completed")
        return real_copy(src, dst, **kwargs)

    monkeypatch.setattr(fs, "copy", copy_then_drop)
    try:
        with pytest.raises(commit.PublishInterrupted,
                           match=r"committed before this: it is whole in .*readers use it"):
            irs.Dataset(dd.from_pandas(new, npartitions=2)).to_parquet(
                url, overwrite=True, storage_options=opts)
    finally:
        monkeypatch.undo()
    assert len(calls) == 2


def _folder_as_other_tools_read_it(s3, bucket: str, name: str) -> pd.DataFrame:
    return pd.read_parquet(f"s3://{bucket}/{name}", storage_options=s3.options())


def test_an_overwrite_interrupted_while_copying_is_read_whole_and_rolled_forward(
        s3, bucket, monkeypatch):
    url, opts = f"s3://{bucket}/roll", s3.options()
    old, new = _frame(seed=1), _frame(120, seed=2)
    irs.Dataset(dd.from_pandas(old, npartitions=6)).to_parquet(url, storage_options=opts)
    _interrupt_publishing(s3, url, new, monkeypatch)
    raw = _fs(s3)
    assert not raw.exists(f"{bucket}/roll/_SUCCESS")  # the old manifest is gone...
    # ...yet a reader gets the committed output whole, never the old parts or a mix
    assert irs.Dataset(url, storage_options=opts).compute()["x"].tolist() == new["x"].tolist()
    assert commit.roll_forward(url, opts) is True
    raw.invalidate_cache()
    left = raw.find(f"{bucket}/roll")
    assert not any("/_temporary/" in k for k in left)
    assert sum(k.endswith(".parquet") for k in left) == 2  # the old output's 6 parts removed
    assert sorted(_folder_as_other_tools_read_it(s3, bucket, "roll")["x"]) == sorted(new["x"])
    assert irs.Dataset(url, storage_options=opts).compute()["x"].tolist() == new["x"].tolist()
    assert commit.roll_forward(url, opts) is False  # nothing left to finish


def test_the_next_write_or_irs_clean_finishes_an_interrupted_publish(s3, bucket, monkeypatch):
    from interactive_recsys.cli._main import main

    url, opts = f"s3://{bucket}/next", s3.options()
    irs.Dataset(dd.from_pandas(_frame(seed=1), npartitions=5)).to_parquet(
        url, storage_options=opts)
    new = _frame(90, seed=3)
    _interrupt_publishing(s3, url, new, monkeypatch)
    with pytest.raises(DatasetError, match="already exists"):  # the committed output, kept
        irs.Dataset(_frame(seed=4)).to_parquet(url, storage_options=opts)
    assert sorted(_folder_as_other_tools_read_it(s3, bucket, "next")["x"]) == sorted(new["x"])

    newer = _frame(50, seed=5)
    _interrupt_publishing(s3, url, newer, monkeypatch)
    assert main(["clean", url, "--storage-options", json.dumps(opts)]) == 0
    assert not _fs(s3).exists(f"{bucket}/next/_temporary")
    assert sorted(_folder_as_other_tools_read_it(s3, bucket, "next")["x"]) == sorted(newer["x"])

    newest = _frame(40, seed=6)  # a loader reads the staged copy (and its _schema.json)...
    _interrupt_publishing(s3, url, newest, monkeypatch)
    batches = list(irs.Loader(url, 16, storage_options=opts, output="numpy", cont_cols=["x"],
                              cat_cols=[], label_cols=["label"]))
    assert sorted(np.concatenate([b.dense[:, 0] for b in batches])) == \
        pytest.approx(sorted(newest["x"]), rel=1e-6)
    assert _fs(s3).exists(f"{bucket}/next/{storage.CLAIM}")  # ...and, only reading, finishes nothing


def test_a_killed_writer_leaves_nothing_a_reader_accepts(s3, bucket, tmp_path):
    url = f"s3://{bucket}/killed"
    script = textwrap.dedent(f"""
        import time, numpy as np, pandas as pd, dask, dask.dataframe as dd
        import interactive_recsys as irs
        def slow(part):
            time.sleep(0.5)
            return part
        df = pd.DataFrame({{"x": np.arange(4000.0)}})
        ds = irs.Dataset(dd.from_pandas(df, npartitions=40).map_partitions(slow))
        with dask.config.set(scheduler="synchronous"):
            ds.to_parquet({url!r}, storage_options={s3.options()!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=str(tmp_path),
                            env=dict(os.environ, PYTHONPATH=ROOT))
    fs = _fs(s3)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not fs.find(f"{bucket}/killed"):
        time.sleep(0.2)
        fs.invalidate_cache()
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    fs.invalidate_cache()
    left = fs.find(f"{bucket}/killed")
    assert left and all("/_temporary/" in k for k in left)  # staged parts, not published
    with pytest.raises(DatasetError, match="not a complete output"):
        irs.Dataset(url, storage_options=s3.options())
    with pytest.raises(DatasetError, match="not a complete output"):
        irs.Loader(url, 8, storage_options=s3.options(), output="numpy")
    # a new write with overwrite replaces it
    irs.Dataset(pd.DataFrame({"x": [1.0]})).to_parquet(url, overwrite=True,
                                                      storage_options=s3.options())
    assert irs.Dataset(url, storage_options=s3.options()).num_rows == 1


# ---- failures of the store -------------------------------------------------------------------
def test_a_missing_bucket_is_a_clear_error(s3):
    with pytest.raises(storage.StorageError, match=r"s3://no-such-bucket-irs/out.*bucket"):
        irs.Dataset(_frame()).to_parquet("s3://no-such-bucket-irs/out",
                                         storage_options=s3.options())
    with pytest.raises((storage.StorageError, DatasetError), match="no-such-bucket-irs"):
        irs.Dataset("s3://no-such-bucket-irs/data/", storage_options=s3.options())


def test_bad_credentials_are_a_clear_error_with_nothing_published(tmp_path):
    """A second server with authentication on (moto checks signatures against its IAM users
    once ``INITIAL_NO_AUTH_ACTION_COUNT`` requests were served)."""
    boto3 = pytest.importorskip("boto3")
    server = s3_server.start(env={"INITIAL_NO_AUTH_ACTION_COUNT": "4"})
    try:
        iam = boto3.client("iam", endpoint_url=server.endpoint, region_name="us-east-1",
                           aws_access_key_id="x", aws_secret_access_key="x")
        iam.create_user(UserName="irs")
        iam.put_user_policy(UserName="irs", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="irs")["AccessKey"]
        good = server.options(key["AccessKeyId"], key["SecretAccessKey"])
        boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                     aws_access_key_id=key["AccessKeyId"],
                     aws_secret_access_key=key["SecretAccessKey"]).create_bucket(
            Bucket="irs-auth")
        bad = server.options(key["AccessKeyId"], "not-the-secret")
        with pytest.raises(storage.StorageError, match=r"s3://irs-auth/out.*credentials"):
            irs.Dataset(_frame()).to_parquet("s3://irs-auth/out", storage_options=bad)
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **good)
        assert fs.find("irs-auth") == []  # nothing published, nothing staged
        with pytest.raises(storage.StorageError, match="credentials"):
            irs.Dataset("s3://irs-auth/", storage_options=bad)
    finally:
        server.stop()


class _Proxy:
    """A TCP proxy to the S3 server whose connections can be dropped mid-request."""

    def __init__(self, port: int) -> None:
        self.target, self.dropped, self.sockets = port, False, []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self.dropped:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop(self) -> None:
        self.dropped = True
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.drop()
        self.server.close()


class ConnectionClosedError(Exception):
    """Named as botocore's: the kind of failure is read from the type's name and message."""


class ClientError(Exception):
    """Named as botocore's."""


@pytest.mark.parametrize(("exc", "expected"), [
    # a write's temporary folder is named by its time: "403" inside a URL is not a status
    (ConnectionClosedError("Connection was closed before we received a valid response from "
                           'endpoint URL: "http://127.0.0.1:43345/b/out/_temporary/'
                           '20261125164039-b271f759/part.00000.parquet".'), "cannot be reached"),
    (ConnectionClosedError("Connection was closed: http://host/credentials-bucket/x"),
     "cannot be reached"),
    (ClientError("An error occurred (403) when calling the HeadObject operation: Forbidden"),
     "check the credentials"),
    (ClientError("An error occurred (AccessDenied) when calling the PutObject operation"),
     "check the credentials"),
    (ClientError("An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation"),
     "bucket does not exist"),
])
def test_a_store_error_says_what_to_check_from_its_words_not_from_the_urls(exc, expected):
    from interactive_recsys.store.storage import storage_error

    err = storage_error("s3://b/out/_temporary/20261125164039-b271f759/part.0.parquet", exc)
    assert expected in str(err) and "s3://b/out/_temporary/20261125164039" in str(err)


def test_a_dropped_connection_mid_write_is_a_clear_error_with_nothing_published(s3, bucket):
    proxy = _Proxy(s3.port)
    options = s3.options()
    options["client_kwargs"] = {**options["client_kwargs"],
                                "endpoint_url": f"http://127.0.0.1:{proxy.port}"}
    options["config_kwargs"] = {"retries": {"max_attempts": 1}, "connect_timeout": 2,
                                "read_timeout": 5}
    class DropAtTheThird:  # the first parts were written, the rest cannot be
        seen = 0

        def __call__(self, part: pd.DataFrame) -> pd.DataFrame:
            if len(part):
                DropAtTheThird.seen += 1
                if DropAtTheThird.seen == 3:
                    proxy.drop()
            return part

        def __dask_tokenize__(self) -> str:
            return "drop-at-the-third"

    df = _frame(400)
    ds = irs.Dataset(dd.from_pandas(df, npartitions=5).map_partitions(DropAtTheThird()))
    url = f"s3://{bucket}/out"
    try:
        with dask.config.set(scheduler="synchronous"), \
                pytest.raises(storage.StorageError, match=r"s3://.*/out.*(reached|network)"):
            ds.to_parquet(url, storage_options=options)
    finally:
        proxy.close()
    fs = _fs(s3)
    assert not fs.exists(f"{bucket}/out/_SUCCESS")
    assert all("/_temporary/" in k for k in fs.find(f"{bucket}/out"))  # at most staged parts
    with pytest.raises(DatasetError, match="not a complete output|does not exist"):
        irs.Dataset(url, storage_options=s3.options())


# ---- workflows, the loader, models and the command line --------------------------------------
def _workflow(**kwargs) -> irs.Workflow:
    graph = ((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize())
             + (["c"] >> ops.TargetEncoding("label")) + ["label"])
    return irs.Workflow(graph, **kwargs)


def test_workflow_with_artifacts_in_s3_saves_and_loads_there(s3, bucket, tmp_path):
    df, opts = _frame(), s3.options()
    wf = _workflow(artifacts_dir=f"s3://{bucket}/artifacts", storage_options=opts)
    wf.fit(df)
    fs = _fs(s3)
    assert any(k.endswith(".parquet") for k in fs.find(f"{bucket}/artifacts"))
    local = _workflow().fit(df)
    pd.testing.assert_frame_equal(wf.transform(df), local.transform(df))
    wf.save(f"s3://{bucket}/wf")
    manifest = json.loads(fs.cat_file(f"{bucket}/wf/_SUCCESS"))
    assert "workflow.json" in manifest["files"]
    assert any(f.startswith("artifacts/categorify-") for f in manifest["files"])
    loaded = irs.Workflow.load(f"s3://{bucket}/wf", storage_options=opts)
    assert loaded.artifacts_dir == f"s3://{bucket}/wf/artifacts"  # read there, not copied
    pd.testing.assert_frame_equal(loaded.transform(df), local.transform(df))
    loaded.save(tmp_path / "wf")  # and to a local folder, with its own manifest
    assert json.loads((tmp_path / "wf" / "_SUCCESS").read_text())["files"]
    pd.testing.assert_frame_equal(irs.Workflow.load(tmp_path / "wf").transform(df),
                                  local.transform(df))
    fs.rm_file(f"{bucket}/wf/workflow.json")
    with pytest.raises(DatasetError, match="not a complete output"):
        irs.Workflow.load(f"s3://{bucket}/wf", storage_options=opts)


def test_fit_reuse_from_a_folder_in_s3_copies_artifacts_there_and_sees_new_data(s3, bucket):
    """Input keyed by the store's ETags: a rewritten input is computed again."""
    df, opts = _frame(), s3.options()
    data = f"s3://{bucket}/data"
    irs.Dataset(df, part_size="4kB").to_parquet(data, storage_options=opts)
    ds = irs.Dataset(data, storage_options=opts)
    first = _workflow(artifacts_dir=f"s3://{bucket}/a1", storage_options=opts).fit(ds)
    first.save(f"s3://{bucket}/wf")
    graph = ((["c"] >> ops.Categorify()) + (["x"] >> ops.NormalizeMinMax())
             + (["c"] >> ops.TargetEncoding("label")) + ["label"])
    again = irs.Workflow(graph, artifacts_dir=f"s3://{bucket}/a2", storage_options=opts)
    again.fit(ds, reuse=f"s3://{bucket}/wf")
    assert {s.node_id: s.reused for s in again.fitted_steps()} == {
        "categorify-1": True, "normalizeminmax-3": False, "targetencoding-5": True}
    copied = _fs(s3).find(f"{bucket}/a2")
    assert any("categorify-1/vocab-000" in k for k in copied)
    assert any("targetencoding-5/" in k for k in copied)
    expected = irs.Workflow(graph).fit(df).transform(df)
    pd.testing.assert_frame_equal(again.transform(df), expected)
    irs.Dataset(_frame(seed=1), part_size="4kB").to_parquet(data, storage_options=opts,
                                                           overwrite=True)
    changed = irs.Workflow(graph, artifacts_dir=f"s3://{bucket}/a3", storage_options=opts)
    changed.fit(irs.Dataset(data, storage_options=opts), reuse=again)
    assert not any(s.reused for s in changed.fitted_steps())


def test_loader_reads_an_output_in_s3_like_the_local_one(s3, bucket, tmp_path):
    df = _frame()
    ds = irs.Dataset(df, part_size="4kB", tags={"c": ["categorical"], "x": ["continuous"],
                                                 "label": ["target"]})
    ds.to_parquet(f"s3://{bucket}/train", storage_options=s3.options())
    ds.to_parquet(str(tmp_path / "train"))
    kwargs = {"shuffle": True, "seed": 3, "output": "numpy", "cont_cols": ["x"],
              "cat_cols": [], "label_cols": ["label"]}
    remote = list(irs.Loader(f"s3://{bucket}/train", 64, storage_options=s3.options(),
                             **kwargs))
    local = list(irs.Loader(str(tmp_path / "train"), 64, **kwargs))
    assert len(remote) == len(local) > 1
    for a, b in zip(remote, local, strict=True):
        np.testing.assert_array_equal(a.dense, b.dense)
        np.testing.assert_array_equal(a.labels, b.labels)


def test_model_save_load_and_predict_output_in_s3(s3, bucket):
    from interactive_recsys.models import EASE, load

    rng = np.random.default_rng(0)
    inter = pd.DataFrame({"user_id": rng.integers(0, 40, 600),
                          "item_id": rng.integers(0, 25, 600)})
    model = EASE().fit(inter)
    url = f"s3://{bucket}/model"
    model.save(url, storage_options=s3.options())
    back = load(url, storage_options=s3.options())
    users, scores = model.score_frame(inter)
    users2, scores2 = back.score_frame(inter)
    np.testing.assert_array_equal(users, users2)
    np.testing.assert_allclose(scores, scores2)
    written = irs.predict_topk(back, inter, k=5, output=f"s3://{bucket}/top5",
                               storage_options=s3.options())
    expected = irs.predict_topk(model, inter, k=5).compute()
    got = irs.Dataset(f"s3://{bucket}/top5", storage_options=s3.options()).compute()
    assert written["num_rows"] == len(expected)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


def test_irs_run_reads_and_writes_s3_urls(s3, bucket, tmp_path):
    from interactive_recsys.cli._main import main

    df, opts = _frame(), s3.options()
    irs.Dataset(df).to_parquet(f"s3://{bucket}/in", storage_options=opts)
    wf = _workflow().fit(df)
    wf.save(f"s3://{bucket}/wf", storage_options=opts)
    args = ["run", "--workflow", f"s3://{bucket}/wf", "--input", f"s3://{bucket}/in",
            "--output", f"s3://{bucket}/out", "--local", "--storage-options", json.dumps(opts)]
    assert main(args) == 0
    got = irs.Dataset(f"s3://{bucket}/out", storage_options=opts).compute()
    pd.testing.assert_frame_equal(got, irs.Dataset(wf.transform(df)).compute())
    assert main(args) == 2  # exists: refused, as for a local output
    assert main([*args[:-1], "{not json"]) == 2


# ---- a cluster whose workers share no disk with the client ----------------------------------
#: Seconds a test's own scheduler and workers get to start and connect: a guard against a
#: hang only. On a busy machine (load 15 on 2 cores) a scheduler process took 40 s to answer.
START_S = 600.0


def _client(port: int, procs: list[subprocess.Popen], workers: int) -> Any:
    """A ``distributed.Client`` of the scheduler that ``procs[0]`` starts on ``port``, once
    ``workers`` workers joined; fails at once if one of ``procs`` exited."""
    from distributed import Client

    deadline = time.monotonic() + START_S
    while True:
        exited = [p.args for p in procs if p.poll() is not None]
        assert not exited, f"exited before the cluster was up: {exited}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                break
        except OSError:
            assert time.monotonic() < deadline, f"no scheduler on port {port} in {START_S} s"
            time.sleep(0.5)
    client = Client(f"tcp://127.0.0.1:{port}", timeout=START_S)
    try:
        client.wait_for_workers(workers, timeout=START_S)
    except BaseException:
        client.close()
        raise
    return client


def _private_tmp_prefix() -> list[str] | None:
    """``unshare`` giving a process its own empty /tmp (a user + mount namespace), if the
    system allows it: then the client's /tmp files do not exist for that process."""
    try:
        probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs none /tmp"],
                               capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return ["unshare", "-rm", "sh", "-c", 'mount -t tmpfs none /tmp && exec "$0" "$@"'] \
        if probe.returncode == 0 else None


@pytest.mark.slow
def test_criteo_workflow_s3_to_s3_on_workers_without_a_shared_disk(s3, bucket, tmp_path):
    """A scheduler and 2 worker processes, each with its own ``--local-directory`` and its
    own private /tmp, where the client's files (its data, a local artifacts folder) are
    not: everything the workers need must come through the store or the task graph."""
    from interactive_recsys.cli._main import standard_criteo_workflow
    from interactive_recsys.datasets import synthetic_criteo

    private = _private_tmp_prefix()
    if private is None:
        pytest.skip("unshare (user + mount namespaces) is not allowed here: the workers "
                    "could see the client's /tmp")
    opts = s3.options()
    data = synthetic_criteo(rows=6000, seed=1, path=tmp_path / "criteo", rows_per_file=2000)
    irs.Dataset(str(data), part_size="256kB").to_parquet(f"s3://{bucket}/criteo",
                                                         storage_options=opts)
    local_wf = standard_criteo_workflow()
    expected = local_wf.fit_transform(irs.Dataset(str(data), part_size="256kB")).compute()

    port = s3_server.free_port()
    env = dict(os.environ, PYTHONPATH=ROOT, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                               "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for i in range(2):
            procs.append(subprocess.Popen([*private, sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--memory-limit", "1GB", "--local-directory", f"/tmp/worker-{i}", "--no-dashboard"], env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with _client(port, procs, 2) as client:
            # the workers really cannot read the client's files
            seen = client.run(os.path.exists, str(data))
            assert set(seen.values()) == {False}, seen
            ds = irs.Dataset(f"s3://{bucket}/criteo", part_size="256kB",
                             storage_options=opts)
            assert ds.npartitions > 2
            wf = irs.Workflow(standard_criteo_workflow().output_node,
                              artifacts_dir=f"s3://{bucket}/artifacts", storage_options=opts)
            wf.fit(ds)
            wf.transform(ds).to_parquet(f"s3://{bucket}/processed")
            wf.save(f"s3://{bucket}/workflow")
            got = irs.Dataset(f"s3://{bucket}/processed", storage_options=opts).compute()
            pd.testing.assert_frame_equal(got, expected)
            # a workflow whose artifacts sit in the client's /tmp cannot run there: the
            # test would catch a hidden shared-disk assumption
            hidden = standard_criteo_workflow()
            with pytest.raises(FileNotFoundError, match="irs-artifacts-"):
                hidden.fit_transform(ds).compute()
            loaded = irs.Workflow.load(f"s3://{bucket}/workflow", storage_options=opts)
            again = loaded.transform(ds).compute()
            pd.testing.assert_frame_equal(again, expected)
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait(timeout=30)


def test_studio_model_reads_and_writes_s3_urls(s3, bucket):
    from interactive_recsys.ui.builder.model._model import BuilderModel

    df, opts = _frame(), s3.options()
    irs.Dataset(df).to_parquet(f"s3://{bucket}/day_0", storage_options=opts)
    model = BuilderModel(irs.Dataset(f"s3://{bucket}/day_0", storage_options=opts))
    assert model.default_output() == f"s3://{bucket}/day_0-processed"
    model.add_step(["c"], "Categorify")
    job = model.run(model.default_output())
    job.result(timeout=120)
    got = irs.Dataset(f"s3://{bucket}/day_0-processed", storage_options=opts).compute()
    expected = irs.Workflow(["c"] >> ops.Categorify()).fit_transform(df)
    assert got["c"].tolist() == expected["c"].tolist()
    # the fitted workflow beside the output, in the same store with the same options
    saved = irs.Workflow.load(f"s3://{bucket}/day_0-processed.workflow", storage_options=opts)
    assert saved.transform(df)["c"].tolist() == expected["c"].tolist()
    with pytest.raises(DatasetError, match="already exists"):
        model.run(model.default_output())


def test_racing_writers_to_one_new_url_one_wins_whole(s3, bucket):
    url, opts = f"s3://{bucket}/race", s3.options()
    frames = [_frame(seed=10), _frame(seed=11)]
    outcomes: list = [None, None]
    start = threading.Barrier(2)

    def write(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = irs.Dataset(frames[i], part_size="4kB").to_parquet(
                url, storage_options=opts)
        except DatasetError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    won = [i for i, o in enumerate(outcomes) if isinstance(o, dict)]
    lost = [o for o in outcomes if isinstance(o, DatasetError)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert "another writer" in str(lost[0]) or "already exists" in str(lost[0])
    got = irs.Dataset(url, storage_options=opts).compute()
    assert got["x"].tolist() == frames[won[0]]["x"].tolist()
    assert not _fs(s3).exists(f"{bucket}/race/_temporary")


def test_a_claim_left_by_a_writer_killed_while_publishing_is_named(s3, bucket):
    url, opts = f"s3://{bucket}/claimed", s3.options()
    _fs(s3).pipe_file(f"{bucket}/claimed/{storage.CLAIM}", b"killed-writer")
    with pytest.raises(DatasetError, match=r"being published by another writer.*irs clean"):
        irs.Dataset(_frame()).to_parquet(url, storage_options=opts, overwrite=True)
    with pytest.raises(DatasetError, match="not a complete output"):
        irs.Dataset(url, storage_options=opts)


def test_hugectr_files_are_for_local_outputs(s3, bucket):
    with pytest.raises(irs.errors.ParameterError, match="local output only"):
        irs.Dataset(_frame()).to_parquet(f"s3://{bucket}/h", hugectr=True,
                                         storage_options=s3.options())


def test_side_tables_and_embedding_statistics_with_artifacts_in_s3(s3, bucket):
    from interactive_recsys.stats import EmbeddingReport

    df, opts = _frame(), s3.options()
    side = pd.DataFrame({"user": np.arange(0, 50, 2), "group": [f"g{i % 4}" for i in range(25)]})
    graph = (["user"] >> ops.JoinExternal(side, on="user")) + (["c"] >> ops.Categorify())
    remote = irs.Workflow(graph, artifacts_dir=f"s3://{bucket}/art", storage_options=opts)
    remote.fit(df)
    assert any("side" in k for k in _fs(s3).find(f"{bucket}/art"))
    local = irs.Workflow(graph).fit(df)
    pd.testing.assert_frame_equal(remote.transform(df), local.transform(df))
    # the vocabulary's counts, read back from the store, are those of the data
    table = EmbeddingReport(remote).tables["c"]
    assert table.vocab_size == df["c"].nunique()
    freq = table.frequency  # ids per count value, from the vocabulary's count column
    assert int((freq.counts * freq.ids).sum()) == len(df)


def test_irs_clean_removes_old_staging_of_a_url(s3, bucket):
    from interactive_recsys.cli._main import main

    fs, opts = _fs(s3), s3.options()
    url = f"s3://{bucket}/out"
    irs.Dataset(_frame()).to_parquet(url, storage_options=opts)
    fs.pipe_file(f"{bucket}/out/_temporary/20200101000000-deadbeef/part.00000.parquet", b"x")
    recent = time.strftime("%Y%m%d%H%M%S", time.gmtime())
    fs.pipe_file(f"{bucket}/out/_temporary/{recent}-cafecafe/part.00000.parquet", b"x")
    assert main(["clean", url, "--storage-options", json.dumps(opts)]) == 0
    fs.invalidate_cache()
    left = [k.split("/_temporary/")[1] for k in fs.find(f"{bucket}/out/_temporary")]
    assert left == [f"{recent}-cafecafe/part.00000.parquet"]  # a write that may still run
    assert irs.Dataset(url, storage_options=opts).num_rows == 300  # the output untouched


def test_irs_predict_and_report_with_s3_urls(s3, bucket, tmp_path):
    import nbformat

    from interactive_recsys.cli._main import main
    from interactive_recsys.models import EASE

    fs, opts = _fs(s3), s3.options()
    rng = np.random.default_rng(1)
    inter = pd.DataFrame({"user_id": rng.integers(0, 30, 400),
                          "item_id": rng.integers(0, 20, 400)})
    model = EASE().fit(inter)
    model.save(f"s3://{bucket}/model", storage_options=opts)
    irs.Dataset(inter).to_parquet(f"s3://{bucket}/users", storage_options=opts)
    so = ["--storage-options", json.dumps(opts)]
    assert main(["predict", "--model", f"s3://{bucket}/model", "--users", f"s3://{bucket}/users",
                 "--k", "3", "--output", f"s3://{bucket}/top", "--local", *so]) == 0
    got = irs.Dataset(f"s3://{bucket}/top", storage_options=opts).compute()
    want = irs.predict_topk(model, inter, k=3).compute()
    key = ["user_id", "rank"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  want.sort_values(key).reset_index(drop=True))

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("6 * 7", execution_count=1, outputs=[
        nbformat.v4.new_output("execute_result", {"text/plain": "4242"}, execution_count=1)])]
    fs.pipe_file(f"{bucket}/nb/run.ipynb", nbformat.writes(nb).encode())
    assert main(["report", f"s3://{bucket}/nb/run.ipynb", *so]) == 0  # beside it: run.html
    assert "4242" in fs.cat_file(f"{bucket}/nb/run.html").decode()
    assert main(["report", f"s3://{bucket}/nb/missing.ipynb", *so]) == 2


@pytest.mark.slow
def test_a_temporary_artifacts_folder_is_refused_when_workers_are_elsewhere():
    """A worker that advertises another machine's address (``--contact-address``): a
    workflow without ``artifacts_dir`` is refused before any task, naming the fix."""
    port, wport = s3_server.free_port(), s3_server.free_port()
    env = dict(os.environ, PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                               "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen([
            sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
            "--listen-address", f"tcp://127.0.0.1:{wport}",
            "--contact-address", f"tcp://10.255.255.1:{wport}", "--nthreads", "1",
            "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with _client(port, procs, 1):
            wf = _workflow()
            with pytest.raises(irs.errors.ParameterError,
                               match=r"10\.255\.255\.1.*other machines.*artifacts_dir="):
                wf.fit(_frame())
            assert not wf.fitted and wf.artifacts_dir is None
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait(timeout=30)
