"""The hand-off from the Studio to the command line: Run keeps its fitted workflow beside
its output and says where; a restored builder reuses it (or refuses one that does not
match), brings back the Suggest card and the form's options; Run is disabled while a Run
goes on."""

from __future__ import annotations

import html
import json
import os
import shutil
import threading

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.runtime._job import JobCancelledError
from interactive_recsys.ui.builder import PipelineBuilder
from interactive_recsys.workflow._workflow import Workflow


def _data(tmp_path) -> str:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"C1": [f"a{v}" for v in rng.integers(0, 9, 60)],
                          "C2": [f"b{v}" for v in rng.integers(0, 4, 60)],
                          "I1": rng.normal(size=60)})
    path = tmp_path / "clicks.parquet"
    frame.to_parquet(path)
    return str(path)


def _build(builder: PipelineBuilder) -> None:
    builder.select_columns(["C1", "C2"])
    builder.choose_operator("Categorify", {"freq_threshold": 2})
    builder.add_button.click()
    builder.buttons["new-branch"].click()
    builder.select_columns(["I1"])
    builder.choose_operator("Normalize")
    builder.add_button.click()
    assert sum(len(b.steps) for b in builder.model.branches) == 2, builder.message


def _run(builder: PipelineBuilder) -> None:
    builder.run_button.click()
    job = builder.model.wait_run(120)
    assert job is not None and job.status == "finished", builder.message


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def test_run_saves_its_fitted_workflow_where_the_text_says(tmp_path):
    data, out = _data(tmp_path), str(tmp_path / "out")
    builder = PipelineBuilder(data, output=out, autosave=False)
    _build(builder)
    _run(builder)
    saved = out + ".workflow"
    assert f"fitted workflow saved to {saved!r}" in builder.message, builder.message
    assert (f"irs run --workflow {saved} --input NEW --output OUT" in builder.message)
    assert builder.model.run_output == (out, saved)
    # the output folder holds the data only: its readers see what they saw before
    names = os.listdir(out)
    assert "workflow.json" not in names and "artifacts" not in names
    assert {n for n in names if not n.startswith("part.")} <= {".merlin", "_schema.json",
                                                               "_SUCCESS"}
    written = irs.Dataset(out).compute(dtype_backend="pyarrow")
    assert sorted(written.columns) == ["C1", "C2", "I1"] and len(written) == 60
    assert_same = pd.testing.assert_frame_equal
    assert_same(_sorted(pd.read_parquet(out)), _sorted(written), check_dtype=False)
    # the saved workflow transforms the input to exactly the Run's output
    again = Workflow.load(saved).transform(irs.Dataset(data)).compute(dtype_backend="pyarrow")
    assert_same(_sorted(again[written.columns]), _sorted(written))


def test_a_second_run_without_replace_refuses_an_existing_workflow_folder(tmp_path):
    data, out = _data(tmp_path), str(tmp_path / "out")
    os.mkdir(out + ".workflow")
    builder = PipelineBuilder(data, output=out, autosave=False)
    _build(builder)
    builder.run_button.click()
    assert builder.level == "error" and "out.workflow" in builder.message, builder.message
    assert not os.path.exists(out) and builder.model.last_job is None


def _fits(monkeypatch) -> list[int]:
    calls: list[int] = []
    fit = Workflow.fit

    def counted(self, *args, **kwargs):
        calls.append(1)
        return fit(self, *args, **kwargs)
    monkeypatch.setattr(Workflow, "fit", counted)
    return calls


def _ran_and_saved(tmp_path):
    data, out, path = _data(tmp_path), str(tmp_path / "out"), tmp_path / ".nb.irs-pipeline.json"
    first = PipelineBuilder(data, output=out, autosave=path)
    _build(first)
    first.overwrite.value = True
    _run(first)
    first.autosaver.flush()
    return data, out, path


def test_a_restored_builder_uses_the_runs_fitted_workflow_without_a_fit(tmp_path, monkeypatch):
    _, out, path = _ran_and_saved(tmp_path)
    record = json.loads(path.read_text())
    assert record["run"] == {"output": out, "workflow": out + ".workflow"}
    fits = _fits(monkeypatch)
    second = PipelineBuilder(autosave=path)
    second.restore_button.click()
    assert "matches the restored steps" in second.message, second.message
    assert second.overwrite.value is True  # the form's option came back
    model = second.model
    assert model.fitted_workflow is not None and model.run_output[1] == out + ".workflow"
    second.file_text.value = str(tmp_path / "saved")
    second.buttons["save"].click()
    assert "fitted, with vocabularies" in second.message, second.message
    second.buttons["export"].click()
    assert Workflow.load(tmp_path / "saved").fitted
    report = irs.stats.EmbeddingReport(model.fitted_workflow, dataset=model.dataset)
    assert sorted(report.tables) == ["C1", "C2"]  # the Embeddings tab's report
    assert fits == []  # nothing was fitted again


