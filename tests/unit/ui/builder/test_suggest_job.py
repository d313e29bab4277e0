"""Suggest as a background job: the click returns while the values are counted, the status
line beside the button gives Run's progress line, the card and steps at its end are those
of the blocking ``model.suggest()``, Cancel stops the counting and changes nothing, and Run
and Suggest never run at once (the builder's widgets, ipywidgets' dummy comm; the counting
held by a gate patched in at the edge, ``count_partition``)."""

from __future__ import annotations

import html
import re
import threading
import time

import dask
import numpy as np
import pandas as pd
import pytest

from interactive_recsys.errors import IRSError
from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder.model import BuilderModel
from interactive_recsys.ui.builder.model._suggest import RUN_BUSY, SUGGEST_BUSY, SUGGEST_COUNTING
from interactive_recsys.ui.builder.views._suggest_card import SuggestCard

ROWS, FILES = 6000, 6


@pytest.fixture
def data(tmp_path) -> tuple[pd.DataFrame, str]:
    """Two categorical columns and a counter over ``FILES`` parquet files (one partition
    each): a long tail and a short head."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "user": [f"u{v}" for v in np.floor(rng.pareto(1.2, ROWS) * 40).astype(int)],
            "city": [f"c{v}" for v in rng.integers(0, 30, ROWS)],
            "clicks": rng.poisson(3, ROWS).astype("float64"),
        }
    )
    folder = tmp_path / "data"
    folder.mkdir()
    size = ROWS // FILES
    for i in range(FILES):
        frame.iloc[i * size : (i + 1) * size].to_parquet(folder / f"part-{i}.parquet")
    return frame, str(folder)


class Gate:
    """Holds every counting task (the per-partition value counts) until opened; counts
    the tasks that started."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import interactive_recsys.stats._counting as counting

        self.open, self.started = threading.Event(), 0
        original = counting.count_partition

        def held(*args, **kwargs):
            self.started += 1
            assert self.open.wait(60), "the test never opened the gate"
            return original(*args, **kwargs)

        monkeypatch.setattr(counting, "count_partition", held)


