"""Autosave of the pipeline built by clicking: one JSON file beside the notebook.

Every edit of the builder's steps schedules a write of :func:`pipeline_record` (the
branches, each operator as its class name and non-default parameters, the dataset path and
the output path) to :func:`autosave_path`; an :class:`Autosaver` writes the latest record
once edits pause (:data:`DEBOUNCE_SECONDS`), atomically (a temporary file renamed over the
old one: a reader sees the old file or the new one whole, never a part). JSON only.

:func:`read_autosave` reads it back for the restore offer; a file that is not an autosave
of this library (broken JSON, another format, a newer version, a field with a value it
cannot hold: :mod:`._autosave_check`), or a path that is not a regular file (a FIFO, never
opened for reading), raises :class:`AutosaveError` with a one-line message naming the file
and the field. Plain Python, no widgets.

An autosave never holds a credential (the file sits beside the notebook, where people commit
it): the dataset and output paths, and the URLs among the steps' parameters, are written
through the one redaction rule (:func:`~interactive_recsys.redact.redact_text`), and the
record's ``redacted`` field names those that lost a secret, so that a restore asks for them
again instead of opening a masked URL.

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
>>> record = pipeline_record([], dataset="https://ann:SECRET@h.example/d.parquet")
>>> record["dataset"], record["redacted"]
('https://***@h.example/d.parquet', ['dataset'])
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from interactive_recsys.errors import IRSError
from interactive_recsys.ops._base import Operator
from interactive_recsys.redact import redact_text
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.ui.builder._autosave_check import FieldError, check_record
from interactive_recsys.ui.builder._branches import Branch, Step
from interactive_recsys.ui.builder._codegen import holds_credential

#: The ``format`` field of an autosave file, and the version this library writes (it reads
#: :data:`READS`; version 2 added ``redacted``, version 3 ``run``, ``suggest`` and
#: ``options``).
FORMAT_NAME, FORMAT_VERSION = "interactive-recsys-pipeline-autosave", 3
READS = (1, 2, 3)
#: Seconds without an edit before the pending autosave is written.
DEBOUNCE_SECONDS = 1.0
#: A larger file is not an autosave (they are a few kilobytes).
MAX_BYTES = 4 << 20
SUFFIX = ".irs-pipeline.json"

__all__ = ["Autosave", "AutosaveError", "Autosaver", "autosave_path", "pipeline_record",
           "read_autosave", "write_autosave"]


class AutosaveError(IRSError, ValueError):
    """An autosave file that cannot be read as one (the message is one line, naming it).

    ``discardable``: whether it is a regular file the builder may delete when asked to
    (not a FIFO, a folder or a device)."""

    def __init__(self, message: str, *, discardable: bool = True) -> None:
        super().__init__(message)
        self.discardable = discardable


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
                    output: str | None = None, run: dict[str, str] | None = None,
                    suggest: dict[str, Any] | None = None,
                    options: dict[str, bool] | None = None) -> dict[str, Any]:
    """The JSON-able content of an autosave: the branches (operators as ``{"op", "params"}``
    with the non-default parameters, as a saved workflow writes them), the dataset and the
    output path, the time; ``run``: the last Run's ``{"output", "workflow"}`` (its fitted
    workflow's folder); ``suggest``: what the last Suggest measured
    (:func:`~.model._handoff.handoff_fields`); ``options``: the form's ``{"overwrite"}``.
    Credentials are masked (:func:`~interactive_recsys.redact.redact_text`); ``redacted``
    names the fields that held one."""
    record = {"dataset": dataset, "output": output,
              "branches": [{"columns": list(b.columns), "tags": list(b.tags),
                            "steps": [s.operator().to_config() for s in b.steps]}
                           for b in branches], "run": run}
    masked = {k: redact_text(v) if k in ("dataset", "output") else _mask_urls(v)
              for k, v in record.items()}
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "saved": time.time(),
            **masked, "redacted": [k for k in record if masked[k] != record[k]],
            "suggest": suggest, "options": {"overwrite": bool((options or {}).get(
                "overwrite", False))}}


def _mask_urls(value: Any) -> Any:
    """``value`` with each string that holds a URL with a credential redacted (expressions
    and column names are left as they are: see :func:`~._codegen.holds_credential`)."""
    if isinstance(value, dict):
        return {k: _mask_urls(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_urls(v) for v in value]
    return redact_text(value) if isinstance(value, str) and holds_credential(value) else value


def _not_regular(path: str, mode: int) -> AutosaveError:
    kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode)
            or stat.S_ISBLK(mode) else "not a regular file")
    return AutosaveError(f"The autosave path {path!r} is {kind}, not a regular file: the "
                         "builder neither reads nor replaces it. Remove it, or pass autosave= "
                         "another file (or False).", discardable=False)


def _check_regular(path: str) -> None:
    """Raise :class:`AutosaveError` when ``path`` exists and is not a regular file (a link
    to one is fine), without opening it: opening a FIFO for reading blocks."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    except (OSError, ValueError) as exc:
        raise _fail(path, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}") \
            from None
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)


