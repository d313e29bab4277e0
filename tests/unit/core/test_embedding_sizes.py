"""embedding_sizes: single-hot and multi-hot columns reported apart.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

import interactive_recsys as irs
from interactive_recsys import ops


def test_embedding_sizes_split_single_and_multi_hot(tmp_path):
    df = pd.DataFrame({
        "item": ["a", "b", "a", "c", "d"],
        "tags": pd.Series([["x", "y"], ["y"], [], ["z", "x", "w"], None],
                          dtype=pd.ArrowDtype(pa.list_(pa.string()))),
    })
    wf = irs.Workflow(["item", "tags"] >> ops.Categorify(), artifacts_dir=str(tmp_path / "a"))
    wf.fit(df)
    # 3 reserved rows (pad, null, OOV) + the distinct values: items a-d, tags w, x, y, z
    single, multi = irs.embedding_sizes(wf, split=True)
    assert single == {"item": (3 + 4, irs.embedding_dim(7))}
    assert multi == {"tags": (3 + 4, irs.embedding_dim(7))}
    assert irs.embedding_sizes(wf) == {**single, **multi}  # the flat form stays
    assert irs.embedding_sizes(irs.Workflow(["item"] >> ops.Categorify()).fit(df),
                               split=True) == (single, {})
