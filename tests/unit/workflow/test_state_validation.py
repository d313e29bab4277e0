"""Saved states and their files are checked (issue 40, items 9, 15, 16, 20): an edited
vocabulary, an older state format, a file that is not parquet and a malformed model.json
are clear errors naming the file and the check; a long list in a state loads in one pass."""

from __future__ import annotations

import hashlib
import json
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import WorkflowFormatError
from interactive_recsys.models import ModelFormatError, Popularity

VOCAB = "categorify-1/vocab-000/part.00000.parquet"
DAY1 = pd.DataFrame({"c": ["a", "b", "c", "a", "b", "a", "d", "e", "f", "g", "h"]})
DAY2 = pd.DataFrame({"c": ["a", "new", "new"]})


def _saved(tmp_path, freq_threshold: int = 0) -> str:
    wf = irs.Workflow(["c"] >> ops.Categorify(freq_threshold=freq_threshold)).fit(DAY1)
    return wf.save(tmp_path / "saved")


def _config(saved: str) -> dict:
    with open(os.path.join(saved, "workflow.json")) as f:
        return json.load(f)


def _write_config(saved: str, config: dict) -> None:
    with open(os.path.join(saved, "workflow.json"), "w") as f:
        json.dump(config, f)


def _rewrite_vocab(saved: str, edit) -> str:
    """Edit the saved vocabulary and record its new checksum (as a crafted folder would)."""
    path = os.path.join(saved, "artifacts", *VOCAB.split("/"))
    table = edit(pq.read_table(path))
    pq.write_table(table, path)
    config = _config(saved)
    config["artifacts"][VOCAB] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    _write_config(saved, config)
    return path


def _by_index(table: pa.Table) -> pa.Table:
    return table.sort_by("index")


@pytest.mark.parametrize("edit, check", [
    (lambda t: t.set_column(2, "index", pa.array([3, 3, *_by_index(t)["index"].to_pylist()[2:]],
                                                 pa.int64())), "ids are unique"),
    (lambda t: t.set_column(2, "index", pa.array([*t["index"].to_pylist()[:-1], 500],
                                                 pa.int64())), "ids are in [3, 11)"),
    (lambda t: t.set_column(1, "count", pa.array([-4, *t["count"].to_pylist()[1:]],
                                                 pa.int64())), "counts are not negative"),
])
def test_an_edited_vocabulary_is_refused_by_update(tmp_path, edit, check):
    saved = _saved(tmp_path)
    assert _config(saved)["states"]["1"]["vocabs"]["c"]["cardinality"] == 11
    path = _rewrite_vocab(saved, lambda t: edit(_by_index(t)))
    wf = irs.Workflow.load(saved)  # footers, columns and row count hold
    with pytest.raises(WorkflowFormatError, match="not a valid vocabulary file") as info:
        wf.update(DAY2)
    assert check in str(info.value) and os.path.dirname(path) in str(info.value)


def test_an_id_past_the_cardinality_is_refused_by_a_transform(tmp_path):
    saved = _saved(tmp_path)
    _rewrite_vocab(saved, lambda t: t.set_column(
        2, "index", pa.array([*t["index"].to_pylist()[:-1], 500], pa.int64())))
    wf = irs.Workflow.load(saved)
    with pytest.raises(WorkflowFormatError, match=r"ids are in \[3, 11\)"):
        wf.transform(DAY1)


def test_a_vocabulary_with_a_row_removed_is_refused_at_load(tmp_path):
    saved = _saved(tmp_path)
    _rewrite_vocab(saved, lambda t: t.slice(1))
    with pytest.raises(WorkflowFormatError, match="one row per value") as info:
        irs.Workflow.load(saved)
    assert "7 rows" in str(info.value) and "size 8" in str(info.value)


def test_a_duplicated_value_is_refused_by_update(tmp_path):
    saved = _saved(tmp_path)

    def twice(t: pa.Table) -> pa.Table:
        t = _by_index(t)
        values = t["value"].to_pylist()
        return t.set_column(0, "value", pa.array([values[1], *values[1:]], t["value"].type))

    _rewrite_vocab(saved, twice)
    with pytest.raises(WorkflowFormatError, match="one row per value"):
        irs.Workflow.load(saved).update(DAY2)


def test_a_vocabulary_file_that_is_not_parquet_is_named_at_load(tmp_path):
    saved = _saved(tmp_path)
    _rewrite_vocab(saved, lambda t: t)  # checksum recorded below for the new bytes
    path = os.path.join(saved, "artifacts", *VOCAB.split("/"))
    with open(path, "w") as f:
        f.write("value,count,index\na,3,3\n")
    config = _config(saved)
    config["artifacts"][VOCAB] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    _write_config(saved, config)
    os.remove(os.path.join(saved, "_SUCCESS"))  # sizes changed on purpose
    with pytest.raises(WorkflowFormatError, match="is not a parquet file") as info:
        irs.Workflow.load(saved)
    assert path in str(info.value) and "save the workflow again" in str(info.value)


def test_a_vocabulary_without_its_columns_is_named_at_load(tmp_path):
    saved = _saved(tmp_path)
    _rewrite_vocab(saved, lambda t: t.rename_columns(["value", "n", "index"]))
    os.remove(os.path.join(saved, "_SUCCESS"))
    with pytest.raises(WorkflowFormatError, match="columns value, count, index"):
        irs.Workflow.load(saved)


