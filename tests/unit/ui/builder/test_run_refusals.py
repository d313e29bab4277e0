"""Refuse before the work: every output check happens when Run is clicked, before the fit.

``BuilderModel.run`` raises at once (no job, nothing fitted, nothing written) for an output
that exists, is the input, contains it, lies inside the input folder, or cannot be written;
the Studio's Run shows the message next to Run. Real folders and parquet files."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from interactive_recsys.errors import DatasetError
from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder.model._model import BuilderModel


@pytest.fixture
def data_dir(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    for i in range(2):
        pd.DataFrame({"c": [f"v{j % 5}" for j in range(50)], "x": range(50)}).to_parquet(
            folder / f"part.{i}.parquet")
    return folder


def _tree(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), folder)
                  for d, dirs, files in os.walk(folder) for f in files + dirs)


def _model(data_dir) -> BuilderModel:
    model = BuilderModel(str(data_dir))
    model.add_step(["c"], "Categorify")
    return model


@pytest.mark.parametrize("case", ["exists", "is the input", "contains the input",
                                  "inside the input", "under a file", "not writable"])
def test_run_refuses_a_bad_output_at_once(data_dir, tmp_path, case):
    (tmp_path / "taken").mkdir()
    (tmp_path / "a-file").write_text("x")
    output, match, error = {
        "exists": (tmp_path / "taken", "already exists", DatasetError),
        "is the input": (data_dir, "it is the input", DatasetError),
        "contains the input": (tmp_path, "contains the input", DatasetError),
        "inside the input": (data_dir / "processed", "inside the input folder", DatasetError),
        "under a file": (tmp_path / "a-file" / "out", "not a folder", OSError),
        "not writable": ("/sys/irs-output", "Cannot write", OSError),
    }[case]
    model = _model(data_dir)
    before = _tree(tmp_path)
    with pytest.raises(error, match=match):
        model.run(str(output))
    assert model.last_job is None and model.wait_run(1) is None  # no job was started
    assert model.fitted_workflow is None  # nothing was fitted
    assert _tree(tmp_path) == before  # nothing written, no temporaries
    assert not os.path.exists("/sys/irs-output")


def test_overwrite_allows_an_existing_output_but_not_the_input(data_dir, tmp_path):
    model = _model(data_dir)
    (tmp_path / "out").mkdir()
    job = model.run(str(tmp_path / "out"), overwrite=True)
    assert model.wait_run(60) is job and job.status == "finished", job.exception(0)
    assert sorted(os.listdir(tmp_path / "out"))[-1].endswith(".parquet")
    with pytest.raises(DatasetError, match="it is the input"):
        model.run(str(data_dir), overwrite=True)
    assert len(os.listdir(data_dir)) == 2


def test_the_studio_run_shows_the_refusal_next_to_run_and_starts_nothing(data_dir):
    builder = PipelineBuilder(str(data_dir))
    builder.model.add_step(["c"], "Categorify")
    builder.output_text.value = str(data_dir / "out")
    builder.buttons["run"].click()
    assert builder.job is None
    area = builder.feedback.areas["run"].value
    assert "inside the input folder" in area and "irs-msg-error" in area
    assert sorted(os.listdir(data_dir)) == ["part.0.parquet", "part.1.parquet"]


def test_the_run_message_names_the_absolute_output(data_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    builder = PipelineBuilder(str(data_dir))
    builder.model.add_step(["c"], "Categorify")
    builder.output_text.value = "rel-out"
    builder.buttons["run"].click()
    job = builder.model.wait_run(60)
    assert job is not None and job.status == "finished"
    assert str(tmp_path / "rel-out") in builder.status.value
