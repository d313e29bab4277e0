"""Background jobs and per-phase progress of workflow computations.

Every Dask computation of a workflow goes through :func:`compute`, which names it as a
*phase* ("fit 1/2", "transform", "write"). On a distributed client a phase runs as
futures that can be cancelled; its progress (tasks finished out of the phase's tasks) is
counted from the scheduler's task stream while a :class:`Job` runs it or a Monitor
watches (:data:`BOARD`). Without a distributed client it is a plain ``dask.compute``.

A :class:`Job` runs a function (``wf.fit``, ``ds.to_parquet``...) in a background thread,
so the notebook kernel stays free to draw widgets:

>>> import pandas as pd
>>> job = Job(lambda: sum(range(4)), name="sum").start()
>>> job.result(timeout=10)
6
>>> job.status, job.done()
('finished', True)
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

import dask

from interactive_recsys.errors import IRSError

#: Seconds between checks for cancellation and progress while a phase runs.
POLL_SECONDS = 0.1

_CURRENT_JOB: contextvars.ContextVar[Job | None] = contextvars.ContextVar("irs_job",
                                                                          default=None)


class JobCancelledError(IRSError, CancelledError):
    """A job was cancelled (by ``job.cancel()`` or because its cluster was closed)."""


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


@dataclass
class Phase:
    """One Dask computation of a workflow: its tasks and how many have finished."""

    name: str
    total: int
    job: str = ""
    status: str = "running"  # running | finished | cancelled | error
    started: float = field(default_factory=time.time)
    stopped: float | None = None
    #: tasks of this phase seen finishing in the task stream (the rest were already in memory)
    observed: int = 0
    keys: frozenset = field(default=frozenset(), repr=False)
    _seen: set = field(default_factory=set, repr=False)
    #: per task group (key prefix): tasks seen finishing and compute seconds spent
    _group_done: dict = field(default_factory=dict, repr=False)
    _group_seconds: dict = field(default_factory=dict, repr=False)
    _group_totals: dict | None = field(default=None, repr=False)

    @property
    def done(self) -> int:
        """Tasks finished (all of them once the phase finished)."""
        return self.total if self.status == "finished" else min(self.observed, self.total)

    @property
    def fraction(self) -> float:
        return 1.0 if self.status == "finished" else self.done / max(self.total, 1)

    @property
    def seconds(self) -> float:
        """Wall time of the phase so far (until it stopped)."""
        return (self.stopped or time.time()) - self.started

    def observe(self, keys: list[Any], seconds: list[float] | None = None) -> None:
        """Count this phase's tasks among finished ``keys`` (and their compute ``seconds``)."""
        for i, key in enumerate(keys):
            key = _norm(key)
            if key not in self.keys:
                continue
            group = task_group(key)
            if key not in self._seen:  # a task read again (overlapping reads) counts once
                self._seen.add(key)
                self._group_done[group] = self._group_done.get(group, 0) + 1
                if seconds is not None:
                    self._group_seconds[group] = self._group_seconds.get(group, 0.0) + seconds[i]
        self.observed = len(self._seen)

    def operators(self) -> list[dict[str, Any]]:
        """Progress per operator: the phase's tasks grouped by key prefix, each named after
        the workflow's operator (:func:`operator_label`), in the order they started running.

        >>> phase = Phase("fit 1/1", total=3, keys=frozenset(
        ...     {"categorify-0-partial-0-ab12cd34", "categorify-0-finalize-ab12cd34",
        ...      "fit-phase1-0-ab12cd34"}))
        >>> phase.observe(["fit-phase1-0-ab12cd34"], seconds=[0.5])
        >>> [(o["label"], o["done"], o["total"], o["seconds"]) for o in phase.operators()]
        [('partial statistics', 1, 1, 0.5), ('Categorify', 0, 2, 0.0)]
        """
        if self._group_totals is None:
            totals: dict[str, int] = {}
            for key in self.keys:
                group = task_group(key)
                totals[group] = totals.get(group, 0) + 1
            self._group_totals = totals
        started = list(self._group_done)  # dicts keep the order groups were first seen
        order = started + sorted(g for g in self._group_totals if g not in self._group_done)
        finished = self.status == "finished"
        return [{"group": g, "label": operator_label(g), "total": self._group_totals[g],
                 "done": self._group_totals[g] if finished else self._group_done.get(g, 0),
                 "seconds": self._group_seconds.get(g, 0.0)} for g in order]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "job": self.job, "status": self.status, "done": self.done,
                "total": self.total, "fraction": self.fraction, "started": self.started,
                "stopped": self.stopped, "seconds": self.seconds,
                "operators": self.operators()}


