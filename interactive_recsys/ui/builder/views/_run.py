"""RunPanel: the output path, Preview, Run and Cancel with the run's status line, the
preview below the graph, and the workflow file row (Save, Load, Export code).

It draws what its :class:`~..model.RunController` tells (:meth:`RunPanel.update`): a new
preview, a Run started, its progress and its end (the status line, the lookups-lost alert,
the "run ended" event for the browser).

>>> from interactive_recsys.ui.builder.model import RunController
>>> from interactive_recsys.ui.builder.views._feedback import Feedback
>>> panel = RunPanel(None, Feedback(["run"]), RunController())
>>> panel.buttons["run"].click(); panel.feedback.last[0]
'No dataset is open: type a dataset path and click Open.'
"""

from __future__ import annotations

import html
import os
from typing import Any

import ipywidgets as w

from interactive_recsys.errors import IRSError
from interactive_recsys.redact import redact_text
from interactive_recsys.store import storage
from interactive_recsys.ui._run_progress import RunPlan, progress_lines
from interactive_recsys.ui._sample_text import computed_on
from interactive_recsys.ui.builder.model import BuilderModel, Change, RunController
from interactive_recsys.ui.builder.views._code_export import CodeExport, code_height
from interactive_recsys.ui.builder.views._feedback import COLOURS, Feedback, busy, make_button
from interactive_recsys.ui.builder.views._masked_text import MaskedText
from interactive_recsys.ui.builder.views._run_diff import run_diff_html
from interactive_recsys.ui.builder.views._run_notice import RunNotice
from interactive_recsys.ui.builder.views._run_watch import RunWatch
from interactive_recsys.ui.preview._preview import frame_html