def test_a_restored_builder_refuses_a_workflow_that_does_not_match(tmp_path, monkeypatch):
    _, out, path = _ran_and_saved(tmp_path)
    record = json.loads(path.read_text())
    record["branches"][0]["steps"][0]["params"]["freq_threshold"] = 3
    path.write_text(json.dumps(record))
    second = PipelineBuilder(autosave=path)
    second.restore_button.click()
    assert (f"The last Run's fitted workflow {out + '.workflow'!r} does not match the "
            "restored steps") in second.message, second.message
    assert "not used" in second.message
    assert second.model.fitted_workflow is None and second.model.reuse_run is None


def test_a_restored_builder_names_a_workflow_that_is_gone(tmp_path):
    _, out, path = _ran_and_saved(tmp_path)
    shutil.rmtree(out + ".workflow")
    second = PipelineBuilder(autosave=path)
    second.restore_button.click()
    assert "could not be loaded" in second.message and "not used" in second.message
    assert second.model.fitted_workflow is None


def test_restore_brings_back_the_suggest_card(tmp_path, monkeypatch):
    data, path = _data(tmp_path), tmp_path / ".nb.irs-pipeline.json"
    first = PipelineBuilder(data, autosave=path)
    first.suggest_card.loss_percent.value = 2.0
    first.suggest_button.click()
    first.model.wait_suggest(60)  # Suggest counts in the background
    assert first.suggest_card.table.value, first.message
    first.autosaver.flush()

    def no_count(*args, **kwargs):
        raise AssertionError("counted the data again")
    monkeypatch.setattr("interactive_recsys.ui.builder.model._suggest.measure_columns",
                        no_count)
    second = PipelineBuilder(data, autosave=path)
    second.restore_button.click()
    card = second.suggest_card
    assert card.table.value == first.suggest_card.table.value
    assert card.loss_percent.value == 2.0 and not card.stale
    assert card.restored_note.layout.display is None
    assert "data's files are unchanged" in html.unescape(card.restored_note.value)
    assert second.model.measured == first.model.measured
    # the data rewritten since: the card says it may have changed
    pd.read_parquet(data).iloc[:50].to_parquet(data)
    third = PipelineBuilder(data, autosave=path)
    third.restore_button.click()
    assert third.suggest_card.table.value == first.suggest_card.table.value
    assert "data may have changed" in third.suggest_card.restored_note.value


@pytest.mark.parametrize("fail", [False, True])
def test_run_and_load_are_disabled_while_a_run_goes_on(tmp_path, monkeypatch, fail):
    builder = PipelineBuilder(_data(tmp_path), output=str(tmp_path / "out"), autosave=False)
    _build(builder)
    if fail:
        def broken(self, *args, **kwargs):
            raise ValueError("no fit today")
        monkeypatch.setattr(Workflow, "fit", broken)
    seen, loads = [], []
    builder.run_button.observe(lambda change: seen.append(change["new"]), "disabled")
    builder.buttons["load"].observe(lambda change: loads.append(change["new"]), "disabled")
    builder.run_button.click()
    job = builder.model.wait_run(120)
    assert job.status == ("error" if fail else "finished"), builder.message
    assert seen == [True, False] and loads == [True, False]
    assert builder.run_button.disabled is False


def test_run_and_load_are_enabled_again_after_a_cancel(tmp_path, monkeypatch):
    builder = PipelineBuilder(_data(tmp_path), output=str(tmp_path / "out"), autosave=False)
    _build(builder)
    started, release = threading.Event(), threading.Event()

    def slow(self, *args, **kwargs):  # stops as a cancelled Dask computation does
        started.set()
        release.wait(30)
        raise JobCancelledError("cancelled by job.cancel()")
    monkeypatch.setattr(Workflow, "fit", slow)
    builder.run_button.click()
    assert started.wait(30) and builder.run_button.disabled
    assert builder.buttons["load"].disabled
    builder.buttons["cancel"].click()
    release.set()
    assert builder.model.wait_run(60).status == "cancelled", builder.message
    assert not builder.run_button.disabled and not builder.buttons["load"].disabled
