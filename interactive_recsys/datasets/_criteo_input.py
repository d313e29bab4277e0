"""The input files of the Criteo converter (``irs criteo``,
:func:`~interactive_recsys.datasets.criteo_to_torchrec`): the ``day_N`` files of a local
folder that ``--days`` picks, Kaggle's ``train.txt``, or one file; each a regular file,
checked before anything is read."""

from __future__ import annotations

import bisect
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from interactive_recsys.errors import DatasetError, ParameterError
from interactive_recsys.io._paths import refuse_special_file
from interactive_recsys.store._urls import (
    StorageOptions,
    filesystem,
    guarded,
    is_remote,
    local_path,
    strip,
)

__all__ = ["criteo_input_files", "day_files", "days_text", "parse_days", "remote_input_files"]

DAY = re.compile(r"^day_(\d+)(\.(gz|bz2|zst|lz4))?$")

#: A list of day ranges ``(first, last)``, sorted, neither overlapping nor touching.
DayRanges = list[tuple[int, int]]


def parse_days(text: str | Sequence[int] | None) -> DayRanges | None:
    """``"0-23"``, ``"0,3,5-7"`` or a list of day numbers as sorted ranges ``(first, last)``
    (``None``: every day). The days themselves are never listed, so a range as wide as
    ``0-99999999999`` costs nothing; :func:`criteo_input_files` checks it against the days
    there are.

    >>> parse_days("5,0-2,3")
    [(0, 3), (5, 5)]
    >>> parse_days([7, 1, 2])
    [(1, 2), (7, 7)]
    """
    if text is None:
        return None
    if not isinstance(text, str):
        days = list(text)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in days):
            raise ParameterError(
                f"days must be day numbers (integers >= 0) or a text such "
                f"as '0-23' or '0,3,5-7'; got {text!r}."
            )
        return _merged([(d, d) for d in days])
    ranges = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise ParameterError(
                f"days must look like '0-23' or '0,3,5-7' (day numbers and "
                f"ranges first-last, first <= last); got {text!r} "
                "(--days on the command line)."
            )
        ranges.append((int(m.group(1)), int(m.group(2) or m.group(1))))
    return _merged(ranges)


