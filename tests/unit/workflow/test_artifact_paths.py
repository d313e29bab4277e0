"""Artifact files stay inside their folder: column names never become paths, paths in
workflow.json never leave the saved folder, and a loaded folder is never written to.
"""

from __future__ import annotations

import os
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import WorkflowFormatError
from tests.helpers import digest, edit_workflow_json, expected_ids, saved_categorify

# ---- 1. column names never become file paths ------------------------------------------------
EVIL_NAMES = ["../../x/evil", "../../../sibling/part.00000.parquet", "/abs/path/out"]


def _evil_ops(name: str) -> list:
    return [
        [name] >> ops.Categorify(),
        [name, "y"] >> ops.TargetEncoding("y", kfold=2),
        [name, "y"] >> ops.JoinGroupby(cont_cols=["y"], stats=["count", "mean"]),
    ]


@pytest.mark.parametrize("name", EVIL_NAMES)
@pytest.mark.parametrize("which", ["Categorify", "TargetEncoding", "JoinGroupby"])
def test_column_names_never_become_file_paths(tmp_path, name, which):
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    pq.write_table(pa.table({"v": [1, 2]}), sibling / "part.00000.parquet")
    artifacts = tmp_path / "work" / "wf" / "artifacts"
    values = ["b", "a", "b", None, "c", "b"]
    df = pd.DataFrame({name: values, "y": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]})
    node = _evil_ops(name)[["Categorify", "TargetEncoding", "JoinGroupby"].index(which)]
    before = digest(tmp_path, skip=artifacts)
    absolute = os.path.exists("/abs/path/out") and digest("/abs/path/out")

    wf = irs.Workflow(node, artifacts_dir=artifacts)
    out = wf.fit_transform(df)

    assert digest(tmp_path, skip=artifacts) == before  # nothing written outside artifacts/
    assert (os.path.exists("/abs/path/out") and digest("/abs/path/out")) == absolute
    written = [os.path.relpath(os.path.join(r, f), artifacts)
               for r, _, files in os.walk(artifacts) for f in files]
    assert written and all(".." not in w and "evil" not in w and "abs" not in w
                           for w in written)
    if which == "Categorify":  # the name is kept in JSON, and encoding is right
        assert out[name].tolist() == expected_ids(values)
        state = next(iter(wf._states.values()))
        assert list(state["vocabs"]) == [name]
    saved = wf.save(tmp_path / "saved")
    again = irs.Workflow.load(saved).transform(df)
    pd.testing.assert_frame_equal(again, wf.transform(df))


# ---- 2. a loaded folder is read-only ------------------------------------------------------------
def test_refit_of_a_loaded_workflow_leaves_the_saved_folder_identical(tmp_path):
    first = pd.DataFrame({"c": ["a", "a", "b", "c"], "x": [1.0, 2.0, 3.0, 4.0]})
    other = pd.DataFrame({"c": ["z", "z", "z", "c"], "x": [10.0, 20.0, 30.0, 40.0]})
    probe = pd.DataFrame({"c": ["a", "b", "z", "c"], "x": [1.0, 2.0, 3.0, 4.0]})
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    saved = wf.fit(first).save(tmp_path / "saved")
    before = digest(saved)
    old_ids = irs.Workflow.load(saved).transform(probe)
    assert old_ids["c"].tolist() == [3, 4, 2, 5]  # a (2x), then b, c; z unseen

    loaded = irs.Workflow.load(saved)
    loaded.fit(other)
    assert loaded.transform(probe)["c"].tolist() == [2, 2, 3, 4]  # z (3x), then c
    assert not os.path.realpath(loaded.artifacts_dir).startswith(os.path.realpath(saved))

    assert digest(saved) == before
    pd.testing.assert_frame_equal(irs.Workflow.load(saved).transform(probe), old_ids)
    resaved = loaded.save(tmp_path / "resaved")  # only save() writes, to its own folder
    assert irs.Workflow.load(resaved).transform(probe)["c"].tolist() == [2, 2, 3, 4]
    assert digest(saved) == before


@pytest.mark.parametrize("bad", ["../../outside", "/etc", "categorify-0/../../../outside",
                                 "link"])
def test_artifact_paths_outside_the_folder_are_refused(tmp_path, bad):
    saved, _ = saved_categorify(tmp_path)
    outside = tmp_path / "outside"
    shutil.copytree(os.path.join(saved, "artifacts", "categorify-1", "vocab-000"), outside)
    if bad == "link":  # a link inside the folder is refused as such (folder_rules)
        os.symlink(outside, os.path.join(saved, "artifacts", "link"))
    before = digest(tmp_path)

    def change(config):
        config["states"]["1"]["vocabs"]["c"]["path"] = bad

    edit_workflow_json(saved, change)
    before["saved/workflow.json"] = digest(tmp_path)["saved/workflow.json"]
    expected = "is a symbolic link" if bad == "link" else "outside the artifacts folder"
    with pytest.raises(WorkflowFormatError, match=expected) as info:
        irs.Workflow.load(saved)
    assert (repr(bad) in str(info.value) and "states.1" in str(info.value)) or bad == "link"
    assert digest(tmp_path) == before


def test_join_external_never_reads_a_file_named_in_workflow_json(tmp_path):
    side = pd.DataFrame({"item": [1, 2], "genre": ["rock", "jazz"]})
    wf = irs.Workflow(["item"] >> ops.JoinExternal(side, on="item"))
    saved = wf.fit(pd.DataFrame({"item": [1, 3]})).save(tmp_path / "saved")
    secret = tmp_path / "secret.parquet"
    pq.write_table(pa.table({"item": [1], "genre": ["secret"]}), secret)

    def change(config):
        config["nodes"][1]["op"]["params"]["df_ext"] = str(secret)

    edit_workflow_json(saved, change)
    with pytest.raises(WorkflowFormatError, match="df_ext") as info:
        irs.Workflow.load(saved)
    assert "never reads a file" in str(info.value)


def test_join_external_side_table_hash_cannot_be_a_path(tmp_path):
    side = pd.DataFrame({"item": [1, 2], "genre": ["rock", "jazz"]})
    saved = irs.Workflow(["item"] >> ops.JoinExternal(side, on="item")).fit(
        pd.DataFrame({"item": [1]})).save(tmp_path / "saved")

    def change(config):
        config["nodes"][1]["op"]["params"]["df_ext"]["sha256"] = "../" * 20 + "x"

    edit_workflow_json(saved, change)
    with pytest.raises(WorkflowFormatError, match="sha256"):
        irs.Workflow.load(saved)
