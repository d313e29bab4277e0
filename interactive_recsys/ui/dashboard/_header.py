"""The dashboard's header line: its state, the latest job's state and the cluster's size,
as text drawn from a :class:`~interactive_recsys.runtime.monitor.Monitor` (no widget).

>>> class Client:
...     status = "running"
...     def scheduler_info(self, n_workers=-1):
...         return {"workers": {"tcp://a": {}, "tcp://b": {}}}
>>> class Monitor:
...     client, samples, gpu_status, interval_ms, started = Client(), [], "no GPU", 500, 100.0
...     def progress(self):
...         return [{"job": "j1", "name": "fit", "status": "finished", "stopped": 103.5}]
>>> cluster_summary(Monitor())
'2 workers, no GPU, every 500 ms'
>>> job_state(Monitor())
" · <b class='irs-dashboard-finished'>finished</b> at 3.5 s"
>>> "<i>live</i>" in status_html("live", Monitor())
True
"""

from __future__ import annotations

import html
import re
from typing import Any


def status_html(state: str, monitor: Any) -> str:
    """The header's text on one line: the state first, the cluster's size last (what a
    narrow view clips); the whole line is its tooltip."""
    text = (f"<b>Cluster</b> · <i>{state}</i>{job_state(monitor)} · "
            f"{html.escape(cluster_summary(monitor))}")
    plain = html.escape(html.unescape(re.sub(r"<[^>]+>", "", text)), quote=True)
    return (f'<div title="{plain}" style="white-space:nowrap;overflow:hidden;'
            f'text-overflow:ellipsis;line-height:28px">{text}</div>')


def job_state(monitor: Any) -> str:
    """`` · finished (name, N s)`` once the latest job's phases have all ended (or
    running / failed), on the monitor's clock; empty before any phase, and for a job
    that ended before the monitor started."""
    phases = monitor.progress()
    if not phases:
        return ""
    last = phases[-1]
    job = [p for p in phases if p["job"] == last["job"]] if last["job"] else [last]
    if any(p["status"] == "running" for p in job):
        return f" · <b>running</b> ({html.escape(last['name'])})"
    stopped = max(p["stopped"] or 0 for p in job) - monitor.started
    if stopped < 0:  # a job that ended before this dashboard started is not its news
        return ""
    failed = [p for p in job if p["status"] != "finished"]
    word = f"{failed[0]['status']} in {failed[0]['name']}" if failed else "finished"
    return (f" · <b class='irs-dashboard-{'failed' if failed else 'finished'}'>{word}</b>"
            f" at {stopped:.1f} s")


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


__all__ = ["cluster_summary", "job_state", "status_html"]
