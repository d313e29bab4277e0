"""A header-only csv beside a data csv keeps the data csv's types.
"""

from __future__ import annotations

import pytest

import interactive_recsys as irs
from interactive_recsys import ops


# ---- 6. a header-only csv beside a data csv -------------------------------------------------
@pytest.mark.parametrize("empty_first", [True, False])
def test_header_only_csv_beside_a_data_csv_keeps_the_types(tmp_path, empty_first):
    (tmp_path / "a.csv").write_text("n,s\n" if empty_first else "n,s\n1,x\n2,y\n")
    (tmp_path / "b.csv").write_text("n,s\n1,x\n2,y\n" if empty_first else "n,s\n")
    ds = irs.Dataset(str(tmp_path))
    assert ds.schema["n"].dtype == "int64" and ds.schema["s"].dtype == "string"
    got = irs.Workflow(["n"] >> ops.Normalize()).fit_transform(ds).compute()
    assert got["n"].tolist() == [-1.0, 1.0]  # (n - 1.5) / 0.5
    assert len(ds.files) == 2  # the empty file is still an input (output guards)
