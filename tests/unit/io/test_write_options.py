"""The writer's options, declared once (``WriteOptions``), and the staged output the exporter
adds its files to before the writer publishes the folder."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ParameterError
from interactive_recsys.io import _writer as writer
from interactive_recsys.io._write_options import DEFAULT_WRITE_OPTIONS, WriteOptions


def _frame(n: int = 20) -> pd.DataFrame:
    return pd.DataFrame({"a": range(n), "b": [0.5] * n})


def test_to_parquet_keywords_are_the_write_options_with_their_defaults():
    """Every option is a keyword of ``Dataset.to_parquet`` with the one declared default."""
    keywords = inspect.signature(irs.Dataset.to_parquet).parameters
    for option in dataclasses.fields(WriteOptions):
        assert option.name in keywords, option.name
        if option.name != "storage_options":  # None there: the dataset's own options
            assert keywords[option.name].default == option.default, option.name
    assert DEFAULT_WRITE_OPTIONS.row_group_size == 128 * 1024


@pytest.mark.parametrize(("name", "value", "text"), [
    ("shuffle", "rows", "one of (None, 'partition', 'worker', 'full')"),
    ("out_files_per_proc", 0, "an integer >= 1 or None"),
    ("seed", -1, "an integer >= 0"),
    ("row_group_size", 2.5, "an integer >= 1"),
    ("overwrite", "yes", "True or False"),
])
def test_a_bad_option_is_refused_by_name_before_anything_is_written(tmp_path, name, value,
                                                                    text):
    with pytest.raises(ParameterError, match=re.escape(f"The {name!r} parameter must be {text}")):
        WriteOptions(**{name: value})
    with pytest.raises(ParameterError, match=rf"'{name}'"):
        irs.Dataset(_frame()).to_parquet(tmp_path / "out", **{name: value})
    assert not os.path.exists(tmp_path / "out")


def test_files_added_to_the_staged_output_are_published_with_it(tmp_path):
    ds = irs.Dataset(_frame(), part_size=100)
    out = tmp_path / "out"
    with writer.staged_parquet(ds, out, WriteOptions(row_group_size=5)) as staged:
        assert not out.exists()  # staged, not yet published
        with open(os.path.join(staged.directory, "extra.txt"), "w") as f:
            f.write("side file")
        staged.summary["extra"] = 1
    manifest = json.loads((out / "_SUCCESS").read_text())["files"]
    assert manifest["extra.txt"] == len("side file")
    assert set(staged.files) <= set(manifest)
    written = json.loads((out / "_schema.json").read_text())
    assert written["extra"] == 1 and staged.summary["path"] == str(out)
    assert staged.summary["num_rows"] == 20


def test_an_error_while_adding_files_publishes_nothing(tmp_path):
    ds = irs.Dataset(_frame())
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="exporter failed"), \
            writer.staged_parquet(ds, out) as staged:
        assert os.listdir(staged.directory)
        raise RuntimeError("exporter failed")
    assert os.listdir(tmp_path) == []  # no output, no temporary folder


def test_merlin_and_hugectr_files_are_inside_the_manifest(tmp_path):
    """The exporter's files are written before the publish: the manifest lists them."""
    frame = pd.DataFrame({"c": [1, 2, 3], "y": [0.0, 1.0, 0.0]})
    ds = irs.Dataset(frame, tags={"c": ["categorical"], "y": ["target"]})
    summary = ds.to_parquet(tmp_path / "out", hugectr=True)
    manifest = json.loads((tmp_path / "out" / "_SUCCESS").read_text())["files"]
    assert {".merlin/schema.json", ".merlin/schema.pbtxt", "_file_list.txt",
            "_metadata.json"} <= set(manifest)
    assert "hugectr" in summary


def test_on_a_url_the_exporter_files_are_staged_and_published_with_the_data():
    """On an object store (fsspec's memory filesystem here) the Merlin files are uploaded
    into the staging prefix and listed by the manifest; an error in the block publishes
    nothing and leaves no staging files."""
    import fsspec

    fs = fsspec.filesystem("memory")
    url = "memory://irs-unit-writer/out"
    irs.Dataset(_frame()).to_parquet(url)
    manifest = json.loads(fs.cat("/irs-unit-writer/out/_SUCCESS"))["files"]
    assert {".merlin/schema.json", ".merlin/schema.pbtxt", "_schema.json"} <= set(manifest)
    assert all(fs.exists(f"/irs-unit-writer/out/{name}") for name in manifest)
    failed = "memory://irs-unit-writer/failed"
    with pytest.raises(RuntimeError, match="exporter failed"), \
            writer.staged_parquet(irs.Dataset(_frame()), failed) as staged:
        assert staged.fs is not None and "/failed/_temporary/" in staged.data_dir
        raise RuntimeError("exporter failed")
    assert not fs.exists("/irs-unit-writer/failed/_SUCCESS")
    assert not [p for p in fs.find("/irs-unit-writer/failed") if "_temporary" in p]
