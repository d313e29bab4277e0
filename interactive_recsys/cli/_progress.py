"""Progress bars of the command line: one tqdm bar per phase of a job, on stderr.

:func:`run_with_bars` runs a function as a :class:`~.runtime.jobs.Job` (on the active Dask
client, or the local scheduler with its tasks counted) and draws each phase it computes --
``count values``, ``fit 1/2``, ``write``, ... -- as a bar of rows: the phase's share of tasks
done times the rows of the data, the rows per second since the phase began, and its stages
(the operators whose tasks run, e.g. ``Categorify``, ``write parquet``).

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
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from tqdm import tqdm

if TYPE_CHECKING:
    from interactive_recsys.runtime.jobs import Phase

BAR_FORMAT = ("{desc}: {percentage:3.0f}%|{bar:20}| {n_fmt}/{total_fmt} rows "
              "[{elapsed}<{remaining}{postfix}]")


def _stages(phase: Phase) -> str:
    """The stages running now (all of them once the phase ended)."""
    ops = phase.operators()
    if phase.status == "running":
        ops = [o for o in ops if 0 < o["done"] < o["total"]] or \
            [o for o in ops if o["done"]][-1:]
    return ", ".join(dict.fromkeys(o["label"] for o in ops)) or "starting"


def _draw(bar: tqdm, phase: Phase, rows: int) -> None:
    done = round(phase.fraction * rows)
    seconds = max(phase.seconds, 1e-9)
    bar.set_postfix_str(f"{done / seconds:,.0f} rows/s; {_stages(phase)}", refresh=False)
    if done > bar.n:
        bar.update(done - bar.n)
    bar.refresh()


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
        for phase in job.phases:
            key = id(phase)
            if key not in bars:
                bars[key] = (tqdm(total=rows or max(phase.total, 1), desc=f"{name}: {phase.name}",
                                  file=file, disable=quiet, bar_format=BAR_FORMAT,
                                  leave=True), phase)
            bar, _ = bars[key]
            if not bar.disable:
                _draw(bar, phase, rows or max(phase.total, 1))
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
