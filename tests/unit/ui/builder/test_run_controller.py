"""The RunController's Run: the plan it tells every screen (for one time left for the whole
Run), the write pace it keeps for the next Run, and the plain end text of a Cancel."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from interactive_recsys.runtime._eta import plan_of
from interactive_recsys.runtime._job import JobCancelledError
from interactive_recsys.ui.builder import PipelineBuilder
from interactive_recsys.workflow._workflow import Workflow


def _data(tmp_path) -> str:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"C1": [f"a{v}" for v in rng.integers(0, 9, 400)],
                          "I1": rng.normal(size=400),
                          "unused": [f"{'x' * 50}{v}" for v in range(400)]})
    path = tmp_path / "clicks.parquet"
    frame.to_parquet(path, row_group_size=100)
    return str(path)


def _build(builder: PipelineBuilder) -> None:
    builder.select_columns(["C1"])
    builder.choose_operator("Categorify")
    builder.add_button.click()
    builder.buttons["new-branch"].click()
    builder.select_columns(["I1"])
    builder.choose_operator("Normalize")
    builder.add_button.click()
    assert sum(len(b.steps) for b in builder.model.branches) == 2, builder.message


def _footer_bytes(path: str) -> dict[str, int]:
    """Each column's uncompressed bytes, read from the footer here (the expectation)."""
    md, sizes = pq.ParquetFile(path).metadata, {}
    for i in range(md.num_row_groups):
        for j in range(md.num_columns):
            col = md.row_group(i).column(j)
            sizes[col.path_in_schema] = sizes.get(col.path_in_schema, 0) + \
                col.total_uncompressed_size
    return sizes


def test_run_tells_its_plan_and_the_next_run_paces_its_write_on_this_one(tmp_path):
    data = _data(tmp_path)
    builder = PipelineBuilder(data, output=str(tmp_path / "out1"), autosave=False)
    _build(builder)
    runs, model = builder.runs, builder.model
    builder.run_button.click()
    job = model.wait_run(120)
    assert job.status == "finished", builder.message
    for thread in threading.enumerate():  # the ticker read the footers, then stopped
        if thread.name == "irs-builder-run-progress":
            thread.join(10)
    plan = plan_of(job.name)  # what the dashboard's header estimates with
    assert plan.writes and sorted(plan.write_reads) == ["C1", "I1"]  # not the unused one
    footer = _footer_bytes(data)
    assert plan.column_bytes == footer
    assert footer["unused"] > footer["C1"]  # the bytes weigh: the unused column is large
    # the fit phase told what it read
    (fit,) = [p for p in job.phases if p.name.startswith("fit ")]
    assert sorted(fit.reads) == ["C1", "I1"]
    (write,) = [p for p in job.phases if p.name == "write"]
    next_plan = runs.run_plan(model, str(tmp_path / "out2"))
    assert next_plan.write_seconds_per_row == write.seconds / 400
    # without an output: no write, nothing to pace
    assert runs.run_plan(model, None).writes is False


def test_cancel_says_the_run_wrote_nothing_and_the_output_keeps_what_it_held(
        tmp_path, monkeypatch):
    data, out = _data(tmp_path), tmp_path / "out"
    out.mkdir()  # an earlier output, replaced only by a Run that finishes
    (out / "part-0.parquet").write_bytes(b"earlier")
    builder = PipelineBuilder(data, output=str(out), autosave=False)
    _build(builder)
    builder.overwrite.value = True
    started, release = threading.Event(), threading.Event()

    def slow(self, *args, **kwargs):  # stops as a cancelled Dask computation does
        started.set()
        release.wait(30)
        raise JobCancelledError("Job 'builder-run' was cancelled by job.cancel(); ...")
    monkeypatch.setattr(Workflow, "fit", slow)
    builder.run_button.click()
    assert started.wait(30)
    builder.buttons["cancel"].click()
    release.set()
    assert builder.model.wait_run(60).status == "cancelled", builder.message
    text = builder.runs.end_text(builder.model.last_job, builder.model, str(out))
    assert text.startswith("Run cancelled after ")
    assert text.endswith(f": it wrote nothing, and {str(out)!r} keeps what it held before "
                         "(an earlier output, or nothing).")
    assert "Error" not in text and "job.cancel" not in text
    assert text in builder.status.value.replace("&#x27;", "'")
    assert (out / "part-0.parquet").read_bytes() == b"earlier"
