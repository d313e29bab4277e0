"""Nothing lost on a kernel restart: the autosave and its restore offer, and the offer to
remove a stopped Run's temporary output.

:class:`RecoveryPanel` is built from the model, the feedback, the Output field (where the
temporaries are looked for) and a function that opens a dataset path (to restore a
pipeline before any dataset is open). The offers sit in their own row at the top of the
builder (``RecoveryPanel.root``), apart from the message areas, so that a later
message does not wipe them:

* "Restore the pipeline saved at HH:MM (N steps)": the pipeline autosaved beside the
  notebook (:mod:`._autosave`) by an earlier builder, e.g. before a kernel restart;
  a file that is not an autosave is named in one line (with the field at fault), with a
  "Discard the autosave file" button, and is otherwise left alone until the next edit; a
  path that is not a regular file (a FIFO) is named and never opened;
  a dataset or output URL autosaved without its credentials is asked for again;
* "Remove the temporary output (SIZE)": a Run stopped before publishing left a temporary
  whose writer is gone (:mod:`._orphans`).

>>> import os, tempfile, pandas as pd
>>> from interactive_recsys.ui.builder import PipelineBuilder
>>> path = os.path.join(tempfile.mkdtemp(), ".nb.irs-pipeline.json")
>>> frame = pd.DataFrame({"c": ["x", "y"]})
>>> first = PipelineBuilder(frame, autosave=path)
>>> first.select_columns(["c"]); first.choose_operator("Categorify"); first.add_button.click()
>>> first.autosaver.flush()
>>> second = PipelineBuilder(frame, autosave=path)
>>> second.restore_button.description  # doctest: +ELLIPSIS
'Restore the pipeline saved at ... (1 step)'
>>> second.restore_button.click()
>>> second.model.export_code() == first.model.export_code()
True
"""

from __future__ import annotations

import html
import os
import stat
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from interactive_recsys.errors import IRSError
from interactive_recsys.redact import redact_text
from interactive_recsys.ui.builder._autosave import (
    Autosave,
    AutosaveError,
    Autosaver,
    autosave_path,
    pipeline_record,
    read_autosave,
)
from interactive_recsys.ui.builder._orphans import (
    Orphan,
    find_orphans,
    orphan_text,
    remove_orphans,
    size_text,
)
from interactive_recsys.ui.builder.model import BuilderModel, Change
from interactive_recsys.ui.builder.views._feedback import COLOURS, Feedback, make_button
from interactive_recsys.ui.builder.views._masked_text import MaskedText


