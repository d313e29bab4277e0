"""The dashboard's Log: one line when a phase of a run starts and one when it ends (with
its rows, time and rate, or how it failed), then the errors of the monitor's callbacks.
Plain Python over :meth:`Monitor.progress` dicts; the dashboard appends the lines.

>>> log = RunLog()
>>> fit = {"job": "j", "name": "fit 1/1", "status": "running", "done": 1, "total": 4,
...        "fraction": 0.25, "started": 0.0, "stopped": None, "operators": []}
>>> [line[9:] for line in log.new_lines([fit], rows=8_000_000, now=1.0)]
['fit 1/1 started']
>>> log.new_lines([fit], rows=8_000_000, now=2.0)
[]
>>> done = {**fit, "status": "finished", "done": 4, "fraction": 1.0, "stopped": 4.0}
>>> [line[9:] for line in log.new_lines([done], rows=8_000_000, now=5.0)]
['fit 1/1 finished: 8.0M rows in 4.0 s, 2.0M rows/s']
"""

from __future__ import annotations

import time
from typing import Any

from interactive_recsys.ui._run_progress import phase_text


class RunLog:
    """Which phase starts and ends were logged already, and the lines for the new ones."""

    def __init__(self) -> None:
        self._started: set[tuple[Any, ...]] = set()
        self._ended: set[tuple[Any, ...]] = set()

    def new_lines(self, phases: list[dict[str, Any]], rows: int | None,
                  now: float | None = None) -> list[str]:
        """``HH:MM:SS <phase> started`` and ``HH:MM:SS <phase> finished: ...`` (or
        ``error after N s``) for each start and end not logged yet, in time order."""
        now = time.time() if now is None else now
        events = []
        for phase in phases:
            key = (phase.get("job"), phase["name"], phase["started"])
            if key not in self._started:
                self._started.add(key)
                events.append((phase["started"], f"{phase['name']} started"))
            if phase["status"] != "running" and key not in self._ended:
                self._ended.add(key)
                name, _, words = phase_text(phase, rows, now).partition(": ")
                events.append((phase.get("stopped") or now, f"{name} {phase['status']}" +
                               (f": {words}" if phase["status"] == "finished" else
                                f" {words.removeprefix(phase['status'] + ' ')}")))
        return [f"{time.strftime('%H:%M:%S', time.localtime(at))} {text}"
                for at, text in sorted(events, key=lambda e: e[0])]


__all__ = ["RunLog"]
