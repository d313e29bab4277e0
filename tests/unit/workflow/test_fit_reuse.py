"""Step-level fit reuse (``Workflow.fit(data, reuse=previous)``), checked against fits that
compute everything: the states and artifact files a reuse adopts are byte for byte those a
fresh fit writes, and only the steps whose operator, upstream steps, columns or data changed
are computed, in fewer passes over the data."""

from __future__ import annotations

import json
import os

import dask
import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import ParameterError
from interactive_recsys.store.storage import local_manifest
from tests.conftest import assert_frames_equal, make_criteo_frame


def write_parts(df: pd.DataFrame, folder: str, parts: int = 2) -> str:
    """``df`` as ``parts`` parquet files in ``folder`` (rows in order)."""
    os.makedirs(folder, exist_ok=True)
    for i, chunk in enumerate(np.array_split(np.arange(len(df)), parts)):
        df.iloc[chunk].to_parquet(os.path.join(folder, f"part-{i}.parquet"), index=False)
    return folder


def branches(normalize: ops.Operator | None = None, freq: int = 0) -> list:
    """Three branches: a Categorify with a statistics step after it, a Categorify, and a
    continuous chain (``normalize`` at its end)."""
    return [["C1"] >> ops.Categorify(freq_threshold=freq) >> ops.Normalize(),
            ["C2", "C3"] >> ops.Categorify(),
            ["I1", "I2"] >> ops.FillMissing(0) >> ops.Clip(min_value=0)
            >> (normalize or ops.Normalize())]


def workflow(*nodes: object) -> irs.Workflow:
    output = nodes[0]
    for node in [*nodes[1:], ["label"]]:
        output = output + node
    return irs.Workflow(output)


def reused(wf: irs.Workflow) -> dict[str, bool]:
    return {s.node_id: s.reused for s in wf.fitted_steps()}


def folder_bytes(path: str) -> dict[str, bytes]:
    """Every artifact file under a saved workflow folder, by relative path."""
    root = os.path.join(path, "artifacts")
    out = {}
    for base, _, files in os.walk(root):
        for name in files:
            full = os.path.join(base, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, root)] = f.read()
    return out


