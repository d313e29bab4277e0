"""The time left for a whole Run, from the rows its phases passed and the bytes they read
(numbers only: the Studio's status line, the dashboard header and the command line's bars
word them).

A Studio Run is a sequence of phases: ``fit 1/N`` .. ``fit N/N`` (fewer, or none, when steps
are reused from the previous Run; N is in their names), then ``write`` when it writes an
output (:class:`RunPlan`). Its time left is the sum of:

- the phase under way: the rows it has still to pass at the pace it passed the others,
  ``elapsed * (1 - share) / share``, where ``share`` is the share of the data's partitions
  whose pass is complete (its per-partition task group: ``fit``, ``write_part``,
  ``transform``, see :data:`PASS_GROUPS`). Not the share of all tasks: the reads of a
  phase finish first and its reductions last, so tasks run ahead of rows;
- each fit phase still to come: as long as the fit phases measured so far, on average
  (each passes over every row);
- the write still to come: the previous Run's write on the same data, per row, when there
  was one; else the fit phases' seconds per byte they read times the bytes the write reads
  (parquet footers give each column's bytes): a refit of one small column says nothing of a
  write of forty.

Until a phase has passed 2% of its partitions (:data:`MIN_SHARE`) and run half a second,
nothing is estimated (:attr:`Estimate.left` is ``None``), rather than a number minutes off.

>>> fit = {"name": "fit 1/1", "status": "finished", "done": 10, "total": 10,
...        "started": 100.0, "stopped": 104.0, "reads": ["c", "n"], "operators": []}
>>> write = {"name": "write", "status": "running", "done": 10, "total": 40, "started": 104.0,
...          "stopped": None, "operators": [{"group": "write_part", "done": 8, "total": 32}]}
>>> estimate([fit, write], 106.0, RunPlan(writes=True)).left  # 8 of 32 parts in 2 s
6.0
>>> estimate([fit], 104.5, RunPlan(writes=True, write_seconds_per_row=1e-6), rows=8_000_000)
Estimate(left=8.0, current='fit 1/1', position=(1, 2), to_come=('write',), running=False)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Seconds a phase must have run before its pace (and so a time left) is measured.
MIN_SECONDS = 0.5
#: Share of a phase's partitions whose pass must be complete before its pace is measured:
#: the first ones done are few, and a time left drawn from them is minutes off.
MIN_SHARE = 0.02
#: The task groups whose one task per partition completes that partition's pass, by phase
#: kind: a fit's partial statistics, a write's parquet part, a transform.
PASS_GROUPS = ("write_part", "fit", "transform", "read-transform", "read-getitem-transform")

#: A write reads its columns and writes about as many bytes again: per byte it reads, twice
#: a fit's time (8M rows of the kaggle profile on 2 workers: fit 5.5 s, write 7.5 s plus
#: 1.5 s to publish, for 39 of the 40 columns read by both).
WRITE_FACTOR = 2.0

_FIT = re.compile(r"fit (\d+)/(\d+)$")


@dataclass(frozen=True)
class RunPlan:
    """What a Run will compute, as known when it starts: whether a ``write`` follows the
    fit phases, the input columns that write reads, each input column's bytes
    (``column_bytes``; ``None``: not known) and the previous Run's write on the same data,
    in seconds per row (``None``: none measured)."""

    writes: bool = False
    write_reads: tuple[str, ...] = ()
    column_bytes: Mapping[str, float] | None = None
    write_seconds_per_row: float | None = None


@dataclass(frozen=True)
class Estimate:
    """The whole Run's time left (``left``, seconds; ``None``: not enough measured yet), the
    phase under way or last ended (``current``, ``running``), its place among the phases
    expected (``position``: ``(k, n)``, ``None`` while their number is unknown) and the
    phases still to come."""

    left: float | None
    current: str | None
    position: tuple[int, int] | None
    to_come: tuple[str, ...] = field(default=())
    running: bool = False


def passed(phase: dict[str, Any]) -> float:
    """The share of the rows a phase has passed: its per-partition task group's share done
    (:data:`PASS_GROUPS`), else (no such group) its share of tasks; 1 once finished.

    >>> ops = [{"group": "read-parquet", "done": 8, "total": 8},
    ...        {"group": "fit", "done": 2, "total": 8},
    ...        {"group": "categorify", "done": 20, "total": 30}]
    >>> passed({"status": "running", "done": 30, "total": 46, "operators": ops})
    0.25
    """
    if phase["status"] == "finished":
        return 1.0
    group = _pass_group(phase)
    if group is not None:
        return group["done"] / group["total"]
    return phase["done"] / max(phase["total"], 1)


def elapsed(phase: dict[str, Any], now: float) -> float:
    """Seconds the phase has run (until it stopped)."""
    return (phase.get("stopped") or now) - phase["started"]


def own_left(phase: dict[str, Any], now: float) -> float | None:
    """A running phase's seconds left at its own pace; ``None`` until it has run
    :data:`MIN_SECONDS` and passed :data:`MIN_SHARE` of its rows.

    >>> own_left({"status": "running", "done": 1, "total": 4, "started": 0.0}, 3.0)
    9.0
    """
    if phase["status"] == "finished":
        return 0.0
    share, seconds = passed(phase), elapsed(phase, now)
    if seconds < MIN_SECONDS or share < MIN_SHARE:
        return None
    group = _pass_group(phase)
    if group is None or "first" not in group:  # no per-partition pass known: its tasks
        return seconds * (1 - share) / share
    return _steady_left(group, now)


def _pass_group(phase: dict[str, Any]) -> dict[str, Any] | None:
    """The phase's per-partition task group (:data:`PASS_GROUPS`), if it has one."""
    groups = {o.get("group"): o for o in phase.get("operators", ())}
    for name in PASS_GROUPS:
        group = groups.get(name)
        if group and group["total"]:
            return group
    return None


