"""Preview and Run of the builder's model: a fit on a sample, or a background fit (and
write) on the whole dataset, each passing the previous fit as ``fit(..., reuse=)``.

Functions over a ``BuilderModel`` (its methods of the same names forward
here); they read and set the run state its ``__init__`` declares. Plain Python, no widgets.

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
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
from typing import TYPE_CHECKING, Any

import dask

from interactive_recsys.errors import DatasetError, IRSError, ParameterError
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.schema import flatten
from interactive_recsys.store import storage
from interactive_recsys.store._outputs import check_output as check_local_output
from interactive_recsys.ui.builder.model._run_diff import run_diff
from interactive_recsys.ui.builder.model._suggest import SUGGEST_COUNTING, suggesting
from interactive_recsys.ui.builder.suggest import check_oov
from interactive_recsys.workflow._workflow import Workflow

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState


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


def preview(model: ModelState, n_rows: int = 1000) -> PreviewResult:
    """Transform the first ``n_rows`` rows in this process (a quick look): with the
    fitted workflow (the last Run's, or one loaded) when nothing was edited since, so the
    ids are those the Run wrote; else with the workflow fitted on these rows."""
    started = time.perf_counter()
    sample = model.head(n_rows, input_columns(model))
    fitted = model.fitted_workflow
    with dask.config.set(scheduler="sync"):
        if fitted is None:
            wf = model.to_workflow()  # a temporary artifacts folder, removed with it
            wf.fit(sample, reuse=model.reuse_preview)  # the same sample: unchanged reused
            model.reuse_preview = wf
        else:
            wf = fitted
        output = wf.transform(sample, training=True, dtype_backend="pyarrow")  # as the sample
    return PreviewResult(sample, output, wf, time.perf_counter() - started,
                         model.dataset.known_num_rows, fitted_on_sample=fitted is None)


def input_columns(model: ModelState) -> list[str]:
    """The input columns the model's steps read (a Preview's sample, a Run's write)."""
    return flatten([g for b in model.branches if b.columns or b.tags
                    for g in b.selector().resolve(model.schema)])


def default_output(model: ModelState) -> str | None:
    """Where Run writes by default: ``<input>-processed`` next to a dataset read from
    files (a directory ``data/`` -> ``data-processed``); None (fit only) for a dataset
    in memory.

    >>> import pandas as pd
    >>> from interactive_recsys.ui.builder.model._model import BuilderModel
    >>> BuilderModel(pd.DataFrame({"a": [1]})).default_output() is None
    True
    """
    source = model.source
    files = model.dataset.files
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
        files = [os.path.abspath(f) for f in model.dataset.files]
        if not files:
            return None
        source = os.path.dirname(os.path.commonpath(files)) if len(files) == 1 \
            else os.path.commonpath(files)
    source = source.rstrip("/" + os.sep) or source
    if os.path.isfile(source):
        source = os.path.splitext(source)[0]
    return source + "-processed"


#: Appended to a Run's output path to name the folder its fitted workflow is saved to.
WORKFLOW_SUFFIX = ".workflow"


def workflow_path(output: str | os.PathLike) -> str:
    """Where a Run that writes ``output`` saves its fitted workflow: the sibling folder
    ``<output>.workflow`` (never inside the output, whose readers list every data file).

    >>> workflow_path("data-processed/"), workflow_path("s3://b/out")
    ('data-processed.workflow', 's3://b/out.workflow')
    """
    return os.fspath(output).rstrip("/" + os.sep) + WORKFLOW_SUFFIX


def run(model: ModelState, output: str | os.PathLike | None = None, *,
        on_done: Callable[[Job], None] | None = None, client: Any = None,
        overwrite: bool = False) -> Job:
    """Fit on the whole dataset (and write the transformed data to ``output``) as a
    background :class:`~interactive_recsys.runtime.jobs.Job` on the active Dask client (if any).

    Written atomically: a failed or cancelled run leaves no partial output. A bad
    output (:func:`check_output`; an existing one unless ``overwrite``) raises at once
    and leaves no job (:func:`wait_run` gives ``None``). ``on_done(job)``: called from a
    helper thread at the end; ``client``: a ``distributed.Client`` instead of the active
    one. With an output, the fitted workflow is saved (atomically, as the output) to
    :func:`workflow_path` of it, which ``model.run_output`` names once the Run finished.
    Refused while a background Suggest counts (its steps are about to replace these)."""
    if suggesting(model):
        raise IRSError(SUGGEST_COUNTING)
    output = check_output(model, output, overwrite)
    wf, dataset, previous = model.to_workflow(), model.dataset, model.reuse_run
    nodes = wf.to_config()["nodes"]

    def work() -> Workflow:
        wf.fit(dataset, reuse=previous)  # only the steps edited since are computed
        if output is not None:
            wf.transform(dataset).to_parquet(output, overwrite=overwrite)
            wf.save(workflow_path(output), overwrite=overwrite,  # where the output went
                    storage_options=dataset.storage_options)
        return wf

    # without a client, the local scheduler's tasks are counted: progress either way
    job = Job(work, name="builder-run", client=client, track_local=True).start()
    model.last_job = job
    ended = model.run_ended = threading.Event()
    threading.Thread(target=_finished,
                     args=(model, job, wf, (nodes, output, previous), on_done, ended),
                     name="irs-builder-run-done", daemon=True).start()
    return job


def _finished(model: ModelState, job: Job, wf: Workflow, planned: tuple[Any, str | None],
              on_done: Callable[[Job], None] | None, ended: threading.Event) -> None:
    """At the end of ``job`` (waited for here, in a helper thread): keep its fitted
    workflow for the next Run (and as the model's, while its steps are unchanged) and
    where it wrote it, check its lost lookups, compare it with the workflow it refit from
    (:mod:`._run_diff`), call ``on_done``, then set ``ended``. ``planned``: the Run's nodes,
    output and that previous workflow."""
    nodes, output, previous = planned
    job.exception()  # waits for the end
    try:
        if job.status == "finished":
            model.reuse_run = wf
            model.run_output = (output, workflow_path(output)) if output else None
            model.oov_warnings = check_oov(wf, model.vocab_choices,
                                           max_loss=model.vocab_max_loss,
                                           measured=model.measured)
            model.run_diff = run_diff(previous, wf)
        if job.status == "finished" and model.to_workflow().to_config()["nodes"] == nodes:
            model.fitted_workflow = wf
        if on_done is not None:
            on_done(job)
    finally:
        ended.set()


def check_output(model: ModelState, output: Any, overwrite: bool = False) -> str | None:
    """Every output check of :func:`run` now, before any work (exists, is, contains or
    is inside the input, not writable); the "last run" is this one from now on."""
    if not running(model):
        model.last_job, model.run_ended = None, None
        model.oov_warnings = []
        model.run_diff = None
    if output is None:
        return None
    if not os.fspath(output).strip():
        raise ParameterError("The output path is empty: type a directory to write "
                             "to, or run without an output (fit only).")
    output = os.fspath(output)
    if storage.is_remote(output):  # object stores: exists, is/contains the input
        storage.check_remote_destination(output, {"the input": model.dataset.input_files()})
        if storage.exists(output, model.dataset.storage_options) and not overwrite:
            raise DatasetError(f"Output {output!r} already exists; choose another path "
                               "or allow replacing it (overwrite=True, the 'replace' box).")
    else:
        check_local_output(output, model.dataset.input_files(), overwrite=overwrite)
    saved = workflow_path(output)
    if not overwrite and storage.exists(saved, model.dataset.storage_options):
        raise DatasetError(f"The folder {saved!r}, where Run saves the fitted workflow beside "
                           "its output, already exists; choose another output or allow "
                           "replacing it (overwrite=True, the 'replace' box).")
    return output


def running(model: ModelState) -> bool:
    """Whether the last :func:`run` (or its ``on_done``) has not ended yet."""
    ended = model.run_ended
    return ended is not None and not ended.is_set()


def wait_run(model: ModelState, timeout: float | None = None) -> Job | None:
    """Wait until the last :func:`run` has ended and its ``on_done`` has returned; its job,
    or ``None`` when it was refused before anything ran (an existing output, say)."""
    ended = model.run_ended
    if ended is not None and not ended.wait(timeout):
        raise TimeoutError(f"The run did not end within {timeout} s; its status is "
                           f"{model.last_job.status!r}.")
    return model.last_job


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


__all__ = ["WORKFLOW_SUFFIX", "PreviewResult", "check_output", "default_output",
           "input_columns", "job_text", "preview", "run", "running", "wait_run",
           "workflow_path"]