class PassCounter(dask.callbacks.Callback):
    """Counts, among the tasks Dask's local scheduler runs, the partitions read by a fit phase
    (``fit-phase<k>-<partition>``: one per partition and pass) and every other read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = self.other_reads = 0

    def _pretask(self, key, dask, state) -> None:
        name = str(key[0] if isinstance(key, tuple) else key)
        self.reads += name.startswith("fit-phase")
        self.other_reads += name.startswith(("read-parquet", "read-getitem"))


@pytest.fixture
def data(tmp_path) -> str:
    return write_parts(make_criteo_frame(300), str(tmp_path / "data"))


def test_reused_states_and_artifacts_are_byte_identical_to_a_fresh_fit(data, tmp_path):
    first = workflow(*branches()).fit(data)
    edited = workflow(*branches(ops.NormalizeMinMax()))
    edited.fit(data, reuse=first)
    fresh = workflow(*branches(ops.NormalizeMinMax())).fit(data)
    assert reused(edited) == {"categorify-1": True, "normalize-2": True,
                              "categorify-4": True, "normalizeminmax-8": False}
    assert not any(reused(fresh).values())
    edited.save(tmp_path / "edited")
    fresh.save(tmp_path / "fresh")
    saved = [json.loads((tmp_path / n / "workflow.json").read_text()) for n in ("edited",
                                                                               "fresh")]
    assert json.dumps(saved[0]["states"], sort_keys=True) == \
        json.dumps(saved[1]["states"], sort_keys=True)
    assert saved[0]["keys"] == saved[1]["keys"] and len(saved[0]["keys"]) == 4
    left, right = folder_bytes(str(tmp_path / "edited")), folder_bytes(str(tmp_path / "fresh"))
    assert sorted(left) == sorted(right) and any("vocab" in p for p in left)
    assert all(left[p] == right[p] for p in left)
    assert_frames_equal(edited.transform(data).compute(), fresh.transform(data).compute())


def test_a_changed_input_file_invalidates_every_state(data):
    first = workflow(*branches()).fit(data)
    assert all(reused(workflow(*branches()).fit(data, reuse=first)).values())
    changed = make_criteo_frame(300, seed=7)
    write_parts(changed, data)  # other content, same names
    again = workflow(*branches()).fit(data, reuse=first)
    assert not any(reused(again).values())
    (step,) = [s for s in again.fitted_steps() if s.node_id == "categorify-4"]
    assert step.state["vocabs"]["C3"]["null_count"] == int(changed["C3"].isna().sum())
    path = os.path.join(data, "part-0.parquet")
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # touched only
    assert all(reused(workflow(*branches()).fit(data, reuse=again)).values())  # same content


def test_a_parameter_change_invalidates_that_step_and_its_downstream_only(data):
    first = workflow(*branches()).fit(data)
    edited = workflow(*branches(freq=2)).fit(data, reuse=first)
    assert reused(edited) == {"categorify-1": False, "normalize-2": False,
                              "categorify-4": True, "normalize-8": True}
    fresh = {s.node_id: s.state for s in workflow(*branches(freq=2)).fit(data).fitted_steps()}
    states = {s.node_id: s.state for s in edited.fitted_steps()}
    assert states == fresh  # the recomputed Normalize is of the new codes
    assert states["normalize-2"] != {s.node_id: s.state for s in first.fitted_steps()}[
        "normalize-2"]
    upstream = [["C1"] >> ops.Categorify() >> ops.Normalize(), ["C2", "C3"] >> ops.Categorify(),
                ["I1", "I2"] >> ops.FillMissing(0) >> ops.Clip(min_value=1) >> ops.Normalize()]
    clipped = workflow(*upstream).fit(data, reuse=first)  # a step upstream of a statistic
    assert reused(clipped) == {"categorify-1": True, "normalize-2": True,
                               "categorify-4": True, "normalize-8": False}


def test_adding_a_branch_computes_only_that_branch_and_moves_reused_artifacts(data):
    first = workflow(*branches()).fit(data)
    new = ["I3"] >> ops.FillMissing(0) >> ops.Normalize()
    added = workflow(new, *branches()).fit(data, reuse=first)  # every step id moves
    assert reused(added) == {"normalize-2": False, "categorify-4": True, "normalize-5": True,
                             "categorify-7": True, "normalize-11": True}
    assert [p["operators"] for p in added.fit_stats["phases"]] == [["normalize-2"]]
    vocab = added.fitted_steps().__next__()
    paths = [s.state["vocabs"]["C1"]["path"] for s in added.fitted_steps()
             if s.node_id == "categorify-4"]
    assert paths == ["categorify-4/vocab-000"] and vocab.node_id == "normalize-2"
    assert os.path.isdir(os.path.join(added.artifacts_dir, paths[0]))
    fresh = workflow(new, *branches()).fit(data)
    assert_frames_equal(added.transform(data).compute(), fresh.transform(data).compute())


def test_reuse_skips_phases_and_passes_over_the_data(data):
    first = workflow(*branches()).fit(data)
    assert len(first.fit_stats["phases"]) == 2  # Normalize after Categorify: two passes
    with PassCounter() as counter:
        workflow(*branches()).fit(data)
    full = counter.reads
    assert full == 2 * irs.Dataset(data).npartitions  # two phases: each reads every part
    with PassCounter() as counter:
        same = workflow(*branches()).fit(data, reuse=first)
    assert counter.reads == counter.other_reads == 0 and same.fitted
    assert same.fit_stats["phases"] == []
    downstream = [["C1"] >> ops.Categorify() >> ops.NormalizeMinMax(), *branches()[1:]]
    with PassCounter() as counter:
        edited = workflow(*downstream).fit(data, reuse=first)
    assert counter.reads == full // 2  # one phase: its Categorify's state is known
    assert [p["operators"] for p in edited.fit_stats["phases"]] == [["normalizeminmax-2"]]


def test_reuse_from_a_saved_folder_and_of_itself(data, tmp_path):
    first = workflow(*branches()).fit(data)
    first.save(tmp_path / "wf")
    loaded = irs.Workflow.load(tmp_path / "wf")
    assert [s.key for s in loaded.fitted_steps()] == [s.key for s in first.fitted_steps()]
    edited = workflow(*branches(ops.NormalizeMinMax())).fit(data, reuse=str(tmp_path / "wf"))
    assert sum(reused(edited).values()) == 3
    assert edited.artifacts_dir != loaded.artifacts_dir  # the saved folder is only read
    before = folder_bytes(str(tmp_path / "wf"))
    again = loaded.fit(data, reuse=loaded)
    assert all(reused(again).values()) and folder_bytes(str(tmp_path / "wf")) == before
    assert_frames_equal(again.transform(data).compute(), first.transform(data).compute())


def test_in_memory_frames_are_fingerprinted_by_content():
    df = make_criteo_frame(200)
    first = workflow(*branches()).fit(df)
    assert all(reused(workflow(*branches()).fit(df.copy(), reuse=first)).values())
    other = df.copy()
    other.loc[5, "C2"] = "c2_new"  # one value of one column
    again = workflow(*branches()).fit(other, reuse=first)
    assert reused(again) == {"categorify-1": True, "normalize-2": True,
                             "categorify-4": False, "normalize-8": True}


def test_steps_without_a_fingerprint_are_always_computed(data):
    node = ["I1"] >> ops.LambdaOp(lambda s: s * 2, dtype="int64") >> ops.Normalize()
    first = irs.Workflow(node).fit(data)
    assert [s.key for s in first.fitted_steps()] == [None]
    assert reused(irs.Workflow(node).fit(data, reuse=first)) == {"normalize-2": False}


def test_reuse_refuses_what_is_not_a_fitted_workflow(data):
    with pytest.raises(ParameterError, match="'reuse' parameter .* not fitted"):
        workflow(*branches()).fit(data, reuse=workflow(*branches()))
    with pytest.raises(ParameterError, match="Got dict instead"):
        workflow(*branches()).fit(data, reuse={})


def test_a_background_fit_with_reuse_runs_fewer_phases_on_a_cluster(client, data):
    first = workflow(*branches()).fit(data, background=True).result()
    job = workflow(*branches(freq=1)).fit(data, background=True, reuse=first)
    edited = job.result()  # Categorify cut again from its counts, then the Normalize after it
    assert list(job.progress) == ["refinish", "fit 1/1"] and len(first.fit_stats["phases"]) == 2
    job = workflow(*branches(ops.NormalizeMinMax(), freq=1)).fit(data, background=True,
                                                           reuse=edited)
    assert sum(reused(job.result()).values()) == 3
    assert list(job.progress) == ["fit 1/1"]


def test_a_state_changed_after_its_fit_is_not_reused(data, tmp_path):
    """A key describes the data of the fit that made the state; a state changed since (as
    ``Workflow.update`` does, or by hand in workflow.json) is computed again."""
    first = workflow(*branches()).fit(data)
    first.save(tmp_path / "wf")
    config = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    (index,) = [i for i, n in enumerate(config["nodes"]) if n.get("op", {}).get("op") ==
                "Normalize" and n["parents"] and config["nodes"][n["parents"][0]]["kind"] == "op"
                and config["nodes"][n["parents"][0]]["op"]["op"] == "Clip"]
    config["states"][str(index)]["means"]["I1"] += 1.0  # edited by hand
    (tmp_path / "wf" / "workflow.json").write_text(json.dumps(config))
    os.remove(tmp_path / "wf" / "_SUCCESS")  # the manifest lists the old size: write anew
    local_manifest(str(tmp_path / "wf"))
    again = workflow(*branches()).fit(data, reuse=str(tmp_path / "wf"))
    assert reused(again) == {"categorify-1": True, "normalize-2": True,
                             "categorify-4": True, "normalize-8": False}
    (step,) = [s for s in again.fitted_steps() if s.node_id == "normalize-8"]
    assert step.state == {s.node_id: s.state for s in first.fitted_steps()}["normalize-8"]
    first._states["categorify-4"]["vocabs"]["C2"]["size"] += 1  # changed in memory
    assert not reused(workflow(*branches()).fit(data, reuse=first))["categorify-4"]


def test_an_updated_workflow_does_not_lend_its_merged_states_to_a_fit_of_the_first_day():
    day1, day2 = make_criteo_frame(200, seed=1), make_criteo_frame(200, seed=2)
    graph = (["C1"] >> ops.Categorify()) + (["I1"] >> ops.FillMissing(0) >> ops.Normalize())
    first = irs.Workflow(graph).fit(day1)
    grown = first.update(day2)  # its states: days 1 and 2
    again = irs.Workflow(graph).fit(day1, reuse=grown)
    assert not any(reused(again).values())
    assert [s.state for s in again.fitted_steps()] == [s.state for s in first.fitted_steps()]


def test_each_fit_phase_tells_the_input_columns_it_reads():
    """What the Studio's time left weighs a write to come by: a first fit reads every
    column a statistics step needs; a refit of the edited Normalize alone reads only ``n``."""
    from interactive_recsys.runtime.jobs import Job

    df = pd.DataFrame({"c": ["x", "y", "x", "z"], "n": [1.0, 2.0, 6.0, 3.0],
                       "other": [1, 2, 3, 4]})
    first = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.Normalize())
                         + ["other"])
    job = Job(lambda: first.fit(df), name="reads-first", track_local=True).start()
    job.result(60)
    assert [(p.name, sorted(p.reads)) for p in job.phases] == [("fit 1/1", ["c", "n"])]
    edited = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.NormalizeMinMax())
                          + ["other"])
    job = Job(lambda: edited.fit(df, reuse=first), name="reads-refit",
              track_local=True).start()
    job.result(60)
    assert [(p.name, list(p.reads)) for p in job.phases] == [("fit 1/1", ["n"])]


# ---- a refit after an edit of finishing parameters only (Categorify's freq_threshold) ------
def encoded(**params: object) -> irs.Workflow:
    """Categorify of two string columns, an integer column and a list column."""
    return irs.Workflow((["C1", "C2", "I2", "L1"] >> ops.Categorify(**params)) + ["label"])


def how(wf: irs.Workflow) -> dict[str, str]:
    return {s.node_id: "reused" if s.reused else "refinished" if s.refinished else "computed"
            for s in wf.fitted_steps()}


def expected_ids(values: pd.Series, threshold: int) -> list[int]:
    """Categorify's ids computed with pandas: null 1, values seen fewer than ``threshold``
    times 2 (out of vocabulary), the others from 3 on by descending count, ties by value."""
    counts = values.value_counts()
    kept = sorted(((-n, v) for v, n in counts.items() if n >= threshold))
    ids = {v: 3 + rank for rank, (_, v) in enumerate(kept)}
    return [1 if pd.isna(v) else ids.get(v, 2) for v in values]


def test_a_freq_threshold_edit_refinishes_the_vocabularies_from_the_saved_counts(data,
                                                                                 tmp_path):
    first = encoded(freq_threshold=1).fit(data)
    with PassCounter() as counter:
        refit = encoded(freq_threshold=3).fit(data, reuse=first)
    assert counter.reads == counter.other_reads == 0  # no partition of the data read
    assert refit.fit_stats["phases"] == [] and refit.fit_stats["refinished"] == ["categorify-1"]
    assert how(refit) == {"categorify-1": "refinished"}
    fresh = encoded(freq_threshold=3).fit(data)
    assert [s.state for s in refit.fitted_steps()] == [s.state for s in fresh.fitted_steps()]
    out = refit.transform(data).compute()
    assert_frames_equal(out, fresh.transform(data).compute())
    df = make_criteo_frame(300)  # what the data fixture wrote
    for column in ("C1", "C2", "I2"):
        assert out[column].tolist() == expected_ids(df[column], 3), column
    refit.save(tmp_path / "refit")
    fresh.save(tmp_path / "fresh")
    left, right = folder_bytes(str(tmp_path / "refit")), folder_bytes(str(tmp_path / "fresh"))
    assert sorted(left) == sorted(right) and any("pending" in p for p in left)
    assert all(left[p] == right[p] for p in left)  # the same files, byte for byte


def test_every_finishing_parameter_is_refinished_from_counts_that_hold_every_value(data):
    before = encoded(freq_threshold=4).fit(data)  # counts below 4 are in the pending files
    for params in ({}, {"num_buckets": 3, "dtype": "int32"},
                   {"freq_threshold": 2, "num_buckets": 2}, {"freq_threshold": 2,
                                                             "max_frequency": 6},
                   {"max_frequency": 4}, {"max_size": 5}):
        refit = encoded(**params).fit(data, reuse=before)
        assert how(refit) == {"categorify-1": "refinished"}, params
        assert refit.fit_stats["phases"] == []
        assert_frames_equal(refit.transform(data).compute(),
                            encoded(**params).fit(data).transform(data).compute())
        before = refit
    cut = encoded(max_size=3).fit(data)  # the values max_size left out are not kept
    again = encoded(max_size=6).fit(data, reuse=cut)
    assert how(again) == {"categorify-1": "computed"}
    assert [s.state for s in again.fitted_steps()] == [
        s.state for s in encoded(max_size=6).fit(data).fitted_steps()]


def test_edits_that_change_the_counts_are_fitted_on_the_data(data):
    first = encoded(freq_threshold=1).fit(data)
    for other in (irs.Workflow((["C1", "C3", "I2", "L1"] >> ops.Categorify(freq_threshold=2))
                               + ["label"]),  # another column
                  irs.Workflow((["C1", "C2", "I2", ["L1", "C3"]]
                                >> ops.Categorify(freq_threshold=2)) + ["label"]),  # a group
                  encoded(freq_threshold=2, split_out=3)):  # other hash splits
        with PassCounter() as counter:
            other.fit(data, reuse=first)
        assert how(other) == {"categorify-1": "computed"} and counter.reads > 0
    write_parts(make_criteo_frame(300, seed=11), data)  # the data changed: other counts
    changed = encoded(freq_threshold=2).fit(data, reuse=first)
    assert how(changed) == {"categorify-1": "computed"}
    assert_frames_equal(changed.transform(data).compute(),
                        encoded(freq_threshold=2).fit(data).transform(data).compute())


def test_a_steps_downstream_statistics_are_computed_on_the_refinished_ids(data):
    first = workflow(*branches(freq=0)).fit(data)
    edited = workflow(*branches(freq=3)).fit(data, reuse=first)
    assert how(edited) == {"categorify-1": "refinished", "normalize-2": "computed",
                           "categorify-4": "reused", "normalize-8": "reused"}
    assert [p["operators"] for p in edited.fit_stats["phases"]] == [["normalize-2"]]
    fresh = workflow(*branches(freq=3)).fit(data)
    assert {s.node_id: s.state for s in edited.fitted_steps()} == {
        s.node_id: s.state for s in fresh.fitted_steps()}


def test_the_saved_counts_serve_a_reloaded_workflow_and_a_refit_in_place(data, tmp_path):
    first = encoded(freq_threshold=1).fit(data)
    first.save(tmp_path / "wf")
    saved = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    assert set(saved["keys"]["1"]) == {"key", "state", "statistics"}
    refit = encoded(freq_threshold=3).fit(data, reuse=str(tmp_path / "wf"))
    assert how(refit) == {"categorify-1": "refinished"}
    expected = encoded(freq_threshold=3).fit(data).transform(data).compute()
    assert_frames_equal(refit.transform(data).compute(), expected)
    folder = str(tmp_path / "fixed")  # one artifacts folder, refitted in place
    fixed = irs.Workflow((["C1", "C2", "I2", "L1"] >> ops.Categorify(split_out=3))
                         + ["label"], artifacts_dir=folder).fit(data)
    for threshold in (3, 1, 2):
        again = irs.Workflow((["C1", "C2", "I2", "L1"] >> ops.Categorify(
            split_out=3, freq_threshold=threshold)) + ["label"], artifacts_dir=folder)
        again.fit(data, reuse=fixed)
        assert how(again) == {"categorify-1": "refinished"} and again.artifacts_dir == folder
        assert_frames_equal(again.transform(data).compute(), irs.Workflow(
            (["C1", "C2", "I2", "L1"] >> ops.Categorify(split_out=3, freq_threshold=threshold))
            + ["label"]).fit(data).transform(data).compute())
        fixed = again


def test_a_refit_in_place_never_reads_counts_that_another_step_rewrites(data, tmp_path):
    folder = str(tmp_path / "fixed")
    first = irs.Workflow((["C1"] >> ops.Categorify()) + (["C2"] >> ops.Categorify()),
                         artifacts_dir=folder).fit(data)
    swapped = irs.Workflow((["C2"] >> ops.Categorify(freq_threshold=2))
                           + (["C1"] >> ops.Categorify(freq_threshold=2)), artifacts_dir=folder)
    swapped.fit(data, reuse=first)  # each one's counts lie where the other one writes
    assert how(swapped) == {"categorify-1": "computed", "categorify-3": "computed"}
    fresh = irs.Workflow((["C2"] >> ops.Categorify(freq_threshold=2))
                         + (["C1"] >> ops.Categorify(freq_threshold=2))).fit(data)
    assert_frames_equal(swapped.transform(data).compute(), fresh.transform(data).compute())
