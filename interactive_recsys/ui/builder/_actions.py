"""Preview, Run, Save, Load and Export code: the action buttons of the pipeline builder.

A mixin of :class:`~.builder.PipelineBuilder` (which supplies the widgets, ``model``,
``say`` and the listeners); kept apart so that each module stays small.
"""

from __future__ import annotations

import html
import os
import threading
import time
from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.redact import redact_text
from interactive_recsys.runtime.jobs import active_client
from interactive_recsys.store import storage
from interactive_recsys.ui._run_progress import progress_lines
from interactive_recsys.ui.builder._dag import model_graph
from interactive_recsys.ui.builder._feedback import COLOURS, busy
from interactive_recsys.ui.builder._fit_status import reuse_text
from interactive_recsys.ui.builder._model_run import job_text
from interactive_recsys.ui.builder.suggest import oov_summary
from interactive_recsys.ui.preview._preview import computed_on, frame_html


class RunActions:
    """Preview (a sample, output first), Run (fit + atomic write of the output path, in the
    background), Cancel, Save, Load and Export code."""

    def _preview(self) -> None:
        model = self._need_model()
        how = "fitting and transforming" if model.fitted_workflow is None else "transforming"
        self.say(f"Preview: {how} {self.preview_rows:,} sample rows...", "busy", "run")
        with busy(self.buttons["preview"], "Previewing..."):
            result = model.preview(self.preview_rows)
        self.last_preview = result
        self.preview_view.layout.display = None
        self._show_preview()
        on = computed_on(len(result.input), result.total_rows)
        if result.fitted_on_sample:
            reuse = reuse_text(result.workflow, model)
            self.say(f"Preview: fitted and transformed {len(result.input)} sample rows in "
                     f"{result.seconds:.2f} s; {on}" + (f"; {reuse}" if reuse else "")
                     + " (below the graph).", "success", "run")
        else:
            self.say(f"Preview: transformed {len(result.input)} sample rows in "
                     f"{result.seconds:.2f} s with the fitted workflow (its vocabularies, not "
                     f"a refit on the sample); {on} (below the graph).", "success", "run")
        for callback in list(self._preview_listeners):
            callback(result)

    def _show_preview(self) -> None:
        result = self.last_preview
        if result is None:
            return
        which = self.preview_view.value
        frame = result.output if which == "output" else result.input
        self.preview_html.value = (f'<div class="irs-preview">'
                                   '<div class="irs-preview-computed-on">Preview '
                                   f'{computed_on(len(result.input), result.total_rows)}</div>'
                                   f'{frame_html(frame, which.title(), f"irs-preview-{which}")}'
                                   "</div>")

    def _run(self) -> None:
        model = self._need_model()
        ended = threading.Event()  # set (under the lock) once the final status is shown
        lock = threading.Lock()

        def done(job: Any) -> None:
            with lock:
                ended.set()
                show_end(job)

        def show_end(job: Any) -> None:
            text = job_text(job)
            reuse = reuse_text(job.result(), model) if job.status == "finished" else ""
            if reuse:  # the steps kept from the previous Run
                text = text.rstrip(".") + f"; {reuse}."
            lost = oov_summary(job.result(), model.vocab_max_loss) \
                if job.status == "finished" else ""
            if lost:  # the real lookups lost, when no column is over (the alert says that)
                text = text.rstrip(".") + f"; {lost}."
            if job.status == "finished":  # the graph marks them reused / computed
                self.dag.set_graph(*model_graph(model))
            if job.status == "finished" and output:
                text = text.rstrip(".") + f"; output written to {output!r}."
            level = "success" if job.status == "finished" else "error"
            colour = COLOURS[level]
            self.status.value = (f'<span class="irs-run-{job.status} irs-msg-{level}" '
                                 f'style="color:{colour}">{html.escape(text)}</span>')
            # the status line, next to Run, replaces the "Running..." note
            self.feedback.last = (text, level, "run")
            self.feedback.areas["run"].value = ""
            self.oov_alert.value = oov_alert_html(model.oov_warnings)
            self.run_notice.run_ended(job.status, text)
            self.run_watch.running = False
            for callback in list(self._run_listeners):
                callback(job)

        if model.running:
            raise IRSError("A run is in progress: wait for it to end, or click Cancel.")

        output = self.output_text.real_value.strip() or None
        if output is not None:  # messages name the folder wherever the kernel runs from
            output = os.path.abspath(os.path.expanduser(output))
            # refused before anything starts (a cluster included); run() checks again
            model.check_output(output, self.overwrite.value)
        for hook in list(self._before_run_listeners):  # the Studio: a cluster + dashboard
            hook()
        client = self.client or active_client()
        where = ("on the Dask cluster (see the Cluster tab)" if client is not None
                 else "in this process (no Dask cluster is active)")
        self.oov_alert.value = ""
        self.run_watch.running = True  # before the job: its end may come first
        try:
            self.job = model.run(output, on_done=done, client=client,
                                 overwrite=self.overwrite.value)
        except BaseException:
            self.run_watch.running = False
            raise
        self.status.value = '<span class="irs-run-running">Run started...</span>'
        writes = f"fit, then write {output!r}" if output else "fit only (no output path)"
        self.say(f"Running in the background {where}: {writes}...", "busy", "run")
        rows = model.dataset.known_num_rows
        job = self.job

        def tick() -> None:  # the status line: rows/s and time left, until the end
            while not ended.wait(PROGRESS_SECONDS):
                text = run_progress_html([p.to_dict() for p in job.phases], rows, time.time())
                with lock:
                    if not ended.is_set() and text:
                        self.status.value = text

        threading.Thread(target=tick, name="irs-builder-run-progress", daemon=True).start()

    def _cancel(self) -> None:
        if self.job is None or not self.job.cancel():
            raise IRSError("No run is in progress.")
        self.say("Cancelling the run: its Dask tasks stop and it publishes nothing (the "
                 "output path keeps what it held).", "info", "run")

    def _path(self) -> str:
        path = self.file_text.value.strip()
        if not path:
            raise IRSError("Type a directory in the Workflow field first (e.g. my_workflow/).")
        return path

    def _save(self) -> None:
        path = self._need_model().save(self._path(), overwrite=True)
        if self.model.fitted_workflow:
            self.say(f"Saved the workflow (fitted, with vocabularies) to {path!r}.", "success",
                     "run")
            return
        self.say(f"Saved the workflow to {path!r}, NOT fitted: it has no vocabularies nor "
                 "statistics yet, so irs run and irs.Loader refuse it. Click Run to fit it "
                 "(then Save again), or fit the saved folder from the command line: "
                 f"irs fit --workflow {redact_text(path)} --input DATA --output FITTED_DIR.",
                 "info", "run")

    def _load(self) -> None:
        path = self._path()
        if not storage.isdir(path):
            raise IRSError(f"Workflow directory {path!r} does not exist; check the path "
                           f"(the current directory is {os.getcwd()!r}).")
        self._need_model().load(path)
        self.say(f"Loaded the workflow from {path!r}.", "success", "run")

    def _export(self) -> None:
        model = self._need_model()
        self.code.value = model.export_code(self.file_text.value.strip() or "my_workflow/",
                                            self.output_text.real_value.strip() or None)
        self.code.layout.display = None
        what = ("the whole job: it opens the data, fits the identical workflow, writes the "
                "output and saves the fitted workflow" if model.source is not None else
                "it builds the identical workflow (the Studio was opened on data in memory: "
                "open yours, then fit it)")
        self.say(f"Exported code below: {what}.", "success", "run")


