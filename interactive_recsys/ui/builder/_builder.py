"""PipelineBuilder: build a workflow by clicking, on top of ``BuilderModel``.

The composition root: it makes the model (on Open), the :class:`~.model.RunController` and
the panels (:mod:`.views`), each built from the model and the feedback areas and drawing
it, and lays their widgets out. Its attributes and methods forward to them.

Every error (an invalid parameter, an operator on incompatible columns, an empty selection,
a missing dataset path) is shown in the widget's message area, never only in the console.

>>> import pandas as pd
>>> builder = PipelineBuilder(pd.DataFrame({"c": ["x", "y"], "n": [1.0, 2.0]}))
>>> builder.select_columns(["c"]); builder.choose_operator("Normalize")
>>> builder.add_button.click()   # strings to Normalize: refused, with the reason shown
>>> print(builder.message)  # doctest: +ELLIPSIS
In step ['c'] >> Normalize(): Normalize needs numeric columns, but column 'c' has dtype ...
>>> builder.choose_operator("Categorify"); builder.add_button.click()
>>> builder.model.branches[0].steps
[Step(op='Categorify', params={})]
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from interactive_recsys.errors import DatasetError, IRSError
from interactive_recsys.ui.builder._autosave import Autosave
from interactive_recsys.ui.builder.model import BuilderModel, RunController, SuggestController
from interactive_recsys.ui.builder.model._handoff import (
    adopt_run,
    handoff_fields,
    restore_suggest,
)
from interactive_recsys.ui.builder.suggest._max_frequency import frequency_hints
from interactive_recsys.ui.builder.views import (
    ColumnsPanel,
    MaskedText,
    ParamForm,
    RecoveryPanel,
    RunPanel,
    StepsPanel,
)
from interactive_recsys.ui.builder.views._code_export import insert_code_cell
from interactive_recsys.ui.builder.views._feedback import STYLE, Feedback, make_button

#: Part of the error for raw Criteo TSV opened as CSV (:func:`~interactive_recsys.io.
#: _csv_input.check_csv_header`): the builder then offers "Open as Criteo".
RAW_CRITEO_HINT = "irs.datasets.read_criteo(path)"

#: Feedback areas, each next to its controls.
AREAS = ("dataset", "columns", "suggest", "palette", "steps", "run")


def _forward(panel: str, name: str, settable: bool = False) -> property:
    """A property of the builder that is attribute ``name`` of its part ``panel``."""
    def get(self: Any) -> Any:
        return getattr(getattr(self, panel), name)

    def put(self: Any, value: Any) -> None:
        setattr(getattr(self, panel), name, value)
    return property(get, put if settable else None, doc=f"``{panel}.{name}``.")


def _forwards(panel: str, names: str) -> tuple[property, ...]:
    return tuple(_forward(panel, name) for name in names.split())


class PipelineBuilder(w.VBox):
    """Build a workflow by clicking: columns, Suggest, operator palette, form, DAG view.

    Parameters
    ----------
    dataset : a Dataset, a DataFrame or a path (a path that does not exist is reported in
        the widget, where another path can be typed).
    preview_rows : rows of the sample used by "Preview".
    output : where "Run" writes the transformed data (default: ``<input>-processed`` next
        to a dataset read from files, nothing for one in memory); editable in the widget.
    autosave : where the pipeline is saved after every edit, as JSON: None (default: in a
        Jupyter kernel ``.<notebook>.irs-pipeline.json`` in its working directory, off
        elsewhere), True, False or a file path. A builder finding such a file offers to
        restore it (see ``views._recovery``).
    """

    def __init__(self, dataset: Any = None, *, preview_rows: int = 1000,
                 output: str | os.PathLike | None = None, sample_rows: int = 10_000,
                 autosave: bool | str | os.PathLike | None = None) -> None:
        super().__init__()
        self.add_class("irs-builder")
        self.model: BuilderModel | None = None
        self.output, self.sample_rows = output, sample_rows
        self.feedback = Feedback(AREAS)
        self.runs = RunController(preview_rows=preview_rows)
        #: Suggest in the background: its progress, Cancel and end (``model.SuggestController``)
        self.suggests = SuggestController()
        self.columns_panel = ColumnsPanel(None, self.feedback)
        self.steps_panel = StepsPanel(None, self.feedback, self.columns_panel, self.runs,
                                      self.suggests)
        self.run_panel = RunPanel(None, self.feedback, self.runs)
        self.recovery_panel = RecoveryPanel(None, self.feedback, self.run_panel.output_text,
                                            self._open_path, autosave)
        self.recovery_panel.extras, self.recovery_panel.restored = self._extras, self._restored
        self.runs.on_run(lambda job: self.recovery_panel.update())  # its fitted workflow
        self.run_panel.overwrite.observe(lambda _: self.recovery_panel.update(), "value")
        self._layout()
        if dataset is not None:
            self.path_text.value = os.fspath(dataset) if isinstance(dataset, str | os.PathLike) \
                else ""
            self._guard(lambda: self.open_dataset(dataset), "dataset")()
        self._guard(self.offer_restore, "dataset")()

    def _layout(self) -> None:
        """The dataset row, the action bar (Run and its messages), the columns beside the
        editor, then the graph, the predicted schema, the preview, the workflow file row
        and the exported code."""
        self._buttons: dict[str, w.Button] = {}
        self.path_text = MaskedText(description="Dataset", placeholder="path of parquet/csv "
                                    "files", layout=w.Layout(width="50%"))
        self.path_text.add_class("irs-builder-path")
        open_button = make_button(self._buttons, self.feedback, "Open", "open", lambda: (
            self.open_dataset(self.path_text.real_value)), area="dataset")
        #: shown when the path holds raw Criteo TSV: opens it with read_criteo instead
        self.criteo_button = make_button(
            self._buttons, self.feedback, "Open as Criteo", "open-criteo",
            lambda: self.open_criteo(self.path_text.real_value), "Read raw Criteo TSV "
            "(label, I1..I13, C1..C26; no header) with irs.datasets.read_criteo",
            area="dataset")
        self.criteo_button.layout.display = "none"
        self.info = w.HTML()
        run, steps = self.run_panel, self.steps_panel
        self.children = [
            w.HTML(STYLE, layout=w.Layout(display="none")), run.oov_alert,
            self.recovery_panel.root,
            w.HBox([self.path_text, open_button, self.criteo_button,
                    self.feedback.areas["dataset"]]),
            self.info, run.root,
            w.HBox([self.columns_panel.root, steps.root],
                   layout=w.Layout(justify_content="space-between")),
            steps.dag, steps.schema_html, run.preview_view, run.preview_html, run.file_row,
            run.code_bar, run.code]
        run.code_bar.add_host(self.model_id)

    @property
    def buttons(self) -> dict[str, w.Button]:
        """The action buttons by name: open, suggest, cancel-suggest, add, update, remove,
        up, down, undo, new-branch, pass-through, preview, run, cancel, save, load, export,
        select-shown, clear, and the recovery offers'."""
        return {**self._buttons, **self.columns_panel.buttons, **self.steps_panel.buttons,
                **self.run_panel.buttons, **self.recovery_panel.buttons}

    # ---- the parts' widgets and actions, as the builder's ---------------------------------
    (choice, chips, name_filter, column_count, column_list, column_box, shown_columns,
     selected_columns, select_role, select_columns) = _forwards(
        "columns_panel", "choice chips name_filter column_count column_list column_box "
        "shown_columns selected_columns select_role select_columns")
    (suggest_button, suggest_card, suggest_status, palette, op_buttons, form, add_button,
     steps, dag, schema_html, choose_operator, palette_click, operator) = _forwards(
        "steps_panel", "suggest_button suggest_card suggest_status palette op_buttons form "
        "add_button steps dag schema_html choose_operator palette_click operator")
    (output_text, overwrite, run_button, file_text, status, oov_alert, preview_view,
     preview_html, code, code_bar, run_watch, run_notice) = _forwards(
        "run_panel", "output_text overwrite run_button file_text status oov_alert "
        "preview_view preview_html code code_bar run_watch run_notice")
    last_preview, job, on_preview, on_run, before_run = _forwards(
        "runs", "last_preview job on_preview on_run before_run")
    (autosaver, saved_pipeline, orphans, restore_note, restore_button, restore_dismiss,
     restore_row, autosave_error, autosave_discard, orphan_note, orphan_button, orphan_row,
     offer_restore, discard_autosave, restore_autosave, check_orphans,
     remove_orphans) = _forwards(
        "recovery_panel", "autosaver saved_pipeline orphans restore_note restore_button "
        "restore_dismiss restore_row autosave_error autosave_discard orphan_note "
        "orphan_button orphan_row offer_restore discard_autosave restore_autosave "
        "check_orphans remove_orphans")
    recovery = _forward("recovery_panel", "root")
    client = _forward("runs", "client", settable=True)
    preview_rows = _forward("runs", "preview_rows", settable=True)

    # ---- messages -------------------------------------------------------------------------
    @property
    def message(self) -> str:
        """The last message shown (in any area)."""
        return self.feedback.last[0]

    @property
    def level(self) -> str:
        return self.feedback.last[1]

    def say(self, text: str, level: str = "info", area: str = "steps",
            details: str = "") -> None:
        """Show ``text`` next to the controls of ``area`` (one of ``AREAS``); other
        areas are cleared. ``level``: info, success, error or busy."""
        self.feedback.say(text, level, area, details)

    def _guard(self, action: Callable[[], Any], area: str = "steps") -> Callable[[], Any]:
        """Run a callback; errors go next to its control, never to the console only."""
        return self.feedback.guard(action, area)

    # ---- the dataset ----------------------------------------------------------------------
    def open_dataset(self, dataset: Any) -> None:
        """Open a dataset (path, Dataset or DataFrame) and profile its columns."""
        if isinstance(dataset, str) and not dataset.strip():
            raise IRSError("Type the path of a parquet or csv dataset, then click Open.")
        self.criteo_button.layout.display = "none"
        try:
            model = BuilderModel(dataset, sample_rows=self.sample_rows)
        except DatasetError as exc:  # raw Criteo TSV: offer to open it the way it needs
            if RAW_CRITEO_HINT in str(exc):
                self.criteo_button.layout.display = None
                raise DatasetError(f"{exc} Or click Open as Criteo.") from exc
            raise
        self._attach(model)
        self.say(f"Opened {model.dataset!r}.", "success", "dataset")

    def _open_path(self, path: str) -> BuilderModel:
        """Open ``path`` as typed in the Dataset field (an autosave's dataset)."""
        self.path_text.value = path
        self.open_dataset(path)
        return self.model

    def open_criteo(self, path: str | os.PathLike) -> None:
        """Open raw Criteo TSV files (one file, a glob such as ``day_*``, or a folder's
        pattern) with :func:`~interactive_recsys.datasets.read_criteo`: the "Open as Criteo"
        button shown when Open finds raw Criteo data."""
        from interactive_recsys.datasets import read_criteo  # lazy: only for raw Criteo

        if isinstance(path, str) and not path.strip():
            raise IRSError("Type the path of the raw Criteo files, then click Open as Criteo.")
        source = os.path.expanduser(os.fspath(path).strip())
        self.open_dataset(read_criteo(source))
        if self.model is not None:  # exported code opens it as it was opened here
            self.model.source, self.model.source_reader = source, "irs.datasets.read_criteo"

    def _attach(self, model: BuilderModel) -> None:
        """Draw ``model`` in every panel (another dataset opened: the old one is dropped)."""
        self.model = model
        profile = model.profile
        self.info.value = (f"<span class='irs-builder-info'>{html.escape(repr(model.dataset))}"
                           f"; column profile from {profile[0].sample_rows if profile else 0:,}"
                           " sampled rows</span>")
        self.columns_panel.attach(model)
        self.run_panel.attach(model, self.output)
        self.steps_panel.attach(model)
        self.recovery_panel.attach(model)

    def insert_code_cell(self) -> None:
        """Put the exported code (``model.export_code()``) in a new cell below the cell
        running this call, not run: what the Insert button does where the page gives
        widgets no access to the notebook (``views._code_export.insert_code_cell``)."""
        insert_code_cell(self._need_model().export_code())

    def _extras(self, model: BuilderModel) -> dict[str, Any]:
        """The autosave's fields beyond the steps: the last Run's output and fitted
        workflow, what Suggest measured, the form's options."""
        return {**handoff_fields(model, self.suggest_card.memory_budget),
                "options": {"overwrite": bool(self.overwrite.value)}}

    def _restored(self, saved: Autosave) -> list[str]:
        """Put back the form's options, the Suggest card and the last Run's fitted
        workflow (when it matches the restored steps) of ``saved``; the notes to show."""
        model, notes = self._need_model(), []
        self.overwrite.value = bool(saved.options.get("overwrite", False))
        if saved.suggest is not None:
            changed = restore_suggest(model, saved.suggest)
            self.suggest_card.show_restored(
                model.vocab_choices, model.vocab_fits, model.vocab_shortfall,
                (model.vocab_max_loss, model.vocab_budget), changed)
            self.suggest_card.show_frequency(frequency_hints(model.measured))
            self.suggest_card.set_stale(not model.suggest_current)
        if saved.run is not None and "run" not in saved.redacted:
            notes.append(adopt_run(model, saved.run["output"], saved.run["workflow"])[1])
        return notes

    def _need_model(self) -> BuilderModel:
        if self.model is None:
            raise IRSError("No dataset is open: type a dataset path and click Open.")
        return self.model

    @classmethod
    def from_workflow(cls, workflow: Any, dataset: Any, **kwargs: Any) -> PipelineBuilder:
        """A builder showing the branches of an existing ``workflow``."""
        builder = cls(None, **kwargs)
        model = BuilderModel.from_workflow(workflow, dataset, sample_rows=builder.sample_rows)
        builder._attach(model)
        builder.say("Opened the workflow in the builder.", "success", "dataset")
        return builder

    def __repr__(self) -> str:
        if self.model is None:
            return f"PipelineBuilder(no dataset; {self.message})"
        steps = sum(len(b.steps) for b in self.model.branches)
        return (f"PipelineBuilder({self.model.dataset!r}, {len(self.model.branches)} "
                f"branch(es), {steps} step(s))")


__all__ = ["AREAS", "RAW_CRITEO_HINT", "ParamForm", "PipelineBuilder"]
