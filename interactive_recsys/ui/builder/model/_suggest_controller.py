"""SuggestController: a click on Suggest, without widgets.

It starts the background Suggest (:func:`~._suggest_job.start_suggest`), polls the progress
of its counting pass and says how it ended, as :class:`RunController` does for a Run. Views
observe its events (:class:`~._events.Change`) and draw them:

- ``"started"``: a Suggest started (``new``: what it does);
- ``"progress"``: the lines of its status line while it counts (from a helper thread,
  every :data:`~._controller.PROGRESS_SECONDS`; never after ``"ended"``): rows counted of
  the total, rows/s and time left (:func:`~interactive_recsys.ui._run_progress.pass_lines`);
- ``"ended"``: its :class:`SuggestEnd` (from a helper thread), after the steps were
  replaced (finished) or left as they were (cancelled, failed).

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> model = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"]}))
>>> suggests, seen = SuggestController(model), []
>>> suggests.observe(lambda change: seen.append(change.new), "ended")
>>> job = suggests.start(0.01, 2**30); model.wait_suggest(60) is job
True
>>> seen[0].level, seen[0].text.split(":")[0]
('success', 'Suggested')
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.ui._run_progress import count_text, pass_lines
from interactive_recsys.ui.builder.model._controller import PROGRESS_SECONDS
from interactive_recsys.ui.builder.model._events import FieldEvents, Listener
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.suggest import explain


@dataclass(frozen=True)
class SuggestEnd:
    """How a background Suggest ended: its ``job``, the ``model`` it suggested for, the
    one-line ``text`` and its ``level`` (success, error, or info for a Cancel)."""

    job: Job
    model: BuilderModel
    text: str
    level: str


class SuggestController:
    """Background Suggests of ``model`` (None until a dataset is open; see ``attach``)."""

    FIELDS = ("started", "progress", "ended")

    def __init__(self, model: BuilderModel | None = None) -> None:
        self.model = model
        self.job: Job | None = None  # the last Suggest
        self._events = FieldEvents(self.FIELDS, "SuggestController")
        self._lock = threading.Lock()  # the end and the progress ticks: one at a time

    def attach(self, model: BuilderModel) -> None:
        """Suggest for ``model`` from now on; a Suggest still counting for the previous
        model is cancelled (its end changes that model only)."""
        if self.model is not model and self.model is not None and self.model.suggesting:
            self.model.suggest_job.cancel()
        self.model = model

    def observe(self, callback: Listener, names: str | Sequence[str] | None = None) -> None:
        """Call ``callback(change)`` after each event of ``names`` (see the module doc)."""
        self._events.observe(callback, names)

    def need_model(self) -> BuilderModel:
        if self.model is None:
            raise IRSError("No dataset is open: type a dataset path and click Open.")
        return self.model

    def start(
        self, max_loss: float | None, memory_budget: int | str | None, client: Any = None
    ) -> Job:
        """Start the Suggest as a background job on ``client`` (None: the active one, else
        this process); its progress and end are told as events. Refusals (a Suggest or a
        Run under way, a bad budget) raise before anything starts."""
        model = self.need_model()
        ended = threading.Event()  # set (under the lock) once the end is told
        counts = model.measured is None
        self.job = job = model.start_suggest(
            max_loss,
            memory_budget,
            client=client,
            on_done=lambda job: self._done(job, model, ended),
        )
        with self._lock:
            if not ended.is_set():
                self._events.emit("started", None, self.start_text(model, counts))
        threading.Thread(
            target=self._tick,
            args=(job, model.dataset.known_num_rows, ended),
            name="irs-builder-suggest-progress",
            daemon=True,
        ).start()
        return job

    @staticmethod
    def start_text(model: BuilderModel, counts: bool) -> str:
        """What a starting Suggest does: count every value (the first time), or only choose
        from the counts it has."""
        if not counts:
            return "Suggesting from the values already counted..."
        rows = model.dataset.known_num_rows
        over = f"all {rows:,} rows" if rows is not None else "every row"
        return (
            f"Counting every value of the categorical columns over {over} (once), in the "
            "background: the notebook stays free; Cancel stops it and changes nothing..."
        )

    def _tick(self, job: Job, rows: int | None, ended: threading.Event) -> None:
        """The status line's lines (rows counted, rows/s, time left) until the end."""
        while not ended.wait(PROGRESS_SECONDS):
            lines = pass_lines([p.to_dict() for p in job.phases], rows, time.time())
            with self._lock:
                if not ended.is_set() and lines:
                    self._events.emit("progress", None, lines)

    def _done(self, job: Job, model: BuilderModel, ended: threading.Event) -> None:
        with self._lock:
            ended.set()
            text, level = self.end_text(job, model)
            self._events.emit("ended", None, SuggestEnd(job, model, text, level))

    @staticmethod
    def end_text(job: Job, model: BuilderModel) -> tuple[str, str]:
        """The line that replaces "Counting...", and its level."""
        seconds = (job.stopped or time.time()) - (job.started or time.time())
        if job.status == "finished":
            counted = [p for p in job.phases if p.status == "finished"]
            rows = model.dataset.known_num_rows
            how = (
                f" (counted {count_text(rows)} rows in {seconds:.1f} s)"
                if counted and rows
                else f" (counted in {seconds:.1f} s)"
                if counted
                else ""
            )
            return (
                f"Suggested: {explain(job.result())}{how}. Click a step in the graph to "
                "edit it; Undo reverts.",
                "success" if model.vocab_fits else "error",
            )
        error = job.exception(0)
        if job.cancel_requested:
            return (
                f"Suggest cancelled after {seconds:.1f} s: the steps and the Suggest card "
                "are as they were.",
                "info",
            )
        why = str(error) if isinstance(error, IRSError) else f"{type(error).__name__}: {error}"
        what = "stopped" if job.status == "cancelled" else "failed"  # a cluster closed, say
        return (f"Suggest {what} after {seconds:.1f} s; the steps are as they were: {why}", "error")

    def cancel(self) -> str:
        """Cancel the Suggest under way (its Dask tasks stop); what the click did."""
        model = self.model
        job = model.suggest_job if model is not None else None
        if job is None or not model.suggesting or not job.cancel():
            raise IRSError("No Suggest is in progress.")
        return "Cancelling Suggest: its counting stops, and nothing changes."


__all__ = ["SuggestController", "SuggestEnd"]