class RunPanel:
    """Preview, Run, Save, Load and Export code of ``model`` (None: no dataset open yet),
    through ``runs``. ``root`` is the action bar (output, buttons, messages, status);
    ``oov_alert``, ``preview_view``, ``preview_html``, ``file_row`` and
    ``code`` with its ``code_bar`` (Copy, Insert) are placed by the builder."""

    def __init__(self, model: BuilderModel | None, feedback: Feedback,
                 runs: RunController) -> None:
        self.model, self.feedback, self.runs = model, feedback, runs
        self.buttons: dict[str, w.Button] = {}
        self.output_text = MaskedText(description="Output", placeholder="directory to write "
                                      "(empty: fit only)", layout=w.Layout(width="46%"))
        self.output_text.add_class("irs-builder-output")
        self.overwrite = w.Checkbox(value=False, description="replace if it exists",
                                    indent=False, layout=w.Layout(width="auto"))
        self.overwrite.add_class("irs-builder-overwrite")
        self._build_outputs()
        self.file_row = self._file_row()
        #: ends the spinner with a message when the kernel stops during a Run (browser side)
        self.run_watch = RunWatch()
        #: tells the browser a Run ended (a notification when the page is hidden)
        self.run_notice = RunNotice()
        self.root = w.VBox([self._run_row(), feedback.areas["run"], self.status,
                            self.diff_view, self.run_notice, self.run_watch])
        self.root.add_class("irs-builder-actionbar")
        runs.observe(self.update)

    def _button(self, text: str, css: str, action: Any, tip: str = "",
                style: str = "") -> w.Button:
        return make_button(self.buttons, self.feedback, text, css, action, tip, style, "run")

    def _run_row(self) -> w.HBox:
        """The output path, "replace if it exists", Preview, Run and Cancel."""
        self.run_button = self._button("Run", "run", self._run, "Fit the full dataset and "
                                       "write the output, in the background", "success")
        return w.HBox([
            self.output_text, self.overwrite,
            self._button("Preview", "preview", self._preview, "Fit and transform a sample",
                         "info"),
            self.run_button,
            self._button("Cancel", "cancel", self._cancel, "Cancel the run in progress")],
            layout=w.Layout(flex_flow="row wrap", align_items="center"))

    def _file_row(self) -> w.HBox:
        """The workflow directory with Save, Load and Export code."""
        self.file_text = w.Text(description="Workflow", placeholder="directory to save/load",
                                layout=w.Layout(width="40%"))
        self.file_text.add_class("irs-builder-file")
        return w.HBox([
            self.file_text,
            self._button("Save", "save", self._save),
            self._button("Load", "load", self._load),
            self._button("Export code", "export", self._export)],
            layout=w.Layout(flex_flow="row wrap"))

    def _build_outputs(self) -> None:
        """What shows results: the run status, the lookups-lost alert, the preview with its
        output/input toggle, and the exported code with its Copy and Insert buttons."""
        self.status = w.HTML()
        self.status.add_class("irs-builder-status")
        #: after a Run that refit a previous one: what changed since (``_run_diff``)
        self.diff_view = w.HTML()
        self.diff_view.add_class("irs-builder-run-diff")
        #: after a Run, the columns that lost more lookups than their budget, in red, with
        #: the fix (empty otherwise)
        self.oov_alert = w.HTML()
        self.oov_alert.add_class("irs-builder-oov-alert")
        self.preview_view = w.ToggleButtons(options=["output", "input"], value="output",
                                            style={"button_width": "auto"},
                                            layout=w.Layout(display="none"))
        self.preview_view.add_class("irs-builder-preview-toggle")
        self.preview_view.observe(lambda _: self._show_preview(), "value")
        self.preview_html = w.HTML(layout=w.Layout(width="100%"))
        self.preview_html.add_class("irs-builder-preview")
        #: the exported code: as tall as its lines (at most ``MAX_LINES``), then it scrolls
        self.code = w.Textarea(layout=w.Layout(width="100%", display="none"))
        self.code.add_class("irs-builder-code")
        #: Copy and Insert as a new cell, above the code
        self.code_bar = CodeExport()

    def attach(self, model: BuilderModel, output: str | os.PathLike | None) -> None:
        """Work on ``model``; ``output`` (or the model's default) in the Output field."""
        self.model = model
        self.runs.attach(model)
        output = output if output is not None else model.default_output()
        self.output_text.value = os.fspath(output) if output is not None else ""

    def need_model(self) -> BuilderModel:
        return self.runs.need_model()

    # ---- drawing what the controller tells ------------------------------------------------
    def update(self, change: Change) -> None:
        """Draw a preview, a Run started, its progress or its end."""
        if change.name == "preview":
            self.preview_view.layout.display = None
            self._show_preview()
            self.feedback.say(self.runs.preview_text(change.new), "success", "run")
        elif change.name == "started":
            self.status.value = '<span class="irs-run-running">Run started...</span>'
            self.feedback.say(change.new, "busy", "run")
        elif change.name == "progress":
            self.status.value = progress_html(change.new)
        elif change.name == "ended":
            self._show_end(change.new.job.status, change.new.text, change.new.level)

    def _show_end(self, status: str, text: str, level: str) -> None:
        self.status.value = (f'<span class="irs-run-{status} irs-msg-{level}" '
                             f'style="color:{COLOURS[level]}">{html.escape(text)}</span>')
        # the status line, next to Run, replaces the "Running..." note
        self.feedback.last = (text, level, "run")
        self.feedback.areas["run"].value = ""
        self.oov_alert.value = oov_alert_html(self.model.oov_warnings)
        self.diff_view.value = run_diff_html(self.model.run_diff)
        self.run_notice.run_ended(status, text)
        self.run_watch.running = False
        self.set_running(False)

    #: The buttons disabled while a Run goes on: a second Run, and a Load that would
    #: replace the steps the Run is fitting.
    BUSY_DURING_RUN = ("run", "load")

    def set_running(self, running: bool) -> None:
        """Disable Run and Load while a Run goes on (``running``), enable them at its end
        (finished, error or cancelled)."""
        for name in self.BUSY_DURING_RUN:
            self.buttons[name].disabled = running

    def _show_preview(self) -> None:
        result = self.runs.last_preview
        if result is None:
            return
        which = self.preview_view.value
        frame = result.output if which == "output" else result.input
        self.preview_html.value = (f'<div class="irs-preview">'
                                   '<div class="irs-preview-computed-on">Preview '
                                   f'{computed_on(len(result.input), result.total_rows)}</div>'
                                   f'{frame_html(frame, which.title(), f"irs-preview-{which}")}'
                                   "</div>")

    # ---- the buttons ----------------------------------------------------------------------
    def _preview(self) -> None:
        self.feedback.say(self.runs.preview_start_text(), "busy", "run")
        with busy(self.buttons["preview"], "Previewing..."):
            result = self.runs.compute_preview()
        self.runs.publish_preview(result)

    def _run(self) -> None:
        overwrite = self.overwrite.value
        output = self.runs.check(self.output_text.real_value.strip() or None, overwrite)
        self.oov_alert.value = self.diff_view.value = ""
        self.run_watch.running = True  # before the job: its end may come first
        self.set_running(True)
        try:
            self.runs.start(output, overwrite)
        except BaseException:
            self.run_watch.running = False
            self.set_running(False)
            raise

    def _cancel(self) -> None:
        self.feedback.say(self.runs.cancel(), "info", "run")

    def _path(self) -> str:
        path = self.file_text.value.strip()
        if not path:
            raise IRSError("Type a directory in the Workflow field first (e.g. my_workflow/).")
        return path

    def _save(self) -> None:
        model = self.need_model()
        path = model.save(self._path(), overwrite=True)
        if model.fitted_workflow:
            self.feedback.say(f"Saved the workflow (fitted, with vocabularies) to {path!r}.",
                              "success", "run")
            return
        self.feedback.say(
            f"Saved the workflow to {path!r}, NOT fitted: it has no vocabularies nor "
            "statistics yet, so irs run and irs.Loader refuse it. Click Run to fit it "
            "(then Save again), or fit the saved folder from the command line: "
            f"irs fit --workflow {redact_text(path)} --input DATA --output FITTED_DIR.",
            "info", "run")

    def _load(self) -> None:
        path = self._path()
        if not storage.isdir(path):
            raise IRSError(f"Workflow directory {path!r} does not exist; check the path "
                           f"(the current directory is {os.getcwd()!r}).")
        self.need_model().load(path)
        self.feedback.say(f"Loaded the workflow from {path!r}.", "success", "run")

    def _export(self) -> None:
        model = self.need_model()
        model.export_places = (self.file_text.value.strip() or "my_workflow/",
                               self.output_text.real_value.strip() or None)
        self.code.value = code = model.export_code()
        self.code.layout.height = code_height(code)
        self.code.layout.display = None
        self.code_bar.show(code)
        what = ("the whole job: it opens the data, fits the identical workflow, writes the "
                "output and saves the fitted workflow" if model.source is not None else
                "it builds the identical workflow (the Studio was opened on data in memory: "
                "open yours, then fit it)")
        self.feedback.say(f"Exported code below: {what}.", "success", "run")


