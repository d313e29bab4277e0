"""Temporary artifact folders are removed once unused: with the workflow, at refit, at exit.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops
from tests.helpers import HANG_S


# ---- leftovers: temporary artifacts are removed once unused --------------------------------------
def test_temporary_artifacts_go_when_the_workflow_and_its_results_go(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", "a"]})
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(df)
    folder = wf.artifacts_dir
    assert os.path.basename(folder).startswith("irs-artifacts-") and os.path.isdir(folder)
    saved = wf.save(tmp_path / "saved")
    lazy = wf.transform(irs.Dataset(df))  # a lazy result still reads the vocabulary
    del wf
    gc.collect()
    assert os.path.isdir(folder)
    assert lazy.to_ddf().compute()["c"].tolist() == [3, 4, 3]
    del lazy
    gc.collect()
    assert not os.path.exists(folder)
    # the saved workflow never depended on the temporary folder
    assert irs.Workflow.load(saved).transform(df)["c"].tolist() == [3, 4, 3]


def test_refit_replaces_the_temporary_folder_and_removes_the_old_one():
    wf = irs.Workflow(["c"] >> ops.Categorify())
    wf.fit(pd.DataFrame({"c": ["a"]}))
    first = wf.artifacts_dir
    wf.fit(pd.DataFrame({"c": ["b", "b"]}))
    gc.collect()
    assert wf.artifacts_dir != first and not os.path.exists(first)
    assert wf.transform(pd.DataFrame({"c": ["b", "a"]}))["c"].tolist() == [3, 2]


def test_temporary_artifacts_are_removed_at_interpreter_exit(tmp_path):
    code = textwrap.dedent("""
        import pandas as pd, interactive_recsys as irs
        from interactive_recsys import ops
        wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "b"]}))
        print(wf.artifacts_dir)
    """)
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG_S, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    folder = run.stdout.strip().splitlines()[-1]
    assert "irs-artifacts-" in folder and not os.path.exists(folder)