#: Labels of the task groups that are not operators (the workflow's own phases).
PHASE_LABELS = {"fit": "partial statistics", "transform": "transform",
                "write_part": "write parquet", "read-parquet": "read parquet",
                "read-getitem": "read parquet", "read-getitem-transform": "read + transform",
                "read-transform": "read + transform",
                "shuffle-input": "shuffle input"}


def task_group(key: Any) -> str:
    """The operator or phase a task key belongs to (its prefix), e.g. ``'categorify'``.

    >>> task_group("categorify-1-partial-0-3f2a1b9c")
    'categorify'
    >>> task_group(("transform-5e2a9c3d", 3))
    'transform'
    """
    from dask.utils import key_split

    return key_split(key)


#: Task group -> its label: :data:`PHASE_LABELS`, and every operator class name
#: (``'categorify'`` -> ``'Categorify'``), which the operators register as they are defined
#: (:func:`name_task_group`), so that this layer imports none of them.
_TASK_LABELS: dict[str, str] = {}


def name_task_group(group: str, label: str) -> None:
    """Show the tasks of ``group`` as ``label`` in progress reports (the dashboard, the CLI)."""
    _TASK_LABELS[group] = label


def operator_label(group: str) -> str:
    """The workflow's name for a task group: the operator's class name for an operator's
    tasks, a short description for the workflow's own phases, else the group unchanged.

    >>> operator_label("categorify"), operator_label("write_part"), operator_label("x")
    ('Categorify', 'write parquet', 'x')
    """
    return PHASE_LABELS.get(group) or _TASK_LABELS.get(group, group)


class ProgressBoard:
    """The phases of this process, newest last (bounded), who watches them, and who is
    told when a phase ends (:meth:`on_end`: a Monitor draws the final state at once)."""

    def __init__(self, maxlen: int = 200) -> None:
        self._phases: deque[Phase] = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self.watchers = 0
        self._on_end: list[Callable[[Phase], Any]] = []

    def begin(self, phase: Phase) -> Phase:
        with self._lock:
            self._phases.append(phase)
        return phase

    def phases(self, since: float = 0.0) -> list[Phase]:
        """Phases started at or after ``since`` (a ``time.time()``)."""
        with self._lock:
            return [p for p in self._phases if p.started >= since]

    def watch(self) -> None:
        with self._lock:
            self.watchers += 1

    def unwatch(self) -> None:
        with self._lock:
            self.watchers = max(0, self.watchers - 1)

    def on_end(self, callback: Callable[[Phase], Any]) -> None:
        """Call ``callback(phase)`` when a phase ends (finished, error or cancelled), from
        the thread that ran it, before the computation returns; its errors are ignored."""
        with self._lock:
            self._on_end.append(callback)

    def remove_on_end(self, callback: Callable[[Phase], Any]) -> None:
        with self._lock:
            if callback in self._on_end:
                self._on_end.remove(callback)

    def end(self, phase: Phase, status: str) -> None:
        """Mark ``phase`` ended with ``status`` and tell the :meth:`on_end` callbacks.

        >>> board = ProgressBoard()
        >>> ended = []
        >>> board.on_end(lambda p: ended.append((p.name, p.status, p.fraction)))
        >>> board.end(board.begin(Phase("write", total=8, observed=7)), "finished")
        >>> ended
        [('write', 'finished', 1.0)]
        """
        phase.status, phase.stopped = status, time.time()
        with self._lock:
            callbacks = list(self._on_end)
        for callback in callbacks:
            try:
                callback(phase)
            except Exception:  # a listener must not fail the computation
                pass


#: Phases of every workflow computation in this process (read by Monitor).
BOARD = ProgressBoard()


def _norm(key: Any) -> Any:
    """Task keys as hashable values (msgpack turns tuples into lists)."""
    return tuple(_norm(k) for k in key) if isinstance(key, list | tuple) else key


