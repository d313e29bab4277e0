"""Autosave of the pipeline built by clicking: one JSON file beside the notebook.

Every edit of the builder's steps schedules a write of :func:`pipeline_record` (the
branches, each operator as its class name and non-default parameters, the dataset path and
the output path) to :func:`autosave_path`; an :class:`Autosaver` writes the latest record
once edits pause (:data:`DEBOUNCE_SECONDS`), atomically (a temporary file renamed over the
old one: a reader sees the old file or the new one whole, never a part). JSON only.

:func:`read_autosave` reads it back for the restore offer; a file that is not an autosave
of this library (broken JSON, another format, a newer version) raises
:class:`AutosaveError` with a one-line message naming the file. Plain Python, no widgets.

>>> import os, tempfile
>>> from interactive_recsys.ui.builder._branches import Branch, Step
>>> path = os.path.join(tempfile.mkdtemp(), ".nb.irs-pipeline.json")
>>> record = pipeline_record([Branch(["c"], steps=[Step("Categorify", {"freq_threshold": 2})])],
...                          dataset="data/", output="data-processed")
>>> write_autosave(path, record)
>>> saved = read_autosave(path)
>>> saved.branches[0].steps, saved.steps, saved.dataset
([Step(op='Categorify', params={'freq_threshold': 2})], 1, 'data/')
>>> _ = open(path, "w").write("{not json")
>>> read_autosave(path)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
interactive_recsys.ui.builder._autosave.AutosaveError: The autosave file '...' is not ...
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.ops._base import Operator
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.ui.builder._branches import Branch, Step

#: The ``format`` field of an autosave file, and the version this library writes and reads.
FORMAT_NAME, FORMAT_VERSION = "interactive-recsys-pipeline-autosave", 1
#: Seconds without an edit before the pending autosave is written.
DEBOUNCE_SECONDS = 1.0
#: A larger file is not an autosave (they are a few kilobytes).
MAX_BYTES = 4 << 20
SUFFIX = ".irs-pipeline.json"

__all__ = ["Autosave", "AutosaveError", "Autosaver", "autosave_path", "pipeline_record",
           "read_autosave", "write_autosave"]


class AutosaveError(IRSError, ValueError):
    """An autosave file that cannot be read as one (the message is one line, naming it)."""


def autosave_path(folder: str | os.PathLike | None = None,
                  notebook: str | None = None) -> str:
    """Where the pipeline is autosaved: ``.<notebook stem>.irs-pipeline.json`` in ``folder``
    (default: the kernel's working directory, which JupyterLab sets to the notebook's
    folder). ``notebook`` defaults to the notebook the kernel serves (``JPY_SESSION_NAME``,
    set by Jupyter Server); without one the file is ``.irs-pipeline.json``.

    >>> autosave_path("/work", "notebooks/Build features.ipynb")
    '/work/.Build features.irs-pipeline.json'
    >>> autosave_path("/work", "")
    '/work/.irs-pipeline.json'
    """
    folder = os.getcwd() if folder is None else os.fspath(folder)
    if notebook is None:
        notebook = os.environ.get("JPY_SESSION_NAME", "")
    stem = os.path.splitext(os.path.basename(notebook.rstrip("/")))[0] \
        if notebook.endswith(".ipynb") else ""
    return os.path.join(os.path.abspath(folder), f".{stem}{SUFFIX}" if stem else SUFFIX)


def pipeline_record(branches: list[Branch], *, dataset: str | None = None,
                    output: str | None = None) -> dict[str, Any]:
    """The JSON-able content of an autosave: the branches (operators as ``{"op", "params"}``
    with the non-default parameters, as a saved workflow writes them), the dataset and the
    output path, and the time."""
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "saved": time.time(),
            "dataset": dataset, "output": output,
            "branches": [{"columns": list(b.columns), "tags": list(b.tags),
                          "steps": [s.operator().to_config() for s in b.steps]}
                         for b in branches]}


def write_autosave(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Write ``record`` to ``path`` as JSON, atomically (temporary file + rename)."""
    text = json.dumps(record, indent=1, allow_nan=False)
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


