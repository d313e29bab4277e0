"""Saved folders are closed (issue 40, item 1): links refused at load, only named files
copied by save and fit(reuse=) + save, never what a link points to."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import WorkflowFormatError
from interactive_recsys.models import ModelFormatError, Popularity

SECRET = b"aws_secret_access_key = SECRET-MARK-9f2c\n"


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"c": ["x", "y", "x", "z"], "n": [1.0, 2.0, 3.0, 4.0]})


def _workflow() -> irs.Workflow:
    return irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.Normalize()))


@pytest.fixture
def credentials(tmp_path):
    path = tmp_path / "home" / ".aws" / "credentials"
    path.parent.mkdir(parents=True)
    path.write_bytes(SECRET)
    return path


def _all_bytes(folder) -> bytes:
    out = b""
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                out += f.read()
    return out


def _links(folder) -> list[str]:
    return [os.path.join(root, n) for root, dirs, names in os.walk(folder)
            for n in dirs + names if os.path.islink(os.path.join(root, n))]


def test_a_link_inside_artifacts_that_workflow_json_does_not_name_is_refused(tmp_path,
                                                                          credentials):
    saved = _workflow().fit(_frame()).save(tmp_path / "shared")
    os.symlink(credentials, os.path.join(saved, "artifacts", "notes.txt"))
    with pytest.raises(WorkflowFormatError, match="symbolic link") as info:
        irs.Workflow.load(saved)
    assert "notes.txt" in str(info.value)
    with pytest.raises(WorkflowFormatError, match="symbolic link"):
        _workflow().fit(_frame(), reuse=saved)  # reuse of the folder loads it: refused too


def test_an_artifacts_folder_that_is_a_link_is_refused(tmp_path):
    other = _workflow().fit(pd.DataFrame({"c": ["q"], "n": [9.0]})).save(tmp_path / "other")
    saved = _workflow().fit(_frame()).save(tmp_path / "shared")
    os.rename(os.path.join(saved, "artifacts"), tmp_path / "moved")
    os.symlink(os.path.join(other, "artifacts"), os.path.join(saved, "artifacts"))
    with pytest.raises(WorkflowFormatError, match="symbolic link"):
        irs.Workflow.load(saved)


def test_the_workflow_folder_itself_may_be_a_link(tmp_path):
    saved = _workflow().fit(_frame()).save(tmp_path / "shared")
    os.symlink(saved, tmp_path / "alias")
    loaded = irs.Workflow.load(tmp_path / "alias")
    assert loaded.transform(_frame())["c"].tolist() == [3, 4, 3, 5]


def test_save_copies_only_the_files_workflow_json_names(tmp_path, credentials):
    wf = _workflow().fit(_frame())
    os.symlink(credentials, os.path.join(wf.artifacts_dir, "credentials"))
    os.symlink(credentials.parent, os.path.join(wf.artifacts_dir, "aws"))
    with open(os.path.join(wf.artifacts_dir, "stray.txt"), "wb") as f:
        f.write(SECRET)
    saved = wf.save(tmp_path / "saved")
    assert b"SECRET-MARK-9f2c" not in _all_bytes(saved)
    assert _links(saved) == []
    named = json.load(open(os.path.join(saved, "workflow.json")))["artifacts"]
    on_disk = sorted(os.path.relpath(os.path.join(r, n), os.path.join(saved, "artifacts"))
                     for r, _, names in os.walk(os.path.join(saved, "artifacts"))
                     for n in names)
    assert on_disk == sorted(named) and any("vocab" in p for p in on_disk)
    assert irs.Workflow.load(saved).transform(_frame())["c"].tolist() == [3, 4, 3, 5]


def test_fit_reuse_then_save_never_copies_a_linked_file(tmp_path, credentials):
    first = _workflow().fit(_frame())
    vocab_dir = os.path.join(first.artifacts_dir, "categorify-1", "vocab-000")
    os.symlink(credentials, os.path.join(vocab_dir, "extra.parquet"))
    with pytest.raises(WorkflowFormatError, match="symbolic link"):
        _workflow().fit(_frame(), reuse=first)  # adopting would copy the link's target
    os.remove(os.path.join(vocab_dir, "extra.parquet"))
    with open(os.path.join(first.artifacts_dir, "stray.txt"), "wb") as f:
        f.write(SECRET)
    second = _workflow().fit(_frame(), reuse=first)
    assert second.fit_stats["reused"] == ["categorify-1", "normalize-3"]
    saved = second.save(tmp_path / "second")
    assert b"SECRET-MARK-9f2c" not in _all_bytes(saved) and _links(saved) == []


def test_a_link_in_a_model_folder_is_refused(tmp_path, credentials):
    data = pd.DataFrame({"user_id": [1, 1, 2, 3], "item_id": [10, 11, 10, 12]})
    saved = Popularity().fit(data).save(tmp_path / "model")
    irs.models.load(saved)  # plain folder: fine
    os.symlink(credentials, os.path.join(saved, "readme.txt"))
    with pytest.raises(ModelFormatError, match="symbolic link"):
        irs.models.load(saved)
