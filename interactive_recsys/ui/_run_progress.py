"""Progress of a run in words: one time left for the whole Run, then, per phase and per
operator, the rows done and rows per second (plain Python; the builder's status line and the
dashboard header only show the text).

The time left is the whole Run's (:mod:`~interactive_recsys.runtime._eta`: the phase
under way from the rows it passed, the phases to come from the bytes they read), said once,
on the first line; the lines under it carry rows, % and rows/s, never a second time left.

A phase (``fit 1/2``, ``transform``, ``write``: see
:class:`~interactive_recsys.runtime.jobs.Phase`) passes over the whole dataset, so its
share of partitions passed maps to rows: ``share * rows``. While it runs that number is an
estimate (partitions are not all the same size): the text says "about". Without a row
count (a dataset whose size is not known without reading it) the same is said in tasks.

Phases are the dicts of ``Phase.to_dict()`` (``name``, ``status``, ``done``, ``total``,
``fraction``, ``started``, ``stopped``, ``operators``, ``reads``); ``now`` is a
``time.time()``.

>>> fit = {"name": "fit 1/1", "status": "finished", "done": 10, "total": 10,
...        "fraction": 1.0, "started": 100.0, "stopped": 104.0, "operators": []}
>>> write = {"name": "write", "status": "running", "done": 10, "total": 40,
...          "fraction": 0.25, "started": 104.0, "stopped": None,
...          "operators": [{"label": "write parquet", "done": 10, "total": 40}]}
>>> lines = progress_lines([fit, write], rows=8_000_000, now=106.0,
...                        plan=RunPlan(writes=True))
>>> for line in lines: print(line)
Run: about 6 s left (phase 2 of 2: write)
write: about 2.0M of 8.0M rows (25%), 1.0M rows/s
now: write parquet 25%, 1.0M rows/s
done: fit 1/1 (8.0M rows in 4.0 s, 2.0M rows/s)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from interactive_recsys.runtime._eta import (
    MIN_SECONDS,
    MIN_SHARE,
    RunPlan,
    estimate,
    passed,
    plan_of,
)


def count_text(n: float) -> str:
    """A row count or rate in a few characters: ``950``, ``12.3k``, ``8.0M``, ``1.2B``
    (one decimal under 10: ``0.4``).

    >>> count_text(950), count_text(12_345), count_text(8_000_000), count_text(1.2e9)
    ('950', '12.3k', '8.0M', '1.2B')
    >>> count_text(0.4), count_text(2.0)
    ('0.4', '2')
    """
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.1f}" if abs(n) < 10 and n != round(n) else f"{n:.0f}"


def duration_text(seconds: float) -> str:
    """``'7 s'``, ``'2 min 05 s'``, ``'1 h 03 min'``.

    >>> duration_text(6.6), duration_text(125), duration_text(3780)
    ('7 s', '2 min 05 s', '1 h 03 min')
    """
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@dataclass(frozen=True)
class Rate:
    """Progress of one phase or operator: units done of ``total`` (rows, or tasks when the
    row count is unknown), per second, and the seconds left (``None``: not known yet)."""

    done: float
    total: float
    unit: str
    per_second: float | None
    left: float | None
    estimated: bool  # done (and so the rate) derived from the share of tasks

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


def rate(done_tasks: int, total_tasks: int, seconds: float, rows: int | None,
         finished: bool = False) -> Rate:
    """Rows (or tasks) done, per second and left after ``seconds``; ``finished``: all done.

    >>> r = rate(30, 120, 10.0, rows=8_000_000)
    >>> r.done, r.per_second, r.left, r.estimated
    (2000000.0, 200000.0, 30.0, True)
    >>> rate(30, 120, 10.0, rows=None).unit, rate(0, 120, 10.0, rows=100).left
    ('tasks', None)
    >>> rate(3, 1200, 1.0, rows=1_200_000).left  # 0.25% done: too early for a time left
    """
    share = 1.0 if finished else done_tasks / max(total_tasks, 1)
    total, unit = (float(rows), "rows") if rows is not None else (float(total_tasks), "tasks")
    done = share * total
    per_second = done / seconds if seconds >= MIN_SECONDS and done > 0 else None
    left = None if finished or not per_second or share < MIN_SHARE \
        else (total - done) / per_second
    return Rate(done, total, unit, per_second, 0.0 if finished else left,
                estimated=not finished and rows is not None)


def phase_rate(phase: dict[str, Any], rows: int | None, now: float) -> Rate:
    """The :class:`Rate` of a phase dict, on its own clock (from its start): in rows, the
    share of its partitions passed (:func:`~interactive_recsys.runtime._eta.passed`), in
    tasks without a row count."""
    seconds = (phase.get("stopped") or now) - phase["started"]
    finished = phase["status"] == "finished"
    if rows is None:
        return rate(phase["done"], phase["total"], seconds, None, finished=finished)
    scale = 1_000_000  # the share as a count of millionths: rate() takes counts
    return rate(round(passed(phase) * scale), scale, seconds, rows, finished=finished)


def left_text(seconds: float) -> str:
    """``'about 36 s left'``; under a second: ``'less than a second left'``.

    >>> left_text(36.2), left_text(0.3)
    ('about 36 s left', 'less than a second left')
    """
    return "less than a second left" if seconds < 0.5 else \
        f"about {duration_text(seconds)} left"


def _per_second(r: Rate) -> str:
    return f"{count_text(r.per_second)} {r.unit}/s" if r.per_second else ""


#: Phases that pass over no rows, with what they do instead.
NO_DATA_PHASES = {"refinish": "vocabularies cut again from the saved counts, no data read"}


def phase_text(phase: dict[str, Any], rows: int | None, now: float) -> str:
    """One phase in words: done of total and rate (or its end); no time left (the whole
    Run's is said once, by :func:`run_text`). A phase of :data:`NO_DATA_PHASES` says what
    it does instead of rows.

    >>> phase_text({"name": "refinish", "status": "finished", "done": 4, "total": 4,
    ...             "started": 0.0, "stopped": 0.5}, rows=2_000_000, now=1.0)
    'refinish: vocabularies cut again from the saved counts, no data read, in 0.5 s'
    """
    seconds = (phase.get("stopped") or now) - phase["started"]
    name = phase["name"]
    if name in NO_DATA_PHASES:
        done = f"in {seconds:.1f} s" if phase["status"] == "finished" else (
            f"{phase['done']} of {phase['total']} tasks" if phase["status"] == "running"
            else f"{phase['status']} after {seconds:.1f} s")
        return f"{name}: {NO_DATA_PHASES[name]}, {done}"
    r = phase_rate(phase, rows, now)
    if phase["status"] == "finished":
        speed = _per_second(r)
        return f"{name}: {count_text(r.total)} {r.unit} in {seconds:.1f} s" + \
            (f", {speed}" if speed else "")
    if phase["status"] != "running":
        return f"{name}: {phase['status']} after {seconds:.1f} s"
    about = "about " if r.estimated else ""
    text = f"{name}: {about}{count_text(r.done)} of {count_text(r.total)} {r.unit} " \
           f"({r.fraction:.0%})"
    if r.per_second is None:
        return text + ", measuring the rate..."
    return text + f", {_per_second(r)}"


def operator_texts(phase: dict[str, Any], rows: int | None, now: float) -> list[str]:
    """The operators of a running phase that are under way (some tasks done, some not), each
    with its share done and rate since the phase began (no time left of its own)."""
    if phase["status"] != "running":
        return []
    seconds = now - phase["started"]
    out = []
    for op in phase.get("operators", []):
        if not 0 < op["done"] < op["total"]:
            continue
        r = rate(op["done"], op["total"], seconds, rows)
        text = f"{op['label']} {r.fraction:.0%}"
        if r.per_second:
            text += f", {_per_second(r)}"
        out.append(text)
    return out


def run_text(phases: list[dict[str, Any]], rows: int | None, now: float,
             plan: RunPlan | None = None) -> str:
    """The whole Run in words: its time left, where it is, what comes next; the Studio's
    status line and the dashboard header both show it after their "running". ``plan``: what
    the Run will compute (``None``: the plan its job told,
    :func:`~interactive_recsys.runtime._eta.plan_of`, else what the phase names say).

    >>> fit = {"name": "fit 1/2", "status": "running", "done": 1, "total": 4,
    ...        "started": 0.0, "stopped": None, "job": "j", "operators": []}
    >>> run_text([fit], 1000, 0.2, RunPlan(writes=True))
    'estimating the time left... (phase 1 of 3: fit 1/2; next: fit 2/2, write)'
    >>> run_text([fit], 1000, 3.0, RunPlan())  # 9 s for fit 1/2, 12 s for fit 2/2
    'about 21 s left (phase 1 of 2: fit 1/2; next: fit 2/2)'
    >>> run_text([], None, 0.0)
    'starting, estimating the time left...'
    """
    if plan is None:
        plan = plan_of(phases[-1].get("job") if phases else None) or RunPlan()
    est = estimate(phases, now, plan, rows)
    if est.current is None:
        return "starting, estimating the time left..."
    where = est.current if est.running else f"{est.current} done"
    if est.position is not None:
        where = f"phase {est.position[0]} of {est.position[1]}: {where}"
    if est.to_come:
        where += "; next: " + ", ".join(est.to_come)
    if est.left is None:
        return f"estimating the time left... ({where})"
    if not est.running and not est.to_come:  # the last phase known ended: saving, say
        return f"finishing ({where})"
    return f"{left_text(est.left)} ({where})"


def _phase_lines(phases: list[dict[str, Any]], rows: int | None, now: float,
                 left: str | None = None) -> list[str]:
    """The running phase (``left`` appended to it), its operators under way, then the
    phases already done."""
    running = [p for p in phases if p["status"] == "running"]
    ended = [p for p in phases if p["status"] != "running"]
    lines = [phase_text(p, rows, now) + (f", {left}" if left else "") for p in running]
    for p in running:
        ops = operator_texts(p, rows, now)
        if ops:
            lines.append("now: " + "; ".join(ops))
    if ended:
        lines.append("done: " + "; ".join(
            phase_text(p, rows, now).replace(": ", " (", 1) + ")" for p in ended))
    return lines


def progress_lines(phases: list[dict[str, Any]], rows: int | None, now: float,
                   plan: RunPlan | None = None) -> list[str]:
    """What a run is doing: ``Run: `` and the whole Run's time left (:func:`run_text`), then
    the running phase, its operators under way, and the phases already done. Empty before
    any phase."""
    if not phases:
        return []
    return ["Run: " + run_text(phases, rows, now, plan), *_phase_lines(phases, rows, now)]


def pass_lines(phases: list[dict[str, Any]], rows: int | None, now: float) -> list[str]:
    """A job of one pass over the data (Suggest's counting): its running phase with rows,
    rate and the time left (the phase's is the job's: one figure), then its operators under
    way. Empty before any phase.

    >>> count = {"name": "count values", "status": "running", "done": 3, "total": 10,
    ...          "started": 0.0, "stopped": None, "operators": []}
    >>> pass_lines([count], 6000, 5.0)
    ['count values: about 1.8k of 6.0k rows (30%), 360 rows/s, about 12 s left']
    """
    if not phases:
        return []
    est = estimate(phases, now, RunPlan(), rows)
    left = left_text(est.left) if est.left is not None else "estimating the time left..."
    return _phase_lines(phases, rows, now, left if est.running else None)


def header_text(phases: list[dict[str, Any]], rows: int | None, now: float,
                plan: RunPlan | None = None) -> str:
    """The dashboard header's words for a running job: the same line as the first of the
    Studio's status line (:func:`run_text`), for the same phases and clock.

    >>> header_text([{"name": "fit 1/1", "status": "finished", "done": 4, "total": 4,
    ...               "fraction": 1.0, "started": 0.0, "stopped": 2.0}], 100, 3.0)
    'finishing (phase 1 of 1: fit 1/1 done)'
    """
    return run_text(phases, rows, now, plan)


def job_alive(name: str) -> bool:
    """Whether a :class:`~interactive_recsys.runtime.jobs.Job` called ``name`` is still
    running: its thread (``irs-job-<name>``) lives until the job's function returns, so
    this holds between two phases of the job too (after ``fit``, before ``write``).

    >>> job_alive("no-such-job")
    False
    """
    thread_name = f"irs-job-{name}"
    return any(t.name == thread_name and t.is_alive() for t in threading.enumerate())


__all__ = ["Rate", "RunPlan", "count_text", "duration_text", "header_text", "job_alive",
           "left_text", "operator_texts", "pass_lines", "phase_rate", "phase_text",
           "progress_lines", "rate", "run_text"]