def _steady_left(group: dict[str, Any], now: float) -> float | None:
    """Seconds left at the pace a phase's partitions pass (its pass ``group``) once the
    first has: the first waits for the graph to reach the workers and their first reads, and
    counted in, that start-up makes a short phase's time left several times too long.
    ``None`` until :data:`MIN_SECONDS` after the first and three partitions passed.

    >>> _steady_left({"group": "fit", "done": 5, "total": 32, "first": 11.0}, 13.0)
    13.5
    """
    first, done = group.get("first"), group["done"]
    if first is None or done < 3 or now - first < MIN_SECONDS:
        return None
    return (now - first) / (done - 1) * (group["total"] - done)


def latest_run(phases: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The phases of the latest run among ``phases`` of one job name (every Studio Run is
    job ``builder-run``; a board keeps the earlier ones): those of the last phase's ``run``
    (its job's ``run_id``); for phases without one, a run's phase names are
    unique, so a name seen again, a ``fit 1/N`` or a fit after a write begins the next run.

    >>> names = ["fit 1/2", "fit 2/2", "write", "fit 1/1", "write", "write"]
    >>> [p["name"] for p in latest_run([{"name": n} for n in names])]
    ['write']
    >>> [p["name"] for p in latest_run([{"name": n} for n in names[:4]])]
    ['fit 1/1']
    """
    if phases and phases[-1].get("run"):  # recorded by a Job: its own phases
        return [p for p in phases if p.get("run") == phases[-1]["run"]]
    start, seen = 0, set()
    for i, p in enumerate(phases):
        fit = _FIT.match(p["name"])
        if p["name"] in seen or (fit and (fit.group(1) == "1" or "write" in seen)):
            start, seen = i, set()
        seen.add(p["name"])
    return list(phases[start:])


def expected(phases: Sequence[dict[str, Any]], plan: RunPlan) -> list[str] | None:
    """The names of the Run's phases, in order: its fit phases (their number from the
    first one's name) then ``write``; ``None`` while unknown (no fit and no write began).

    >>> expected([{"name": "fit 1/2"}], RunPlan(writes=True))
    ['fit 1/2', 'fit 2/2', 'write']
    >>> expected([{"name": "write"}], RunPlan(writes=True)), expected([], RunPlan())
    (['write'], None)
    """
    fits = [int(m.group(2)) for p in phases if (m := _FIT.match(p["name"]))]
    wrote = any(p["name"] == "write" for p in phases)
    if not fits and not wrote:
        return None
    n = fits[-1] if fits else 0
    return [f"fit {k}/{n}" for k in range(1, n + 1)] + \
        (["write"] if plan.writes or wrote else [])


def _bytes(columns: Sequence[str], plan: RunPlan) -> float | None:
    """The bytes of ``columns`` (a column the sizes miss, such as a hive folder's, counts
    none); ``None`` when no size is known."""
    sizes = plan.column_bytes
    if sizes is None or not any(c in sizes for c in columns):
        return None
    return float(sum(sizes.get(c, 0) for c in columns))


def _write_cost(fits: list[tuple[dict[str, Any], float]], plan: RunPlan,
                rows: int | None) -> float | None:
    """Seconds a write still to come takes: the previous Run's pace on the same data, else
    the fit phases' seconds per byte read times :data:`WRITE_FACTOR` times the bytes the
    write reads, else (bytes not known) their seconds per column read times the factor
    times its columns, else a mean fit phase."""
    if plan.write_seconds_per_row is not None and rows:
        return plan.write_seconds_per_row * rows
    if not fits:
        return None
    seconds = sum(s for _, s in fits)
    read = [_bytes(p.get("reads") or (), plan) for p, _ in fits]
    known = [r for r in read if r is not None]
    write = _bytes(plan.write_reads, plan)
    if write is not None and len(known) == len(read) and sum(known) > 0:
        return seconds / sum(known) * write * WRITE_FACTOR
    counts = [len(p.get("reads") or ()) for p, _ in fits]
    if plan.write_reads and all(counts):
        return seconds / sum(counts) * len(plan.write_reads) * WRITE_FACTOR
    return seconds / len(fits)


def estimate(phases: Sequence[dict[str, Any]], now: float, plan: RunPlan | None = None,
             rows: int | None = None) -> Estimate:
    """The whole Run's time left after ``phases`` (``Phase.to_dict()``s of one job, oldest
    first: its :func:`latest_run`) at ``now``; ``rows``: the data's row count (for a write
    paced per row)."""
    plan = plan or RunPlan()
    phases = latest_run(phases)
    names = expected(phases, plan)
    latest = {p["name"]: p for p in phases}
    running = [p for p in phases if p["status"] == "running"]
    current = running[-1] if running else (phases[-1] if phases else None)
    if names is None:  # no fit nor write began: nothing to scale the rest by
        left = own_left(current, now) if current is not None and running else None
        return Estimate(left if not plan.writes else None,
                        current["name"] if current else None, None, (), bool(running))
    # each fit phase measured: its whole length (run so far plus its own time left)
    fits: list[tuple[dict[str, Any], float]] = []
    for name in names:
        p = latest.get(name)
        if p is not None and name != "write":
            mine = own_left(p, now)
            if mine is not None:
                fits.append((p, elapsed(p, now) + mine))
    left: float | None = 0.0
    to_come = []
    for name in names:
        p = latest.get(name)
        if p is not None and p["status"] != "running":
            continue  # ended (an error or a cancel ends the Run itself)
        if p is None:
            to_come.append(name)
        if name == "write":
            prior = _write_cost(fits, plan, rows)
        else:
            prior = sum(s for _, s in fits) / len(fits) if fits else None
        if p is not None:  # under way: its own pace, else the rest of what it was expected
            mine = own_left(p, now)  # to take (none once it took longer: wait for its pace)
            if mine is None and prior is not None and prior > elapsed(p, now):
                mine = prior - elapsed(p, now)
            prior = mine
        left = None if left is None or prior is None else left + prior
    for p in running:  # a phase no plan names (a side table, say): its own pace
        if p["name"] not in names:
            mine = own_left(p, now)
            left = None if left is None or mine is None else left + mine
    position = (names.index(current["name"]) + 1, len(names)) \
        if current is not None and current["name"] in names else None
    return Estimate(left, current["name"] if current else None, position, tuple(to_come),
                    bool(running))


# The plans of the Runs that told theirs (:func:`set_plan`), by job name: the dashboard's
# header estimates the same Run the same way as the Studio's status line.
_PLANS: dict[str, RunPlan] = {}
_LOCK = threading.Lock()


def set_plan(job: str, plan: RunPlan) -> None:
    """Tell every screen what the Run of job ``job`` will compute (the latest one wins)."""
    with _LOCK:
        _PLANS[job] = plan


def plan_of(job: str | None) -> RunPlan | None:
    """The plan told for job ``job`` (:func:`set_plan`), or ``None``."""
    with _LOCK:
        return _PLANS.get(job) if job else None


__all__ = ["MIN_SECONDS", "MIN_SHARE", "PASS_GROUPS", "Estimate", "RunPlan", "elapsed",
           "estimate", "expected", "latest_run", "own_left", "passed", "plan_of", "set_plan"]
