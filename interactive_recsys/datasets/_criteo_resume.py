"""What ``irs criteo`` keeps of its work, so that a run killed at any point resumes.

The converter (:func:`._criteo_torchrec.criteo_to_torchrec`) works in the temporary folder of
its output (``.OUT.tmp-HOST-PID-*`` beside ``OUT``, owned by the running process: see
:func:`~interactive_recsys.store._outputs.atomic_directory`). Its work is cut in **units**: a
parsed byte range of a day (labels, sparse ids, raw counts and id counts), a joined day, a
day's dense part, a column's lookup, a mapped chunk. A finished unit is recorded by a marker,
``_staging/units/UNIT.json``, written once the unit's files are written and synced to disk,
through a temporary file renamed into place: a unit killed half-way has no marker and is done
again, never taken as finished. A unit removes the staging files it consumed only after its
marker is written. A marker holds the format version of this code and the unit's **key**,
what it was made from: for a parse, the input file's path, size and modification time, the
byte range and the options that shape its files; for the others, the run's plan.

``_staging/_plan.json`` holds the plan: the input files (path, size, modification time), the
options that shape the output and the format version. After a kill the temporary folder stays
(its writer's lease is the writer's process: once that is gone, the folder is free to take).
The next run to the same output takes it over (:func:`resumable` says which folders qualify)
and

- with the same plan, keeps every unit whose marker is there;
- with another plan (an input file changed, other days, other options, another format
  version), keeps only the parsed ranges whose key is unchanged and whose files are all there,
  and does the rest again.

>>> import tempfile
>>> staging = tempfile.mkdtemp()
>>> ledger = Ledger(staging, {"format": FORMAT_VERSION, "inputs": []})
>>> _ = recorded(len, ledger.marker("unit.a"), {"plan": "p"}, [], "abc")
>>> Ledger(staging, {"format": FORMAT_VERSION, "inputs": []}).kept_result("unit.a", {"plan": "p"})
(True, 3)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FORMAT_VERSION", "Ledger", "Unit", "file_key", "pause_point", "plan_changes",
           "recorded", "resumable", "sync_files", "write_json"]

#: The format of the staging files and markers; a run of another version keeps nothing but
#: parsed ranges of an equal key (and none when the parse's files changed with the version).
FORMAT_VERSION = 1
STAGING = "_staging"
PLAN = "_plan.json"
SUMMARY = "_summary.json"

#: A test hook, not a user option: with ``IRS_CRITEO_TEST_PAUSE=POINT`` in its environment
#: the process stops at that point (:func:`pause_point`), creates the file named by
#: ``IRS_CRITEO_TEST_PAUSED`` and sleeps, for a test to kill its process group there.
PAUSE_ENV = "IRS_CRITEO_TEST_PAUSE"


def pause_point(point: str) -> None:
    """The test hook (see :data:`PAUSE_ENV`): nothing unless the environment names
    ``point``, e.g. ``"parse:day_1.0"``, ``"map:day_0.2"``, ``"publish"``."""
    if os.environ.get(PAUSE_ENV) != point:
        return
    with open(os.environ[PAUSE_ENV + "D"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(3600)


def read_json(path: str) -> Any:
    """The JSON in ``path``, or None if it is missing or not whole."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json(path: str, data: Any, indent: int | None = None,
               scratch: str | None = None) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file (beside it, or in the
    folder ``scratch`` of the same filesystem), synced, renamed."""
    tmp = os.path.join(scratch or os.path.dirname(path), f"{os.path.basename(path)}.tmp-"
                       f"{os.getpid()}-{threading.get_ident()}-{uuid.uuid4().hex[:6]}")
    try:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=indent)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def sync_files(*paths: str) -> None:
    """Flush the written bytes of ``paths`` to disk (before a marker says they are there)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def file_key(path: str) -> dict[str, Any]:
    """What an input file is taken to be: its path, size and modification time."""
    st = os.stat(path)
    return {"path": os.path.abspath(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def resumable(folder: str) -> bool:
    """Whether a killed run's temporary folder holds converter work to take over: a plan in
    its staging, or a finished summary not yet published."""
    if os.path.isfile(os.path.join(folder, STAGING, PLAN)):
        return True
    done = read_json(os.path.join(folder, SUMMARY))
    return isinstance(done, dict) and "made_from" in done


def recorded(fn: Callable[..., Any], marker: str, key: Any, consumed: Sequence[str],
             *args: Any) -> Any:
    """Run a unit (``fn(*args)``, which syncs its own files), then write its marker, then
    remove the staging files it consumed. Its result must be JSON."""
    result = fn(*args)
    write_json(marker, {"version": FORMAT_VERSION, "key": key, "result": result})
    for path in consumed:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    return result


@dataclass
class Unit:
    """One unit of work: its marker's name, its key, the task's arguments, the staging files
    it removes once recorded, and the files its result names, which must all still be there
    for it to be kept from a run of another plan (``files(result)``; None: it never is)."""

    name: str
    key: Any
    args: tuple
    consumed: Sequence[str] = ()
    files: Callable[[Any], Sequence[str]] | None = None


def plan_changes(before: Any, plan: dict[str, Any]) -> list[str]:
    """What differs between the plan of a killed run and this one, in words.

    >>> a = {"format": 1, "inputs": [{"stem": "day_0", "size": 5, "mtime_ns": 1}],
    ...      "options": {"frequency_threshold": 0}}
    >>> b = {"format": 1, "inputs": [{"stem": "day_0", "size": 6, "mtime_ns": 2},
    ...                              {"stem": "day_1", "size": 1, "mtime_ns": 1}],
    ...      "options": {"frequency_threshold": 3}}
    >>> plan_changes(a, b)
    ['day_0 changed (size or modification time)', 'days added: day_1', 'frequency_threshold 0 -> 3']
    """
    if not isinstance(before, dict):
        return ["the killed run's plan cannot be read"]
    out = []
    if before.get("format") != plan.get("format"):
        out.append(f"format version {before.get('format')} -> {plan.get('format')}")
    old = {i.get("stem"): i for i in before.get("inputs", [])}
    new = {i["stem"]: i for i in plan.get("inputs", [])}
    out += [f"{s} changed (size or modification time)" for s in new
            if s in old and old[s] != new[s]]
    if set(new) - set(old):
        out.append("days added: " + ", ".join(s for s in new if s not in old))
    if set(old) - set(new):
        out.append("days dropped: " + ", ".join(str(s) for s in old if s not in new))
    was, now = before.get("options", {}), plan.get("options", {})
    out += [f"{k} {was.get(k)} -> {v}" for k, v in now.items() if was.get(k) != v]
    return out or ["the plan differs"]


class Ledger:
    """The markers of one run's units in ``staging``, and what this run kept and did.

    Made with the run's ``plan``: if the staging holds another plan (or none), the plan is
    replaced and :attr:`changes` says what differs; :attr:`same_plan` is then False."""

    def __init__(self, staging: str, plan: dict[str, Any]) -> None:
        self.plan = json.loads(json.dumps(plan))  # as a marker reads it back: lists, not tuples
        #: the key of the units that depend on the whole plan (all but the parses)
        self.digest = hashlib.sha256(json.dumps(self.plan, sort_keys=True).encode()).hexdigest()
        self.units = os.path.join(staging, "units")
        before = read_json(os.path.join(staging, PLAN))
        self.same_plan = before == self.plan
        self.changes = [] if self.same_plan or before is None else plan_changes(before,
                                                                                 self.plan)
        os.makedirs(self.units, exist_ok=True)
        if not self.same_plan:
            write_json(os.path.join(staging, PLAN), self.plan)
        self.kept: Counter[str] = Counter()
        self.done: Counter[str] = Counter()

    def marker(self, unit: str) -> str:
        return os.path.join(self.units, unit + ".json")

    def kept_result(self, unit: str, key: Any,
                    files: Callable[[Any], Sequence[str]] | None = None) -> tuple[bool, Any]:
        """``(True, result)`` if ``unit`` is recorded with ``key`` (and, when the plan
        changed, the ``files(result)`` are all still there), else ``(False, None)``."""
        record = read_json(self.marker(unit))
        ok = (isinstance(record, dict) and record.get("version") == FORMAT_VERSION
              and record.get("key") == json.loads(json.dumps(key)) and "result" in record)
        if ok and not self.same_plan:
            ok = files is not None and all(os.path.exists(f) for f in files(record["result"]))
        return (True, record["result"]) if ok else (False, None)

    def run(self, phase: str, fn: Callable[..., Any], units: list[Unit],
            run_tasks: Callable[[Callable[..., Any], list[tuple]], list[Any]]) -> list[Any]:
        """The results of ``units``, in order: those recorded, and the others run as tasks
        (``run_tasks(recorded, calls)``), each recorded as it finishes."""
        results: list[Any] = [None] * len(units)
        todo = []
        for i, unit in enumerate(units):
            ok, results[i] = self.kept_result(unit.name, unit.key, unit.files)
            if not ok:
                todo.append(i)
        calls = [(fn, self.marker(units[i].name), units[i].key, list(units[i].consumed),
                  *units[i].args) for i in todo]
        for i, result in zip(todo, run_tasks(recorded, calls) if calls else [], strict=True):
            results[i] = result
        self.kept[phase] += len(units) - len(todo)
        self.done[phase] += len(todo)
        return results

    def counts(self) -> dict[str, dict[str, int]]:
        """Per phase, the units kept from a killed run and the units done by this one."""
        return {p: {"kept": self.kept[p], "done": self.done[p]}
                for p in dict.fromkeys([*self.kept, *self.done])}