def wait_for(condition, what: str, seconds: float = 60) -> None:
    """Poll ``condition`` (a bound on a wait, not on the code's speed)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never saw {what}")
        time.sleep(0.05)


def events_of(builder: PipelineBuilder) -> list[tuple[str, object]]:
    seen: list[tuple[str, object]] = []
    builder.suggests.observe(lambda change: seen.append((change.name, change.new)))
    return seen


def test_suggest_counts_in_the_background_with_progress_and_ends_as_the_blocking_call(
    data, monkeypatch
):
    frame, path = data
    gate = Gate(monkeypatch)
    builder = PipelineBuilder(path, output="")
    model, seen = builder.model, events_of(builder)
    builder.suggest_card.loss_percent.value = 2.0
    before = model.branches

    builder.suggest_button.click()  # returns while every counting task is held
    job = model.suggest_job
    assert job.status == "running" and model.suggesting and not gate.open.is_set()
    assert model.measured is None and model.branches == before  # nothing applied yet
    assert builder.suggest_button.disabled and builder.suggest_button.description == "Suggesting..."
    assert builder.buttons["cancel-suggest"].layout.display is None  # Cancel shown
    assert builder.suggest_card.loss_percent.disabled  # the budgets it counts with
    assert builder.level == "busy" and f"all {ROWS:,} rows" in builder.message
    # the kernel is free: an edit goes through meanwhile (Suggest's steps replace it)
    model.add_step(["clicks"], "Normalize")

    wait_for(lambda: any(name == "progress" for name, _ in seen), "a progress event")
    line = html.unescape(builder.suggest_status.status.value)
    # the rows counted of the total (the reading tasks, ahead of the held ones, count too)
    assert re.search(
        r"<b>Counting</b> · count values: about [\d.]+k? of 6\.0k rows \(\d+%\)", line
    ), line

    gate.open.set()
    assert model.wait_suggest(60) is job and job.status == "finished"
    names = [name for name, _ in seen]
    assert names[0] == "started" and names[-1] == "ended" and names.count("ended") == 1
    assert "progress" in names and names.index("progress") < names.index("ended")

    # the same as the blocking call on a model of its own, and the counts are pandas'
    blocking = BuilderModel(path)
    expected = blocking.suggest(0.02, builder.suggest_card.memory_budget)
    assert job.result() == expected == model.branches
    assert model.measured == blocking.measured
    assert model.measured["user"].distinct == frame["user"].nunique()
    assert model.vocab_choices == blocking.vocab_choices and model.suggest_current
    card = SuggestCard()
    card.loss_percent.value = 2.0
    card.show(blocking.vocab_choices, blocking.vocab_fits, blocking.vocab_shortfall)
    assert builder.suggest_card.table.value == card.table.value
    assert f"every value counted over all {ROWS:,} rows" in card.table.value
    # the controls back, the status line gone, the end said next to Suggest
    assert not builder.suggest_button.disabled
    assert builder.suggest_button.description == "Suggest a pipeline"
    assert builder.buttons["cancel-suggest"].layout.display == "none"
    assert not builder.suggest_card.loss_percent.disabled
    assert builder.suggest_status.status.value == ""
    assert builder.feedback.last[1:] == ("success", "suggest")
    assert builder.message.startswith("Suggested: ") and "counted 6.0k rows in" in builder.message
    model.undo()  # the edit made while it counted comes back
    assert [s.op for s in model.branches[-1].steps] == ["Normalize"]


def test_cancel_stops_the_counting_and_keeps_the_previous_state(data, monkeypatch):
    _, path = data
    gate = Gate(monkeypatch)
    builder = PipelineBuilder(path, output="")
    model, seen = builder.model, events_of(builder)
    model.add_step(["user"], "Categorify", {"freq_threshold": 3})  # made by hand
    before, history = model.branches, len(model._history)
    table = builder.suggest_card.table.value

    with dask.config.set(num_workers=1):  # one counting task at a time: the first is held
        builder.suggest_button.click()
        job = model.suggest_job
        wait_for(lambda: gate.started == 1, "the first counting task")
        builder.buttons["cancel-suggest"].click()
        assert builder.message == "Cancelling Suggest: its counting stops, and nothing changes."
        gate.open.set()
        assert model.wait_suggest(60) is job
    assert job.status == "cancelled" and gate.started == 1 < FILES  # no task started after
    assert model.branches == before and len(model._history) == history
    assert model.measured is None and model.vocab_choices == []
    assert model.suggested_branches is None and not model.suggest_current
    assert builder.suggest_card.table.value == table  # the card as it was
    assert [name for name, _ in seen if name == "ended"] == ["ended"]
    assert builder.feedback.last[1:] == ("info", "suggest")
    assert builder.message.startswith("Suggest cancelled after ") and builder.message.endswith(
        "the steps and the Suggest card are as they were."
    )
    assert not builder.suggest_button.disabled and not model.suggesting
    assert builder.buttons["cancel-suggest"].layout.display == "none"
    builder.buttons["cancel-suggest"].click()  # nothing to cancel any more
    assert builder.message == "No Suggest is in progress."


def test_run_waits_for_suggest_and_suggest_for_run(data, monkeypatch, tmp_path):
    """A Run clicked while Suggest counts would fit the steps about to be replaced: it is
    refused with the reason and both ways out, and starts nothing; Suggest refuses a
    second Suggest and a Run under way the same way, and so does the blocking call."""
    frame, path = data
    gate = Gate(monkeypatch)
    builder = PipelineBuilder(path, output=str(tmp_path / "out"))
    model = builder.model
    builder.suggest_button.click()
    builder.buttons["run"].click()
    assert builder.feedback.last == (SUGGEST_COUNTING, "error", "run")
    assert model.last_job is None and not (tmp_path / "out").exists()
    assert not builder.run_button.disabled  # refused, not locked: the message says why
    with pytest.raises(IRSError, match="Suggest is counting"):
        model.run()
    builder.suggest_button.click()  # a second Suggest while the first counts
    assert builder.feedback.last == (SUGGEST_BUSY, "error", "suggest")
    with pytest.raises(IRSError, match="already counting"):
        model.suggest(measure=False)
    gate.open.set()
    model.wait_suggest(60)
    assert model.suggest_job.status == "finished"

    # a Run under way (its fit held): Suggest is refused, the Run is untouched
    import interactive_recsys.workflow._workflow as workflow

    held, fit = threading.Event(), workflow.Workflow.fit

    def slow_fit(self, *args, **kwargs):
        assert held.wait(60)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(workflow.Workflow, "fit", slow_fit)
    builder.buttons["run"].click()
    assert model.running
    builder.suggest_button.click()
    assert builder.feedback.last == (RUN_BUSY, "error", "suggest")
    with pytest.raises(IRSError, match="A Run is in progress"):
        model.start_suggest()
    held.set()
    assert model.wait_run(120).status == "finished"
    written = pd.read_parquet(tmp_path / "out")
    assert len(written) == len(frame)


def test_a_bad_budget_is_refused_before_anything_starts(data):
    _, path = data
    model = BuilderModel(path)
    with pytest.raises(IRSError, match=r"lookups that may be lost must be in \[0, 1\)"):
        model.start_suggest(max_loss=1.5)
    with pytest.raises(IRSError, match="memory_budget"):
        model.start_suggest(memory_budget="lots")
    assert model.suggest_job is None and not model.suggesting and model.measured is None


def test_opening_another_dataset_cancels_a_suggest_counting_the_first(data, monkeypatch, tmp_path):
    frame, path = data
    gate = Gate(monkeypatch)
    builder = PipelineBuilder(path, output="")
    first = builder.model
    builder.suggest_button.click()
    job = first.suggest_job
    other = tmp_path / "other.parquet"
    frame.iloc[:100].to_parquet(other)
    builder.open_dataset(str(other))
    gate.open.set()
    first.wait_suggest(60)
    assert job.status == "cancelled" and first.measured is None
    assert builder.model is not first and builder.suggest_card.table.value == ""
    assert not builder.suggest_button.disabled
    assert builder.message.startswith("Opened ")  # the old Suggest's end is not said


def test_a_failed_count_is_said_next_to_suggest_and_changes_nothing(data, monkeypatch):
    import interactive_recsys.stats._counting as counting

    def broken(*args, **kwargs):
        raise OSError("part-3.parquet: input/output error")

    monkeypatch.setattr(counting, "count_partition", broken)
    _, path = data
    builder = PipelineBuilder(path, output="")
    model = builder.model
    model.add_step(["city"], "Categorify")
    before = model.branches
    builder.suggest_button.click()
    assert model.wait_suggest(60).status == "error"
    assert builder.feedback.last[1:] == ("error", "suggest")
    assert builder.message.startswith("Suggest failed after ")
    assert builder.message.endswith(
        "the steps are as they were: OSError: part-3.parquet: input/output error"
    )
    assert model.branches == before and model.measured is None
    assert builder.suggest_card.table.value == ""
    assert not builder.suggest_button.disabled and not builder.suggest_card.memory_gib.disabled


def test_suggest_on_a_cluster_counts_there_with_its_tasks_tracked(client, data):
    frame, path = data
    model = BuilderModel(path)
    job = model.start_suggest(client=client)
    assert model.wait_suggest(120) is job and job.status == "finished"
    (phase,) = job.phases
    assert phase.name == "count values" and phase.total > FILES
    assert phase.observed == phase.total  # every task seen finishing on the workers
    blocking = BuilderModel(path)
    assert job.result() == blocking.suggest() and model.measured == blocking.measured
    assert model.measured["city"].distinct == frame["city"].nunique()
