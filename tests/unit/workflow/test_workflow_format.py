"""Property: whatever a saved ``workflow.json`` is changed into, ``Workflow.load`` gives a
valid workflow or a :class:`WorkflowFormatError`, quickly (a 5 s deadline per example), never
another exception; and a workflow that loads transforms data or raises the library's errors.

A fitted workflow with several kinds of operators and states is saved once; hypothesis then
replaces, deletes or deepens one value anywhere in its JSON, or damages the text itself.
"""

from __future__ import annotations

import copy
import json
import os
import shutil

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import WorkflowFormatError

DATA = pd.DataFrame({"c": ["a", "b", "a", None], "d": ["x", "y", "y", "y"],
                     "n": [1.0, 2.0, None, 4.0], "label": [1, 0, 1, 0]})
PROBE = DATA.copy()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    side = pd.DataFrame({"d": ["x", "y"], "w": [0.5, 1.5]})
    wf = irs.Workflow((["c"] >> ops.Categorify(freq_threshold=1))
                      + (["n"] >> ops.FillMissing(0) >> ops.LambdaOp("x * 2") >> ops.Normalize())
                      + (["d"] >> ops.JoinExternal(side, on="d", columns_ext=["w"]))
                      + (["c", "label"] >> ops.TargetEncoding("label", kfold=2))
                      + (["label"] >> ops.Filter("label >= 0")))
    folder = wf.fit(DATA).save(tmp_path_factory.mktemp("format") / "saved")
    with open(os.path.join(folder, "workflow.json")) as f:
        return folder, json.load(f)


def paths(value, where=()):
    """Every place in a JSON value, as key/index tuples."""
    yield where
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*where, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*where, i))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=20) | st.sampled_from(["../../etc", "/etc/passwd", "categorify-1",
                                              "9**9**9", "Categorify", "op", "select"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)

mutations = st.one_of(
    st.tuples(st.just("replace"), st.integers(0, 10_000), json_values),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.none()),
    st.tuples(st.just("deepen"), st.integers(0, 10_000), st.integers(1, 5000)),
    st.tuples(st.just("text"), st.integers(0, 10_000), st.binary(max_size=4)),
)


def mutate(config: dict, text: str, mutation) -> str:
    kind, pick, value = mutation
    if kind == "text":  # damage the bytes: cut or splice
        cut = pick % (len(text) + 1)
        return text[:cut] + value.decode("latin-1") + text[cut + len(value):]
    config = copy.deepcopy(config)
    places = [p for p in paths(config) if p]
    place = places[pick % len(places)]
    parent = config
    for key in place[:-1]:
        parent = parent[key]
    if kind == "replace":
        parent[place[-1]] = value
    elif kind == "delete":
        parent.pop(place[-1])
    else:
        nested = parent[place[-1]]
        for _ in range(value):
            nested = [nested]
        parent[place[-1]] = nested
    try:
        return json.dumps(config)
    except RecursionError:  # deeper than json can write: write it by hand
        return text.replace('"fitted": true', '"fitted": ' + "[" * value + "true" + "]" * value)


@settings(max_examples=150, deadline=5000, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(mutation=mutations)
def test_a_changed_workflow_json_loads_or_is_one_workflow_format_error(saved, tmp_path,
                                                                      mutation):
    folder, config = saved
    copy_dir = tmp_path / "copy"
    if not copy_dir.exists():
        shutil.copytree(folder, copy_dir)
    with open(os.path.join(folder, "workflow.json")) as f:
        text = f.read()
    with open(copy_dir / "workflow.json", "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(mutate(config, text, mutation))
    try:
        wf = irs.Workflow.load(copy_dir)
    except WorkflowFormatError as exc:
        assert "workflow.json" in str(exc) or "artifact" in str(exc)
        return
    # loaded: a valid workflow, whose schema is known; using it gives results or the
    # library's own errors (e.g. a LambdaOp whose function was not passed), never raw ones
    assert isinstance(wf, irs.Workflow)
    if wf.input_schema is not None:
        assert wf.output_schema.names
    try:
        wf.transform(PROBE)
    except irs.IRSError:
        pass


def test_the_unchanged_workflow_loads_and_transforms_alike(saved):
    folder, _ = saved
    wf = irs.Workflow.load(folder)
    assert wf.fitted and wf.output_columns == ["c", "n", "d", "w", "TE_c_label", "label"]
    assert wf.transform(PROBE)["c"].tolist() == [3, 4, 3, 1]


@pytest.mark.parametrize(("step", "entry", "key"), [
    ("targetencoding", "tables", None),   # the whole map emptied (found by the property)
    ("targetencoding", "tables", "c"),
    ("categorify", "vocabs", "c"),
    ("normalize", "means", "n"),
    ("normalize", "stds", "n"),
])
def test_a_state_missing_an_entry_its_step_needs_is_refused_at_load(saved, tmp_path, step,
                                                                      entry, key):
    folder, config = saved
    changed = copy.deepcopy(config)
    ops_in_file = {i: n.get("op", {}).get("op", "").lower() for i, n in
                   enumerate(changed["nodes"]) if n.get("kind") == "op"}
    index = next(str(i) for i, name in ops_in_file.items() if name == step)
    state = changed["states"][index]
    assert state.get(entry)
    if key is None:
        state[entry] = {}
    else:
        del state[entry][key]
    copy_dir = tmp_path / "copy"
    shutil.copytree(folder, copy_dir)
    (copy_dir / "workflow.json").write_text(json.dumps(changed))
    with pytest.raises(WorkflowFormatError, match=r"workflow\.json.*(no entry|has no|KeyError)"):
        irs.Workflow.load(copy_dir)
