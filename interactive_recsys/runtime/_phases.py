"""The phases of workflow computations, newest last, and who watches them.

A :class:`Phase` is one Dask computation of a workflow ("fit 1/2", "transform", "write"):
its tasks and how many have finished, per task group, each group named after the
workflow's operator (:func:`operator_label`). :data:`BOARD` holds the phases of this
process for the Monitor and the dashboard; :func:`~interactive_recsys.runtime.jobs.compute`
records them.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BOARD", "PHASE_LABELS", "Phase", "ProgressBoard", "active_client", "current_job",
           "name_task_group", "operator_label", "task_group"]


#: The job whose thread runs the current code (set by :class:`~._job.Job`), so that the
#: phases it computes are recorded as its own.
_CURRENT_JOB: contextvars.ContextVar[Any] = contextvars.ContextVar("irs_job", default=None)


def active_client() -> Any:
    """The ``distributed.Client`` that ``dask.compute`` would use now, or ``None``."""
    from dask.base import get_scheduler

    try:
        scheduler = get_scheduler()
    except RuntimeError:  # dask asks for "dask.distributed" but every client is closed
        return None
    owner = getattr(scheduler, "__self__", None)
    return owner if type(owner).__name__ == "Client" else None


def current_job() -> Any:
    """The job whose thread runs this code, if any."""
    return _CURRENT_JOB.get()


@dataclass
class Phase:
    """One Dask computation of a workflow: its tasks and how many have finished."""

    name: str
    total: int
    job: str = ""
    #: the ``run_id`` of the job that computed it (0: none)
    run: int = 0
    status: str = "running"  # running | finished | cancelled | error
    started: float = field(default_factory=time.time)
    stopped: float | None = None
    #: tasks of this phase seen finishing in the task stream (the rest were already in memory)
    observed: int = 0
    #: the input columns the phase reads (a fit phase tells them): what a time left for the
    #: whole run weighs its bytes by (``runtime/_eta.py``)
    reads: tuple[str, ...] = ()
    keys: frozenset = field(default=frozenset(), repr=False)
    _seen: set = field(default_factory=set, repr=False)
    #: per task group (key prefix): tasks seen finishing and compute seconds spent
    _group_done: dict = field(default_factory=dict, repr=False)
    _group_seconds: dict = field(default_factory=dict, repr=False)
    #: per task group: when its first task was seen finishing (``time.time()``)
    _group_first: dict = field(default_factory=dict, repr=False)
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
                self._group_first.setdefault(group, time.time())
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
                 "seconds": self._group_seconds.get(g, 0.0),
                 "first": self._group_first.get(g)} for g in order]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "job": self.job, "run": self.run, "status": self.status,
                "done": self.done,
                "total": self.total, "fraction": self.fraction, "started": self.started,
                "stopped": self.stopped, "seconds": self.seconds, "reads": list(self.reads),
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
    told when a phase ends (:meth:`~interactive_recsys.runtime.jobs.ProgressBoard.on_end`: a Monitor
    draws the final state at once)."""

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
        """Mark ``phase`` ended with ``status`` and tell the
        :meth:`~interactive_recsys.runtime.jobs.ProgressBoard.on_end` callbacks.

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
