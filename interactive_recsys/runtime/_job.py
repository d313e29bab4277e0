"""Background jobs: a function (``wf.fit``, ``ds.to_parquet``...) run in a thread on the
active Dask client, so the notebook kernel stays free to draw widgets; its computations are
the phases :func:`~interactive_recsys.runtime.jobs.compute` records, and cancelling it stops
their tasks.

>>> job = Job(lambda: sum(range(4)), name="sum").start()
>>> job.result(timeout=10)
6
>>> job.status, job.done()
('finished', True)
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.runtime._phases import _CURRENT_JOB, Phase, active_client

#: What a cancelled job left: writes publish atomically, so nothing of it was published.
UNCHANGED = ("it published nothing, and whatever its output path held before (an earlier "
             "output, or nothing) is unchanged.")

__all__ = ["Job", "JobCancelledError", "submit"]

class JobCancelledError(IRSError, CancelledError):
    """A job was cancelled (by ``job.cancel()`` or because its cluster was closed)."""


_RUN_IDS = itertools.count(1)


class Job:
    """A function running in a background thread on the active Dask client.

    Returned by ``wf.fit(ds, background=True)``, ``wf.fit_transform(..., background=True)``
    and ``ds.to_parquet(..., background=True)``. Like a ``concurrent.futures.Future``:
    :meth:`result`, ``done``, :meth:`exception`, :meth:`cancel`; plus ``status`` and
    :attr:`progress` per phase. Cancelling (or closing the client while it runs) stops its
    Dask tasks; outputs are written atomically, so a cancelled write leaves nothing behind.
    """

    def __init__(self, fn: Callable[[], Any], *, name: str = "job",
                 client: Any = None, track_local: bool = False) -> None:
        self.name = name
        #: this job among those of this process, from 1: jobs of one name (every Studio Run
        #: is ``builder-run``) are told apart by it
        self.run_id = next(_RUN_IDS)
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
        """Why the job stopped, and that its destination kept what it held."""
        if self._cancel.is_set():
            return (f"Job {self.name!r} was cancelled by job.cancel(); {UNCHANGED}")
        return (f"Job {self.name!r} was cancelled because its Dask client/cluster closed "
                f"(client status {client.status!r}); {UNCHANGED} Start a cluster again and "
                "re-run.")

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
