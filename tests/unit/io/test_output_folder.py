"""An empty output folder is accepted, a non-empty one (or a link) refused.
"""

from __future__ import annotations

import os

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops


def test_an_empty_output_folder_is_accepted_a_non_empty_one_refused(tmp_path):
    df = pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, 2.0, 4.0]})
    wf = irs.Workflow(["c"] >> ops.Categorify(), artifacts_dir=str(tmp_path / "a"))
    wf.fit(df)
    out = tmp_path / "out"
    out.mkdir()  # a notebook's `mkdir -p out`
    wf.transform(irs.Dataset(df)).to_parquet(str(out))
    back = pd.read_parquet(out)
    assert back["c"].tolist() == [3, 4, 3]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no temporaries left
    # a folder holding anything is still refused, and left as it was
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(irs.DatasetError, match="already exists"):
        wf.transform(irs.Dataset(df)).to_parquet(str(full))
    assert os.listdir(full) == ["keep.txt"]
    # a link to an empty folder is not taken for one
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(irs.DatasetError, match="already exists"):
        wf.transform(irs.Dataset(df)).to_parquet(str(tmp_path / "link"))
    assert os.listdir(tmp_path / "target") == []
    # a workflow saves into an empty folder too
    (tmp_path / "wf").mkdir()
    wf.save(str(tmp_path / "wf"))
    assert irs.Workflow.load(str(tmp_path / "wf")).transform(df)["c"].tolist() == [3, 4, 3]
