"""The dashboard's header line: its state, the latest job's state and the cluster's size,
as text drawn from a :class:`~interactive_recsys.runtime.monitor.Monitor` (no widget).

>>> class Client:
...     status = "running"
...     def scheduler_info(self, n_workers=-1):
...         return {"workers": {"tcp://a": {}, "tcp://b": {}}}
>>> class Monitor:
...     client, samples, gpu_status, interval_ms, started = Client(), [], "no GPU", 500, 100.0
...     def progress(self):
...         return [{"job": "j1", "name": "fit", "status": "finished", "started": 101.0,
...                  "stopped": 103.5}]
>>> cluster_summary(Monitor())
'2 workers, no GPU, every 500 ms'
>>> job_state(Monitor())
" · <b class='irs-dashboard-finished'>finished</b> in 2.5 s"

While a job runs, the header gives the whole Run's time left, the same words as the first
line of the Studio's status line (:func:`~interactive_recsys.ui._run_progress.header_text`,
with the dataset's row count, ``rows``), and between two phases of a job it says
"running", never "finished" (see :func:`~interactive_recsys.ui._run_progress.job_alive`).
>>> "<i>live</i>" in status_html("live", Monitor())
True
"""

from __future__ import annotations

import html
import re
import time
from typing import Any

from interactive_recsys.runtime._eta import latest_run
from interactive_recsys.ui._run_progress import header_text, job_alive


def status_html(state: str, monitor: Any, rows: int | None = None) -> str:
    """The header's text: the state first, the cluster's size last; it wraps in a narrow
    view rather than clip, and the whole text is its tooltip. ``rows``: the rows each phase
    of the watched run passes over (``None``: progress in tasks)."""
    text = (f"<b>Cluster</b> · <i>{state}</i>{job_state(monitor, rows)} · "
            f"{html.escape(cluster_summary(monitor))}")
    plain = html.escape(html.unescape(re.sub(r"<[^>]+>", "", text)), quote=True)
    return (f'<div title="{plain}" style="white-space:normal;overflow-wrap:anywhere;'
            f'line-height:20px;padding:4px 0">{text}</div>')


def job_state(monitor: Any, rows: int | None = None, now: float | None = None) -> str:
    """`` · finished in N s`` once the latest job has ended (its thread too, not only its
    phases so far), `` · running · `` with the whole Run's time left before,
    `` · error in <phase> after N s``; N from the job's first phase's start to its last
    phase's end; empty before any phase, and for a job that ended before the monitor
    started."""
    phases = monitor.progress()
    if not phases:
        return ""
    last = phases[-1]
    # the latest run of the latest job: every Studio Run is "builder-run", told apart by run
    job = latest_run([p for p in phases if p["job"] == last["job"]]) if last["job"] \
        else [last]
    failed = [p for p in job if p["status"] not in ("finished", "running")]
    if any(p["status"] == "running" for p in job) or (
            not failed and last["job"] and job_alive(last["job"])):
        words = header_text(job, rows, time.time() if now is None else now)
        return f" · <b class='irs-dashboard-running'>running</b> · {html.escape(words)}"
    stopped = max(p["stopped"] or 0 for p in job)
    if stopped < monitor.started:  # a job that ended before this dashboard started
        return ""
    seconds = stopped - min(p["started"] for p in job)
    word = f"{failed[0]['status']} in {failed[0]['name']}" if failed else "finished"
    return (f" · <b class='irs-dashboard-{'failed' if failed else 'finished'}'>{word}</b>"
            f" {'after' if failed else 'in'} {seconds:.1f} s")


def cluster_summary(monitor: Any) -> str:
    """``N workers, <GPU status>, every M ms``: the size of the watched cluster."""
    if monitor.samples:
        n = len(monitor.samples[-1]["workers"])
    else:
        try:
            n = len(monitor.client.scheduler_info(n_workers=-1)["workers"])
        except Exception:
            n = 0
    return (f"{n} worker{'s' if n != 1 else ''}, {monitor.gpu_status}, every "
            f"{monitor.interval_ms} ms")


def page_html(layout: Any, title: str, summary: str, phases: str) -> str:
    """A standalone HTML page (BokehJS inline: opens offline) of the Bokeh ``layout``, under
    ``title``, the date, the cluster's ``summary`` and the ``phases`` (HTML)."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    text = file_html(layout, resources=INLINE, title=title)
    header = (f"<h2>{html.escape(title)}</h2><p class='irs-report-meta'>"
              f"{html.escape(time.strftime('%Y-%m-%d %H:%M:%S %Z'))} · "
              f"{html.escape(summary)}</p>"
              f"<h3>Progress</h3>{phases or '<p>no workflow phase ran</p>'}")
    return text.replace("<body>", f"<body>{header}", 1)


def running(phases: list[dict[str, Any]]) -> bool:
    """Whether a phase runs, or the latest phase's job has more to run.

    >>> running([{"job": "no-such-job", "status": "finished"}]), running([])
    (False, False)
    """
    if any(p["status"] == "running" for p in phases):
        return True
    return bool(phases and phases[-1]["job"] and job_alive(phases[-1]["job"]))


def run_start(phases: list[dict[str, Any]], started: float) -> float:
    """When the latest run (the job of the latest phase) began, in seconds after
    ``started`` (the monitor's start): 0 before any run, and for a run that began earlier.

    >>> run_start([{"job": "a", "started": 95.0}, {"job": "b", "started": 130.0},
    ...            {"job": "b", "started": 140.0}], started=100.0)
    30.0
    """
    if not phases:
        return 0.0
    job = phases[-1]["job"]
    began = min(p["started"] for p in phases if p["job"] == job) if job else \
        phases[-1]["started"]
    return max(0.0, began - started)


__all__ = ["cluster_summary", "job_state", "page_html", "run_start", "running", "status_html"]
