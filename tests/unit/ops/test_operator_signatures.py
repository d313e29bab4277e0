"""Operators show their declared parameters to a notebook: ``Op?``, ``help(Op)`` and tab
completion read a signature and a numpydoc ``Parameters`` section generated from the one
``Param`` table, for EVERY registered operator."""

from __future__ import annotations

import inspect

import jedi
import pytest
from IPython.core.oinspect import Inspector

from interactive_recsys import ops
from interactive_recsys.params import Param

OPERATOR_NAMES = sorted(ops.OPERATORS)


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_signature_lists_the_declared_parameters_in_order(name: str) -> None:
    cls = ops.OPERATORS[name]
    sig = inspect.signature(cls)
    assert list(sig.parameters) == list(cls.params)
    for pname, spec in cls.params.items():
        param = sig.parameters[pname]
        if spec.required:
            assert param.default is inspect.Parameter.empty
        else:
            assert param.default == spec.default
        assert param.annotation is not inspect.Parameter.empty


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_positional_arguments_follow_the_signature(name: str) -> None:
    """What the signature allows positionally is what ``__init__`` maps positionally."""
    cls = ops.OPERATORS[name]
    positional = [p for p in inspect.signature(cls).parameters.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in positional] == list(cls.params)[:len(positional)]


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_docstring_has_a_parameters_section_with_every_parameter(name: str) -> None:
    cls = ops.OPERATORS[name]
    doc = inspect.getdoc(cls) or ""
    if not cls.params:
        assert "Parameters" not in doc and inspect.signature(cls).parameters == {}
        return
    assert doc.count("Parameters\n----------") == 1
    section = doc.split("Parameters\n----------\n", 1)[1]
    for pname, spec in cls.params.items():
        assert f"{pname} : {spec.describe()}" in section
        if spec.doc:
            assert spec.doc in section
    # The description comes first, the examples after the section.
    if ">>>" in doc:
        assert doc.index("Parameters") < doc.index(">>>")


def test_ipython_and_jedi_show_the_parameters() -> None:
    info = Inspector(theme_name="nocolor").info(ops.Categorify)
    assert "freq_threshold: int = 0" in info["init_definition"]
    assert "encode_type: Literal['joint', 'combo'] = 'joint'" in info["init_definition"]
    assert "max_size : an integer >= 1 or None, default None" in info["docstring"]
    completions = jedi.Interpreter("ops.Categorify(freq", [{"ops": ops}]).complete()
    assert "freq_threshold=" in [c.name for c in completions]
    signatures = jedi.Interpreter("ops.Clip(", [{"ops": ops}]).get_signatures()
    assert [p.name for p in signatures[0].params] == ["min_value", "max_value"]


def test_required_parameter_after_a_default_is_keyword_only() -> None:
    class _Probe(ops.Operator, register=False):
        """Probe."""

        first = Param(1, kind="int", doc="A default.")
        second = Param(kind="str", doc="Required.")

    sig = inspect.signature(_Probe)
    assert sig.parameters["first"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert sig.parameters["second"].kind is inspect.Parameter.KEYWORD_ONLY
    assert _Probe(second="x").second == "x"
    assert "second : a string\n    Required." in _Probe.__doc__


def test_annotations_follow_kind_choices_and_nullability() -> None:
    assert Param(None, kind="int", nullable=True).annotation == (int | None)
    assert Param("a", choices=("a", "b")).annotation.__args__ == ("a", "b")
    assert Param([], kind="strs").annotation == list[str]


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_schema_methods_are_fully_annotated(name: str) -> None:
    """Every ``output_schema``/``column_schema`` an operator defines types all its arguments."""
    cls = ops.OPERATORS[name]
    for method in ("output_schema", "column_schema"):
        fn = getattr(cls, method)
        hints = fn.__annotations__
        params = [p for p in inspect.signature(fn).parameters if p != "self"]
        assert all(p in hints for p in params) and "return" in hints, (name, method, hints)
