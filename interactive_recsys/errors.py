"""Exceptions raised by interactive-recsys, each with a message that names the fix."""

from __future__ import annotations

from collections.abc import Iterable

from interactive_recsys.redact import redact_text


class IRSError(Exception):
    """Base class of every error this package raises on purpose.

    Its text never holds a secret: every string argument goes through
    :func:`~interactive_recsys.redact.redact_text` (URLs' passwords, presigned query
    values, secret storage options), so no caller can print one by naming a URL.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact_text(a) for a in args))


class SchemaError(IRSError, ValueError):
    """A column is missing, has the wrong dtype or the wrong role for an operator."""


class ParameterError(IRSError, ValueError):
    """An operator parameter has an invalid value."""


class NotFittedError(IRSError, RuntimeError):
    """A workflow or operator was used before ``fit``."""


class DatasetError(IRSError, ValueError):
    """Input files are missing, unreadable or have incompatible schemas."""


class WorkflowFormatError(IRSError, ValueError):
    """A saved workflow (``workflow.json`` or its artifacts) is malformed; the message names
    the field or file."""


class VersionError(WorkflowFormatError):
    """A saved workflow was written by an incompatible version."""


class StorageError(IRSError, OSError):
    """An object store could not be reached or refused a request (credentials, a missing
    bucket, the network); the message names the URL and what to check."""

    def __str__(self) -> str:
        return redact_text(str(self.strerror))


class NotMergeableError(IRSError, ValueError):
    """``Workflow.update`` cannot extend a step's statistics with new data exactly; the
    message names the step, its columns and the fix (a full refit)."""


class ParameterWarning(UserWarning):
    """A parameter that is valid but cannot do what it is meant to on this data (a
    ``freq_threshold`` above the number of rows, say); the message names the value."""


class ChecksumWarning(UserWarning):
    """A saved workflow or model folder holds no SHA-256 record of its files (saved by an
    older version): it is loaded, its files unchecked; the message names the folder and the
    fix (save it again, which records them)."""


def names_text(names: Iterable[object], shown: int = 8) -> str:
    """Names for an error message: all of a few, else the first and last ones and the count
    (a 40-column log is not listed whole).

    >>> names_text(["a", "b"])
    "'a', 'b'"
    >>> names_text([f"C{i}" for i in range(1, 27)])
    "'C1', 'C2', 'C3', 'C4', 'C5', 'C6', ..., 'C25', 'C26' (26 in all)"
    """
    names = [str(n) for n in names]
    if len(names) <= shown:
        return ", ".join(map(repr, names))
    head, tail = names[:shown - 2], names[-2:]
    return f"{', '.join(map(repr, head))}, ..., {', '.join(map(repr, tail))} ({len(names)} in all)"
