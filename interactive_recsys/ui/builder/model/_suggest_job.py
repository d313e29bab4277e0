"""Suggest as a background job: the counting pass over every row runs in a
:class:`~interactive_recsys.runtime.jobs.Job` (``"builder-suggest"``), so the kernel stays
free; its phase (``"count values"``) reports progress as a Run's do, and ``job.cancel()``
stops its Dask tasks and changes nothing.

Functions over a ``BuilderModel`` (its methods :meth:`start_suggest`, :attr:`suggesting`
and :meth:`wait_suggest` forward here); they read and set the state its ``__init__``
declares. Plain Python, no widgets. ``model.suggest()`` is the blocking call.

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> m = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, None, 3.0]}))
>>> job = m.start_suggest(max_loss=0.02)
>>> m.wait_suggest(60) is job, job.status
(True, 'finished')
>>> [[s.op for s in b.steps] for b in job.result()], m.measured["c"].distinct
([['Categorify'], ['FillMissing', 'Clip', 'Normalize']], 2)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from interactive_recsys.runtime.jobs import Job
from interactive_recsys.ui.builder.model._suggest import apply_suggest, check_budgets, check_idle

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState

#: The name of a background Suggest's job (the dashboard shows its phase under it).
JOB_NAME = "builder-suggest"


def start_suggest(
    model: ModelState,
    max_loss: float | None = None,
    memory_budget: int | str | None = None,
    *,
    client: Any = None,
    on_done: Callable[[Job], None] | None = None,
) -> Job:
    """Start :meth:`suggest` as a background :class:`~interactive_recsys.runtime.jobs.Job`
    on ``client`` (None: the active Dask client, else the local scheduler, whose tasks are
    counted too) and return it at once: its result is the suggested branches.

    Refused at once (nothing starts) while another Suggest counts or a Run goes on, and
    for a budget it cannot use. Nothing of the model changes before the counting ends;
    ``job.cancel()`` meanwhile stops the counting's Dask tasks and leaves the steps, the
    counts and the vocabulary choices as they were. ``on_done(job)``: called from a helper
    thread at the end (finished, failed or cancelled); :func:`wait_suggest` waits for it."""
    check_idle(model)
    check_budgets(max_loss, memory_budget)
    model.columns_by_role("categorical")  # the profile's sample read here, not in the job
    job = Job(
        lambda: apply_suggest(model, max_loss, memory_budget),
        name=JOB_NAME,
        client=client,
        track_local=True,
    )
    ended = threading.Event()
    model.suggest_job, model.suggest_ended = job, ended
    try:
        job.start()
    except BaseException:
        ended.set()
        raise
    threading.Thread(
        target=_finished, args=(job, on_done, ended), name="irs-builder-suggest-done", daemon=True
    ).start()
    return job


def _finished(job: Job, on_done: Callable[[Job], None] | None, ended: threading.Event) -> None:
    """At the end of ``job`` (waited for here): call ``on_done``, then set ``ended``."""
    job.exception()  # waits for the end
    try:
        if on_done is not None:
            on_done(job)
    finally:
        ended.set()


def wait_suggest(model: ModelState, timeout: float | None = None) -> Job | None:
    """Wait until the last background Suggest has ended and its ``on_done`` has returned;
    its job (``None``: none was started)."""
    ended = model.suggest_ended
    if ended is not None and not ended.wait(timeout):
        raise TimeoutError(
            f"Suggest did not end within {timeout} s; its job is "
            f"{model.suggest_job!r} (model.suggest_job.cancel() stops it)."
        )
    return model.suggest_job


__all__ = ["JOB_NAME", "start_suggest", "wait_suggest"]