def in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (where the builder autosaves by default)."""
    try:
        from IPython import get_ipython  # lazy: only asked once per builder
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class RecoveryPanel:
    """The autosave, the restore offer and the temporary-output offer of a builder.

    ``output_text``: the Output field; ``open_path(path)``: opens a dataset path and
    returns its model; ``autosave``: None (on in a Jupyter kernel, off elsewhere), True
    (on), False (off) or the file's path; on, the file is ``autosave_path``.
    """

    def __init__(self, model: BuilderModel | None, feedback: Feedback, output_text: MaskedText,
                 open_path: Callable[[str], BuilderModel],
                 autosave: bool | str | os.PathLike | None = None) -> None:
        self.model: BuilderModel | None = None
        self.feedback, self.output_text, self.open_path = feedback, output_text, open_path
        self.buttons: dict[str, w.Button] = {}
        #: ``extras(model)``: the record's ``run``, ``suggest`` and ``options`` (the builder's)
        self.extras: Callable[[BuilderModel], dict[str, Any]] | None = None
        #: ``restored(saved)``: put back what the record holds beyond the steps; the notes
        self.restored: Callable[[Autosave], list[str]] | None = None
        self._build_autosaver(autosave)
        self.root = self._build_rows()
        if model is not None:
            self.attach(model)

    def _button(self, text: str, css: str, action: Callable[[], Any], tip: str = "",
                style: str = "", area: str = "dataset") -> w.Button:
        return make_button(self.buttons, self.feedback, text, css, action, tip, style, area)

    def say(self, text: str, level: str, area: str) -> None:
        self.feedback.say(text, level, area)

    def _build_autosaver(self, autosave: bool | str | os.PathLike | None) -> None:
        if autosave is None:
            autosave = in_kernel()
        path = autosave_path() if autosave is True else \
            os.fspath(autosave) if autosave is not False else None
        #: writes the pipeline after each edit (None: autosave is off)
        self.autosaver = Autosaver(path, on_error=lambda text: self.say(
            text, "error", "steps")) if path is not None else None
        self.saved_pipeline: Autosave | None = None
        self.orphans: list[Orphan] = []

    def _build_rows(self) -> w.VBox:
        """The offers' rows, hidden while they have nothing to offer."""
        self.restore_note = w.HTML()
        self.restore_note.add_class("irs-restore-note")
        self.restore_button = self._button("Restore", "restore", self.restore_autosave,
                                           "Replace the steps by the autosaved pipeline "
                                           "(undoable)", "warning", area="dataset")
        self.restore_dismiss = self._button("Dismiss", "restore-dismiss",
                                            lambda: self._show_restore(None), area="dataset")
        self.restore_row = w.HBox([self.restore_button, self.restore_dismiss, self.restore_note],
                                  layout=w.Layout(display="none", align_items="center",
                                                  flex_flow="row wrap"))
        self.restore_row.add_class("irs-builder-restore")
        self.autosave_error = w.HTML(layout=w.Layout(display="none"))
        self.autosave_error.add_class("irs-autosave-error")
        self.autosave_discard = self._button("Discard the autosave file", "autosave-discard",
                                             self.discard_autosave, "Delete the autosave file "
                                             "that cannot be read", "danger", area="dataset")
        self.autosave_discard.layout.display = "none"
        self.orphan_note = w.HTML()
        self.orphan_note.add_class("irs-orphan-note")
        self.orphan_button = self._button("Remove the temporary output", "remove-orphans",
                                          self.remove_orphans, "Remove what the stopped run "
                                          "left (as irs clean OUTPUT does)", "danger",
                                          area="run")
        self.orphan_row = w.HBox([self.orphan_button, self.orphan_note],
                                 layout=w.Layout(display="none", align_items="center",
                                                 flex_flow="row wrap"))
        self.orphan_row.add_class("irs-builder-orphans")
        # a local output is looked at as it is typed (one folder listing); an object store's
        # when a dataset is opened, not at every keystroke
        self.output_text.observe(
            lambda change: None if "://" in change["new"] else self.feedback.guard(
                self.check_orphans, "run")(), "value")
        root = w.VBox([self.restore_row, w.HBox(
            [self.autosave_error, self.autosave_discard],
            layout=w.Layout(align_items="center", flex_flow="row wrap")), self.orphan_row])
        root.add_class("irs-builder-recovery")
        return root

    # ---- autosave and restore -------------------------------------------------------------
    def attach(self, model: BuilderModel) -> None:
        """Work on ``model``: its edits are autosaved from now on (another dataset opened:
        the old model's are not); look for a stopped run's temporaries."""
        if self.model is not None:
            self.model.unobserve(self.update)
        self.model = model
        if self.autosaver is not None:
            model.observe(self.update, "branches")
        self.feedback.guard(self.check_orphans, "run")()

    def update(self, change: Change | None = None) -> None:
        """The steps changed (or a Run ended, an option changed): autosave them."""
        model = self.model
        if self.autosaver is None or model is None:
            return
        output = self.output_text.real_value.strip() or None
        extras = self.extras(model) if self.extras is not None else {}
        try:
            record = pipeline_record(model.branches, dataset=model.source, output=output,
                                     **extras)
        except (IRSError, TypeError, ValueError) as exc:  # the edit stands; the note says why
            self._autosave_note(f"Could not autosave the pipeline: {exc}")
            return
        self.autosaver.schedule(record)
        self._autosave_note(None)  # an unreadable file is replaced now

    def offer_restore(self) -> Autosave | None:
        """Read the autosave file and show the restore offer (or the one-line reason the
        file cannot be read); the pipeline it holds, or None."""
        if self.autosaver is None:
            return None
        try:
            saved = read_autosave(self.autosaver.path)
        except AutosaveError as exc:
            self._autosave_note(str(exc), discard=exc.discardable)
            return None
        self._show_restore(saved if saved is not None and saved.steps else None)
        return self.saved_pipeline

    def _autosave_note(self, text: str | None, *, discard: bool = False) -> None:
        """Show ``text`` in red in the offers' row (a file that cannot be read, say), with
        the Discard button when ``discard``; None hides both."""
        if text is None:
            self.autosave_error.layout.display = "none"
            self.autosave_discard.layout.display = "none"
            return
        self.autosave_error.value = (f'<div class="irs-msg irs-msg-error" style="color:'
                                     f'{COLOURS["error"]}">{html.escape(redact_text(text))}'
                                     "</div>")
        self.autosave_error.layout.display = None
        self.autosave_discard.layout.display = None if discard else "none"

    def discard_autosave(self) -> None:
        """Delete the autosave file that cannot be read (a regular file only; a link is
        removed, not what it names)."""
        path = self.autosaver.path if self.autosaver is not None else None
        if path is None or self.autosave_discard.layout.display == "none":
            raise IRSError("There is no unreadable autosave file to discard.")
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise IRSError(f"The autosave path {path!r} is not a regular file; remove it "
                           "yourself, or pass autosave= another file.")
        if mode is not None:
            os.remove(path)
        self._autosave_note(None)
        self.say(f"Discarded the autosave file {path!r}; the next edit writes a new one.",
                 "success", "dataset")

    def _show_restore(self, saved: Autosave | None) -> None:
        self.saved_pipeline = saved
        if saved is None:
            self.restore_row.layout.display = "none"
            return
        self.restore_button.description = saved.offer()
        where = f" on {saved.dataset!r}" if saved.dataset else ""
        masked = [k for k in ("dataset", "output") if k in saved.redacted]
        hidden = f" (the {' and '.join(masked)} URL without its credentials)" if masked else ""
        self.restore_note.value = (f"<small>autosaved{html.escape(where)} in "
                                   f"<code>{html.escape(saved.path)}</code>"
                                   f"{html.escape(hidden)}</small>")
        self.restore_row.layout.display = None

    def restore_autosave(self) -> None:
        """Replace the steps by the offered autosave (undoable); without an open dataset,
        open the one it was built on first. A URL autosaved without its credentials is
        asked for again, never opened or written masked."""
        saved = self.saved_pipeline
        if saved is None:
            raise IRSError("There is no autosaved pipeline to restore.")
        if self.model is None:
            if not saved.dataset:
                raise IRSError("The autosaved pipeline was built on a dataset in memory: "
                               "open that dataset, then click Restore.")
            if "dataset" in saved.redacted:
                raise IRSError(f"The autosaved pipeline was built on {saved.dataset!r}, saved "
                               "without its credentials: type that URL again with them in the "
                               "Dataset field and click Open, then click Restore.")
            self.open_path(saved.dataset)
        self.model.restore(saved.branches)
        notes = []
        if saved.output and "output" not in saved.redacted:
            self.output_text.value = saved.output
        elif saved.output and redact_text(self.output_text.real_value.strip()) != saved.output:
            notes.append(f" The output {saved.output!r} was saved without its credentials: "
                         "type it again with them in the Output field.")
        if "branches" in saved.redacted:
            notes.append(" A step's parameter held a credential, saved as ***: set it again "
                         "in the step's form.")
        if self.restored is not None:
            notes += [f" {note}" for note in self.restored(saved)]
        self._show_restore(None)
        self.say(f"Restored the pipeline autosaved in {saved.path!r} ({saved.steps} steps); "
                 f"Undo takes it back.{''.join(notes)}", "info" if notes else "success",
                 "dataset")

    # ---- the temporary output of a stopped run ---------------------------------------------
    def check_orphans(self) -> list[Orphan]:
        """Look for temporaries a stopped run left next to the output path and offer to
        remove them (with their size)."""
        output = self.output_text.real_value.strip()
        output = os.path.abspath(os.path.expanduser(output)) \
            if output and "://" not in output else output
        if self.model is not None and self.model.running:
            found = []  # this builder's own run is writing them
        else:
            options = self.model.dataset.storage_options if self.model is not None else None
            found = find_orphans(output or None, options)
        self.orphans = found
        if not found:
            self.orphan_row.layout.display = "none"
            return found
        total = sum(o.nbytes for o in found)
        self.orphan_button.description = f"Remove the temporary output ({size_text(total)})"
        self.orphan_note.value = (f'<span style="color:{COLOURS["error"]}">'
                                  f"{html.escape(orphan_text(output, found))}</span>")
        self.orphan_row.layout.display = None
        return found

    def remove_orphans(self) -> list[str]:
        """Remove the offered temporaries (``irs clean OUTPUT``'s rules: never a live
        writer's); return what was removed."""
        output = self.output_text.real_value.strip()
        if not self.orphans or not output:
            raise IRSError("There is no temporary output of a stopped run to remove.")
        output = os.path.abspath(os.path.expanduser(output)) if "://" not in output \
            else output
        options = self.model.dataset.storage_options if self.model is not None else None
        removed = remove_orphans(output, options)
        freed = sum(o.nbytes for o in self.orphans if o.path in removed)
        self.check_orphans()
        self.say(f"Removed {len(removed)} temporary output(s) of a stopped run next to "
                 f"{output!r} ({size_text(freed)} freed).", "success", "run")
        return removed
