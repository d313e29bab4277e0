"""BuilderModel: column profile, steps and branches, validation, schema prediction, code
export, save/load, preview and background runs — all without widgets."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.params import Param
from interactive_recsys.ui.builder._codegen import workflow_code
from interactive_recsys.ui.builder._column_profile import (
    estimate_distinct,
    infer_role,
    profile_table,
)
from interactive_recsys.ui.builder._param_text import param_from_text, param_to_text
from interactive_recsys.ui.builder.model._model import Branch, BuilderModel, Step
from interactive_recsys.ui.builder.model._run import job_text
from interactive_recsys.workflow._graph import Node
from tests.conftest import assert_frames_equal, make_criteo_frame, output_dtypes, partitioned
from tests.unit.ops.test_operator_contract import CASES as CONTRACT_CASES
from tests.unit.ops.test_operator_contract import graph as contract_graph

CATS = ["C1", "C2", "C3"]
CONTS = ["I1", "I2", "I3", "F1"]


@pytest.fixture
def frame() -> pd.DataFrame:
    return make_criteo_frame(300)


def two_branches(model: BuilderModel) -> BuilderModel:
    """What the clicks of the issue's scenario do: Categorify; new branch; FillMissing -> Normalize."""
    model.add_step(CATS, "Categorify", {"freq_threshold": 2})
    model.new_branch()
    model.add_step(CONTS, "FillMissing", {"fill_val": 1})
    model.add_step(CONTS, "Normalize")
    model.new_branch(["label"])
    return model


def code_workflow() -> irs.Workflow:
    """The same workflow written by hand."""
    return irs.Workflow((CATS >> ops.Categorify(freq_threshold=2))
                        + (CONTS >> ops.FillMissing(fill_val=1) >> ops.Normalize())
                        + irs.ColumnSelector(["label"]))


# ---- profile ----------------------------------------------------------------------------------
def test_profile_matches_pandas_on_the_whole_frame(frame):
    model = BuilderModel(frame)
    profile = {p.name: p for p in model.profile}
    assert list(profile) == list(frame.columns)
    for name in frame.columns:
        p = profile[name]
        assert p.exact and p.sample_rows == len(frame)
        assert p.null_fraction == pytest.approx(frame[name].isna().mean())
        if name == "L1":  # distinct elements of the lists
            expected = len({v for row in frame[name].dropna() for v in row if v is not None})
        else:
            expected = frame[name].nunique(dropna=True)
        assert p.distinct == p.distinct_in_sample == expected, name
    roles = {name: p.role for name, p in profile.items()}
    assert roles == {"label": "label", "I1": "continuous", "I2": "continuous",
                     "I3": "continuous", "F1": "continuous", "C1": "categorical",
                     "C2": "categorical", "C3": "categorical", "L1": "list"}
    assert model.columns_by_role("categorical") == CATS


def test_profile_of_a_sample_estimates_the_distinct_count(tmp_path):
    rows, sample = 4000, 500
    values = np.arange(rows)  # every value distinct: all sampled values are singletons
    frame = pd.DataFrame({"userId": values, "x": values % 7})
    frame.to_parquet(tmp_path / "data.parquet")
    model = BuilderModel(str(tmp_path / "data.parquet"), sample_rows=sample)
    p = {q.name: q for q in model.profile}
    assert not p["userId"].exact and p["userId"].sample_rows == sample
    assert p["userId"].distinct_in_sample == sample
    # every sampled value new, at every sub-sample size: the growth continues to all rows
    assert p["userId"].distinct == rows
    assert p["userId"].distinct_text == "~4,000 (sample estimate)"
    assert p["x"].distinct == 7  # every value seen often: saturated
    assert p["userId"].role == "categorical"  # an integer named ...Id
    unknown = BuilderModel(partitioned(frame, 8), sample_rows=sample)  # row count unknown
    assert {q.name: q for q in unknown.profile}["userId"].distinct_text \
        == ">=500 (sample estimate)"


