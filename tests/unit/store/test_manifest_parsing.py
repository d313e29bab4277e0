"""The ``_SUCCESS`` manifest is parsed strictly wherever it is read (issue 40, items 4, 6,
11 and 17): hostile or damaged manifests give a clear error naming the manifest, never a
raw ``UnicodeDecodeError``/``OverflowError``, never a look outside the folder; and a local
output folder is read as the files its manifest lists, as one in a store is."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import DatasetError
from interactive_recsys.store import _manifest as manifest
from interactive_recsys.store import storage


def _manifest(files: object) -> str:
    return json.dumps({"format": manifest.MANIFEST_FORMAT, "write_id": "w1", "files": files})


def _frame(rows: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"x": range(rows), "c": [f"v{i % 7}" for i in range(rows)]})


BAD = {
    "dot-dot": (_manifest({"../secret.bin": 12345}), r"'\.\./secret\.bin' is refused.*'\.\.'"),
    "inner dot-dot": (_manifest({"a/../../secret.bin": 1}), "'..' part"),
    "absolute": (_manifest({"/etc/passwd": 1}), "absolute path"),
    "drive": (_manifest({"C:/x.parquet": 1}), "absolute path"),
    "glob star": (_manifest({"*": 0}), "glob character"),
    "glob class": (_manifest({"part[0-9].parquet": 0}), "glob character"),
    "backslash": (_manifest({"..\\secret.bin": 1}), "backslash"),
    "empty part": (_manifest({"a//b.parquet": 1}), "empty"),
    "staging": (_manifest({"_temporary/w/part.parquet": 1}), "staging folder"),
    "itself": (_manifest({"_SUCCESS": 1}), "the manifest itself"),
    "control char": (_manifest({"a\nb.parquet": 1}), "control character"),
    "not utf-8": (b'{"format": "interactive-recsys-output", "files": {"\xff": 1}}',
                  "not UTF-8"),
    "Infinity": ('{"format": "interactive-recsys-output", "files": {"a.parquet": Infinity}}',
                 "Infinity is not a number JSON allows"),
    "NaN": ('{"format": "interactive-recsys-output", "files": {"a.parquet": NaN}}',
            "NaN is not a number JSON allows"),
    "1e400": ('{"format": "interactive-recsys-output", "files": {"a.parquet": 1e400}}',
              "size of 'a.parquet' is inf, not a whole number"),
    "float": (_manifest({"a.parquet": 1.5}), "not a whole number"),
    "negative": (_manifest({"a.parquet": -1}), "not a whole number"),
    "huge": (_manifest({"a.parquet": 2**64}), "not a whole number"),
    "bool": (_manifest({"a.parquet": True}), "not a whole number"),
    "string size": (_manifest({"a.parquet": "10"}), "not a whole number"),
    "duplicate": ('{"format": "interactive-recsys-output", "files": {"a.parquet": 1, '
                  '"a.parquet": 2}}', "given twice"),
    "files a list": (_manifest(["a.parquet"]), "'files' is not an object"),
    "other format": (json.dumps({"format": "spark", "files": {}}), "not a 'interactive"),
    "not json": ("{'files': {}}", r"not valid JSON \(.*line 1 column 2"),
    "deep": ("[" * 100000 + "]" * 100000, "nested too deeply|not valid JSON|not a 'inter"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_manifest_is_a_format_error_naming_the_file(case):
    text, expected = BAD[case]
    with pytest.raises(DatasetError, match=r"The manifest 'out/_SUCCESS' is damaged: ") as err:
        manifest.parse_manifest("out/_SUCCESS", text)
    assert err.match(expected)


@pytest.mark.parametrize("case", ["dot-dot", "not utf-8", "Infinity", "1e400", "glob star"])
def test_readers_of_a_local_folder_refuse_it_naming_the_manifest(case, tmp_path):
    out = tmp_path / "out"
    irs.Dataset(_frame()).to_parquet(str(out))
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"s" * 12345)  # outside the folder: its size must never be shown
    text = BAD[case][0]
    (out / "_SUCCESS").write_bytes(text if isinstance(text, bytes) else text.encode())
    for read in (lambda: irs.Dataset(str(out)),
                 lambda: irs.Loader(str(out), 8, output="numpy"),
                 lambda: storage.published_files(str(out))):
        with pytest.raises(DatasetError) as err:
            read()
        message = str(err.value)
        assert f"The manifest {str(out / '_SUCCESS')!r} is damaged" in message
        assert "12345 bytes" not in message and "has 12345" not in message


def test_a_manifest_listing_a_file_outside_the_folder_does_not_look_at_it(tmp_path,
                                                                        monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"s" * 12345)
    (out / "_SUCCESS").write_text(_manifest({"../secret.bin": 1}))
    looked: list[str] = []
    real = os.path.getsize
    monkeypatch.setattr(os.path, "getsize", lambda p: looked.append(str(p)) or real(p))
    with pytest.raises(DatasetError, match="is refused") as err:
        storage.published_files(str(out))
    assert looked == [] and "12345" not in str(err.value)


def test_a_writer_refuses_to_publish_names_readers_would_refuse():
    with pytest.raises(DatasetError, match=r"Cannot publish a file named '\*'.*glob"):
        manifest.manifest_text({"*": 1}, "w1")
    assert json.loads(manifest.manifest_text({"a/b.parquet": 3}, "w1"))["files"] == \
        {"a/b.parquet": 3}


def test_a_file_added_to_a_local_output_is_not_read(tmp_path):
    out = tmp_path / "out"
    df = _frame()
    irs.Dataset(df).to_parquet(str(out))
    _frame(7).to_parquet(out / "added.parquet")  # not in the manifest
    (out / "sub").mkdir()
    _frame(5).to_parquet(out / "sub" / "added.parquet")
    got = irs.Dataset(str(out)).compute()
    assert sorted(got["x"]) == sorted(df["x"])  # the manifest's files only, as in a store
    assert irs.Dataset(str(out / "*.parquet")).num_rows == len(df) + 7  # a glob reads files


def test_folders_without_a_manifest_still_read_every_data_file(tmp_path):
    folder = tmp_path / "other-tool"
    (folder / "day=1").mkdir(parents=True)
    _frame(10).to_parquet(folder / "a.parquet")
    _frame(6).to_parquet(folder / "day=1" / "b.parquet")
    _frame(3).to_parquet(folder / "_skipped.parquet")
    assert irs.Dataset(str(folder)).num_rows == 16
    (folder / "_SUCCESS").write_text("")  # Spark's empty marker: nothing to check
    assert irs.Dataset(str(folder)).num_rows == 16


def test_a_valid_manifest_reads_as_before(tmp_path):
    out = tmp_path / "out"
    df = _frame()
    summary = irs.Dataset(df, part_size="200B").to_parquet(str(out))
    listed = storage.published_files(str(out))
    names = {os.path.relpath(p, out) for p in listed}
    on_disk = {os.path.relpath(os.path.join(r, n), out) for r, _, ns in os.walk(out) for n in ns}
    assert names == on_disk - {"_SUCCESS"} and set(summary["files"]) < names
    for p in listed:
        assert Path(p).stat().st_size == json.loads((out / "_SUCCESS").read_text())["files"][
            os.path.relpath(p, out)]


# ---- issue 50, item 10: the manifest check is linear in its entries --------------------------
class _SyntheticStore:
    """A store folder of ``n`` files whose listing is built here (no file is written): the
    manifest check reads it through ``find`` and ``cat_file``, and every call is counted."""

    dircache: dict = {}

    def __init__(self, url: str, n: int) -> None:
        self.root = storage.strip(url)
        self.files = {f"day={i % 7}/part.{i:06d}.parquet": 100 + i % 13 for i in range(n)}
        self.text = manifest.manifest_text(self.files, "w1").encode()
        self.listing = {f"{self.root}/{k}": {"size": v} for k, v in self.files.items()}
        self.listing[f"{self.root}/_SUCCESS"] = {"size": len(self.text)}
        self.calls: Counter = Counter()

    def invalidate_cache(self, path: str | None = None) -> None:
        pass

    def find(self, path: str, **kwargs: object) -> dict:
        self.calls["find"] += 1
        return self.listing

    def cat_file(self, path: str) -> bytes:
        self.calls["cat_file"] += 1
        assert path == f"{self.root}/_SUCCESS"
        return self.text

    def __getattr__(self, name: str) -> object:  # any other call (info, exists, size...)
        self.calls[name] += 1
        raise AttributeError(name)


def _check_store(monkeypatch, n: int) -> tuple[_SyntheticStore, float, list[str]]:
    url = "memory://irs-issue50/out"
    store = _SyntheticStore(url, n)
    monkeypatch.setattr(storage, "filesystem", lambda *a, **k: store)
    started = time.process_time()  # CPU time: a busy machine does not inflate it
    folder, files = storage.published_output(url)
    elapsed = time.process_time() - started
    assert folder == url
    return store, elapsed, files


@pytest.mark.timeout(120)  # the quadratic check took minutes at 200,000 entries
def test_a_manifest_of_200000_entries_is_checked_in_under_2_seconds(monkeypatch):
    store, elapsed, files = _check_store(monkeypatch, 200_000)
    assert files == [f"memory://irs-issue50/out/{k}" for k in sorted(store.files)]
    assert elapsed < 2.0, f"the check of 200,000 entries took {elapsed:.2f} s of CPU"


def test_the_manifest_check_lists_the_store_once_whatever_its_entries(monkeypatch):
    small, _, _ = _check_store(monkeypatch, 10)
    large, _, _ = _check_store(monkeypatch, 20_000)
    assert small.calls == large.calls == Counter(find=1, cat_file=1)


def test_the_local_manifest_check_stats_each_listed_file_once_and_lists_no_folder(
        tmp_path, monkeypatch):
    def counted(n: int) -> Counter:
        out = tmp_path / f"out{n}"
        (out / "sub").mkdir(parents=True)
        for i in range(n):
            (out / ("sub" if i % 2 else ".") / f"part.{i}.parquet").write_bytes(b"x" * (i % 5))
        storage.local_manifest(str(out))
        calls: Counter = Counter()
        for name in ("stat", "lstat", "scandir", "listdir", "walk"):
            real = getattr(os, name)

            def spy(path=".", *a, _real=real, _name=name, **k):
                if str(out) in os.fspath(path):
                    calls[_name] += 1
                return _real(path, *a, **k)

            monkeypatch.setattr(os, name, spy)
        try:
            assert len(storage.published_files(str(out))) == n
        finally:
            monkeypatch.undo()
        return calls

    small, large = counted(20), counted(400)
    assert large["stat"] - small["stat"] == 380  # one stat per entry, nothing more
    assert small["scandir"] == small["listdir"] == small["walk"] == 0
    assert large["scandir"] == large["listdir"] == large["walk"] == 0


@pytest.mark.timeout(120)
def test_a_name_given_twice_among_200000_entries_is_named_at_once():
    names = ", ".join(f'"part.{i:06d}.parquet": 1' for i in range(200_000))
    text = (f'{{"format": "{manifest.MANIFEST_FORMAT}", "files": {{{names}, '
            '"part.199999.parquet": 2}}')
    started = time.process_time()
    with pytest.raises(DatasetError, match=r"the key 'part\.199999\.parquet' is given twice"):
        manifest.parse_manifest("out/_SUCCESS", text)
    assert time.process_time() - started < 2.0
