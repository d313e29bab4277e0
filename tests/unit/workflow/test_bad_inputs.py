"""Bad inputs to the engine (issue 13): each gives a clear error, or works, and nothing outside
the intended output changes. I/O-side cases (writer, dataset, CLI, report) are in
``test_bad_inputs_io.py``.

Every case asserts the error class, that the message names the column/file/parameter, and,
where files exist, that the folders around are byte-identical before and after (digest).
"""

from __future__ import annotations

import decimal
import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError, SchemaError, WorkflowFormatError
from interactive_recsys.ui.builder._codegen import workflow_code


def digest(folder, skip: str | None = None) -> dict[str, str]:
    """sha256 of every file under ``folder`` by relative path (``skip``: a subfolder left out)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        if skip is not None:
            dirs[:] = [d for d in dirs if os.path.join(root, d) != os.fspath(skip)]
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


def expected_ids(values: list) -> list[int]:
    """Categorify's ids by hand: 1 null, then by descending count, ties by ascending value,
    starting at 3 (0 padding, 1 null, 2 out-of-vocabulary)."""
    counts: dict = {}
    for v in values:
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    order = sorted(counts, key=lambda v: (-counts[v], v))
    index = {v: 3 + i for i, v in enumerate(order)}
    return [1 if v is None else index[v] for v in values]


# ---- 1. column names never become file paths ------------------------------------------------
EVIL_NAMES = ["../../x/evil", "../../../sibling/part.00000.parquet", "/abs/path/out"]


def _evil_ops(name: str) -> list:
    return [
        [name] >> ops.Categorify(),
        [name, "y"] >> ops.TargetEncoding("y", kfold=2),
        [name, "y"] >> ops.JoinGroupby(cont_cols=["y"], stats=["count", "mean"]),
    ]


@pytest.mark.parametrize("name", EVIL_NAMES)
@pytest.mark.parametrize("which", ["Categorify", "TargetEncoding", "JoinGroupby"])
def test_column_names_never_become_file_paths(tmp_path, name, which):
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    pq.write_table(pa.table({"v": [1, 2]}), sibling / "part.00000.parquet")
    artifacts = tmp_path / "work" / "wf" / "artifacts"
    values = ["b", "a", "b", None, "c", "b"]
    df = pd.DataFrame({name: values, "y": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]})
    node = _evil_ops(name)[["Categorify", "TargetEncoding", "JoinGroupby"].index(which)]
    before = digest(tmp_path, skip=artifacts)
    absolute = os.path.exists("/abs/path/out") and digest("/abs/path/out")

    wf = irs.Workflow(node, artifacts_dir=artifacts)
    out = wf.fit_transform(df)

    assert digest(tmp_path, skip=artifacts) == before  # nothing written outside artifacts/
    assert (os.path.exists("/abs/path/out") and digest("/abs/path/out")) == absolute
    written = [os.path.relpath(os.path.join(r, f), artifacts)
               for r, _, files in os.walk(artifacts) for f in files]
    assert written and all(".." not in w and "evil" not in w and "abs" not in w
                           for w in written)
    if which == "Categorify":  # the name is kept in JSON, and encoding is right
        assert out[name].tolist() == expected_ids(values)
        state = next(iter(wf._states.values()))
        assert list(state["vocabs"]) == [name]
    saved = wf.save(tmp_path / "saved")
    again = irs.Workflow.load(saved).transform(df)
    pd.testing.assert_frame_equal(again, wf.transform(df))


# ---- 2. a loaded folder is read-only ------------------------------------------------------------
def test_refit_of_a_loaded_workflow_leaves_the_saved_folder_identical(tmp_path):
    first = pd.DataFrame({"c": ["a", "a", "b", "c"], "x": [1.0, 2.0, 3.0, 4.0]})
    other = pd.DataFrame({"c": ["z", "z", "z", "c"], "x": [10.0, 20.0, 30.0, 40.0]})
    probe = pd.DataFrame({"c": ["a", "b", "z", "c"], "x": [1.0, 2.0, 3.0, 4.0]})
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    saved = wf.fit(first).save(tmp_path / "saved")
    before = digest(saved)
    old_ids = irs.Workflow.load(saved).transform(probe)
    assert old_ids["c"].tolist() == [3, 4, 2, 5]  # a (2x), then b, c; z unseen

    loaded = irs.Workflow.load(saved)
    loaded.fit(other)
    assert loaded.transform(probe)["c"].tolist() == [2, 2, 3, 4]  # z (3x), then c
    assert not os.path.realpath(loaded.artifacts_dir).startswith(os.path.realpath(saved))

    assert digest(saved) == before
    pd.testing.assert_frame_equal(irs.Workflow.load(saved).transform(probe), old_ids)
    resaved = loaded.save(tmp_path / "resaved")  # only save() writes, to its own folder
    assert irs.Workflow.load(resaved).transform(probe)["c"].tolist() == [2, 2, 3, 4]
    assert digest(saved) == before


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
                         timeout=120, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    folder = run.stdout.strip().splitlines()[-1]
    assert "irs-artifacts-" in folder and not os.path.exists(folder)


# ---- 4. output name collisions --------------------------------------------------------------------
COLLISIONS = [
    ([["a", "b"], "a_b"], ops.Categorify(), "['a', 'b']", "['a_b']"),
    ([["a", "b"], "a_b"], ops.Categorify(encode_type="combo"), "['a', 'b']", "['a_b']"),
    ([["a", "b_c"], ["a_b", "c"]], ops.Categorify(encode_type="combo"), "['a', 'b_c']",
     "['a_b', 'c']"),
    ([["a", "b_c"], ["a_b", "c"]], ops.Categorify(), "['a', 'b_c']", "['a_b', 'c']"),
    ([["a", "b"], ["a", "c"]], ops.Categorify(), "['a', 'b']", "['a', 'c']"),
    ([["a", "b"], "a_b", "y"], ops.TargetEncoding("y"), "['a', 'b']", "['a_b']"),
    ([["a", "b"], "a_b", "y"], ops.JoinGroupby(cont_cols=["y"]), "['a', 'b']", "['a_b']"),
    ([["a", "b"], "a", "p", "b_p"], ops.JoinGroupby(cont_cols=["p", "b_p"], stats=["mean"]),
     "['a', 'b']", "['a']"),
    ([["a", "b_X_c"], ["a_X_b", "c"]], ops.HashedCross(10), "['a', 'b_X_c']",
     "['a_X_b', 'c']"),
]


@pytest.mark.parametrize(("selection", "op", "one", "other"), COLLISIONS,
                         ids=[f"{type(c[1]).__name__}-{i}" for i, c in enumerate(COLLISIONS)])
def test_output_name_collisions_are_refused_at_compute_schema(selection, op, one, other):
    names = ["a", "b", "c", "a_b", "b_c", "b_X_c", "a_X_b", "y", "p", "b_p"]
    schema = irs.Dataset(pd.DataFrame({n: [1.0, 0.0] if n in ("y", "p", "b_p") else ["u", "v"]
                                       for n in names})).schema
    with pytest.raises(SchemaError) as info:
        irs.Workflow(selection >> op).compute_schema(schema)
    message = str(info.value)
    assert one in message and other in message and type(op).__name__ in message


# ---- 5. paths inside workflow.json --------------------------------------------------------------
def _saved_categorify(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", "a"]})
    return irs.Workflow(["c"] >> ops.Categorify()).fit(df).save(tmp_path / "saved"), df


def _edit(saved, change):
    path = os.path.join(saved, "workflow.json")
    with open(path) as f:
        config = json.load(f)
    change(config)
    with open(path, "w") as f:
        json.dump(config, f)


@pytest.mark.parametrize("bad", ["../../outside", "/etc", "categorify-0/../../../outside",
                                 "link"])
def test_artifact_paths_outside_the_folder_are_refused(tmp_path, bad):
    saved, _ = _saved_categorify(tmp_path)
    outside = tmp_path / "outside"
    shutil.copytree(os.path.join(saved, "artifacts", "categorify-1", "vocab-000"), outside)
    if bad == "link":  # a link inside the folder is refused as such (folder_rules)
        os.symlink(outside, os.path.join(saved, "artifacts", "link"))
    before = digest(tmp_path)

    def change(config):
        config["states"]["1"]["vocabs"]["c"]["path"] = bad

    _edit(saved, change)
    before["saved/workflow.json"] = digest(tmp_path)["saved/workflow.json"]
    expected = "is a symbolic link" if bad == "link" else "outside the artifacts folder"
    with pytest.raises(WorkflowFormatError, match=expected) as info:
        irs.Workflow.load(saved)
    assert (repr(bad) in str(info.value) and "states.1" in str(info.value)) or bad == "link"
    assert digest(tmp_path) == before


def test_join_external_never_reads_a_file_named_in_workflow_json(tmp_path):
    side = pd.DataFrame({"item": [1, 2], "genre": ["rock", "jazz"]})
    wf = irs.Workflow(["item"] >> ops.JoinExternal(side, on="item"))
    saved = wf.fit(pd.DataFrame({"item": [1, 3]})).save(tmp_path / "saved")
    secret = tmp_path / "secret.parquet"
    pq.write_table(pa.table({"item": [1], "genre": ["secret"]}), secret)

    def change(config):
        config["nodes"][1]["op"]["params"]["df_ext"] = str(secret)

    _edit(saved, change)
    with pytest.raises(WorkflowFormatError, match="df_ext") as info:
        irs.Workflow.load(saved)
    assert "never reads a file" in str(info.value)


def test_join_external_side_table_hash_cannot_be_a_path(tmp_path):
    side = pd.DataFrame({"item": [1, 2], "genre": ["rock", "jazz"]})
    saved = irs.Workflow(["item"] >> ops.JoinExternal(side, on="item")).fit(
        pd.DataFrame({"item": [1]})).save(tmp_path / "saved")

    def change(config):
        config["nodes"][1]["op"]["params"]["df_ext"]["sha256"] = "../" * 20 + "x"

    _edit(saved, change)
    with pytest.raises(WorkflowFormatError, match="sha256"):
        irs.Workflow.load(saved)


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
    _edit(saved, lambda c: c["nodes"][1]["op"]["params"].update(f="9**9**9"))
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
                         timeout=60, env=env)
    assert run.returncode == 0, run.stderr
    assert "refused:" in run.stdout and "nodes[1].op" in run.stdout and "power" in run.stdout


def test_reasonable_expressions_still_work():
    df = pd.DataFrame({"x": [1.0, 2.0, 4.0]})
    out = irs.Workflow(["x"] >> ops.LambdaOp("x ** 2 + 2 ** 10 - 0.5 * x")).fit_transform(df)
    assert out["x"].tolist() == [v ** 2 + 1024 - 0.5 * v for v in [1.0, 2.0, 4.0]]


# ---- clear errors: odd dtypes into categorical encoders ------------------------------------------
def test_all_null_column_encodes_as_null_ids(tmp_path):
    path = tmp_path / "data.parquet"
    pd.DataFrame({"c": [None, None, None], "h": [None, None, None]}).to_parquet(path)
    assert pq.read_schema(path).field("c").type == pa.null()  # what pandas writes
    wf = irs.Workflow((["c"] >> ops.Categorify()) + (["h"] >> ops.HashBucket(10)))
    out = wf.fit_transform(irs.Dataset(str(path))).to_ddf().compute()
    assert out["c"].tolist() == [1, 1, 1] and out["h"].tolist() == [1, 1, 1]
    assert wf.output_schema["c"].cardinality == 3  # padding, null, OOV: no vocabulary


@pytest.mark.parametrize("kind", ["timestamp", "decimal", "date"])
def test_timestamps_and_decimals_are_encoded_by_value(kind):
    raw = {"timestamp": [pd.Timestamp("2024-01-02"), pd.Timestamp("2024-01-01"),
                         pd.Timestamp("2024-01-02"), None, pd.Timestamp("2023-05-05")],
           "decimal": [decimal.Decimal("2.50"), decimal.Decimal("1.25"),
                       decimal.Decimal("2.50"), None, decimal.Decimal("0.10")],
           "date": [pd.Timestamp("2024-01-02").date(), pd.Timestamp("2024-01-01").date(),
                    pd.Timestamp("2024-01-02").date(), None, pd.Timestamp("2023-05-05").date()]}
    arrow = {"timestamp": pa.timestamp("us"), "decimal": pa.decimal128(6, 2),
             "date": pa.date32()}[kind]
    values = raw[kind]
    df = pd.DataFrame({"v": pd.array(values, dtype=pd.ArrowDtype(arrow))})
    out = irs.Workflow(["v"] >> ops.Categorify()).fit_transform(df)
    assert out["v"].tolist() == expected_ids(values)
    hashed = irs.Workflow(["v"] >> ops.HashBucket(1000)).fit_transform(df)["v"].tolist()
    assert hashed[0] == hashed[2] != hashed[1] and hashed[3] == 1


def test_struct_column_is_refused_at_compute_schema_naming_column_and_dtype():
    df = pd.DataFrame({"s": pd.array([{"a": 1}], dtype=pd.ArrowDtype(
        pa.struct([("a", pa.int64())])))})
    for op in (ops.Categorify(), ops.HashBucket(5)):
        with pytest.raises(SchemaError, match=r"column 's' of dtype struct<a: int64>"):
            irs.Workflow(["s"] >> op).compute_schema(irs.Dataset(df).schema)


# ---- clear errors: statistics -------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e154, 1e200, 1e300])
def test_normalize_of_huge_values_is_exact_and_saves(tmp_path, scale):
    base = np.array([1.0, 2.0, 3.0, 6.0])
    df = pd.DataFrame({"x": base * scale})
    wf = irs.Workflow(["x"] >> ops.Normalize())
    out = wf.fit_transform(df)["x"].to_numpy()
    expected = (base - base.mean()) / base.std()  # scale-free: z-scores do not depend on it
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    saved = wf.save(tmp_path / "saved")
    with open(os.path.join(saved, "workflow.json")) as f:
        state = json.load(f)["states"]["1"]
    assert np.isclose(state["stds"]["x"], base.std() * scale, rtol=1e-9)
    np.testing.assert_allclose(irs.Workflow.load(saved).transform(df)["x"], expected, rtol=1e-6)


def test_normalize_over_partitions_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.normal(5e160, 3e159, 400)
    ds = irs.Dataset(dd.from_pandas(pd.DataFrame({"x": x}), npartitions=7))
    assert ds.npartitions == 7
    out = irs.Workflow(["x"] >> ops.Normalize()).fit_transform(ds).to_ddf().compute()
    scaled = x / 1e160
    np.testing.assert_allclose(out["x"], (scaled - scaled.mean()) / scaled.std(), rtol=1e-5,
                               atol=1e-5)


def test_states_json_cannot_hold_are_saved_as_null(tmp_path):
    df = pd.DataFrame({"k": ["a", "a"], "v": [1e308, 1e308]})  # the sum overflows
    wf = irs.Workflow(["k", "v"] >> ops.JoinGroupby(cont_cols=["v"], stats=["sum"]))
    wf.fit(df)
    saved = wf.save(tmp_path / "saved")
    with open(os.path.join(saved, "workflow.json")) as f:
        json.loads(f.read())  # strict JSON: no Infinity
    assert irs.Workflow.load(saved).transform(df)["k_v_sum"].tolist() == [np.inf, np.inf]


@pytest.mark.parametrize("op", [ops.Normalize, ops.NormalizeMinMax])
def test_filter_that_drops_every_row_before_normalize_names_both(op):
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    wf = irs.Workflow(["x"] >> ops.Filter("x > 100") >> op())
    with pytest.raises(irs.DatasetError) as info:
        wf.fit(df)
    message = str(info.value)
    assert f"{op.__name__} (" in message and "Filter(expr='x > 100')" in message
    assert "no rows" in message and not wf.fitted


# ---- clear errors: parameters -------------------------------------------------------------------
@pytest.mark.parametrize(("build", "param"), [
    (lambda: ops.HashBucket(2**64), "num_buckets"),
    (lambda: ops.HashedCross(2**64), "num_buckets"),
    (lambda: ops.Categorify(num_buckets=2**64), "num_buckets"),
    (lambda: ops.Categorify(split_out=2000), "split_out"),
    (lambda: ops.TargetEncoding("y", split_out=10**6), "split_out"),
    (lambda: ops.JoinGroupby(split_out=10**6), "split_out"),
])
def test_unbounded_parameters_are_refused(build, param):
    with pytest.raises(ParameterError, match=f"'{param}' parameter .* must be an integer in"):
        build()


def test_largest_bucket_count_still_encodes():
    out = irs.Workflow(["c"] >> ops.HashBucket(2**63 - 3)).fit_transform(
        pd.DataFrame({"c": ["a", None]}))
    assert out["c"].tolist()[1] == 1 and 2 <= out["c"].tolist()[0] <= 2**63 - 1


@pytest.mark.parametrize("name", ["__irs_shuffle_key__", "__irs_order"])
def test_reserved_column_names_are_refused(name):
    df = pd.DataFrame({name: ["a"], "ok": [1]})
    with pytest.raises(irs.IRSError, match=f"{name}.*reserved") as info:  # read or workflow
        irs.Workflow([name] >> ops.Categorify()).fit(df)
    assert "rename" in str(info.value).lower()
    schema = irs.Schema([irs.ColumnSchema(name, "string"), irs.ColumnSchema("ok", "int64")])
    with pytest.raises(SchemaError, match=f"{name}.*reserves"):  # a schema holding one
        irs.Workflow([name] >> ops.Categorify()).compute_schema(schema)
    with pytest.raises(SchemaError, match=name):  # renamed into one
        irs.Workflow(["ok"] >> ops.Rename({"ok": name})).compute_schema(schema)


# ---- clear errors: malformed workflow.json --------------------------------------------------------
def _bad_json(text):
    def change(path):
        with open(os.path.join(path, "workflow.json"), "w") as f:
            f.write(text)
    return change


def _config_change(func):
    def change(path):
        _edit(path, func)
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
]


@pytest.mark.parametrize(("change", "field"), [m[1:] for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])
@pytest.mark.timeout(60)
def test_malformed_workflow_json_is_one_workflow_format_error(tmp_path, change, field):
    saved, _ = _saved_categorify(tmp_path)
    change(saved)
    before = digest(tmp_path)
    with pytest.raises(WorkflowFormatError, match=field) as info:
        irs.Workflow.load(saved)
    assert "workflow.json" in str(info.value) or "artifact" in str(info.value)
    assert digest(tmp_path) == before


# ---- clear errors: exported code --------------------------------------------------------------
def test_exported_code_quotes_any_column_name():
    names = ["a b", 'q"uote', "it's", "back\\slash", "tab\tname", "new\nline", "é ü ✓ 😀",
             "--", "# not a comment", "x') ; import os ; ('"]
    names += [f"a long column name with spaces number {i}" for i in range(5)]
    wf = irs.Workflow((names >> ops.Categorify()) + ([["a b", "it's"]] >> ops.HashedCross(7)))
    code = workflow_code(wf)
    namespace: dict = {}
    exec(compile(code, "<export>", "exec"), namespace)
    assert namespace["workflow"].to_config()["nodes"] == wf.to_config()["nodes"]
    assert "import os" not in code.replace("x') ; import os ; ('", "")


def _categorify_graph_size(split_out: int) -> int:
    from dask import delayed

    from interactive_recsys.backend import get_backend
    from interactive_recsys.ops._base import OpContext

    ctx = OpContext(get_backend("cpu"), [("c",)], "categorify-1", "/nonexistent",
                    {"num_rows": 5, "npartitions": 1})
    partial = delayed(dict, pure=False)(dask_key_name="categorify-1-partial-0")
    state = ops.Categorify(split_out=split_out).fit_graph([partial], ctx)
    return len(state.__dask_graph__())


def test_categorify_split_out_graph_grows_linearly():
    """The probe's quadratic case (split_out on 5 rows): tasks per split stay constant."""
    small, large = _categorify_graph_size(64), _categorify_graph_size(512)
    assert large <= 8 * small + 8  # quadratic growth would give 64 times as many
    assert _categorify_graph_size(1024) <= 2 * large + 8


def test_categorify_with_many_splits_matches_one_split():
    rng = np.random.default_rng(5)
    values = rng.choice([f"v{i}" for i in range(300)] + [None], 2000).tolist()
    df = pd.DataFrame({"c": values, "f": [float(len(v or "")) * 1.5 for v in values]})
    one = irs.Workflow(["c", "f"] >> ops.Categorify()).fit_transform(df)
    many = irs.Workflow(["c", "f"] >> ops.Categorify(split_out=200)).fit_transform(df)
    pd.testing.assert_frame_equal(one, many)
    assert one["c"].tolist() == expected_ids(values)