def _merged(ranges: DayRanges) -> DayRanges:
    out: DayRanges = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def days_text(ranges: DayRanges) -> str:
    """Day ranges as ``--days`` writes them.

    >>> days_text([(0, 23), (30, 30)])
    '0-23,30'
    """
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def _picked(ranges: DayRanges, day: int) -> bool:
    i = bisect.bisect_right(ranges, (day, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= day <= ranges[i][1]


def _missing(ranges: DayRanges, found: dict[int, list[str]]) -> Iterator[int]:
    """The days of ``ranges`` that are not in ``found``, in order (lazily: a wide range
    costs at most ``len(found)`` steps per day yielded)."""
    for first, last in ranges:
        day = first
        while day <= last:
            if day not in found:
                yield day
            day += 1


def _check_day_file(path: str, folder: str) -> None:
    """Refuse a day that is a folder, a FIFO, a socket or a device, before any read."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # gone or unreadable: the read names it
    if stat.S_ISDIR(mode):
        raise DatasetError(
            f"Criteo input {path!r} is a folder, not a file: each day of "
            f"{folder!r} must be one file (day_0, or day_0.gz, .bz2, .zst, "
            ".lz4). Put the day's file in its place (not a folder of it), or "
            "pick other days with --days."
        )
    refuse_special_file(path)


def criteo_input_files(
    path: str | os.PathLike, days: DayRanges | None = None, storage_options: Any = None
) -> list[tuple[str, str]]:
    """``(file, stem)`` pairs of the Criteo input: a folder of ``day_N`` files (plain or
    compressed; ``days``, from :func:`parse_days`, picks some), a folder holding Kaggle's
    ``train.txt`` (and ``test.txt``, whose lines have no label), or one file.

    A URL (``s3://bucket/raw``) is listed on its store with ``storage_options``
    (:func:`remote_input_files`).

    Refused before any read: a day asked for but missing, two files of one day (``day_0``
    and ``day_00`` or ``day_0.gz``), and a day that is a folder, a FIFO, a socket or a
    device.
    """
    if is_remote(path):
        return remote_input_files(os.fspath(path), days, storage_options)
    path = local_path(path)
    refuse_special_file(path)
    if os.path.isfile(path):
        name = os.path.basename(path)
        stem = DAY.match(name).group(0).split(".")[0] if DAY.match(name) else name.split(".")[0]
        return [(path, stem)]
    if not os.path.isdir(path):
        raise DatasetError(
            f"Criteo input {path!r} does not exist: give the folder of the day_0 "
            "... day_23 files (or of Kaggle's train.txt), or one file."
        )
    found: dict[int, list[str]] = {}
    for name in sorted(os.listdir(path)):
        m = DAY.match(name)
        if m:
            found.setdefault(int(m.group(1)), []).append(name)
    if found:
        return day_files(path, found, days)
    kaggle = [
        (os.path.join(path, f"{stem}{ext}"), stem)
        for stem in ("train", "test")
        for ext in (".txt", ".txt.gz")
        if os.path.lexists(os.path.join(path, f"{stem}{ext}"))
    ]
    if kaggle and kaggle[0][1] == "train":
        for f, _ in kaggle:
            _check_day_file(f, path)
        return list(dict((stem, (f, stem)) for f, stem in kaggle).values())
    raise DatasetError(
        f"Criteo input {path!r} holds no day_N file and no train.txt; "
        f"found {sorted(os.listdir(path))[:5]}."
    )


def day_files(
    path: str, found: dict[int, list[str]], days: DayRanges | None,
    join: Callable[[str, str], str] | None = None,
) -> list[tuple[str, str]]:
    """The day files of ``path`` that ``days`` picks (``found``: the names of each day);
    refused when a day asked for is missing, has two files, or is not a regular file
    (``join``: how a folder and a name make a URL on a store, whose files are not checked)."""
    have = [(d, d) for d in sorted(found)]
    if days is not None:
        missing = list(zip(range(4), _missing(days, found), strict=False))
        if missing:
            count = sum(b - a + 1 for a, b in days) - sum(_picked(days, d) for d in found)
            named = ", ".join(f"day_{d}" for _, d in missing[:3])
            more = f" and {count - 3:,} more" if count > 3 else ""
            raise DatasetError(
                f"Criteo input {path!r} has no {named}{more} "
                f"{'file' if count == 1 else 'files'}: --days "
                f"{days_text(days)!r} asks for {count:,} day(s) it does not "
                f"have (days found: {days_text(_merged(have))}). Pick days "
                f"that exist, e.g. --days {days_text(_merged(have))}."
            )
    wanted = [d for d in sorted(found) if days is None or _picked(days, d)]
    for d in wanted:
        if len(found[d]) > 1:
            names = " and ".join(repr(n) for n in found[d])
            raise DatasetError(
                f"Criteo input {path!r} has {len(found[d])} files of day {d}: "
                f"{names}; one would be dropped. Keep one of them (move the "
                "others out of the folder), or pick other days with --days."
            )
    files = [((join or os.path.join)(path, found[d][0]), f"day_{d}") for d in wanted]
    for f, _ in files if join is None else ():
        _check_day_file(f, path)
    return files

def remote_input_files(url: str, days: Any, storage_options: StorageOptions = None
                       ) -> list[tuple[str, str]]:
    """``(url, stem)`` of the day files (or Kaggle's ``train.txt``) in the folder ``url`` of
    an object store, or of the one file ``url``; ``days`` as :func:`criteo_input_files`."""
    fs, root = filesystem(url, storage_options), strip(url).rstrip("/")
    if guarded(fs.isfile, url, root):
        name = posixpath.basename(root)
        return [(url, name.split(".")[0])]
    names = sorted(posixpath.basename(p.rstrip("/"))
                   for p in (guarded(fs.ls, url, root, detail=False)
                             if guarded(fs.isdir, url, root) else []))
    if not names:
        raise DatasetError(f"Criteo input {url!r} does not exist or is empty: give the folder "
                           "of the day_0 ... day_23 files (or of Kaggle's train.txt), or one "
                           "file, and the --storage-options that reach its store.")
    found: dict[int, list[str]] = {}
    for name in names:
        m = DAY.match(name)
        if m:
            found.setdefault(int(m.group(1)), []).append(name)
    join = lambda folder, name: f"{url.rstrip('/')}/{name}"  # noqa: E731
    if found:
        return day_files(url, found, days, join=join)
    kaggle = [(join(url, n), n.split(".")[0]) for n in ("train.txt", "train.txt.gz",
                                                         "test.txt", "test.txt.gz")
              if n in names]
    if kaggle and kaggle[0][1] == "train":
        return list(dict((stem, (f, stem)) for f, stem in kaggle).values())
    raise DatasetError(f"Criteo input {url!r} holds no day_N file and no train.txt; found "
                       f"{names[:5]}.")

