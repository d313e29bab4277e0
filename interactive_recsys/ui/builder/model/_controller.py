"""RunController: Preview and Run of a builder, without widgets.

It owns what a click on Preview or Run sets going: the sample's preview, the background
job, the polling of its progress and the text shown at its end. Views observe its fields
(:class:`~._events.Change` events, as the model's) and draw them:

- ``"preview"``: a new :class:`~._run.PreviewResult`;
- ``"started"``: a Run started (``new``: the message that says where and what it writes);
- ``"progress"``: the lines of the status line while the Run goes on (from a helper
  thread, every :data:`PROGRESS_SECONDS`; never after ``"ended"``): the whole Run's time
  left first (the dashboard header says the same: the controller tells the Run's
  :class:`~interactive_recsys.runtime._eta.RunPlan` to both), then its phases;
- ``"ended"``: the :class:`RunEnd` of the Run (from a helper thread).

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> model = BuilderModel(pd.DataFrame({"n": [1.0, 2.0, 3.0]}))
>>> _ = model.add_step(["n"], "Normalize")
>>> runs, seen = RunController(model), []
>>> runs.observe(lambda change: seen.append(change.new), "ended")
>>> job = runs.start(None); model.wait_run(60) is job
True
>>> seen[0].level, seen[0].text.startswith("Run finished in")
('success', True)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.redact import redact_text
from interactive_recsys.runtime._eta import RunPlan, set_plan
from interactive_recsys.runtime.jobs import Job, active_client
from interactive_recsys.ui._run_progress import progress_lines
from interactive_recsys.ui._sample_text import computed_on
from interactive_recsys.ui.builder._fit_status import reuse_text
from interactive_recsys.ui.builder.model._events import FieldEvents, Listener
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.model._run import (
    PreviewResult,
    input_columns,
    job_text,
    workflow_path,
)
from interactive_recsys.ui.builder.model._suggest import SUGGEST_COUNTING
from interactive_recsys.ui.builder.suggest import oov_summary

#: Seconds between two updates of the status line while a run goes on.
PROGRESS_SECONDS = 1.0


def handoff_text(saved: str) -> str:
    """Where a Run saved its fitted workflow, and the command that applies it to new data.

    >>> handoff_text("/d/out.workflow")
    "fitted workflow saved to '/d/out.workflow'; to apply it to new data: irs run \
--workflow /d/out.workflow --input NEW --output OUT"
    """
    return (f"fitted workflow saved to {saved!r}; to apply it to new data: irs run "
            f"--workflow {redact_text(saved)} --input NEW --output OUT")


def cancelled_text(job: Job, output: str | None) -> str:
    """The end of a Run cancelled by Cancel: it wrote nothing, and the output path keeps
    what it held before (writes publish whole or not at all).

    >>> class Job:
    ...     started, stopped = 10.0, 22.5
    ...     phases = []
    >>> print(cancelled_text(Job(), "/d/out"))  # doctest: +NORMALIZE_WHITESPACE
    Run cancelled after 12.5 s: it wrote nothing, and '/d/out' keeps what it held before
    (an earlier output, or nothing).
    >>> print(cancelled_text(Job(), None))  # doctest: +NORMALIZE_WHITESPACE
    Run cancelled after 12.5 s: nothing was written (no output path), and nothing of its
    fit is kept.
    """
    seconds = (job.stopped or time.time()) - (job.started or time.time())
    head = f"Run cancelled after {seconds:.1f} s"
    if output is None:
        return f"{head}: nothing was written (no output path), and nothing of its fit is kept."
    where = redact_text(repr(output))
    if any(p.name == "write" and p.status == "finished" for p in job.phases):
        return (f"{head}, after its write had finished: {where} may hold this Run's output "
                f"while its fitted workflow was not saved; run again to have both.")
    return (f"{head}: it wrote nothing, and {where} keeps what it held before (an earlier "
            "output, or nothing).")


@dataclass(frozen=True)
class RunEnd:
    """How a Run ended: its ``job``, the one-line ``text`` and its ``level`` (success or
    error)."""

    job: Job
    text: str
    level: str


class RunController:
    """Preview and Run of ``model`` (None until a dataset is open; see ``attach``).

    ``preview_rows``: the sample's rows; ``client``: Run's Dask client (None: the
    active one).
    """

    FIELDS = ("preview", "started", "progress", "ended")

    def __init__(self, model: BuilderModel | None = None, *, preview_rows: int = 1000) -> None:
        self.model = model
        self.preview_rows = preview_rows
        self.client: Any = None
        self.last_preview: PreviewResult | None = None
        self.job: Job | None = None  # the last run
        self._events = FieldEvents(self.FIELDS, "RunController")
        self._preview_listeners: list[Callable[[PreviewResult], None]] = []
        self._run_listeners: list[Callable[[Job], None]] = []
        self._before_run: list[Callable[[], None]] = []
        self._lock = threading.Lock()  # the end and the progress ticks: one at a time
        #: the last finished write's seconds per row, and the dataset it read (the time left
        #: of the next Run's write on the same data)
        self._write_pace: tuple[Any, float] | None = None

    def attach(self, model: BuilderModel) -> None:
        self.model = model

    def observe(self, callback: Listener, names: str | Sequence[str] | None = None) -> None:
        """Call ``callback(change)`` after each event of ``names`` (see the module doc)."""
        self._events.observe(callback, names)

    def on_preview(self, callback: Callable[[PreviewResult], None]) -> None:
        """``callback(result)`` after each Preview, once the views have drawn it."""
        self._preview_listeners.append(callback)

    def on_run(self, callback: Callable[[Job], None]) -> None:
        """``callback(job)`` when a run has ended (called from a helper thread)."""
        self._run_listeners.append(callback)

    def before_run(self, callback: Callable[[], None]) -> None:
        """``callback()`` when Run is clicked, after the output checks, before the job."""
        self._before_run.append(callback)

    def need_model(self) -> BuilderModel:
        if self.model is None:
            raise IRSError("No dataset is open: type a dataset path and click Open.")
        return self.model

    # ---- Preview ------------------------------------------------------------------------
    def preview_start_text(self) -> str:
        how = "fitting and transforming" if self.need_model().fitted_workflow is None \
            else "transforming"
        return f"Preview: {how} {self.preview_rows:,} sample rows..."

    def compute_preview(self) -> PreviewResult:
        """Fit (unless fitted) and transform the sample: :meth:`BuilderModel.preview`."""
        self.last_preview = self.need_model().preview(self.preview_rows)
        return self.last_preview

    def publish_preview(self, result: PreviewResult) -> None:
        """Tell the views (``"preview"``), then the :meth:`on_preview` listeners."""
        self._events.emit("preview", None, result)
        for callback in list(self._preview_listeners):
            callback(result)

    def preview_text(self, result: PreviewResult) -> str:
        """What a Preview did, in one line."""
        on = computed_on(len(result.input), result.total_rows)
        if result.fitted_on_sample:
            reuse = reuse_text(result.workflow, self.model)
            return (f"Preview: fitted and transformed {len(result.input)} sample rows in "
                    f"{result.seconds:.2f} s; {on}" + (f"; {reuse}" if reuse else "")
                    + " (below the graph).")
        return (f"Preview: transformed {len(result.input)} sample rows in "
                f"{result.seconds:.2f} s with the fitted workflow (its vocabularies, not "
                f"a refit on the sample); {on} (below the graph).")

    # ---- Run ----------------------------------------------------------------------------
    def check(self, output: str | None, overwrite: bool = False) -> str | None:
        """Refuse a Run before anything starts (one in progress, a Suggest counting, a bad
        output); then call the :meth:`before_run` hooks. The output as an absolute path."""
        model = self.need_model()
        if model.running:
            raise IRSError("A run is in progress: wait for it to end, or click Cancel.")
        if model.suggesting:
            raise IRSError(SUGGEST_COUNTING)
        if output is not None:  # messages name the folder wherever the kernel runs from
            output = os.path.abspath(os.path.expanduser(output))
            model.check_output(output, overwrite)  # a cluster included; run() checks again
        for hook in list(self._before_run):  # the Studio: a cluster + dashboard
            hook()
        return output

    def start(self, output: str | None, overwrite: bool = False) -> Job:
        """Start the Run of :meth:`check`'s ``output`` as a background job; its progress
        and end are told as events."""
        model = self.need_model()
        client = self.client or active_client()
        ended = threading.Event()  # set (under the lock) once the end is told
        self.job = job = model.run(output, client=client, overwrite=overwrite,
                                   on_done=lambda job: self._done(job, model, output, ended))
        where = ("on the Dask cluster (see the Cluster tab)" if client is not None
                 else "in this process (no Dask cluster is active)")
        writes = f"fit, then write {output!r}" if output else "fit only (no output path)"
        with self._lock:
            if not ended.is_set():
                self._events.emit("started", None,
                                  f"Running in the background {where}: {writes}...")
        plan = self.run_plan(model, output)
        set_plan(job.name, plan)  # before its first phase: the dashboard's header too
        threading.Thread(target=self._tick, args=(job, model, plan, ended),
                         name="irs-builder-run-progress", daemon=True).start()
        return job

    def run_plan(self, model: BuilderModel, output: str | None) -> RunPlan:
        """What a Run of ``model`` to ``output`` computes, for its time left: a write (when
        an output is given) reading the workflow's input columns, and the pace of the last
        write of the same data (the fit phases tell their own number as they begin)."""
        pace = self._write_pace
        return RunPlan(writes=output is not None,
                       write_reads=tuple(input_columns(model)) if output else (),
                       write_seconds_per_row=pace[1] if pace and pace[0] is model.dataset
                       else None)

    def _tick(self, job: Job, model: BuilderModel, plan: RunPlan,
              ended: threading.Event) -> None:
        """The status line's lines (the Run's time left, rows/s) until the end; first the
        input columns' bytes (parquet footers), here rather than on the kernel's thread."""
        rows = model.dataset.known_num_rows
        if plan.writes and plan.write_seconds_per_row is None:
            try:
                sizes = model.dataset.column_bytes()
            except Exception:  # a footer that cannot be read: the write is paced by columns
                sizes = None
            if sizes is not None:
                plan = replace(plan, column_bytes=sizes)
                set_plan(job.name, plan)
        while not ended.wait(PROGRESS_SECONDS):
            lines = progress_lines([p.to_dict() for p in job.phases], rows, time.time(), plan)
            with self._lock:
                if not ended.is_set() and lines:
                    self._events.emit("progress", None, lines)

    def _done(self, job: Job, model: BuilderModel, output: str | None,
              ended: threading.Event) -> None:
        with self._lock:
            ended.set()
            self._keep_write_pace(job, model)
            level = "success" if job.status == "finished" else "error"
            text = self.end_text(job, model, output)
            self._events.emit("ended", None, RunEnd(job, text, level))
            for callback in list(self._run_listeners):
                callback(job)

    def _keep_write_pace(self, job: Job, model: BuilderModel) -> None:
        """The seconds per row of ``job``'s finished write, for the next Run's time left."""
        rows = model.dataset.known_num_rows
        writes = [p for p in job.phases if p.name == "write" and p.status == "finished"]
        if job.status == "finished" and writes and rows:
            self._write_pace = (model.dataset, writes[-1].seconds / rows)

    def end_text(self, job: Job, model: BuilderModel, output: str | None) -> str:
        """The line that replaces "Running...": how it ended, the steps kept from the
        previous Run, the lookups lost, where the output went."""
        if job.status == "cancelled" and job.cancel_requested:
            return cancelled_text(job, output)
        text = job_text(job)
        if job.status != "finished":
            return text
        notes = [reuse_text(job.result(), model),  # the steps kept from the last Run
                 # the real lookups lost, when no column is over (the alert says that)
                 oov_summary(job.result(), model.vocab_max_loss),
                 f"output written to {output!r}" if output else "",
                 handoff_text(workflow_path(output)) if output else ""]
        for note in filter(None, notes):
            text = text.rstrip(".") + f"; {note}."
        return text

    def cancel(self) -> str:
        if self.job is None or not self.job.cancel():
            raise IRSError("No run is in progress.")
        return ("Cancelling the run: its Dask tasks stop and it publishes nothing (the "
                "output path keeps what it held).")


__all__ = ["PROGRESS_SECONDS", "RunController", "RunEnd", "cancelled_text", "handoff_text"]