def test_estimate_distinct_properties():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 300, 10_000)
    sample = data[:1000]
    counts = pd.Series(sample).value_counts().tolist()
    estimate = estimate_distinct(counts, len(data))
    assert len(counts) <= estimate <= len(data)
    assert 0.8 <= estimate / len(np.unique(data)) <= 1.25  # a saturated vocabulary
    zipf = rng.zipf(1.1, 400_000)  # a long tail: the sample shows a small part of it
    counts = pd.Series(zipf[:10_000]).value_counts().tolist()
    true = len(np.unique(zipf))
    assert len(counts) * 3 < true
    assert 0.7 <= estimate_distinct(counts, len(zipf)) / true <= 1.4
    assert estimate_distinct(pd.Series(data).value_counts().tolist(), len(data)) == 300
    assert estimate_distinct([], 10) == 0


def test_infer_role_uses_tags_first():
    assert infer_role("x", "int64", {"target"}) == "label"
    assert infer_role("x", "int64", {"categorical"}) == "categorical"
    assert infer_role("x", "string", {"continuous"}) == "continuous"
    assert infer_role("flag", "bool") == "categorical"


def test_profile_table_with_dictionary_and_list_columns():
    table = pa.table({"d": pa.array(["a", "b", "a", None]).dictionary_encode(),
                      "l": pa.array([[1, 2], [2], None, []])})
    d, lst = profile_table(table, total_rows=4)
    assert (d.distinct, d.null_fraction, d.role) == (2, 0.25, "categorical")
    assert (lst.distinct, lst.null_fraction, lst.role) == (2, 0.25, "list")


def test_missing_dataset_path_names_the_path(tmp_path):
    missing = tmp_path / "nope.parquet"
    with pytest.raises(irs.DatasetError, match="nope.parquet.*does not exist"):
        BuilderModel(str(missing))


# ---- editing ----------------------------------------------------------------------------------
def test_add_reorder_remove_undo(frame):
    m = BuilderModel(frame)
    assert m.add_step(CONTS, "FillMissing") == (0, 0)
    assert m.add_step(CONTS, "LogOp") == (0, 1)
    assert m.add_step(CONTS, "Clip", {"min_value": 0}) == (0, 2)
    names = lambda: [s.op for s in m.branches[0].steps]  # noqa: E731
    assert names() == ["FillMissing", "LogOp", "Clip"]
    m.move_step(0, 2, -1)
    assert names() == ["FillMissing", "Clip", "LogOp"] and m.selected == (0, 1)
    m.move_step(0, 1, +1)
    assert names() == ["FillMissing", "LogOp", "Clip"]
    with pytest.raises(irs.ParameterError, match="already first"):
        m.move_step(0, 0, -1)
    m.update_step(0, 2, params={"min_value": 1, "max_value": 5})
    assert m.branches[0].steps[2] == Step("Clip", {"min_value": 1, "max_value": 5})
    m.remove_step(0, 1)
    assert names() == ["FillMissing", "Clip"]
    m.undo()
    assert names() == ["FillMissing", "LogOp", "Clip"]
    m.undo()
    assert m.branches[0].steps[2] == Step("Clip", {"min_value": 0})
    for _ in range(5):
        m.undo()
    assert m.branches == [Branch()] and not m.can_undo
    with pytest.raises(irs.ParameterError, match="Nothing to undo"):
        m.undo()


def test_other_columns_start_a_new_branch_and_changes_notify(frame):
    m = BuilderModel(frame)
    seen = []
    m.observe(lambda change: seen.append(len(change.new)), names="branches")
    m.add_step(CATS, "Categorify")
    assert m.add_step(CONTS, "FillMissing") == (1, 0)  # different columns: a new branch
    assert seen == [1, 2]
    m.remove_branch(0)
    assert [b.columns for b in m.branches] == [CONTS]


