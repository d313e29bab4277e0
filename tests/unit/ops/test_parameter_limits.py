"""Operator parameters without a bound are refused; the largest allowed bucket count works.
"""

from __future__ import annotations

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError


# ---- clear errors: parameters -------------------------------------------------------------------
@pytest.mark.parametrize(("build", "param"), [
    (lambda: ops.HashBucket(2**64), "num_buckets"),
    (lambda: ops.HashedCross(2**64), "num_buckets"),
    (lambda: ops.Categorify(num_buckets=2**64), "num_buckets"),
    (lambda: ops.Categorify(split_out=2000), "split_out"),
    (lambda: ops.TargetEncoding("y", split_out=10**6), "split_out"),
    (lambda: ops.JoinGroupby(split_out=10**6), "split_out"),
])
def test_unbounded_parameters_are_refused(build, param):
    with pytest.raises(ParameterError, match=f"'{param}' parameter .* must be an integer in"):
        build()


def test_largest_bucket_count_still_encodes():
    out = irs.Workflow(["c"] >> ops.HashBucket(2**63 - 3)).fit_transform(
        pd.DataFrame({"c": ["a", None]}))
    assert out["c"].tolist()[1] == 1 and 2 <= out["c"].tolist()[0] <= 2**63 - 1
