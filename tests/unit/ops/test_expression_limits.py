"""LambdaOp and Filter expressions are bounded: bombs refused fast, also from a saved workflow.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError
from tests.helpers import HANG_S, edit_workflow_json

# ---- 7. expressions -----------------------------------------------------------------------------
BAD_EXPRESSIONS = [
    ("9**9**9", "power"),
    ("2 ** (9 ** 9)", "power"),
    ("'a' * 10**9", "repeats a string"),
    ("x * 'a' * 10**6", "repeats a string"),
    ("2**64 * 2**64 * 2**64", "larger than 2\\*\\*64"),
    ("123456789" * 3 + " ** 3", "larger than 2\\*\\*64"),
    ("x" + " + x" * 200, "nests too deeply"),
    ("-" * 300 + "x", "nests too deeply"),
    ("(" * 300 + "x" + ")" * 300, "cannot be parsed|nests too deeply"),
    ("x + 1" + " " * 20_000, "characters"),
]


@pytest.mark.parametrize(("expr", "why"), BAD_EXPRESSIONS, ids=[e[0][:20] for e in BAD_EXPRESSIONS])
@pytest.mark.parametrize("op", [ops.LambdaOp, ops.Filter])
@pytest.mark.timeout(20)
def test_expressions_are_bounded(expr, why, op):
    with pytest.raises(ParameterError, match=why) as info:
        op(expr)
    assert "expression" in str(info.value)


def test_expression_bombs_are_refused_fast_even_from_a_saved_workflow(tmp_path):
    """In a fresh process with a hard time limit: no hang, no memory blow-up."""
    saved = irs.Workflow(["x"] >> ops.LambdaOp("x * 2")).fit(
        pd.DataFrame({"x": [1]})).save(tmp_path / "saved")
    edit_workflow_json(saved, lambda c: c["nodes"][1]["op"]["params"].update(f="9**9**9"))
    code = textwrap.dedent(f"""
        import interactive_recsys as irs
        from interactive_recsys import ops
        for expr in {[e for e, _ in BAD_EXPRESSIONS]!r}:
            try:
                ops.LambdaOp(expr)
            except irs.ParameterError:
                pass
        try:
            irs.Workflow.load({os.fspath(saved)!r})
        except irs.WorkflowFormatError as exc:
            print("refused:", exc)
    """)
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=HANG_S, env=env)
    assert run.returncode == 0, run.stderr
    assert "refused:" in run.stdout and "nodes[1].op" in run.stdout and "power" in run.stdout


def test_reasonable_expressions_still_work():
    df = pd.DataFrame({"x": [1.0, 2.0, 4.0]})
    out = irs.Workflow(["x"] >> ops.LambdaOp("x ** 2 + 2 ** 10 - 0.5 * x")).fit_transform(df)
    assert out["x"].tolist() == [v ** 2 + 1024 - 0.5 * v for v in [1.0, 2.0, 4.0]]