def test_parameter_errors_are_the_operators_own(frame):
    m = BuilderModel(frame)
    cases = [("Clip", {"min_value": "a"}), ("Categorify", {"freq_threshold": -1}),
             ("Categorify", {"encode_type": "sideways"}), ("Bucketize", {}),
             ("HashBucket", {"num_buckets": 2.5}), ("Clip", {"minimum": 0})]
    for op, params in cases:
        with pytest.raises(irs.ParameterError) as from_code:
            getattr(ops, op)(**params)
        with pytest.raises(irs.ParameterError) as from_model:
            m.add_step(CONTS, op, params)
        assert str(from_model.value) == str(from_code.value)
    assert str(from_code.value) == ("Clip has no parameter 'minimum'; its parameters are: "
                                    "min_value, max_value.")
    assert m.branches == [Branch()] and not m.can_undo  # nothing was added


def test_incompatible_columns_and_empty_selection(frame):
    m = BuilderModel(frame)
    with pytest.raises(irs.SchemaError) as err:
        m.add_step(CATS, "Normalize")
    text = str(err.value)
    assert "Normalize needs numeric columns" in text and "'C1'" in text and "string" in text
    with pytest.raises(irs.ParameterError, match="No columns are selected"):
        m.add_step([], "Normalize")
    with pytest.raises(irs.SchemaError, match="'nope' is not in the dataset"):
        m.add_step(["nope"], "Normalize")
    m.add_step(CONTS, "FillMissing")
    with pytest.raises(irs.SchemaError, match=r"Output column\(s\) \['I1', 'I2', 'I3', 'F1'\]"):
        m.new_branch(CONTS)  # the same outputs twice
    with pytest.raises(irs.SchemaError, match="needs numeric columns"):
        m.update_step(0, 0, columns=["C1"])  # editing is validated too
    assert m.branches[0].columns == CONTS


def test_param_text_round_trip():
    cases = [(Param(kind="numbers"), [0, 1.5, 10], "0, 1.5, 10"),
             (Param(kind="strs"), ["a", "b"], "a, b"),
             (Param(kind="mapping"), {"a": "x", "b": "y"}, "a:x, b:y"),
             (Param(None, kind="number", nullable=True), None, ""),
             (Param(0, kind="int"), 7, "7"),
             (Param(kind="str"), "rating >= 4", "rating >= 4"),
             (Param("int64", kind="any", choices=("int32", "int64")), "int32", "int32")]
    for spec, value, text in cases:
        assert param_to_text(spec, value) == text
        assert param_from_text(spec, text) == value
    assert param_from_text(Param(0.0, kind="number"), "") == 0.0  # empty: the default
    assert param_from_text(Param(kind="mapping"), '{"a": "b"}') == {"a": "b"}
    assert param_from_text(Param(kind="number"), "abc") == "abc"  # left for the validator


# ---- the workflow -----------------------------------------------------------------------------
def test_schema_prediction_matches_the_fitted_output(frame):
    m = two_branches(BuilderModel(frame))
    predicted = m.output_schema()
    assert predicted.dtypes == {**dict.fromkeys(CATS, "int64"), **dict.fromkeys(CONTS, "float32"),
                                "label": "int64"}
    out = m.to_workflow().fit_transform(frame)
    assert output_dtypes(out) == predicted.dtypes


def test_workflow_equals_the_one_written_in_code(frame):
    m = two_branches(BuilderModel(frame))
    assert m.to_workflow().to_config()["nodes"] == code_workflow().to_config()["nodes"]


def test_export_code_round_trip(frame):
    m = two_branches(BuilderModel(frame))
    code = m.export_code()
    namespace: dict = {}
    exec(code, namespace)
    rebuilt = namespace["workflow"]
    assert rebuilt.to_config()["nodes"] == m.to_workflow().to_config()["nodes"]
    assert_frames_equal(rebuilt.fit_transform(frame), m.to_workflow().fit_transform(frame))
    assert "ops.Categorify(freq_threshold=2)" in code and "ops.FillMissing(fill_val=1)" in code


