"""Fit errors that name their cause: a file-size limit on the statistics file, a node made
its own parent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import SchemaError
from tests.helpers import HANG_S

REPO = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


# ---- a file-size limit during fit ---------------------------------------------------------------
def test_fit_under_a_file_size_limit_names_the_statistics_file(tmp_path):
    script = textwrap.dedent(f"""
        import resource, pandas as pd
        import interactive_recsys as irs
        from interactive_recsys import ops
        from interactive_recsys.store._outputs import OutputError
        df = pd.DataFrame({{"c": [f"value-{{i}}" for i in range(300_000)]}})
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        wf = irs.Workflow(["c"] >> ops.Categorify(), artifacts_dir={str(tmp_path / "art")!r})
        try:
            wf.fit(df)
        except OutputError as exc:
            print("ERROR", exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True,
                          text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert "ERROR Cannot write '" in done.stdout and "part.00000.parquet" in done.stdout
    assert "(File too large)" in done.stdout and "ulimit -f" in done.stdout
    left = [f for _, _, files in os.walk(tmp_path) for f in files]
    assert left == []  # no half-written statistics file, no temporary


# ---- a node made its own parent --------------------------------------------------------------------
def test_a_node_made_its_own_parent_is_a_clear_error():
    node = ["a"] >> ops.Normalize()
    node.parents.append(node)
    with pytest.raises(SchemaError, match=r"graph has a cycle: step Normalize\(\) is among its "
                                          r"own parents.*>> and \+"):
        irs.Workflow(node).fit(pd.DataFrame({"a": [1.0, 2.0]}))
    loop = ["a"] >> ops.Normalize()
    loop.parents = [loop]
    with pytest.raises(SchemaError, match="cycle"):
        irs.Workflow(loop)