def write_autosave(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Write ``record`` to ``path`` as JSON, atomically (temporary file + rename); a path
    that is not a regular file (a FIFO, a folder) is refused, not replaced."""
    text = json.dumps(record, indent=1, allow_nan=False)
    _check_regular(os.fspath(path))
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


@dataclass
class Autosave:
    """A pipeline read from an autosave file; ``redacted`` names the fields written with a
    credential masked (``"dataset"``, ``"output"``, ``"branches"``): their values are not
    the ones to open or write."""

    path: str
    saved: float
    branches: list[Branch]
    dataset: str | None
    output: str | None
    redacted: list[str] = field(default_factory=list)
    #: the last Run's ``{"output", "workflow"}`` (None: no Run wrote an output)
    run: dict[str, str] | None = None
    #: what the last Suggest measured (:func:`~.model._handoff.restore_suggest`), or None
    suggest: dict[str, Any] | None = None
    #: the form's options: ``{"overwrite": bool}``
    options: dict[str, bool] = field(default_factory=dict)

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
                         f"can read ({why}); it was left as it is: discard it, or the next "
                         "edit of the pipeline replaces it.")


def _step(config: dict[str, Any]) -> Step:
    op = Operator.from_config(config)
    spec = op.params
    return Step(type(op).__name__, {n: v for n, v in op.get_params().items()
                                    if v != spec[n].default})


def _branch(path: str, k: int, raw: dict[str, Any]) -> Branch:
    """A branch of a record :func:`~._autosave_check.check_record` passed; its operators
    are checked by their own parameter rules."""
    out = []
    for j, config in enumerate(raw["steps"]):
        try:
            out.append(_step(config))
        except Exception as exc:  # an unknown operator or parameter: named, one line
            text = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            raise _fail(path, f"branches[{k}].steps[{j}]: {text}") from None
    return Branch(columns=[c if isinstance(c, str) else list(c) for c in raw["columns"]],
                  tags=list(raw["tags"]), steps=out)


def _read_text(path: str) -> bytes | None:
    """The bytes of the regular file ``path`` (None when there is none), never blocking: a
    FIFO, a folder or a device is refused before it is opened, and again after (a file
    swapped in between)."""
    _check_regular(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode)
        if info.st_size > MAX_BYTES:
            raise _fail(path, f"it is larger than {MAX_BYTES:,} bytes")
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(MAX_BYTES + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_BYTES:
        raise _fail(path, f"it is larger than {MAX_BYTES:,} bytes")
    return data


def read_autosave(path: str | os.PathLike) -> Autosave | None:
    """The autosave at ``path``, None when there is none; :class:`AutosaveError` (one line,
    naming the file and the field) when the file is not one this version can read."""
    path = os.fspath(path)
    try:
        data = _read_text(path)
        if data is None:
            return None
        record = json.loads(data.decode("utf-8"))
    except AutosaveError:
        raise
    except (OSError, ValueError, RecursionError) as exc:
        raise _fail(path, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}") from None
    try:
        check_record(record, FORMAT_NAME, READS)
    except FieldError as exc:
        raise _fail(path, str(exc)) from None
    branches = [_branch(path, k, b) for k, b in enumerate(record["branches"])]
    return Autosave(path, float(record["saved"]), branches, record["dataset"],
                    record["output"], list(dict.fromkeys(record.get("redacted", []))),
                    record.get("run"), record.get("suggest"), record.get("options", {}))


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
            except AutosaveError as exc:  # not a regular file: named with the fix
                self.error = str(exc)
            except (OSError, ValueError) as exc:
                self.error = (f"Could not autosave the pipeline to {self.path!r}: "
                              f"{type(exc).__name__}: {exc}")
        if self.error and self.on_error is not None:
            self.on_error(self.error)