@dataclass
class Autosave:
    """A pipeline read from an autosave file."""

    path: str
    saved: float
    branches: list[Branch]
    dataset: str | None
    output: str | None

    @property
    def steps(self) -> int:
        """The number of steps (a pass-through branch counts as one)."""
        return sum(len(b.steps) or 1 for b in self.branches if b.columns or b.tags)

    def offer(self) -> str:
        """The restore button's text: ``Restore the pipeline saved at 14:02 (7 steps)``."""
        when = time.strftime("%H:%M", time.localtime(self.saved))
        return (f"Restore the pipeline saved at {when} "
                f"({self.steps} step{'s' if self.steps != 1 else ''})")


def _fail(path: str, why: str) -> AutosaveError:
    return AutosaveError(f"The autosave file {path!r} is not a pipeline autosave this version "
                         f"can read ({why}); it was left as it is and is replaced at the next "
                         "edit of the pipeline.")


def _branch(path: str, k: int, raw: Any) -> Branch:
    if not isinstance(raw, dict):
        raise _fail(path, f"branches[{k}] is not an object")
    columns, tags, steps = raw.get("columns", []), raw.get("tags", []), raw.get("steps", [])
    if not all(isinstance(x, list) for x in (columns, tags, steps)):
        raise _fail(path, f"branches[{k}] needs lists 'columns', 'tags' and 'steps'")
    out = []
    for j, config in enumerate(steps):
        try:
            op = Operator.from_config(config)
        except Exception as exc:  # an unknown operator or parameter: named, one line
            raise _fail(path, f"branches[{k}].steps[{j}]: {str(exc).splitlines()[0][:200]}") \
                from None
        spec = op.params
        out.append(Step(type(op).__name__, {n: v for n, v in op.get_params().items()
                                            if v != spec[n].default}))
    return Branch(columns=[c if isinstance(c, str) else list(c) for c in columns],
                  tags=[str(t) for t in tags], steps=out)


def read_autosave(path: str | os.PathLike) -> Autosave | None:
    """The autosave at ``path``, None when there is none; :class:`AutosaveError` (one line,
    naming the file) when the file is not one this version can read."""
    path = os.fspath(path)
    try:
        if os.path.getsize(path) > MAX_BYTES:
            raise _fail(path, f"it is larger than {MAX_BYTES:,} bytes")
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise _fail(path, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
        found = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise _fail(path, f"its format is {str(found)[:60]!r}, not {FORMAT_NAME!r}")
    if record.get("format_version") != FORMAT_VERSION:
        raise _fail(path, f"format version {str(record.get('format_version'))[:20]!r}; this "
                          f"version reads {FORMAT_VERSION}")
    raw, saved = record.get("branches"), record.get("saved")
    if not isinstance(raw, list) or not isinstance(saved, int | float) or isinstance(saved, bool):
        raise _fail(path, "'branches' must be a list and 'saved' a time")
    text = {k: record.get(k) if isinstance(record.get(k), str) else None
            for k in ("dataset", "output")}
    return Autosave(path, float(saved), [_branch(path, k, b) for k, b in enumerate(raw)],
                    text["dataset"], text["output"])


class Autosaver:
    """Writes the latest scheduled record to ``path`` once no edit came for ``delay``
    seconds (from a timer thread); :meth:`flush` writes a pending one now.

    A failed write (a read-only folder, a full disk) is kept in :attr:`error` and reported
    by ``on_error(message)``; the builder keeps working.
    """

    def __init__(self, path: str | os.PathLike, delay: float = DEBOUNCE_SECONDS,
                 on_error: Any = None) -> None:
        self.path, self.delay, self.on_error = os.fspath(path), delay, on_error
        self.error: str | None = None
        self.writes = 0
        self._pending: dict[str, Any] | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def schedule(self, record: dict[str, Any]) -> None:
        """Write ``record`` after ``delay`` seconds unless another comes first."""
        with self._lock:
            self._pending = record
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.delay, self.flush)
            self._timer.daemon = True
            self._timer.start()

    def flush(self) -> None:
        """Write the pending record now (nothing when none is pending)."""
        with self._lock:
            record, self._pending = self._pending, None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if record is None:
                return
            try:
                write_autosave(self.path, record)
                self.writes, self.error = self.writes + 1, None
            except (OSError, ValueError) as exc:
                self.error = (f"Could not autosave the pipeline to {self.path!r}: "
                              f"{type(exc).__name__}: {exc}")
        if self.error and self.on_error is not None:
            self.on_error(self.error)
