"""Background jobs and per-phase progress of workflow computations: the job layer.

Every Dask computation of a workflow goes through :func:`compute` (one partition:
:func:`compute_partition`), which names it as a *phase* ("fit 1/2", "transform",
"write"). On a distributed client a phase runs as futures that can be cancelled; its
progress (tasks finished out of the phase's tasks) is counted from the scheduler's task
stream while a :class:`Job` runs it or a Monitor watches (``BOARD``). Without a
distributed client it is a plain ``dask.compute``.

A :class:`Job` runs a function (``wf.fit``, ``ds.to_parquet``...) in a background thread,
so the notebook kernel stays free to draw widgets:

>>> job = Job(lambda: sum(range(4)), name="sum").start()
>>> job.result(timeout=10)
6
>>> job.status, job.done()
('finished', True)

This module is the job layer's public face: the phases live in
``runtime._phases``, the jobs in ``runtime._job``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from typing import Any

import dask

from interactive_recsys.runtime._job import Job, JobCancelledError, submit
from interactive_recsys.runtime._phases import (
    BOARD,
    Phase,
    ProgressBoard,
    _norm,
    active_client,
    current_job,
    name_task_group,
    operator_label,
    task_group,
)

__all__ = ["ClusterLostError", "Job", "JobCancelledError", "Phase", "ProgressBoard",
           "active_client", "background_job", "compute", "compute_partition", "current_job",
           "lost_message", "name_task_group", "operator_label", "scheduler_lost", "submit",
           "task_group"]

#: Seconds between checks for cancellation and progress while a phase runs.
POLL_SECONDS = 0.1


class ClusterLostError(JobCancelledError):
    """The Dask scheduler went away (killed, crashed, unreachable) while a phase ran: the
    client lost its connection and Dask cancelled every task. The message names the
    scheduler, the phase and what to do; the command line prints it as one line."""


#: The reason Dask gives a future it cancels because the scheduler connection was lost.
LOST_REASON = "scheduler-connection-lost"


def scheduler_lost(client: Any, err: BaseException, futures: list = ()) -> bool:
    """Whether ``err`` (raised while ``futures`` ran on ``client``) means that the scheduler
    was lost, rather than a failing task or a client closed on purpose."""
    from distributed.comm import CommClosedError

    if getattr(err, "reason", None) == LOST_REASON or isinstance(err, CommClosedError):
        return True
    if any(getattr(getattr(getattr(f, "_state", None), "exception", None), "reason", None)
           == LOST_REASON for f in futures):
        return True
    return isinstance(err, CancelledError) and client.status == "connecting"


def lost_message(client: Any, phase: str) -> str:
    """What :class:`ClusterLostError` says: the scheduler, the phase, the fix."""
    address = getattr(getattr(client, "scheduler", None), "address", None) or "(unknown)"
    return (f"The Dask scheduler at {address} was lost while phase {phase!r} ran: it was "
            "stopped, crashed (often out of memory) or cannot be reached, and Dask cancelled "
            "the work. Outputs are published whole or not at all, so none is half-written "
            "(`irs clean PATH` removes a killed write's temporaries). Check the scheduler "
            "(its log, its memory), start it or a new cluster, and run the command again.")


def compute(*collections: Any, phase: str, reads: Sequence[str] = ()) -> tuple[Any, ...]:
    """``dask.compute(*collections)`` as a named, cancellable, progress-reporting phase;
    ``reads``: the input columns it reads, when the caller knows them (:attr:`Phase.reads`)."""
    client = active_client()
    if client is None:
        job = current_job()
        if job is not None and job.track_local:
            return _compute_local(collections, phase, job, tuple(reads))
        return dask.compute(*collections, **_local_pool(collections))
    job = current_job()
    tracked = job is not None or BOARD.watchers > 0
    keys: frozenset = frozenset()
    if tracked:
        from dask.base import collections_to_expr

        # lowered as client.compute lowers it (a DataFrame's abstract expressions, such as a
        # Shuffle, have no tasks of their own until then)
        graph = collections_to_expr(list(collections), optimize_graph=True).optimize() \
            .__dask_graph__()
        keys = frozenset(_norm(k) for k in graph)
    record = BOARD.begin(Phase(phase, len(keys), job=job.name if job else "",
                               run=job.run_id if job else 0, reads=tuple(reads)))
    record.keys = keys
    if job is not None:
        job._phases.append(record)
        job._check_cancelled(client)
    stream_from = time.time() - 5
    if tracked:  # the scheduler's task-stream plugin records only once installed
        client.get_task_stream(count=1)
    futures = client.compute(list(collections))
    try:
        stream_from = _wait(client, futures, record, job, tracked, stream_from)
        results = client.gather(futures)
        if tracked:
            _observe(client, record, stream_from)
    except BaseException as err:
        lost = not (job is not None and job.cancel_requested) and \
            scheduler_lost(client, err, futures)
        _cancel(client, futures)
        # the phase ends as the job does: cancelled when the job raises JobCancelledError
        # (whatever error the closing client gave the futures first), else with the error
        cancelled = isinstance(err, CancelledError) or (
            job is not None and (job.cancel_requested or client.status != "running"))
        BOARD.end(record, "cancelled" if cancelled else "error")
        if lost:
            raise ClusterLostError(lost_message(client, record.name)) from err
        if job is not None and cancelled:
            raise JobCancelledError(job._cancel_message(client)) from err
        raise
    BOARD.end(record, "finished")
    return tuple(results)


def compute_partition(ddf: Any, index: int, *, phase: str,
                      columns: Sequence[str] | None = None) -> Any:
    """Partition ``index`` of the Dask DataFrame ``ddf`` (only ``columns``, if given) as one
    frame, computed as the phase ``phase`` of :func:`compute` (cancellable, on the board).

    The one-partition collection is optimized before it is handed to the scheduler, so that
    the client gets a lowered expression (dask-expr's abstract ones, such as the ``Shuffle``
    of a groupby or of ``to_parquet(shuffle="full")``, have no tasks of their own until then)
    with only what that partition needs.

    >>> import dask.dataframe as dd, pandas as pd
    >>> ddf = dd.from_pandas(pd.DataFrame({"a": range(6), "b": range(6)}), npartitions=3)
    >>> compute_partition(ddf, 1, phase="read", columns=["a"])["a"].tolist()
    [2, 3]
    """
    part = ddf.get_partition(index)
    if columns is not None:
        part = part[list(columns)]
    frame, = compute(part.optimize(), phase=phase)
    return frame


def _compute_local(collections: tuple[Any, ...], phase: str, job: Job,
                   reads: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """``dask.compute`` on the local scheduler as a phase of ``job`` whose tasks are counted
    as they finish (a Dask local callback), so that a job run without a cluster reports
    progress too (:attr:`Job.track_local`). ``job.cancel()`` stops it before the next task
    starts (the tasks already running end, their results unused)."""
    from dask.callbacks import Callback

    if job.cancel_requested:
        raise JobCancelledError(job._cancel_message(None))
    record = BOARD.begin(Phase(phase, 0, job=job.name, run=job.run_id, reads=reads))
    job._phases.append(record)

    class _Count(Callback):
        def _start_state(self, dsk: Any, state: Any) -> None:
            record.keys = record.keys | frozenset(_norm(k) for k in dsk)
            record.total, record._group_totals = len(record.keys), None

        def _pretask(self, key: Any, dsk: Any, state: Any) -> None:
            if job.cancel_requested:  # raised in the scheduler's loop: no task starts after
                raise JobCancelledError(job._cancel_message(None))

        def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker: Any) -> None:
            record.observe([key])

    try:
        with _Count():
            results = dask.compute(*collections, **_local_pool(collections))
    except BaseException as err:
        BOARD.end(record, "cancelled" if isinstance(err, JobCancelledError) else "error")
        raise
    BOARD.end(record, "finished")
    return results


def _local_pool(collections: tuple[Any, ...]) -> dict[str, int]:
    """Off the main thread (a background job, the Studio), Dask's threaded scheduler starts
    a pool of ``ThreadPoolExecutor``'s default size (CPU count + 4, 6 threads on 2 CPUs)
    where the main thread gets one of ``num_workers`` (the CPU count): ask for that size."""
    import dask.threaded
    from dask.base import get_scheduler
    from dask.system import CPU_COUNT

    if threading.current_thread() is threading.main_thread() or \
            get_scheduler(collections=list(collections)) is not dask.threaded.get:
        return {}
    return {"num_workers": dask.config.get("num_workers", None) or CPU_COUNT}


def _wait(client: Any, futures: list, record: Phase, job: Job | None, tracked: bool,
          stream_from: float) -> float:
    """Until every future is done: return as soon as the last one ends
    (:func:`_all_done_event`), and meanwhile check for cancellation and count progress
    every :data:`POLL_SECONDS`. Waits on one event rather than ``distributed.wait(timeout=)``:
    each wait that times out leaves one pending asyncio task per unfinished future on the
    client's loop until that future ends (10 waits a second on 400 write tasks grew the
    process hosting the scheduler by 4 MB a second, 10 GB in a 100M-row write)."""
    all_done = _all_done_event(client, futures)
    while not all_done.wait(POLL_SECONDS):
        if job is not None:
            job._check_cancelled(client)
        elif client.status != "running":
            raise CancelledError(f"The Dask client closed while phase {record.name!r} ran.")
        if tracked and BOARD.watchers == 0:  # a watching Monitor counts tasks itself
            stream_from = _observe(client, record, stream_from)
    return stream_from


def _all_done_event(client: Any, futures: list) -> threading.Event:
    """An event set once every future of ``futures`` is done (finished, failed, cancelled):
    one coroutine on the client's loop waits for them in turn, as ``Future.add_done_callback``
    waits for one (a callback per future would be a task per future)."""
    event = threading.Event()

    async def wait_all() -> None:
        try:
            for future in futures:
                while future.status == "pending":
                    await future._state.wait()
        finally:
            event.set()

    client.loop.add_callback(wait_all)
    return event


#: Seconds each read of the task stream goes back before the last stop it saw: a worker's
#: report can reach the scheduler after a later-stopping task's (two workers, a busy machine),
#: and a read from the last stop alone would miss it for good.
STREAM_OVERLAP_S = 5.0


def _observe(client: Any, record: Phase, since: float) -> float:
    """Count the phase's tasks finished since ``since`` (scheduler time); the new ``since``."""
    records = client.get_task_stream(start=since)
    record.observe([r["key"] for r in records], [_compute_seconds(r) for r in records])
    stops = [s["stop"] for r in records for s in r["startstops"]]
    return max(max(stops, default=since) - STREAM_OVERLAP_S, since)


def _compute_seconds(record: dict[str, Any]) -> float:
    """Seconds a task-stream record spent computing (transfers and disk I/O left out)."""
    return sum(s["stop"] - s["start"] for s in record["startstops"] if s["action"] == "compute")


def _cancel(client: Any, futures: list) -> None:
    try:
        if client.status == "running":
            client.cancel(futures)
    except Exception:  # the client may be closing already
        pass


def background_job(name: str | Callable[..., str]) -> Callable[[Callable[..., Any]], Any]:
    """Give a function or method the ``background=True`` choice: called so, it returns at once
    a :class:`Job` named ``name`` (or ``name(*args, **kwargs)``) that runs the call; else it
    runs the call and returns its result. The function declares ``background: bool = False``
    itself (for its signature and docs) and never sees it set.

    >>> @background_job("add")
    ... def add(a, b, *, background=False):
    ...     return a + b
    >>> add(1, 2)
    3
    """
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, background: bool = False, **kwargs: Any) -> Any:
            if background:
                label = name(*args, **kwargs) if callable(name) else name
                return submit(lambda: fn(*args, **kwargs), name=label)
            return fn(*args, **kwargs)
        return run
    return decorate
