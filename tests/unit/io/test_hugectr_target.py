"""HugeCTR output without a label column is refused, naming the fix.
"""

from __future__ import annotations

import os
import re

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import DatasetError


# ---- 10. HugeCTR output without a label ---------------------------------------------------------
def test_hugectr_output_without_a_target_is_refused_naming_the_fix(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", "a"], "label": [1, 0, 1]})
    wf = irs.Workflow((["c"] >> ops.Categorify()) + ["label"])
    out = wf.fit_transform(irs.Dataset(df))
    with pytest.raises(DatasetError, match=re.escape("ops.AddTags(['target'])")) as info:
        out.to_parquet(tmp_path / "out", hugectr=True)
    assert "tagged 'target'" in str(info.value) and os.listdir(tmp_path) == []
    tagged = irs.Workflow((["c"] >> ops.Categorify()) + (["label"] >> ops.AddTags(["target"])))
    written = tagged.fit_transform(irs.Dataset(df)).to_parquet(tmp_path / "ok", hugectr=True)
    assert written["hugectr"]["labels"] == ["label"]
