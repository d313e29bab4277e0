"""The builder's forms without a browser: a TargetEncoding added by typing its target,
"did you mean" for misspelt columns, and a freq_threshold above the row count."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterWarning
from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.studio._studio import find_button


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"C1": ["a", "b", "a", "c"] * 25, "C2": ["x", "y"] * 50,
                         "label": [0, 1, 1, 0] * 25})


def test_target_encoding_is_added_by_typing_its_target_letter_by_letter(frame):
    b = PipelineBuilder(frame)
    b.select_columns(["C1", "label"])
    find_button(b, "irs-op-TargetEncoding").click()
    assert b.model.branches[0].steps == [] and b.operator == "TargetEncoding"
    target = b.form.fields["target"]
    for typed in ("l", "la", "lab", "labe"):  # each keystroke: refused, still pending
        target.value = typed
        assert b.level == "error" and repr(typed) in b.message, (typed, b.message)
        assert b.model.branches[0].steps == []
    target.value = "label"  # now it names a column: the step is added at once
    assert b.level == "success" and "Added" in b.message, b.message
    assert [(s.op, s.params["target"]) for s in b.model.branches[0].steps] == \
        [("TargetEncoding", "label")]
    by_hand = irs.Workflow(["C1", "label"] >> ops.TargetEncoding("label"))
    assert b.model.to_workflow().to_config()["nodes"] == by_hand.to_config()["nodes"]


def test_a_misspelt_column_says_did_you_mean(frame):
    b = PipelineBuilder(frame)
    b.select_columns(["C1", "label"])
    find_button(b, "irs-op-TargetEncoding").click()
    b.form.fields["target"].value = "lable"
    assert b.level == "error" and "did you mean 'label'?" in b.message, b.message
    assert "'lable' is not a column of the dataset" in b.message
    assert b.model.branches[0].steps == []
    model = BuilderModel(frame)
    with pytest.raises(irs.SchemaError, match=r"'C11' is not in the dataset \(did you mean "
                                              r"'C1'\?\)"):
        model.add_step(["C11"], "Categorify")
    with pytest.raises(irs.SchemaError, match="'zzz' is not a column") as unknown:
        model.add_step(["C1"], "TargetEncoding", {"target": "zzz"})
    assert "did you mean" not in str(unknown.value)  # nothing close: no guess
    assert "available columns: 'C1', 'C2', 'label'." in str(unknown.value)


def test_the_columns_of_a_wide_log_are_named_in_short():
    """40 columns: the first six, the last two and the count, not the whole list."""
    names = ["label", *[f"I{i}" for i in range(1, 14)], *[f"C{i}" for i in range(1, 27)]]
    model = BuilderModel(pd.DataFrame({n: [0, 1] for n in names}))
    with pytest.raises(irs.SchemaError) as unknown:
        model.add_step(["C1"], "TargetEncoding", {"target": "zzz"})
    assert str(names) not in str(unknown.value)
    assert str(unknown.value).endswith(
        "available columns: 'label', 'I1', 'I2', 'I3', 'I4', 'I5', ..., 'C25', 'C26' "
        "(40 in all)."), unknown.value


def test_freq_threshold_above_the_rows_warns_in_the_builder_and_at_fit(frame):
    b = PipelineBuilder(frame)
    b.select_columns(["C1"])
    find_button(b, "irs-op-Categorify").click()
    field = b.form.fields["freq_threshold"]
    field.value = "1000000000"  # 1e9 on 100 rows: every value out of vocabulary
    assert b.model.branches[0].steps[0].params == {"freq_threshold": 10**9}
    assert b.level == "error" and "freq_threshold=1,000,000,000 is above the 100 rows" \
        in b.message, b.message
    field.value = "3"  # a sensible one: green again
    assert b.level == "success" and "Warning" not in b.message
    with pytest.warns(ParameterWarning, match=r"freq_threshold=101\) on 'C1' is above the 100 "
                                             r"values"):
        irs.Workflow(["C1"] >> ops.Categorify(freq_threshold=101)).fit(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParameterWarning)
        irs.Workflow(["C1"] >> ops.Categorify(freq_threshold=100)).fit(frame)  # can happen