def run_progress_html(phases: list[dict[str, Any]], rows: int | None, now: float,
                      plan: RunPlan | None = None) -> str:
    """The status line during a run: the whole Run's time left, then the running phase with
    rows/s, its operators under way, the phases done (see
    :mod:`interactive_recsys.ui._run_progress`).

    >>> phase = {"name": "fit 1/1", "status": "running", "done": 1, "total": 4,
    ...          "fraction": 0.25, "started": 0.0, "stopped": None, "operators": []}
    >>> print(run_progress_html([phase], 1000, 2.0))  # doctest: +NORMALIZE_WHITESPACE
    <div class="irs-run-running irs-run-progress"><b>Running</b> ·
    about 6 s left (phase 1 of 1: fit 1/1)</div><div class="irs-run-progress-more"
    style="font-size:11px;color:var(--jp-ui-font-color2, #555)">fit 1/1: about 250 of 1.0k
    rows (25%), 125 rows/s</div>
    >>> run_progress_html([], 1000, 2.0)
    ''
    """
    return progress_html(progress_lines(phases, rows, now, plan))


def progress_html(lines: list[str], label: str = "Running") -> str:
    """The status line of :func:`run_progress_html` from its lines (``""`` for none): the
    first (the whole Run) after ``label`` (Suggest's says "Counting"), the others smaller
    under it."""
    if not lines:
        return ""
    first, rest = lines[0].removeprefix("Run: "), lines[1:]
    more = "".join(f'<div class="irs-run-progress-more" style="font-size:11px;'
                   f'color:var(--jp-ui-font-color2, #555)">'
                   f"{html.escape(line)}</div>" for line in rest)
    return (f'<div class="irs-run-running irs-run-progress"><b>{html.escape(label)}</b> · '
            f"{html.escape(first)}</div>{more}")


def oov_alert_html(warnings: Any) -> str:
    """The red note at the top of the Build tab: one line per column over its budget.

    >>> from interactive_recsys.ui.builder.suggest import OOVWarning
    >>> alert = oov_alert_html([OOVWarning("C3", 0.536, 0.01, 1018)])
    >>> "C3 lost 53.60% of its non-null lookups" in alert
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
