"""A reloaded LambdaOp names its function and takes it back through functions=.
"""

from __future__ import annotations

import operator

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ops._lambda_op import functions_by_name


def test_a_reloaded_lambda_op_names_its_function_and_takes_it_back(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 5]})
    for f, name, how in [
        (lambda s: s + 1, r"'[\w.]+:[\w.<>]+\.<lambda>'", "It is a lambda"),
        (operator.neg, "'_operator:neg'", r"from _operator import neg, then Workflow.load\("
                                          r"path, functions=\[neg\]\)"),
    ]:
        path = tmp_path / f"wf-{id(f)}"
        wf = irs.Workflow(["a"] >> ops.LambdaOp(f), artifacts_dir=str(tmp_path / "a"))
        expected = wf.fit_transform(df)
        wf.save(str(path))
        loaded = irs.Workflow.load(str(path))  # loads: nothing of the function is run
        with pytest.raises(irs.NotFittedError, match=f"uses the Python function ({name}).*"
                                                     f"never imports or runs code.*{how}"):
            loaded.transform(df)
        for functions in ([f], {next(iter(functions_by_name([f]))): f}):
            again = irs.Workflow.load(str(path), functions=functions)
            pd.testing.assert_frame_equal(again.transform(df), expected)
    assert expected["a"].tolist() == [-1, -2, -5]
    with pytest.raises(irs.ParameterError, match="'functions' parameter of Workflow.load"):
        irs.Workflow.load(str(path), functions=["neg"])
