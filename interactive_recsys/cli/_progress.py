"""Progress bars of the command line: one tqdm bar per phase of a job, on stderr.

:func:`run_with_bars` runs a function as a :class:`~.runtime.jobs.Job` (on the active Dask
client, or the local scheduler with its tasks counted) and draws each phase it computes --
``count values``, ``fit 1/2``, ``write``, ... -- as a bar of rows: the phase's share of
partitions passed times the rows of the data, the rows per second since the phase began, its
stages (the operators whose tasks run, e.g. ``Categorify``, ``write parquet``) and, on the
running bar only, the whole job's time left (the Studio's estimate,
:func:`~interactive_recsys.runtime._eta.estimate`: one time left on the screen, not one
per bar).

>>> import io, pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify())
>>> err = io.StringIO()
>>> _ = run_with_bars(lambda: wf.fit(pd.DataFrame({"c": ["a", "b"]})), name="fit", rows=2,
...                   file=err)
>>> "fit 1/1" in err.getvalue() and "rows/s" in err.getvalue()
True
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from tqdm import tqdm

from interactive_recsys.runtime._eta import estimate, passed
from interactive_recsys.ui._run_progress import left_text

if TYPE_CHECKING:
    from interactive_recsys.runtime.jobs import Phase

BAR_FORMAT = ("{desc}: {percentage:3.0f}%|{bar:20}| {n_fmt}/{total_fmt} rows "
              "[{elapsed}{postfix}]")


def _stages(phase: Phase) -> str:
    """The stages running now (all of them once the phase ended)."""
    ops = phase.operators()
    if phase.status == "running":
        ops = [o for o in ops if 0 < o["done"] < o["total"]] or \
            [o for o in ops if o["done"]][-1:]
    return ", ".join(dict.fromkeys(o["label"] for o in ops)) or "starting"


def _draw(bar: tqdm, phase: Phase, rows: int, left: str = "") -> None:
    """The bar of ``phase``: rows passed, rows/s, stages and (``left``) the job's time left."""
    done = round(passed(phase.to_dict()) * rows)
    seconds = max(phase.seconds, 1e-9)
    postfix = f"{done / seconds:,.0f} rows/s; {_stages(phase)}" + (f"; {left}" if left else "")
    bar.set_postfix_str(postfix, refresh=False)
    if done > bar.n:
        bar.update(done - bar.n)
    bar.refresh()


def job_left(phases: list[Phase], rows: int | None, now: float) -> str:
    """The whole job's time left, as the running bar says it: ``about 12 s left (phase 1 of
    2)``, or ``estimating the time left...`` until its pace is measured.

    >>> from interactive_recsys.runtime.jobs import Phase
    >>> job_left([Phase("fit 1/2", total=4, observed=1, started=0.0)], 400, 3.0)
    'about 21 s left (phase 1 of 2)'
    """
    est = estimate([p.to_dict() for p in phases], now, rows=rows)
    text = "estimating the time left..." if est.left is None else left_text(est.left)
    return text + (f" (phase {est.position[0]} of {est.position[1]})" if est.position else "")


def run_with_bars(fn: Callable[[], Any], *, name: str, rows: int | None,
                  quiet: bool = False, client: Any = None, file: IO[str] | None = None,
                  poll: float = 0.25) -> Any:
    """``fn()`` as a job with a bar per phase (``rows``: the rows each phase passes over;
    unknown: counted in tasks); its result, or its exception."""
    file = file if file is not None else sys.stderr
    from interactive_recsys.runtime.jobs import (  # lazy: Dask (not for --local)
        Job,
    )

    job = Job(fn, name=name, client=client, track_local=True).start()
    bars: dict[int, tuple[tqdm, Phase]] = {}

    def draw() -> None:
        left = job_left(job.phases, rows, time.time())
        for phase in job.phases:
            key = id(phase)
            if key not in bars:
                bars[key] = (tqdm(total=rows or max(phase.total, 1), desc=f"{name}: {phase.name}",
                                  file=file, disable=quiet, bar_format=BAR_FORMAT,
                                  leave=True), phase)
            bar, _ = bars[key]
            if not bar.disable:  # the time left on the running bar only
                _draw(bar, phase, rows or max(phase.total, 1),
                      left if phase.status == "running" else "")
            if phase.status != "running" and not getattr(bar, "_irs_closed", False):
                bar._irs_closed = True
                bar.close()

    try:
        while not job.done():
            draw()
            job._finished.wait(poll)
        draw()
    except KeyboardInterrupt:
        job.cancel()
        raise
    finally:
        for bar, _ in bars.values():
            bar.close()
    return job.result()
