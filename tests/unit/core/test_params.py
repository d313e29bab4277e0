"""The one parameter system: Param tables for operators, models and functions."""

from __future__ import annotations

import ast
import inspect
import pathlib
import re

import numpy as np
import pytest

import interactive_recsys as irs
from interactive_recsys.errors import ParameterError
from interactive_recsys.models import EASE, AutoEncoder, Model
from interactive_recsys.params import Param, param_error, validate_params

PACKAGE = pathlib.Path(irs.__file__).parent


@validate_params({"k": Param(kind="int", low=1), "names": Param(kind="strs", nullable=True),
                  "mode": Param(choices=("a", "b"))}, owner="pick")
def pick(items: list, k: int = 2, *, names: list | tuple | None = None, mode: str = "a") -> tuple:
    """Doc kept."""
    return items[:k], names, mode


def test_validate_params_passes_validated_values_and_keeps_the_signature():
    assert pick([3, 2, 1]) == ([3, 2], None, "a")
    assert pick([3, 2, 1], np.int64(1), names=("x", "y")) == ([3], ["x", "y"], "a")
    assert list(inspect.signature(pick).parameters) == ["items", "k", "names", "mode"]
    assert pick.__doc__ == "Doc kept."


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k": 0}, "The 'k' parameter of pick must be an integer >= 1. Got 0 instead."),
    ({"k": True}, "The 'k' parameter of pick must be an integer >= 1. Got True instead."),
    ({"names": "x"}, "The 'names' parameter of pick must be a list of strings or None. Got 'x' "
                     "instead."),
    ({"mode": "c"}, "The 'mode' parameter of pick must be one of 'a', 'b'. Got 'c' instead."),
])
def test_validate_params_messages_follow_the_one_template(kwargs, message):
    with pytest.raises(ParameterError) as err:
        pick([1], **kwargs)
    assert str(err.value) == message


def test_validate_params_rejects_a_table_naming_no_argument():
    with pytest.raises(TypeError, match="no argument"):
        validate_params({"nope": Param(kind="int")})(pick.__wrapped__)


def test_must_check_and_show_type():
    spec = Param(kind="number", must="a positive number", check=lambda v: v > 0, show_type=True)
    assert spec.validate(None, "lr", 0.5) == 0.5
    with pytest.raises(ParameterError) as err:
        spec.validate(None, "lr", 0)
    assert str(err.value) == "The 'lr' parameter must be a positive number. Got 0 (int) instead."


OPEN_AND_CLOSED = {  # closed: (description, accepted values, rejected values)
    "both": ("a finite number in [0, 1]", [0, 0.5, 1], [-0.1, 1.1]),
    "left": ("a number in [0, 1)", [0, 0.5, 0.999], [1, -0.1]),
    "right": ("a number in (0, 1]", [0.001, 0.5, 1], [0, 1.1]),
    "neither": ("a number in (0, 1)", [0.001, 0.5, 0.999], [0, 1]),
}


@pytest.mark.parametrize("closed", sorted(OPEN_AND_CLOSED))
def test_bounds_open_or_closed_at_the_boundary_values(closed):
    text, accepted, rejected = OPEN_AND_CLOSED[closed]
    spec = Param(kind="number", low=0, high=1, closed=closed)
    assert spec.describe() == text
    assert [spec.validate("Op", "p", v) for v in accepted] == accepted
    for value in rejected:
        with pytest.raises(ParameterError) as err:
            spec.validate("Op", "p", value)
        assert str(err.value) == f"The 'p' parameter of Op must be {text}. Got {value} instead."


@pytest.mark.parametrize(("spec", "text", "accepted", "rejected"), [
    (Param(kind="number", low=0, closed="neither"), "a positive number", 1e-9, 0),
    (Param(kind="number", low=0), "a finite number >= 0", 0, -1e-9),
    (Param(kind="int", low=0, closed="neither"), "a positive integer", 1, 0),
    (Param(kind="number", high=0, closed="neither"), "a negative number", -1e-9, 0),
    (Param(kind="number", low=2, closed="neither"), "a finite number > 2", 2.5, 2),
    (Param(kind="number", high=2, closed="right"), "a finite number <= 2", 2, 2.5),
    (Param(kind="int", low=0, high=5, closed="right"), "an integer in (0, 5]", 5, 0),
])
def test_one_open_bound_is_described_and_checked(spec, text, accepted, rejected):
    assert spec.describe() == text
    assert spec.validate(None, "x", accepted) == accepted
    with pytest.raises(ParameterError) as err:
        spec.validate(None, "x", rejected)
    assert str(err.value) == f"The 'x' parameter must be {text}. Got {rejected} instead."


def test_closed_takes_four_words_only():
    with pytest.raises(ValueError, match="closed must be one of"):
        Param(kind="number", low=0, closed="open")


def test_the_models_and_the_split_say_their_open_ranges():
    from interactive_recsys.eval import split

    assert EASE.params["l2"].describe() == "a positive number"
    with pytest.raises(ParameterError, match=r"The 'lr' parameter of AutoEncoder must be a "
                                             r"positive number. Got 0 instead."):
        AutoEncoder(lr=0)
    for value in (0, 1):  # both bounds open
        with pytest.raises(ParameterError, match=rf"The 'test_fraction' parameter of split must "
                                                 rf"be a number in \(0, 1\). Got {value} "):
            split([], test_fraction=value)


def test_param_error_names_one_or_several_parameters_and_takes_an_error_class():
    err = param_error(("a", "b"), "Op", "must not repeat a name.", error=KeyError)
    assert isinstance(err, KeyError)
    assert err.args[0] == "The 'a' and 'b' parameters of Op must not repeat a name."


def test_models_declare_params_as_attributes_and_get_params_reads_them():
    assert set(EASE.params) == {"l2"} and isinstance(EASE.params["l2"], Param)
    model = AutoEncoder(hidden=8, lr=0.01)
    assert model.hidden == 8 and model.lr == 0.01 and model.epochs == 20
    assert model.get_params() == {name: spec.default for name, spec in
                                  AutoEncoder.params.items()} | {"hidden": 8, "lr": 0.01}
    assert model.config()["params"] == model.get_params()
    with pytest.raises(ParameterError, match="The 'dropout' parameter of AutoEncoder must be a "
                                             r"number in \[0, 1\). Got 1 instead."):
        AutoEncoder(dropout=1)
    with pytest.raises(ParameterError, match="The 'user_col' parameter of EASE must be a column "
                                             "name. Got '' instead."):
        EASE(user_col="")
    assert not hasattr(Model, "PARAMS")


_MESSAGE = re.compile(r"The '[A-Za-z_]+' parameter|The \{[a-z_]+!r\} parameter")


def test_no_parameter_message_is_written_outside_the_params_module():
    """Every "The 'x' parameter ..." message comes from ``params.param_error``."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "params.py" and path.parent == PACKAGE:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docstrings and _MESSAGE.search(node.value)):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []
