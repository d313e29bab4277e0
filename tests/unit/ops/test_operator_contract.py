"""The operator contract (see ``interactive_recsys/ops/_base.py``), checked for EVERY operator
registered in ``interactive_recsys.ops.OPERATORS``.

A new operator is picked up automatically. If it cannot be built without arguments, or
needs other input columns than the default numeric ones, add it to
``CONSTRUCTOR_KWARGS`` / ``INPUT_COLUMNS`` below; the tests fail and say so otherwise.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ops._base import StatOperator
from interactive_recsys.params import Param
from interactive_recsys.tables._context import OpContext
from tests.conftest import (
    assert_frames_equal,
    make_criteo_frame,
    new_workflow,
    output_dtypes,
    partitioned,
)
from tests.unit.backend.test_buffer_kernels import same

OPERATOR_NAMES = sorted(ops.OPERATORS)

#: Keyword arguments of the operators that cannot be built with no arguments (required
#: parameters, or cross-parameter checks such as "Clip needs a bound").
CONSTRUCTOR_KWARGS: dict[str, dict[str, Any]] = {
    "Bucketize": {"boundaries": [2.0, 5.0, 9.0]},
    "Clip": {"min_value": 1, "max_value": 6},
    "Filter": {"expr": "I1 > 2"},
    "AddProperties": {"properties": {"domain": "x", "size": [1, 2]}},
    "AddTags": {"tags": ["item"]},
    "HashBucket": {"num_buckets": 13},
    "HashedCross": {"num_buckets": 17},
    "JoinExternal": {"df_ext": pd.DataFrame({"C1": [f"c1_{i:03x}" for i in range(1, 41, 2)],
                                             "C1_rank": range(20), "C1_name": list("abcdefghij") * 2}),
                     "on": "C1"},
    "JoinGroupby": {"cont_cols": ["I1", "F1"]},
    "TargetEncoding": {"target": "I2"},
    "LambdaOp": {"f": "x * 2"},
    "Rename": {"postfix": "_r"},
    "DifferenceLag": {"partition_cols": ["C3"]},
    "Groupby": {"groupby_cols": ["C3"]},
    "ListSlice": {"start": 1},
    "SelectColumns": {"columns": ["F1"]},
    "DropColumns": {"columns": ["F1"]},
}

#: More parameter sets per operator (optional): non-default values that must survive
#: repr, save/load, schema prediction and partitioning too.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "Categorify": [{"freq_threshold": 3, "num_buckets": 4, "dtype": "int32", "split_out": 3},
                   {"max_size": 5, "encode_type": "joint"},
                   {"freq_threshold": 2, "max_frequency": 20},
                   {"vocabulary": {"C1": ["c1_001", "c2_001", "c1_002", "c2_003"],
                                   "L1": ["t1", "t0", "t5"]}, "num_buckets": 2}],
    "Clip": [{"max_value": 4}],
    "FillMissing": [{"fill_val": -1, "add_binary_cols": True}],
    "FillMedian": [{"add_binary_cols": True}],
    "HashBucket": [{"num_buckets": 1, "dtype": "int32"}],
    "LambdaOp": [{"f": "abs(x) + 1", "dtype": "float64", "add_tags": ["continuous"]}],
    "Rename": [{"mapping": {"I1": "first"}, "prefix": "p_"}],
    "Filter": [{"expr": "(I1 >= 2) & notnull(F1) | (F1 > 5.5)"}],
    "DifferenceLag": [{"partition_cols": ["C3", "C2"], "shift": -2, "sort_cols": ["I1"],
                       "columns": ["F1"]}],
    "Groupby": [{"groupby_cols": ["C3"], "sort_cols": ["I1"], "name_sep": ".", "aggs": {
        "I1": ["list", "count", "first", "last", "sum", "mean"], "label": ["min", "std"]}}],
    "ListSlice": [{"start": -2, "pad": True, "pad_value": "pad"}, {"start": 0, "end": 2}],
}

#: A value other than the default of each finishing parameter of an operator
#: (``StatOperator.finishing_params``): a refit that changes only it must read no data and
#: give what a fit gives.
FINISHING_VALUES: dict[str, dict[str, Any]] = {
    "Categorify": {"freq_threshold": 2, "max_size": 4, "max_frequency": 20, "num_buckets": 3,
                   "dtype": "int32"},
}

#: Input columns of each operator; the default is numeric columns with nulls (and NaN).
DEFAULT_COLUMNS = ["I1", "F1"]
INPUT_COLUMNS: dict[str, list[Any]] = {
    "Categorify": ["C1", "I2", "L1"],
    "DataStats": ["I1", "F1", "C1", "L1"],
    "HashBucket": ["C1", "I2", "L1"],
    "HashedCross": ["C1", "I2"],
    "ReduceDtypeSize": ["C1", "L1"],  # numeric dtypes are known only after fit
    "JoinExternal": ["C1", "I1"],
    "JoinGroupby": ["C1", "I1", "F1"],
    "TargetEncoding": ["C1", "C3", "I2"],
    "Rename": ["C1", "I1", "L1"],
    "Dropna": ["I1", "F1", "C1"],
    "DifferenceLag": ["C3", "C2", "I1", "F1"],
    "Groupby": ["C3", "C1", "I1"],  # F1's NaN would not compare equal inside lists
    "ListSlice": ["L1"],
    "ValueCount": ["L1"],
}

NPARTITIONS = 5


CASES = [pytest.param(name, -1, id=name) for name in OPERATOR_NAMES] + [
    pytest.param(name, i, id=f"{name}-variant{i}")
    for name in OPERATOR_NAMES for i in range(len(VARIANTS.get(name, [])))]


def make_op(name: str, variant: int = -1) -> ops.Operator:
    cls = ops.OPERATORS[name]
    if variant >= 0:
        return cls(**VARIANTS[name][variant])
    if name in CONSTRUCTOR_KWARGS:
        return cls(**CONSTRUCTOR_KWARGS[name])
    required = [p for p, spec in cls.params.items() if spec.required]
    if required:
        pytest.fail(f"Operator {name} has required parameters {required}: add it to "
                    "CONSTRUCTOR_KWARGS in tests/unit/ops/test_operator_contract.py with valid values.")
    try:
        return cls()
    except irs.ParameterError as exc:
        pytest.fail(f"Operator {name} cannot be built without arguments ({exc}); add it to "
                    "CONSTRUCTOR_KWARGS in tests/unit/ops/test_operator_contract.py with valid values.")


def graph(name: str, variant: int = -1, op: ops.Operator | None = None) -> Any:
    """``columns >> op`` next to a passed-through label (so dropped rows show in it)."""
    op = op if op is not None else make_op(name, variant)
    columns = INPUT_COLUMNS.get(name, DEFAULT_COLUMNS)
    if name == "Categorify" and op.encode_type == "joint" and variant >= 0:
        columns = [["C1", "C2"], "L1"]  # a joint group next to a plain column
    if op.shuffle_keys() is not None:  # it regroups rows: the label must go through it
        return [*columns, "label"] >> op
    return (columns >> op) + ["label"]


def in_key_order(frame: pd.DataFrame, wf: irs.Workflow) -> pd.DataFrame:
    """Rows of an operator that shuffles by key, stably sorted by its keys and sort columns
    (output partitions hold hash buckets of keys, so only this order is comparable)."""
    op = operator_objects(wf)[0]
    if op.shuffle_keys() is None:
        return frame
    keys = op.shuffle_keys() + [c for c in op.sort_cols or [] if c in frame.columns]
    return irs.get_backend("cpu").sort_rows_by(frame, list(dict.fromkeys(keys)))


def operator_objects(wf: irs.Workflow) -> list[ops.Operator]:
    return [n.op for n in wf.nodes if n.kind == "op"]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    df = make_criteo_frame(rows=150, seed=3)
    values = df["F1"].to_numpy(dtype=np.float64, na_value=0.0).copy()
    values[[5, 77]] = np.nan  # a real NaN (not a null) next to the nulls
    arr = pa.array(values, mask=df["F1"].isna().to_numpy(dtype=bool))
    df["F1"] = pd.Series(pd.arrays.ArrowExtensionArray(arr))
    return df


@pytest.fixture(scope="module")
def dataset(frame: pd.DataFrame) -> irs.Dataset:
    return partitioned(frame, NPARTITIONS)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("contract"))


@pytest.fixture(scope="module")
def fitted(dataset: irs.Dataset, root: str) -> dict[str, irs.Workflow]:
    """One workflow per operator, fitted on the multi-partition dataset (lazily, cached)."""
    return _FittedCache(dataset, root)


class _FittedCache(dict):
    def __init__(self, dataset: irs.Dataset, root: str) -> None:
        super().__init__()
        self.dataset, self.root = dataset, root

    def __missing__(self, key: tuple[str, int]) -> irs.Workflow:
        wf = new_workflow(graph(*key), self.root)
        wf.fit(self.dataset)
        self[key] = wf
        return wf


# ---- construction, repr, config --------------------------------------------------------------
def test_every_operator_is_covered() -> None:
    assert OPERATOR_NAMES, "no operator registered"
    unknown = (set(CONSTRUCTOR_KWARGS) | set(INPUT_COLUMNS) | set(VARIANTS)) \
        - set(OPERATOR_NAMES)
    assert not unknown, f"tables name operators that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_constructs_and_documents_itself(name: str) -> None:
    op = make_op(name)
    assert isinstance(op, ops.Operator)
    assert type(op).__name__ == name and ops.OPERATORS[name] is type(op)
    assert type(op).summary, f"{name} needs a one-line `summary` (builder palette, docs)"
    for pname, spec in type(op).params.items():
        assert isinstance(spec, Param)
        assert spec.doc, f"{name}'s parameter {pname!r} needs a `doc`"
        assert getattr(op, pname) == op.get_params()[pname]


@pytest.mark.parametrize(("name", "variant"), CASES)
def test_repr_round_trips_into_an_equal_operator(name: str, variant: int) -> None:
    op = make_op(name, variant)
    text = repr(op)
    assert text.startswith(f"{name}(")
    rebuilt = eval(text, {"__builtins__": {}}, dict(ops.OPERATORS))
    assert rebuilt == op
    assert repr(rebuilt) == text


@pytest.mark.parametrize(("name", "variant"), CASES)
def test_config_round_trips_through_json(name: str, variant: int) -> None:
    op = make_op(name, variant)
    config = json.loads(json.dumps(op.to_config(), allow_nan=False))
    assert config["op"] == name
    assert ops.Operator.from_config(config) == op


# ---- schema ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_predicted_schema_matches_transformed_output(name: str, variant: int,
                                                     frame: pd.DataFrame, dataset: irs.Dataset,
                                                     root: str) -> None:
    wf = new_workflow(graph(name, variant), root)
    predicted = wf.compute_schema(dataset.schema)  # before fit
    wf.fit(dataset)
    out = wf.transform(frame, dtype_backend="pyarrow")  # the engine's columns and dtypes
    actual = irs.get_backend("cpu").schema_of(out)
    assert predicted.names == actual.names == list(out.columns)
    assert predicted.dtypes == actual.dtypes
    assert wf.output_schema.names == actual.names
    assert wf.output_schema.dtypes == actual.dtypes
    # the lazy Dataset advertises the same schema as its partitions hold
    lazy = wf.transform(dataset)
    assert lazy.schema.dtypes == actual.dtypes
    for col in wf.output_schema.values():  # fitted schema only adds properties
        assert col.tags == predicted[col.name].tags
        card = col.cardinality
        if card is not None and col.dtype.replace("list<", "").startswith("int"):
            values = pd.Series(out[col.name].explode() if col.is_list else out[col.name])
            present = values.dropna().astype("int64")
            assert present.empty or (present.min() >= 0 and present.max() < card), col.name


# ---- persistence -----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_save_load_round_trips_params_and_output(name: str, variant: int, frame: pd.DataFrame,
                                                 fitted: dict, tmp_path: Any) -> None:
    wf = fitted[name, variant]
    wf.save(tmp_path / "wf")
    loaded = irs.Workflow.load(tmp_path / "wf")
    assert operator_objects(loaded) == operator_objects(wf)
    assert [o.get_params() for o in operator_objects(loaded)] == \
        [o.get_params() for o in operator_objects(wf)]
    assert loaded.output_schema == wf.output_schema
    assert_frames_equal(loaded.transform(frame), wf.transform(frame))


# ---- partitions ------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_single_partition_equals_multi_partition_result(name: str, variant: int,
                                                        frame: pd.DataFrame,
                                                        dataset: irs.Dataset, fitted: dict,
                                                        root: str) -> None:
    wf = fitted[name, variant]
    whole = wf.transform(frame)  # one pandas partition
    assert isinstance(whole, pd.DataFrame)
    lazy = wf.transform(dataset)
    assert isinstance(lazy, irs.Dataset) and lazy.npartitions == NPARTITIONS
    assert_frames_equal(in_key_order(lazy.compute(), wf), in_key_order(whole, wf))
    # fitting on one partition gives the same statistics as fitting on many
    single = new_workflow(graph(name, variant), root).fit(partitioned(frame, 1))
    assert_frames_equal(single.transform(frame), whole)


PER_VALUE_CASES = [c for c in CASES if ops.OPERATORS[c.values[0]].elementwise
                   is not ops.Operator.elementwise]


@pytest.mark.parametrize(("name", "variant"), PER_VALUE_CASES)
def test_a_per_value_step_gives_what_transform_gives(name: str, variant: int,
                                                     frame: pd.DataFrame, fitted: dict) -> None:
    """An operator with an ``elementwise`` step runs as that step inside a chain of the plan
    (``Plan.evaluate``): the step on each column must be its ``transform``, bit for bit."""
    wf = fitted[name, variant]
    op = operator_objects(wf)[0]
    state = next((s.state for s in wf.fitted_steps()), None) if op.is_stat else None
    columns = [c for c in INPUT_COLUMNS.get(name, DEFAULT_COLUMNS) if isinstance(c, str)]
    if (op.is_stat and state is None) or op.elementwise(state, columns[0]) is None:
        pytest.skip(f"{name} is no per-value step")
    b = irs.get_backend("cpu")
    native = b.from_pandas(frame[columns])
    ctx = OpContext(b, [tuple(columns)], "contract", wf.artifacts_dir)
    by_transform = op.transform(native, state, ctx)
    for c in columns:
        by_step = b.elementwise(b.column(native, c), [op.elementwise(state, c)])
        same(b.column(by_transform, c), by_step)  # NaN equal to NaN, bits compared
        chain = [op.elementwise(state, c)] * 2  # twice in a row, as a chain runs it
        twice = op.transform(by_transform, state, ctx)
        same(b.column(twice, c), b.elementwise(b.column(native, c), chain))


# ---- fitting ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_transform_before_fit(name: str, variant: int, frame: pd.DataFrame, fitted: dict,
                              root: str) -> None:
    op = make_op(name, variant)
    wf = new_workflow(graph(name, variant, op), root)
    if op.is_stat:
        with pytest.raises(irs.NotFittedError, match="fit"):
            wf.transform(frame)
        with pytest.raises(irs.NotFittedError):
            wf.transform(partitioned(frame, 2))
    else:  # nothing to fit: transform works right away
        assert_frames_equal(wf.transform(frame), fitted[name, variant].transform(frame))


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_a_refit_changing_only_finishing_params_reads_no_data_and_equals_a_fit(
        name: str, frame: pd.DataFrame, root: str) -> None:
    cls = ops.OPERATORS[name]
    finishing = getattr(cls, "finishing_params", ())
    undeclared = sorted(set(finishing) - set(cls.params))
    assert not undeclared, f"{name}.finishing_params names {undeclared}: not its parameters"
    if not finishing:
        assert not issubclass(cls, StatOperator) or \
            cls.refinish_graph is StatOperator.refinish_graph, \
            f"{name} overrides refinish_graph but declares no finishing_params"
        return
    missing = sorted(set(finishing) - set(FINISHING_VALUES.get(name, {})))
    if missing:
        pytest.fail(f"Add {name}'s finishing parameters {missing}, each with a value other "
                    "than its default, to FINISHING_VALUES in "
                    "tests/unit/ops/test_operator_contract.py.")
    base = make_op(name)
    first = new_workflow(graph(name, op=base), root).fit(frame)
    for pname, value in FINISHING_VALUES[name].items():
        params = {**base.to_config()["params"], pname: value}
        refit = new_workflow(graph(name, op=cls(**params)), root).fit(frame, reuse=first)
        assert [s.refinished for s in refit.fitted_steps()] == [True], pname
        assert refit.fit_stats["phases"] == [], pname  # no pass over the data
        fresh = new_workflow(graph(name, op=cls(**params)), root).fit(frame)
        assert_frames_equal(refit.transform(frame), fresh.transform(frame))


# ---- parameter validation --------------------------------------------------------------------
def bad_values(spec: Param) -> list[Any]:
    """Values that ``spec`` must reject."""
    if spec.choices is not None:
        return ["not-a-choice", None] if None not in spec.choices and not spec.nullable else \
            ["not-a-choice"]
    by_kind: dict[str, list[Any]] = {
        "number": ["1", True], "int": [1.5, "3", True], "bool": ["yes", 1],
        "str": [3, ["a"]], "scalar": [[1], {"a": 1}], "numbers": ["1, 2", [1, "a"], 3],
        "strs": ["ab", [1]], "mapping": [{"a": 1}, ["a"]], "callable_or_expr": [3, ["x"]],
        "any": [],
    }
    values = list(by_kind[spec.kind])
    if spec.low is not None:
        values.append(spec.low - 1)
        if spec.closed in ("right", "neither"):
            values.append(spec.low)  # an open bound itself
    if spec.high is not None:
        values.append(spec.high + 1)
        if spec.closed in ("left", "neither"):
            values.append(spec.high)
    if not spec.nullable and spec.kind != "any":
        values.append(None)
    return values


INVALID_VALUE_CASES = [
    pytest.param(name, pname, value, id=f"{name}-{pname}-{value!r}")
    for name in OPERATOR_NAMES
    for pname, spec in ops.OPERATORS[name].params.items()
    for value in bad_values(spec)
]


def names_parameter(message: str, pname: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(pname)}(?![A-Za-z0-9_])", message) is not None


@pytest.mark.parametrize(("name", "pname", "value"), INVALID_VALUE_CASES)
def test_invalid_parameter_value_raises_parameter_error_naming_it(name: str, pname: str,
                                                                  value: Any) -> None:
    kwargs = {**CONSTRUCTOR_KWARGS.get(name, {}), pname: value}
    with pytest.raises(irs.ParameterError) as info:
        ops.OPERATORS[name](**kwargs)
    assert names_parameter(str(info.value), pname), str(info.value)


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_unknown_parameter_raises_parameter_error_naming_it(name: str) -> None:
    with pytest.raises(irs.ParameterError, match="no_such_param"):
        ops.OPERATORS[name](**CONSTRUCTOR_KWARGS.get(name, {}), no_such_param=1)
    if ops.OPERATORS[name].params:
        too_many = [0] * (len(ops.OPERATORS[name].params) + 1)
        with pytest.raises(irs.ParameterError, match="positional"):
            ops.OPERATORS[name](*too_many)


#: Values that pass the per-parameter check but break a cross-parameter rule.
INVALID_COMBINATIONS = [
    pytest.param("DifferenceLag", {"partition_cols": ["a"], "shift": 0}, "shift",
                 id="DifferenceLag-shift0"),
    pytest.param("DifferenceLag", {"partition_cols": []}, "partition_cols",
                 id="DifferenceLag-no-key"),
    pytest.param("Groupby", {"groupby_cols": []}, "groupby_cols", id="Groupby-no-key"),
    pytest.param("Groupby", {"groupby_cols": ["a"], "aggs": "median"}, "aggs",
                 id="Groupby-unknown-agg"),
    pytest.param("Groupby", {"groupby_cols": ["a"], "aggs": {"x": []}}, "aggs",
                 id="Groupby-empty-aggs"),
    pytest.param("ListSlice", {"start": 2, "pad": True}, "pad", id="ListSlice-pad-no-length"),
    pytest.param("SelectColumns", {"columns": []}, "columns", id="SelectColumns-empty"),
    pytest.param("Clip", {"min_value": 5, "max_value": 1}, "min_value", id="Clip-min>max"),
    pytest.param("Clip", {}, "min_value", id="Clip-no-bound"),
    pytest.param("Bucketize", {"boundaries": []}, "boundaries", id="Bucketize-empty"),
    pytest.param("Bucketize", {"boundaries": [1, 3, 2]}, "boundaries", id="Bucketize-unsorted"),
    pytest.param("Bucketize", {"boundaries": [1, 1]}, "boundaries", id="Bucketize-repeated"),
    pytest.param("Categorify", {"freq_threshold": 2, "max_size": 3}, "max_size",
                 id="Categorify-threshold+max_size"),
    pytest.param("Categorify", {"freq_threshold": 5, "max_frequency": 4}, "max_frequency",
                 id="Categorify-max_frequency<threshold"),
    pytest.param("Categorify", {"vocabulary": {"C1": ["a"]}, "freq_threshold": 2},
                 "vocabulary", id="Categorify-vocabulary+threshold"),
    pytest.param("Categorify", {"vocabulary": {"C1": ["a", "a"]}}, "vocabulary",
                 id="Categorify-vocabulary-duplicates"),
    pytest.param("Rename", {}, "mapping", id="Rename-nothing"),
    pytest.param("Filter", {"expr": "I1 >"}, "expr", id="Filter-syntax"),
    pytest.param("Filter", {"expr": "__import__('os')"}, "expr", id="Filter-call"),
    pytest.param("Filter", {"expr": "I1.real > 1"}, "expr", id="Filter-attribute"),
    pytest.param("LambdaOp", {"f": "x +"}, "f", id="LambdaOp-syntax"),
    pytest.param("LambdaOp", {"f": "[x]"}, "f", id="LambdaOp-list"),
]


@pytest.mark.parametrize(("name", "kwargs", "pname"), INVALID_COMBINATIONS)
def test_invalid_parameter_combination_raises_parameter_error(name: str, kwargs: dict,
                                                              pname: str) -> None:
    with pytest.raises(irs.ParameterError) as info:
        ops.OPERATORS[name](**kwargs)
    assert names_parameter(str(info.value), pname), str(info.value)


@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_non_finite_number_param_is_rejected_or_round_trips(value: float, tmp_path: Any) -> None:
    try:
        op = ops.Clip(max_value=value)
    except irs.ParameterError as exc:
        assert "max_value" in str(exc)
        return
    wf = irs.Workflow(["x"] >> op)
    wf.fit(pd.DataFrame({"x": [1.0, 2.0]}))
    wf.save(tmp_path / "wf")
    loaded = operator_objects(irs.Workflow.load(tmp_path / "wf"))[0]
    assert repr(loaded) == repr(op)


def test_contract_data_exercises_nulls_nan_lists(frame: pd.DataFrame) -> None:
    """The frame above really holds what the contract tests rely on."""
    assert frame["I1"].isna().any() and frame["C1"].isna().any()
    f1 = pa.array(frame["F1"])
    assert f1.null_count > 0 and pa.compute.sum(pa.compute.is_nan(f1)).as_py() == 2
    assert output_dtypes(frame[["L1"]]) == {"L1": "list<string>"}