def active_client() -> Any:
    """The ``distributed.Client`` that ``dask.compute`` would use now, or ``None``."""
    from dask.base import get_scheduler

    try:
        scheduler = get_scheduler()
    except RuntimeError:  # dask asks for "dask.distributed" but every client is closed
        return None
    owner = getattr(scheduler, "__self__", None)
    return owner if type(owner).__name__ == "Client" else None


def current_job() -> Job | None:
    """The job whose thread runs this code, if any."""
    return _CURRENT_JOB.get()


def compute(*collections: Any, phase: str) -> tuple[Any, ...]:
    """``dask.compute(*collections)`` as a named, cancellable, progress-reporting phase."""
    client = active_client()
    if client is None:
        job = current_job()
        if job is not None and job.track_local:
            return _compute_local(collections, phase, job)
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
    record = BOARD.begin(Phase(phase, len(keys), job=job.name if job else ""))
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
        BOARD.end(record, "cancelled" if isinstance(err, CancelledError) else "error")
        if lost:
            raise ClusterLostError(lost_message(client, record.name)) from err
        if job is not None and (job.cancel_requested or isinstance(err, CancelledError)
                                or client.status != "running"):
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


def _compute_local(collections: tuple[Any, ...], phase: str, job: Job) -> tuple[Any, ...]:
    """``dask.compute`` on the local scheduler as a phase of ``job`` whose tasks are counted
    as they finish (a Dask local callback), so that a job run without a cluster reports
    progress too (:attr:`Job.track_local`)."""
    from dask.callbacks import Callback

    record = BOARD.begin(Phase(phase, 0, job=job.name))
    job._phases.append(record)

    class _Count(Callback):
        def _start_state(self, dsk: Any, state: Any) -> None:
            record.keys = record.keys | frozenset(_norm(k) for k in dsk)
            record.total, record._group_totals = len(record.keys), None

        def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker: Any) -> None:
            record.observe([key])

    try:
        with _Count():
            results = dask.compute(*collections, **_local_pool(collections))
    except BaseException:
        BOARD.end(record, "error")
        raise
    BOARD.end(record, "finished")
    return results


def _local_pool(collections: tuple[Any, ...]) -> dict[str, int]:
    """Off the main thread (a background job, the Studio), Dask's threaded scheduler starts
    a pool of ``ThreadPoolExecutor``'s default size (CPU count + 4, 6 threads on 2 CPUs)
    where the main thread gets one of ``num_workers`` (the CPU count): ask for that size."""
    import threading

    import dask.threaded
    from dask.base import get_scheduler
    from dask.system import CPU_COUNT

    if threading.current_thread() is threading.main_thread() or \
            get_scheduler(collections=list(collections)) is not dask.threaded.get:
        return {}
    return {"num_workers": dask.config.get("num_workers", None) or CPU_COUNT}


def _wait(client: Any, futures: list, record: Phase, job: Job | None, tracked: bool,
          stream_from: float) -> float:
    """Until every future is done: return as soon as the last one ends (a done callback sets
    an event), and meanwhile check for cancellation and count progress every
    :data:`POLL_SECONDS`. Waits on the event rather than ``distributed.wait(timeout=)``:
    each wait that times out leaves one pending asyncio task per unfinished future on the
    client's loop until that future ends (10 waits a second on 400 write tasks grew the
    process hosting the scheduler by 4 MB a second, 10 GB in a 100M-row write); a done
    callback is one task per future, once."""
    all_done = _all_done_event(futures)
    while not all_done.wait(POLL_SECONDS):
        if job is not None:
            job._check_cancelled(client)
        elif client.status != "running":
            raise CancelledError(f"The Dask client closed while phase {record.name!r} ran.")
        if tracked and BOARD.watchers == 0:  # a watching Monitor counts tasks itself
            stream_from = _observe(client, record, stream_from)
    return stream_from


def _all_done_event(futures: list) -> threading.Event:
    """An event set once every future of ``futures`` is done (finished, failed, cancelled)."""
    event, lock = threading.Event(), threading.Lock()
    left = [len(futures)]

    def one_done(_: Any) -> None:
        with lock:
            left[0] -= 1
            if left[0] <= 0:
                event.set()

    if not futures:
        event.set()
    for future in futures:
        future.add_done_callback(one_done)
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


