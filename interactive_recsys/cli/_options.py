"""What every ``irs`` command shares: integer arguments, ``--storage-options``, the checks
of its inputs before anything starts, and its output lines with secrets masked."""

from __future__ import annotations

import argparse
import glob
import json
from collections.abc import Sequence
from typing import Any

from interactive_recsys.errors import DatasetError, ParameterError
from interactive_recsys.io._paths import refuse_special_file
from interactive_recsys.redact import redact_text, remember
from interactive_recsys.store.storage import is_remote


def at_least(minimum: int) -> Any:
    """An argparse type: an integer >= ``minimum`` (else argparse's usage error, exit 2)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def share(text: str) -> float:
    """An argparse type: a share from 0 to 1, written ``0.01`` or ``1%``.

    >>> share("1%"), share("0.25")
    (0.01, 0.25)
    """
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a share from 0 to 1 such as 0.01 or 1%, "
                                         f"got {text!r}")
    return value


share.__name__ = "share"


def check_inputs(items: Sequence[str]) -> None:
    """Refuse an input path that is a FIFO, a socket or a device before anything starts or
    reads it (a named pipe would block the command until a writer comes)."""
    for item in items:
        if not is_remote(item) and not glob.has_magic(item):
            refuse_special_file(item)


def refuse_no_rows(ds: Any, command: str) -> None:
    """Refuse an input known to have no rows (parquet metadata), naming it."""
    if ds.known_num_rows == 0:
        raise DatasetError(f"irs {command}: {ds.describe_input()} has no rows, so there is "
                           "nothing to process and nothing was written. Check the --input "
                           "path (a failed export, an empty day?).")


def storage_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--storage-options JSON``: fsspec options for every URL of the command.

    The text usually holds credentials, so a malformed one is reported by position (line,
    column, character and the JSON error), never echoed; the secrets it holds are remembered
    so that no later message shows them (:mod:`.redact`).

    >>> ns = argparse.Namespace(storage_options='{"secret": "s3cr3t-value", }')
    >>> try:
    ...     storage_options(ns)
    ... except ParameterError as exc:
    ...     print(str(exc)[:36], "line 1, column 28" in str(exc), "s3cr3t" in str(exc))
    --storage-options is not valid JSON: True False
    """
    text = getattr(args, "storage_options", None)
    if not text:
        return None
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"--storage-options is not valid JSON: {exc.msg} at line "
                             f"{exc.lineno}, column {exc.colno} (offset {exc.pos} of {len(text)} "
                             "characters); the text is not shown, since it may hold "
                             "credentials. Write a JSON object with double quotes and no "
                             "trailing comma, e.g. '{\"anon\": false}'.") from None
    except (ValueError, RecursionError) as exc:
        raise ParameterError(f"--storage-options is not valid JSON ({type(exc).__name__}); "
                             "the text is not shown, since it may hold credentials. Write a "
                             "JSON object, e.g. '{\"anon\": false}'.") from None
    if not isinstance(options, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(options), "a number")
        raise ParameterError(f"--storage-options must be a JSON object; got {kind}. Write "
                             "e.g. '{\"anon\": false}'.")
    remember(options)
    return options


def say(text: str) -> None:
    """Print a line of the command's output, secrets masked (:mod:`.redact`)."""
    print(redact_text(text))
