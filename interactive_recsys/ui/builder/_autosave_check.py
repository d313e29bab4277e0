"""Every field of an autosave file, checked when it is read back: types, ranges, finite
numbers, known keys. A file is a user's file (edited, damaged, or written by someone
else), so nothing in it may crash the builder that reads it.

:func:`check_record` returns nothing for a good record and raises :class:`FieldError`
naming the first bad field (``'saved'``, ``branches[0].columns[1]``...) and why. The
operators themselves are checked by :meth:`~interactive_recsys.ops._base.Operator.
from_config` afterwards. Plain Python, no widgets.

>>> good = {"format": "interactive-recsys-pipeline-autosave", "format_version": 2,
...         "saved": 1.7e9, "dataset": "data/", "output": None, "redacted": [],
...         "branches": [{"columns": ["c", ["a", "b"]], "tags": [], "steps": []}]}
>>> check_record(good, "interactive-recsys-pipeline-autosave", (1, 2))
>>> check_record({**good, "saved": 1e300}, "interactive-recsys-pipeline-autosave", (1, 2))
Traceback (most recent call last):
...
interactive_recsys.ui.builder._autosave_check.FieldError: 'saved' is 1e+300, not a time \
(seconds since 1970 up to the year 9999)
"""

from __future__ import annotations

import math
from typing import Any

#: The latest time an autosave can hold: 9999-12-31 23:59:59 UTC (``time.localtime`` of a
#: larger number overflows).
MAX_SAVED = 253_402_300_799.0
#: Longest path, column name or tag an autosave holds (``PATH_MAX`` is 4096 on Linux).
MAX_TEXT = 4096
#: The fields a record may name as written redacted (their credentials masked).
REDACTABLE = ("dataset", "output", "branches", "run")
#: Bounds of the ``suggest`` field: measured columns, value-count pairs over all of them,
#: files in the data's identity, and the largest count (a 64-bit integer).
MAX_COLUMNS, MAX_PAIRS, MAX_FILES, MAX_COUNT = 10_000, 200_000, 100_000, 2**63 - 1

#: The top-level keys of a record, by format version.
KEYS = {
    1: ("format", "format_version", "saved", "dataset", "output", "branches"),
    2: ("format", "format_version", "saved", "dataset", "output", "redacted", "branches"),
    3: ("format", "format_version", "saved", "dataset", "output", "redacted", "branches",
        "run", "suggest", "options"),
}
RUN_KEYS = ("output", "workflow")
SUGGEST_KEYS = ("max_loss", "memory_budget", "data", "measured")
MEASURED_KEYS = ("name", "histogram", "lookups", "nulls", "rows")
OPTION_KEYS = ("overwrite",)
BRANCH_KEYS = ("columns", "tags", "steps")


class FieldError(ValueError):
    """A field of an autosave record is missing or holds a value it cannot hold."""


def _show(value: Any) -> str:
    """A short, one-line picture of a bad value."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(value: Any) -> str:
    """The JSON name of ``value``'s type."""
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _non_finite(record: dict[str, Any]) -> None:
    """Refuse NaN and infinities anywhere in ``record`` (JSON has neither; Python's reader
    accepts ``NaN`` and ``Infinity``), naming the field."""
    stack = [(v, repr(k), f"{k}") for k, v in record.items()]
    while stack:
        item, shown, at = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise FieldError(f"{shown} is {item!r}; an autosave holds finite numbers only")
        if isinstance(item, dict):
            stack += [(v, f"{at}.{k}", f"{at}.{k}") for k, v in item.items()]
        elif isinstance(item, list):
            stack += [(v, f"{at}[{i}]", f"{at}[{i}]") for i, v in enumerate(item)]


