"""A malformed workflow.json is one WorkflowFormatError naming the field.
"""

from __future__ import annotations

import os

import pytest

import interactive_recsys as irs
from interactive_recsys.errors import WorkflowFormatError
from tests.helpers import digest, edit_workflow_json, saved_categorify


# ---- clear errors: malformed workflow.json --------------------------------------------------------
def _bad_json(text):
    def change(path):
        with open(os.path.join(path, "workflow.json"), "w") as f:
            f.write(text)
    return change


def _config_change(func):
    def change(path):
        edit_workflow_json(path, func)
    return change


MALFORMED = [
    ("bad JSON", _bad_json("{not json"), "not valid JSON"),
    ("top level list", _bad_json("[]"), "must be an object"),
    ("deep nesting", _bad_json('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
     "not valid JSON|nests deeper"),
    ("nodes not a list", _config_change(lambda c: c.update(nodes={"0": 1})), "'nodes'"),
    ("missing nodes", _config_change(lambda c: c.pop("nodes")), "'nodes'"),
    ("missing output", _config_change(lambda c: c.pop("output")), "'output'"),
    ("output out of range", _config_change(lambda c: c.update(output=99)), "'output'"),
    ("cycle", _config_change(lambda c: c["nodes"][0].update(parents=[1], kind="op",
                                                           op=c["nodes"][1]["op"])),
     r"'nodes\[0\].parents'.*cycles"),
    ("parent not int", _config_change(lambda c: c["nodes"][1].update(parents=["0"])),
     r"'nodes\[1\].parents'"),
    ("unknown kind", _config_change(lambda c: c["nodes"][1].update(kind="exec")),
     r"'nodes\[1\].kind'"),
    ("params not a dict", _config_change(lambda c: c["nodes"][1]["op"].update(params=[1])),
     r"'nodes\[1\].op.params'"),
    ("unknown operator", _config_change(lambda c: c["nodes"][1]["op"].update(op="Exec")),
     r"'nodes\[1\].op'.*Unknown operator"),
    ("bad parameter", _config_change(lambda c: c["nodes"][1]["op"].update(
        params={"freq_threshold": "x"})), r"'nodes\[1\].op'.*freq_threshold"),
    ("selector names", _config_change(lambda c: c["nodes"][0]["selector"].update(names=[3])),
     r"'nodes\[0\].selector'"),
    ("fitted not bool", _config_change(lambda c: c.update(fitted="yes")), "'fitted'"),
    ("state not a dict", _config_change(lambda c: c["states"].update({"1": [1]})),
     "'states.1'"),
    ("state of a select", _config_change(lambda c: c["states"].update({"0": {}})),
     "'states.0'"),
    ("vocabs missing", _config_change(lambda c: c["states"]["1"].pop("vocabs")),
     "'states.1'.*vocabs"),
    ("splits wrong type", _config_change(
        lambda c: c["states"]["1"]["vocabs"]["c"].update(splits="2")), "'states.1'.*splits"),
    ("missing artifact", _config_change(
        lambda c: c["states"]["1"]["vocabs"]["c"].update(path="categorify-1/vocab-009")),
     "missing"),
    ("schema column", _config_change(lambda c: c["input_schema"]["columns"][0].pop("dtype")),
     r"'input_schema.columns\[0\].dtype'"),
    ("format version", _config_change(lambda c: c.update(format_version="1")), "format"),
    ("statistics key", _config_change(lambda c: c["keys"]["1"].update(statistics=3)),
     r"'keys.1.statistics' must be"),
]


@pytest.mark.parametrize(("change", "field"), [m[1:] for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])
@pytest.mark.timeout(60)
def test_malformed_workflow_json_is_one_workflow_format_error(tmp_path, change, field):
    saved, _ = saved_categorify(tmp_path)
    change(saved)
    before = digest(tmp_path)
    with pytest.raises(WorkflowFormatError, match=field) as info:
        irs.Workflow.load(saved)
    assert "workflow.json" in str(info.value) or "artifact" in str(info.value)
    assert digest(tmp_path) == before
