"""Preview and Run of the builder's model: a fit on a sample, or a background fit (and
write) on the whole dataset, each passing the previous fit as ``fit(..., reuse=)``.

A mixin of :class:`~interactive_recsys.ui.builder._model.BuilderModel` (which supplies
``dataset``, ``source``, ``branches``, ``head``, ``to_workflow`` and the run state set in
its ``__init__``); plain Python, no widgets.

>>> import pandas as pd
>>> from interactive_recsys.ui.builder._model import BuilderModel
>>> m = BuilderModel(pd.DataFrame({"n": [1.0, 2.0, 3.0]}))
>>> m.add_step(["n"], "Normalize")
(0, 0)
>>> result = m.preview(2)
>>> len(result.input), list(result.output.columns), result.workflow.fitted
(2, ['n'], True)
>>> job = m.run(); m.wait_run(60) is job, job_text(job).startswith("Run finished in")
(True, True)
>>> m.fitted_workflow is job.result()
True
"""

from __future__ import annotations

import glob
import os
import posixpath
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask

from interactive_recsys.errors import DatasetError, ParameterError
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.schema import flatten
from interactive_recsys.store import storage
from interactive_recsys.store._outputs import check_output
from interactive_recsys.ui.builder.suggest import check_oov
from interactive_recsys.workflow._workflow import Workflow


@dataclass
class PreviewResult:
    """Input sample and its transformed rows, by ``workflow``: fitted on the sample, or the
    model's fitted workflow (the last Run's, or one loaded) when nothing was edited since
    (``fitted_on_sample`` False)."""

    input: Any
    output: Any
    workflow: Workflow
    seconds: float
    #: the dataset's row count when known without reading it, else ``None``
    total_rows: int | None = None
    fitted_on_sample: bool = True