def _text(value: Any, where: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        want = "a string or null" if optional else "a string"
        raise FieldError(f"{where} is {_name(value)} ({_show(value)}), not {want}")
    if len(value) > MAX_TEXT or "\x00" in value:
        raise FieldError(
            f"{where} is not a path or name (longer than {MAX_TEXT} characters"
            " or holding a NUL character)"
        )


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise FieldError(f"{where} is {_name(value)} ({_show(value)}), not a list")
    return value


def _keys(value: Any, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldError(f"{where} is {_name(value)} ({_show(value)}), not an object")
    missing = [k for k in keys if k not in value]
    if missing:
        raise FieldError(f"{where} has no {missing[0]!r} field")
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise FieldError(f"{where} has the unknown field(s) {_show(unknown)}")
    return value


def _branch(raw: Any, where: str) -> None:
    branch = _keys(raw, where, BRANCH_KEYS)
    for j, column in enumerate(_list(branch["columns"], f"{where}.columns")):
        at = f"{where}.columns[{j}]"
        if isinstance(column, list):  # a column group
            if not column:
                raise FieldError(f"{at} is an empty column group")
            for i, name in enumerate(column):
                _text(name, f"{at}[{i}]")
        else:
            _text(column, at)
    for j, tag in enumerate(_list(branch["tags"], f"{where}.tags")):
        _text(tag, f"{where}.tags[{j}]")
    for j, step in enumerate(_list(branch["steps"], f"{where}.steps")):
        at = f"{where}.steps[{j}]"
        if (
            not isinstance(step, dict)
            or not isinstance(step.get("op"), str)
            or not isinstance(step.get("params", {}), dict)
            or set(step) - {"op", "params"}
        ):
            raise FieldError(
                f'{at} is not an operator ({{"op": NAME, "params": {{...}}}}): {_show(step)}'
            )


def _count(value: Any, where: str, low: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_COUNT:
        raise FieldError(f"{where} is {_show(value)}, not a count ({low} to {MAX_COUNT})")


def _run(raw: Any) -> None:
    if raw is not None:
        for key in RUN_KEYS:
            _text(_keys(raw, "'run'", RUN_KEYS)[key], f"run.{key}")


def _identity(raw: Any) -> None:
    """The data's identity: null, or ``[[path, size, mtime_ns], ...]``."""
    if raw is None:
        return
    if len(_list(raw, "suggest.data")) > MAX_FILES:
        raise FieldError(f"suggest.data lists more than {MAX_FILES:,} files")
    for j, item in enumerate(raw):
        if not isinstance(item, list) or len(item) != 3:
            raise FieldError(f"suggest.data[{j}] is not [path, size, mtime]: {_show(item)}")
        _text(item[0], f"suggest.data[{j}][0]")
        _count(item[1], f"suggest.data[{j}][1]")
        _count(item[2], f"suggest.data[{j}][2]")


def _measured(raw: Any, where: str) -> int:
    """One measured column; the number of its value-count pairs."""
    column = _keys(raw, where, MEASURED_KEYS)
    _text(column["name"], f"{where}.name")
    for key in ("lookups", "nulls", "rows"):
        _count(column[key], f"{where}.{key}")
    pairs = _list(column["histogram"], f"{where}.histogram")
    for j, pair in enumerate(pairs[:MAX_PAIRS + 1]):
        if not isinstance(pair, list) or len(pair) != 2:
            raise FieldError(f"{where}.histogram[{j}] is not [count, values]: {_show(pair)}")
        _count(pair[0], f"{where}.histogram[{j}][0]", 1)
        _count(pair[1], f"{where}.histogram[{j}][1]", 1)
    return len(pairs)


def _suggest(raw: Any) -> None:
    """What Suggest measured: budgets, the data's identity, exact counts (bounded)."""
    if raw is None:
        return
    saved = _keys(raw, "'suggest'", SUGGEST_KEYS)
    loss = saved["max_loss"]
    if isinstance(loss, bool) or not isinstance(loss, int | float) or not 0 <= loss < 1:
        raise FieldError(f"suggest.max_loss is {_show(loss)}, not a share in [0, 1)")
    _count(saved["memory_budget"], "suggest.memory_budget", 1)
    _identity(saved["data"])
    columns = _list(saved["measured"], "suggest.measured")
    if len(columns) > MAX_COLUMNS:
        raise FieldError(f"suggest.measured holds more than {MAX_COLUMNS:,} columns")
    pairs = 0
    for j, column in enumerate(columns):
        pairs += _measured(column, f"suggest.measured[{j}]")
        if pairs > MAX_PAIRS:
            raise FieldError(f"suggest.measured holds more than {MAX_PAIRS:,} value counts")


def _options(raw: Any) -> None:
    options = _keys(raw, "'options'", OPTION_KEYS)
    if not isinstance(options["overwrite"], bool):
        raise FieldError(f"options.overwrite is {_show(options['overwrite'])}, not a boolean")


def check_record(record: Any, format_name: str, versions: tuple[int, ...]) -> None:
    """Raise :class:`FieldError` naming the first field of ``record`` that an autosave of
    ``format_name`` (one of ``versions``) cannot hold; nothing when all are good."""
    if not isinstance(record, dict):
        raise FieldError(f"it holds {_name(record)}, not an object")
    if record.get("format") != format_name:
        raise FieldError(f"its format is {_show(record.get('format'))}, not {format_name!r}")
    version = record.get("format_version")
    if isinstance(version, bool) or version not in versions:
        raise FieldError(
            f"format version {_show(version)}; this version reads "
            f"{' and '.join(map(str, versions))}"
        )
    _keys(record, "the record", KEYS[version])
    _non_finite(record)
    saved = record["saved"]
    if isinstance(saved, bool) or not isinstance(saved, int | float) or not 0 <= saved <= MAX_SAVED:
        raise FieldError(
            f"'saved' is {_show(saved)}, not a time (seconds since 1970 up to the year 9999)"
        )
    for key in ("dataset", "output"):
        _text(record[key], repr(key), optional=True)
    for j, field in enumerate(_list(record.get("redacted", []), "'redacted'")):
        if field not in REDACTABLE:
            raise FieldError(f"'redacted'[{j}] is {_show(field)}, not one of {REDACTABLE}")
    for k, branch in enumerate(_list(record["branches"], "'branches'")):
        _branch(branch, f"branches[{k}]")
    if version >= 3:
        _run(record["run"])
        _suggest(record["suggest"])
        _options(record["options"])
