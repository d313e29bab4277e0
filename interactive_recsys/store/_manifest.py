"""The ``_SUCCESS`` manifest of an output folder, parsed strictly.

A manifest is JSON: ``{"format": "interactive-recsys-output", "write_id": ...,
"written": ..., "files": {NAME: SIZE, ...}}``, written last by a writer (locally before
the rename, in an object store after the copies). Readers trust it to say which files
make up the output, and writers trust an old output's manifest to say which files to
remove when they replace it, so every manifest (the folder's, a staged one, a replaced
one) is checked before anything is read or deleted:

* UTF-8 JSON, without ``NaN`` or ``Infinity`` and without a key given twice;
* every name relative, inside the folder: no absolute path, no ``..`` or ``.`` part, no
  empty part, no backslash, no control character, no glob character (``*?[]``), not the
  manifest itself, nothing under the ``_temporary`` staging folder;
* every size a whole number of bytes, ``0 <= size < 2**63`` (not ``1e400``, not ``true``).

Anything else raises :class:`~interactive_recsys.errors.DatasetError` naming the manifest
and what is wrong. An empty file is Spark's (or an older writer's) marker: a complete
folder with nothing to check (``None``).

>>> parse_manifest("out/_SUCCESS", manifest_text({"part.0.parquet": 10}, "w1"))
{'part.0.parquet': 10}
>>> parse_manifest("out/_SUCCESS", b'{"format": "interactive-recsys-output", '
...                b'"files": {"../secret": 1}}')
Traceback (most recent call last):
...
interactive_recsys.errors.DatasetError: The manifest 'out/_SUCCESS' is damaged: ...
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from interactive_recsys.errors import DatasetError

MANIFEST = "_SUCCESS"
STAGING = "_temporary"
MANIFEST_FORMAT = "interactive-recsys-output"
MAX_SIZE = 2**63
WRITE_ID = re.compile(r"^\d{14}-[0-9a-f]{8}$")  # a remote write: UTC start time, random
_GLOB = re.compile(r"[*?\[\]]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LOOSE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: a name :func:`bad_name` refuses matches this (one search clears the usual name)
_SUSPECT = re.compile(r"[\x00-\x1f\x7f\\*?\[\]]|^/|^[A-Za-z]:|(?:^|/)\.{0,2}(?:/|$)"
                      rf"|^{STAGING}(?:/|$)|^{MANIFEST}$")

__all__ = ["MANIFEST", "STAGING", "Manifest", "bad_name", "manifest_text", "parse_manifest",
           "read_manifest"]


@dataclass(frozen=True)
class Manifest:
    """A parsed manifest: the output's files with their sizes, and its write id."""

    files: dict[str, int]
    write_id: str | None


def manifest_text(files: Mapping[str, int], write_id: str) -> str:
    """The JSON text of a manifest listing ``files`` (names relative to the folder, with
    ``/``) and their sizes."""
    for name in files:
        why = bad_name(name)
        if why:  # the writer's own names: a bug or a hostile column name, never published
            raise DatasetError(f"Cannot publish a file named {name!r}: {why}.")
    return json.dumps({"format": MANIFEST_FORMAT, "write_id": write_id, "written": time.time(),
                       "files": dict(sorted(files.items()))}, indent=1)


def bad_name(name: object) -> str:
    """Why ``name`` cannot be a file of an output folder ('' when it can)."""
    if isinstance(name, str) and name and not _SUSPECT.search(name):
        return ""  # one search clears the usual name; a suspect one is told why below
    if not isinstance(name, str) or not name:
        return "a file name must be a non-empty string"
    if _CONTROL.search(name):
        return "it holds a control character"
    if "\\" in name:
        return "it holds a backslash"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "it is an absolute path"
    if _GLOB.search(name):
        return "it holds a glob character (* ? [ ])"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "it has an empty, '.' or '..' part (names stay inside the folder)"
    if parts[0] == STAGING:
        return f"it is inside the {STAGING} staging folder"
    if name == MANIFEST:
        return "it is the manifest itself"
    return ""


def _no_constants(value: str) -> None:
    raise ValueError(f"{value} is not a number JSON allows")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    """The object of ``pairs``, refusing a key given twice (linear: one dict, one set)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = sorted({k for k, _ in pairs if k in seen or seen.add(k)})
        raise ValueError(f"the key {twice[0]!r} is given twice")
    return out


def _damaged(where: str, why: str) -> DatasetError:
    return DatasetError(f"The manifest {where!r} is damaged: {why}. It cannot be trusted, so "
                        "the folder is not read and nothing is deleted by it. Write the "
                        "output again into a new folder, or remove this folder and write it "
                        "again.")


def read_manifest(where: str, data: bytes | str) -> Manifest | None:
    """Parse the manifest file ``where`` (its path or URL, for errors) holding ``data``;
    None for an empty marker. Raises :class:`DatasetError` naming ``where`` and the fault."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _damaged(where, f"it is not UTF-8 text (byte {exc.start})") from None
    if not data.strip():
        return None  # an empty marker (Spark, older versions): complete, nothing to check
    try:
        doc = json.loads(data, parse_constant=_no_constants, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise _damaged(where, "it is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError included: its message gives the position
        raise _damaged(where, f"it is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise _damaged(where, f"it is not a {MANIFEST_FORMAT!r} manifest")
    files = doc.get("files")
    if not isinstance(files, dict):
        raise _damaged(where, "its 'files' is not an object of names and sizes")
    write_id = doc.get("write_id")
    if write_id is not None and not (isinstance(write_id, str) and _LOOSE_ID.match(write_id)):
        raise _damaged(where, "its 'write_id' is not a short name of letters, digits, '-', "
                              "'_' and '.'")
    for name, size in files.items():
        why = bad_name(name)
        if why:
            raise _damaged(where, f"the file name {name[:200]!r} is refused: {why}")
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size < MAX_SIZE:
            shown = repr(size)[:40]
            raise _damaged(where, f"the size of {name!r} is {shown}, not a whole number of "
                                  f"bytes from 0 to 2**63 - 1")
    return Manifest(dict(files), write_id)


def parse_manifest(where: str, data: bytes | str) -> dict[str, int] | None:
    """The files (name -> size) of the manifest file ``where`` holding ``data``, or None for
    an empty marker (see ``read_manifest``)."""
    manifest = read_manifest(where, data)
    return None if manifest is None else manifest.files