class ModelRuns:
    """Preview (a sample, in this process) and Run (the whole dataset, as a background
    :class:`~interactive_recsys.runtime.jobs.Job`) of a builder model."""

    def preview(self, n_rows: int = 1000) -> PreviewResult:
        """Transform the first ``n_rows`` rows in this process (a quick look): with the
        fitted workflow (the last Run's, or one loaded) when nothing was edited since, so the
        ids are those the Run wrote; else with the workflow fitted on these rows."""
        started = time.perf_counter()
        inputs = flatten([g for b in self.branches if b.columns or b.tags
                          for g in b.selector().resolve(self.schema)])
        sample = self.head(n_rows, inputs)
        fitted = self.fitted_workflow
        with dask.config.set(scheduler="sync"):
            if fitted is None:
                wf = self.to_workflow()  # a temporary artifacts folder, removed with it
                wf.fit(sample, reuse=self.reuse_preview)  # the same sample: unchanged reused
                self.reuse_preview = wf
            else:
                wf = fitted
            output = wf.transform(sample, training=True, dtype_backend="pyarrow")  # as the sample
        return PreviewResult(sample, output, wf, time.perf_counter() - started,
                             self.dataset.known_num_rows, fitted_on_sample=fitted is None)

    def default_output(self) -> str | None:
        """Where Run writes by default: ``<input>-processed`` next to a dataset read from
        files (a directory ``data/`` -> ``data-processed``); None (fit only) for a dataset
        in memory.

        >>> import pandas as pd
        >>> from interactive_recsys.ui.builder._model import BuilderModel
        >>> BuilderModel(pd.DataFrame({"a": [1]})).default_output() is None
        True
        """
        source = self.source
        files = self.dataset.files
        if (source or (files[0] if files else "")).find("://") > 0 and storage.is_remote(
                source or files[0]):  # URLs: beside them, in the store
            if source is None or glob.has_magic(source):
                scheme = files[0].split("://", 1)[0]
                common = posixpath.commonpath([storage.strip(f) for f in files])
                source = f"{scheme}://" + (posixpath.dirname(common) if len(files) == 1
                                           else common)
            base = source.rstrip("/")
            return (base.rsplit(".", 1)[0] if base.endswith((".parquet", ".csv")) else base) \
                + "-processed"
        if source is None or glob.has_magic(source):
            files = [os.path.abspath(f) for f in self.dataset.files]
            if not files:
                return None
            source = os.path.dirname(os.path.commonpath(files)) if len(files) == 1 \
                else os.path.commonpath(files)
        source = source.rstrip("/" + os.sep) or source
        if os.path.isfile(source):
            source = os.path.splitext(source)[0]
        return source + "-processed"

    def run(self, output: str | os.PathLike | None = None, *,
            on_done: Callable[[Job], None] | None = None, client: Any = None,
            overwrite: bool = False) -> Job:
        """Fit on the whole dataset (and write the transformed data to ``output``) as a
        background :class:`~interactive_recsys.runtime.jobs.Job` on the active Dask client (if any).

        Written atomically: a failed or cancelled run leaves no partial output. A bad
        output (:meth:`check_output`; an existing one unless ``overwrite``) raises at once
        and leaves no job (:meth:`wait_run` gives ``None``). ``on_done(job)``: called from a
        helper thread at the end; ``client``: a ``distributed.Client`` instead of the active
        one."""
        output = self.check_output(output, overwrite)
        wf, dataset, previous = self.to_workflow(), self.dataset, self.reuse_run
        nodes = wf.to_config()["nodes"]

        def work() -> Workflow:
            wf.fit(dataset, reuse=previous)  # only the steps edited since are computed
            if output is not None:
                wf.transform(dataset).to_parquet(output, overwrite=overwrite)
            return wf

        # without a client, the local scheduler's tasks are counted: progress either way
        job = Job(work, name="builder-run", client=client, track_local=True).start()
        self.last_job = job
        ended = self._run_ended = threading.Event()

        def finished() -> None:
            job.exception()  # waits for the end
            try:
                if job.status == "finished":
                    self.reuse_run = wf
                    self.oov_warnings = check_oov(wf, self.vocab_choices,
                                                  max_loss=self.vocab_max_loss,
                                                  measured=self.measured)
                if job.status == "finished" and self.to_workflow().to_config()["nodes"] == nodes:
                    self.fitted_workflow = wf
                if on_done is not None:
                    on_done(job)
            finally:
                ended.set()

        threading.Thread(target=finished, name="irs-builder-run-done", daemon=True).start()
        return job

    def check_output(self, output: Any, overwrite: bool = False) -> str | None:
        """Every output check of :meth:`run` now, before any work (exists, is, contains or
        is inside the input, not writable); the "last run" is this one from now on."""
        if not self.running:
            self.last_job, self._run_ended = None, None
            self.oov_warnings = []
        if output is None:
            return None
        if not os.fspath(output).strip():
            raise ParameterError("The output path is empty: type a directory to write "
                                 "to, or run without an output (fit only).")
        output = os.fspath(output)
        if storage.is_remote(output):  # object stores: exists, is/contains the input
            storage.check_remote_destination(output, {"the input": self.dataset.input_files()})
            if storage.exists(output, self.dataset.storage_options) and not overwrite:
                raise DatasetError(f"Output {output!r} already exists; choose another path "
                                   "or allow replacing it (overwrite=True, the 'replace' box).")
        else:
            check_output(output, self.dataset.input_files(), overwrite=overwrite)
        return output

    @property
    def running(self) -> bool:
        """Whether the last :meth:`run` (or its ``on_done``) has not ended yet."""
        ended = getattr(self, "_run_ended", None)
        return ended is not None and not ended.is_set()

    def wait_run(self, timeout: float | None = None) -> Job | None:
        """Wait until the last :meth:`run` has ended and its ``on_done`` has returned; its job,
        or ``None`` when it was refused before anything ran (an existing output, say)."""
        ended = getattr(self, "_run_ended", None)
        if ended is not None and not ended.wait(timeout):
            raise TimeoutError(f"The run did not end within {timeout} s; its status is "
                               f"{self.last_job.status!r}.")
        return self.last_job


def job_text(job: Job) -> str:
    """One line about a run: running (with progress per phase), finished or why it failed."""
    seconds = ((job.stopped or time.time()) - job.started) if job.started else 0.0
    if job.status in ("error", "cancelled"):
        error = job.exception(0)
        return f"Run {job.status} after {seconds:.1f} s: {type(error).__name__}: {error}"
    progress = ", ".join(f"{name} {fraction:.0%}" for name, fraction in job.progress.items())
    if job.status == "finished":
        return f"Run finished in {seconds:.1f} s" + (f" ({progress})." if progress else ".")
    return f"Run {job.status}: {progress or 'starting'}..."


__all__ = ["ModelRuns", "PreviewResult", "job_text"]