@pytest.mark.parametrize("field", ["null_count", "value_count"])
def test_an_older_state_format_names_the_step_and_field_at_update(tmp_path, field):
    saved = _saved(tmp_path)
    config = _config(saved)
    del config["states"]["1"]["vocabs"]["c"][field]
    _write_config(saved, config)
    wf = irs.Workflow.load(saved)  # transform needs no counts: the load works
    assert wf.transform(DAY1)["c"].tolist()[:2] == [3, 4]
    with pytest.raises(WorkflowFormatError, match="categorify-1") as info:
        wf.update(DAY2)
    assert field in str(info.value) and "Fit the workflow again" in str(info.value)


def test_edited_pending_counts_are_refused_by_update(tmp_path):
    saved = _saved(tmp_path, freq_threshold=2)
    path = os.path.join(saved, "artifacts", "categorify-1", "vocab-000", "pending.00000.parquet")
    table = pq.read_table(path)
    assert table.num_rows > 0
    pq.write_table(table.set_column(1, "count", pa.array([-1] * table.num_rows, pa.int64())),
                   path)
    config = _config(saved)
    rel = "categorify-1/vocab-000/pending.00000.parquet"
    config["artifacts"][rel] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    _write_config(saved, config)
    os.remove(os.path.join(saved, "_SUCCESS"))
    with pytest.raises(WorkflowFormatError, match="counts are not negative"):
        irs.Workflow.load(saved).update(DAY2)


# ---- model.json -----------------------------------------------------------------------------
@pytest.mark.parametrize("change, words", [
    (lambda m: [m], "must hold a JSON object"),
    (lambda m: {k: v for k, v in m.items() if k != "user_col"}, "'user_col'"),
    (lambda m: {**m, "params": ["x"]}, "'params'"),
    (lambda m: {**m, "arrays": "counts"}, "'arrays'"),
    (lambda m: {**m, "arrays": [1]}, "'arrays'"),
    (lambda m: {**m, "params": {"nonsense": 1}}, "params do not make"),
    (lambda m: {**m, "model": ["Popularity"]}, "names model"),
])
def test_a_malformed_model_json_is_a_model_format_error(tmp_path, change, words):
    data = pd.DataFrame({"user_id": [1, 1, 2, 3], "item_id": [10, 11, 10, 12]})
    saved = Popularity().fit(data).save(tmp_path / "model")
    path = os.path.join(saved, "model.json")
    meta = json.load(open(path))
    json.dump(change(meta), open(path, "w"))
    with pytest.raises(ModelFormatError) as info:
        irs.models.load(saved)
    assert words in str(info.value) and "model.json" in str(info.value)


def test_model_json_that_is_not_utf8_is_a_model_format_error(tmp_path):
    data = pd.DataFrame({"user_id": [1, 2], "item_id": [10, 11]})
    saved = Popularity().fit(data).save(tmp_path / "model")
    with open(os.path.join(saved, "model.json"), "wb") as f:
        f.write(b"\xff\xfe{}")
    with pytest.raises(ModelFormatError, match="not valid JSON"):
        irs.models.load(saved)


# ---- long lists in a state --------------------------------------------------------------------
def test_a_long_list_in_a_state_is_checked_in_one_pass(tmp_path, monkeypatch):
    """A state's list of 200,000 names: no Python call per element on load (the walk that
    took 74-84 s for 60 MB), and a bad element is still named by its place."""
    from interactive_recsys.ops import _state_check as state_check
    from interactive_recsys.workflow import _format as workflow_format

    frame = pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 1]})
    saved = irs.Workflow(["a", "b"] >> ops.DropLowCardinality()).fit(frame).save(
        tmp_path / "saved")
    os.remove(os.path.join(saved, "_SUCCESS"))
    config = _config(saved)
    (key,) = config["states"]
    config["states"][key]["dropped"] = [f"c{i}" for i in range(200_000)] + ["b"]
    _write_config(saved, config)
    calls = {"check_shape": 0, "spelled": 0}
    shape, spelled = state_check.check_shape, workflow_format._spelled

    def counting_shape(*args, **kwargs):
        calls["check_shape"] += 1
        return shape(*args, **kwargs)

    def counting_spelled(*args):
        calls["spelled"] += 1
        return spelled(*args)

    monkeypatch.setattr(state_check, "check_shape", counting_shape)
    monkeypatch.setattr(workflow_format, "_spelled", counting_spelled)
    loaded = irs.Workflow.load(saved)
    assert list(loaded.transform(frame).columns) == ["a"]
    assert calls["check_shape"] < 10 and calls["spelled"] == 0
    config["states"][key]["dropped"][123_456] = 7
    _write_config(saved, config)
    with pytest.raises(WorkflowFormatError, match=r"dropped\[123456\] must be a string"):
        irs.Workflow.load(saved)


def test_artifact_paths_deep_in_lists_are_still_found():
    from interactive_recsys.workflow._format import _paths

    state = {"tables": [{"x": 1}, [{"path": "a"}], {"inner": {"path": "b"}}],
             "flat": list(range(1000))}
    assert sorted(_paths(state)) == [(".tables[1][0].path", "a"),
                                     (".tables[2].inner.path", "b")]


def test_a_vocabulary_replaced_after_load_is_named_by_update_and_transform(tmp_path):
    saved = _saved(tmp_path, freq_threshold=2)
    wf = irs.Workflow.load(saved)
    for name in ("pending.00000.parquet", "part.00000.parquet"):  # read last, then first
        with open(os.path.join(saved, "artifacts", "categorify-1", "vocab-000", name),
                  "w") as f:
            f.write("not parquet at all")
        with pytest.raises(WorkflowFormatError, match="is not a parquet file") as info:
            wf.update(DAY2)
        assert name in str(info.value)
    from interactive_recsys.tables._cache import TABLES

    TABLES.clear()
    with pytest.raises(WorkflowFormatError, match="is not a parquet file"):
        wf.transform(DAY1)