#: Seconds between two updates of the status line while a run goes on.
PROGRESS_SECONDS = 1.0


def run_progress_html(phases: list[dict[str, Any]], rows: int | None, now: float) -> str:
    """The status line during a run: the running phase with rows/s and time left, its
    operators under way, the phases done (see :mod:`interactive_recsys.ui._run_progress`).

    >>> phase = {"name": "fit 1/1", "status": "running", "done": 1, "total": 4,
    ...          "fraction": 0.25, "started": 0.0, "stopped": None, "operators": []}
    >>> print(run_progress_html([phase], 1000, 2.0))  # doctest: +NORMALIZE_WHITESPACE
    <div class="irs-run-running irs-run-progress"><b>Running</b> ·
    fit 1/1: about 250 of 1.0k rows (25%), 125 rows/s, about 6 s left</div>
    >>> run_progress_html([], 1000, 2.0)
    ''
    """
    lines = progress_lines(phases, rows, now)
    if not lines:
        return ""
    first, rest = lines[0], lines[1:]
    more = "".join(f'<div class="irs-run-progress-more" style="font-size:11px;'
                   f'color:var(--jp-ui-font-color2, #555)">'
                   f"{html.escape(line)}</div>" for line in rest)
    return (f'<div class="irs-run-running irs-run-progress"><b>Running</b> · '
            f"{html.escape(first)}</div>{more}")


def oov_alert_html(warnings: Any) -> str:
    """The red note at the top of the Build tab: one line per column over its budget.

    >>> from interactive_recsys.ui.builder.suggest import OOVWarning
    >>> "C3 lost 53.6%" in oov_alert_html([OOVWarning("C3", 0.536, 0.01, 1018)])
    True
    >>> oov_alert_html([])
    ''
    """
    if not warnings:
        return ""
    lines = "".join(f"<li>{html.escape(w.text())}</li>" for w in warnings)
    return (f"<div class='irs-oov-alert' style='color:{COLOURS['error']};border:1px solid "
            f"{COLOURS['error']};padding:4px 8px'><b>Lookups lost over budget after the "
            f"last Run ({len(warnings)} column(s)):</b><ul style='margin:2px 0'>{lines}</ul>"
            "</div>")