class Job:
    """A function running in a background thread on the active Dask client.

    Returned by ``wf.fit(ds, background=True)``, ``wf.fit_transform(..., background=True)``
    and ``ds.to_parquet(..., background=True)``. Like a ``concurrent.futures.Future``:
    :meth:`result`, :meth:`done`, :meth:`exception`, :meth:`cancel`; plus :attr:`status` and
    :attr:`progress` per phase. Cancelling (or closing the client while it runs) stops its
    Dask tasks; outputs are written atomically, so a cancelled write leaves nothing behind.
    """

    def __init__(self, fn: Callable[[], Any], *, name: str = "job",
                 client: Any = None, track_local: bool = False) -> None:
        self.name = name
        #: without a client, count the local scheduler's tasks per phase (the CLI's bars)
        self.track_local = track_local
        self._fn = fn
        self._client = client
        self._phases: list[Phase] = []
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        self.status = "pending"
        self.started: float | None = None
        self.stopped: float | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Job:
        """Start the thread (once); returns ``self``."""
        if self._thread is None:
            if self._client is None:
                self._client = active_client()
            self._thread = threading.Thread(target=self._run, name=f"irs-job-{self.name}",
                                            daemon=True)
            self.status, self.started = "running", time.time()
            self._thread.start()
        return self

    def _run(self) -> None:
        _CURRENT_JOB.set(self)
        try:
            if self._client is not None:
                with self._client.as_current():
                    self._value = self._fn()
            else:
                self._value = self._fn()
            self.status = "finished"
        except JobCancelledError as err:
            self._error, self.status = err, "cancelled"
        except BaseException as err:
            self._error = err
            self.status = "cancelled" if self._cancel.is_set() else "error"
        finally:
            self.stopped = time.time()
            self._finished.set()

    # ---- cancellation ---------------------------------------------------------------------
    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> bool:
        """Ask the job to stop; its running Dask tasks are cancelled within about 0.1 s.

        Returns ``False`` if it had already finished, ``True`` otherwise.
        """
        if self._finished.is_set():
            return False
        self._cancel.set()
        return True

    def _check_cancelled(self, client: Any) -> None:
        if self._cancel.is_set() or client.status != "running":
            raise JobCancelledError(self._cancel_message(client))

    def _cancel_message(self, client: Any) -> str:
        if self._cancel.is_set():
            return f"Job {self.name!r} was cancelled by job.cancel(); it wrote no output."
        return (f"Job {self.name!r} was cancelled because its Dask client/cluster closed "
                f"(client status {client.status!r}); it wrote no output. Start a cluster "
                "again and re-run.")

    # ---- results --------------------------------------------------------------------------
    def done(self) -> bool:
        return self._finished.is_set()

    def result(self, timeout: float | None = None) -> Any:
        """The function's return value; waits up to ``timeout`` seconds (``None``: forever).

        Raises ``TimeoutError`` if not done in time, :class:`JobCancelledError` if
        cancelled, and the function's own exception if it failed.
        """
        if not self._finished.wait(timeout):
            raise TimeoutError(f"Job {self.name!r} did not finish within {timeout} s "
                               f"(status {self.status!r}); call result() again later or "
                               "job.cancel().")
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the job ended with (``None`` if it succeeded)."""
        if not self._finished.wait(timeout):
            raise TimeoutError(f"Job {self.name!r} did not finish within {timeout} s.")
        return self._error

    @property
    def phases(self) -> list[Phase]:
        return list(self._phases)

    @property
    def progress(self) -> dict[str, float]:
        """Fraction of tasks done per phase, in the order the phases started."""
        return {p.name: p.fraction for p in self._phases}

    def __repr__(self) -> str:
        phases = ", ".join(f"{p.name} {p.fraction:.0%}" for p in self._phases)
        return f"<Job {self.name!r}: {self.status}{'; ' + phases if phases else ''}>"


def submit(fn: Callable[[], Any], *, name: str) -> Job:
    """Start ``fn`` as a :class:`Job` on the active client."""
    return Job(fn, name=name).start()


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
