"""Categorify's split_out: the task graph grows linearly, the ids equal one split's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops
from tests.helpers import expected_ids


def _categorify_graph_size(split_out: int) -> int:
    from dask import delayed

    from interactive_recsys.backend import get_backend
    from interactive_recsys.tables._context import OpContext, RunFacts

    ctx = OpContext(get_backend("cpu"), [("c",)], "categorify-1", "/nonexistent",
                    RunFacts(num_rows=5, npartitions=1))
    partial = delayed(dict, pure=False)(dask_key_name="categorify-1-partial-0")
    state = ops.Categorify(split_out=split_out).fit_graph([partial], ctx)
    return len(state.__dask_graph__())


def test_categorify_split_out_graph_grows_linearly():
    """The probe's quadratic case (split_out on 5 rows): tasks per split stay constant."""
    small, large = _categorify_graph_size(64), _categorify_graph_size(512)
    assert large <= 8 * small + 8  # quadratic growth would give 64 times as many
    assert _categorify_graph_size(1024) <= 2 * large + 8


def test_categorify_with_many_splits_matches_one_split():
    rng = np.random.default_rng(5)
    values = rng.choice([f"v{i}" for i in range(300)] + [None], 2000).tolist()
    df = pd.DataFrame({"c": values, "f": [float(len(v or "")) * 1.5 for v in values]})
    one = irs.Workflow(["c", "f"] >> ops.Categorify()).fit_transform(df)
    many = irs.Workflow(["c", "f"] >> ops.Categorify(split_out=200)).fit_transform(df)
    pd.testing.assert_frame_equal(one, many)
    assert one["c"].tolist() == expected_ids(values)