def test_exported_code_runs_as_a_script_and_writes_the_data_and_the_workflow(frame, tmp_path):
    """The Studio's Export, opened on a path: the whole job, run as it is in a new process,
    gives the builder's workflow output and a fitted folder that ``irs run`` applies."""
    import subprocess
    import sys

    (tmp_path / "raw").mkdir()
    frame.iloc[:150].to_parquet(tmp_path / "raw" / "part-0.parquet")
    frame.iloc[150:].to_parquet(tmp_path / "raw" / "part-1.parquet")
    m = two_branches(BuilderModel(str(tmp_path / "raw")))
    code = m.export_code("wf/")
    (tmp_path / "job.py").write_text(code)
    done = subprocess.run([sys.executable, "job.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    written = pd.read_parquet(tmp_path / "raw-processed")  # beside the data, named after it
    expected = m.to_workflow().fit_transform(irs.Dataset(str(tmp_path / "raw"))).compute()
    assert_frames_equal(written.reset_index(drop=True), expected.reset_index(drop=True))
    saved = irs.Workflow.load(tmp_path / "wf")
    assert saved.fitted
    applied = saved.transform(irs.Dataset(str(tmp_path / "raw"))).compute()
    assert_frames_equal(applied.reset_index(drop=True), expected.reset_index(drop=True))
    assert "irs.Workflow.load('wf/')" in code.split("# ---- Train from raw data")[1]


def test_export_code_of_other_graph_shapes():
    sel = Node.as_node(["a", "b"])
    shapes = [
        irs.Workflow(((sel >> ops.LogOp()) + (sel >> ops.Rename(postfix="_x"))) >> ops.Normalize()),
        irs.Workflow(["a"] + (["b"] >> ops.LogOp())),
        irs.Workflow(irs.ColumnSelector(tags=["continuous"]) >> ops.Clip(min_value=0.5)),
        irs.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")),
        irs.Workflow(["a"] >> ops.LambdaOp("x * 2", add_tags=["t"])),
    ]
    for wf in shapes:
        namespace: dict = {}
        exec(workflow_code(wf), namespace)
        assert namespace["workflow"].to_config()["nodes"] == wf.to_config()["nodes"]
    with pytest.raises(irs.ParameterError, match="cannot import"):
        workflow_code(irs.Workflow(["a"] >> ops.LambdaOp(lambda s: s * 2, dtype="int64")))


def test_from_workflow_and_back(frame):
    wf = code_workflow()
    m = BuilderModel.from_workflow(wf, frame)
    assert [b.columns for b in m.branches] == [CATS, CONTS, ["label"]]
    assert m.branches[1].steps == [Step("FillMissing", {"fill_val": 1}), Step("Normalize", {})]
    assert m.to_workflow().to_config()["nodes"] == wf.to_config()["nodes"]
    sel = Node.as_node(["I1"])
    diamond = irs.Workflow(((sel >> ops.LogOp()) + (["I2"] >> ops.LogOp())) >> ops.Normalize())
    with pytest.raises(irs.SchemaError, match="columns >> op >> op"):
        BuilderModel.from_workflow(diamond, frame)


def test_save_and_load(frame, tmp_path):
    m = two_branches(BuilderModel(frame))
    m.save(tmp_path / "wf")
    other = BuilderModel(frame)
    other.load(tmp_path / "wf")
    assert other.branches == m.branches
    other.undo()
    assert other.branches == [Branch()]


def test_preview_equals_a_real_fit_on_the_first_rows(frame):
    ds = partitioned(frame, 3)  # 100 rows per partition: 150 rows span two partitions
    m = two_branches(BuilderModel(ds))
    result = m.preview(150)
    expected = code_workflow().fit_transform(frame.head(150))
    assert_frames_equal(result.output, expected)
    assert list(result.input.columns) == [*CATS, *CONTS, "label"]
    assert_frames_equal(result.input, frame.head(150)[[*CATS, *CONTS, "label"]])


def test_preview_of_parquet_files_reads_the_first_rows(frame, tmp_path):
    (tmp_path / "data").mkdir()
    frame.iloc[:120].to_parquet(tmp_path / "data" / "part-0.parquet")
    frame.iloc[120:].to_parquet(tmp_path / "data" / "part-1.parquet")
    m = two_branches(BuilderModel(str(tmp_path / "data")))
    for n in (100, 150):  # within the first file, and across both files
        result = m.preview(n)
        assert_frames_equal(result.output, code_workflow().fit_transform(frame.head(n)))


def test_run_in_the_background_on_the_cluster(client, frame, tmp_path):
    m = two_branches(BuilderModel(partitioned(frame, 3)))
    ended: list = []
    callback_ran = threading.Event()
    job = m.run(tmp_path / "out", on_done=lambda j: (ended.append(j), callback_ran.set()))
    job.result(timeout=60)
    assert callback_ran.wait(10)
    assert ended == [job] and job.status == "finished"
    assert m.fitted_workflow is not None and m.fitted_workflow.fitted
    written = pd.read_parquet(tmp_path / "out")
    assert_frames_equal(written, code_workflow().fit_transform(frame))
    m.save(tmp_path / "fitted")  # the fitted workflow, with its vocabularies
    loaded = irs.Workflow.load(tmp_path / "fitted")
    assert loaded.fitted
    assert_frames_equal(loaded.transform(frame), written)


def test_a_failed_run_reports_its_error(frame, tmp_path):
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    m = BuilderModel(str(path))
    m.add_step(["I1"], "Normalize")
    path.unlink()  # the data disappears before the run
    job = m.run()
    error = job.exception(timeout=60)
    assert error is not None and job.status == "error"
    text = job_text(job)
    assert text.startswith("Run error after") and type(error).__name__ in text
    assert m.fitted_workflow is None


# ---- every registered operator (the contract suite's tables) ---------------------------------
@pytest.mark.parametrize(("name", "variant"), [c.values for c in CONTRACT_CASES],
                         ids=[c.id for c in CONTRACT_CASES])
def test_every_operator_round_trips_through_code_and_the_builder(name, variant):
    wf = irs.Workflow(contract_graph(name, variant))
    if name == "JoinExternal":  # holds a DataFrame: refused with the reason
        with pytest.raises(irs.ParameterError, match="write it to parquet and pass its path"):
            workflow_code(wf)
        return
    namespace: dict = {}
    exec(workflow_code(wf), namespace)
    assert namespace["workflow"].to_config()["nodes"] == wf.to_config()["nodes"]
    model = BuilderModel.from_workflow(wf, make_criteo_frame(20))
    assert model.to_workflow().to_config()["nodes"] == wf.to_config()["nodes"]


def test_side_tables_are_exported_by_path(tmp_path):
    items = pd.DataFrame({"C1": ["c1_001", "c1_002"], "C1_rank": [1, 2]})
    items.to_parquet(tmp_path / "items.parquet")
    wf = irs.Workflow(["C1"] >> ops.JoinExternal(str(tmp_path / "items.parquet"), on="C1"))
    code = workflow_code(wf)
    assert f"df_ext={str(tmp_path / 'items.parquet')!r}" in code
    namespace: dict = {}
    exec(code, namespace)
    assert namespace["workflow"].to_config()["nodes"] == wf.to_config()["nodes"]
    frame = make_criteo_frame(30)
    assert_frames_equal(namespace["workflow"].fit_transform(frame), wf.fit_transform(frame))


def test_the_builder_model_is_what_its_function_modules_are_typed_with():
    """``_run``, ``_store``, ``_suggest`` and ``_validate`` are typed with ``ModelState``
    (so they need not import the class that forwards to them): BuilderModel has every
    attribute and method that protocol names."""
    from interactive_recsys.ui.builder.model._model import BuilderModel
    from interactive_recsys.ui.builder.model._state import ModelState

    model = BuilderModel(pd.DataFrame({"c": ["a", "b"], "n": [1.0, 2.0]}))
    assert isinstance(model, ModelState)
    declared = set(ModelState.__annotations__) | {
        name for name in vars(ModelState) if not name.startswith("_")}
    assert declared <= set(dir(model)), declared - set(dir(model))
