"""What each fitted state depends on: every statistics step's key, and each state's digest.

A statistics step's *key* is the SHA-256 of a canonical JSON description of everything its
state depends on:

* its operator: the class and every declared parameter (defaults included);
* the keys of the steps upstream of it, down to the input selections: each selection with
  the columns it resolves to (name, dtype, tags) and a fingerprint of the input data;
* the columns it reads (its input groups, with their dtypes);
* the fit's context: library version, backend, row and partition counts (they fix the
  number of hash splits of a vocabulary).

The data fingerprint covers how and what is read: the reading options (engine, and for csv
``sep``, ``names``, ``dtypes``, ``header``), and for each file its content
(:func:`content_fingerprint`: a SHA-256 of the bytes of a csv or small file, of a large
parquet file's footer with its inode change time; an object store's ETag), never a size
and modification time; for a frame in memory, a
hash of the Arrow memory of every column read (:func:`column_hash`). The states adopted
from a saved workflow are those whose artifact files still have the SHA-256 recorded at
save (``Workflow.verify_artifacts``). Data of unknown origin
(a Dask DataFrame built elsewhere) and Python functions (``LambdaOp``) have no fingerprint:
the steps reading them get no key and are always computed.

Every fit records the keys (and saves them): ``Workflow.fit(data, reuse=previous)``
compares them, and a step whose key is in ``previous`` adopts that state
(:mod:`.reuse`) instead of computing it. An operator with ``finishing_params`` (Categorify:
``freq_threshold``, ``max_size``, ...) also gets a *statistics key*, its key without those
parameters: a step whose statistics key is in ``previous`` is finished from that state's
statistics (its vocabularies cut again from the saved counts) without reading the data.

>>> import pandas as pd
>>> from interactive_recsys import Dataset, ops
>>> node = ["n"] >> ops.Normalize()
>>> ds = Dataset(pd.DataFrame({"n": [1.0, 2.0]}))
>>> a = step_keys(node, ds.schema, ds)
>>> b = step_keys(["n"] >> ops.Normalize(), ds.schema, Dataset(pd.DataFrame({"n": [1.0, 2.0]})))
>>> a == b, len(a["normalize-1"])
(True, 64)
>>> c = step_keys(node, ds.schema, Dataset(pd.DataFrame({"n": [1.0, 3.0]})))
>>> a == c
False
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

import numpy as np
import pyarrow as pa

from interactive_recsys._version import __version__ as _library_version
from interactive_recsys.io._dataset import Dataset
from interactive_recsys.io._output_pins import check_unchanged
from interactive_recsys.ops._base import Operator
from interactive_recsys.schema import Schema
from interactive_recsys.store import storage
from interactive_recsys.workflow._graph import Node, OpNode, SelectNode

#: Changes when what a key covers changes (old keys then never match).
KEY_VERSION = 2


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (which JSON cannot hold) replaced by None: a
    state as ``workflow.json`` holds it, and as its digest covers it.

    >>> json_safe({"sums": {"x": float("inf")}, "n": [1.5, float("nan")]})
    {'sums': {'x': None}, 'n': [1.5, None]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


class _NoKey(Exception):
    """Something a key would need has no fingerprint (the step is then always computed)."""


def _digest(value: Any) -> str:
    def unknown(item: Any) -> Any:
        if isinstance(item, np.generic):
            return item.item()
        raise _NoKey(type(item).__name__)

    text = json.dumps(json_safe(value), sort_keys=True, separators=(",", ":"), default=unknown)
    return hashlib.sha256(text.encode()).hexdigest()


def op_description(op: Operator, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """The operator's class and every declared parameter (but those in ``leave_out``), as
    saved (``to_config``) where the operator describes one its own way (a side table by
    content hash). Refused (:class:`_NoKey`) for a Python function: what it computes cannot
    be fingerprinted."""
    params = op.get_params()
    if any(callable(v) for v in params.values()):
        raise _NoKey(f"{type(op).__name__} takes a Python function")
    saved = op.to_config()["params"]
    return {"op": f"{type(op).__module__}.{type(op).__qualname__}",
            "params": {k: v for k, v in {**params, **saved}.items() if k not in leave_out}}


class _Fingerprints:
    """Fingerprints of one dataset's columns, each computed once."""

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds
        self._files: str | None = None
        self._columns: dict[str, str] = {}

    def of(self, columns: list[str]) -> Any:
        if self.ds.files:
            if self._files is None:
                try:
                    entries = [_file_entry(f, self.ds.storage_options) for f in self.ds.files]
                except OSError:
                    check_unchanged(self.ds)  # the output was written again: that error
                    raise
                check_unchanged(self.ds)  # of the files the Dataset opened, or raise
                self._files = _digest({"read": getattr(self.ds, "read_options", {}),
                                       "files": entries})
            return self._files
        if self.ds.frame is not None:
            return [self._column(c) for c in columns]
        raise _NoKey("the data is neither files nor a frame in memory")

    def _column(self, name: str) -> str:
        if name not in self._columns:
            b = self.ds.backend
            self._columns[name] = column_hash(b.to_arrow_array(b.column(self.ds.frame, name)))
        return self._columns[name]


#: Files up to this size (bytes) are fingerprinted by all their bytes; a larger parquet file
#: by its footer and, on this machine's disk, its inode change time (see
#: :func:`content_fingerprint`).
WHOLE_FILE_BYTES = 4 * 1024 * 1024


def _file_entry(path: str, options: Any) -> list[Any]:
    """What identifies a file's content: its store's ETag (a hash of the content) for a URL
    that has one, else :func:`content_fingerprint`. Never its size and modification time
    alone: a file replaced by another of the same size and time gets another key."""
    if storage.is_remote(path):
        etag = storage.etag(path, options)
        if etag:
            return [path, etag]
    name = path if storage.is_remote(path) else os.path.abspath(path)
    return [name, *content_fingerprint(path, options)]


def content_fingerprint(path: str, options: Any = None) -> list[Any]:
    """``[kind, size, sha256, ...]`` of a file: of all its bytes (``"content"``) when it is
    at most :data:`WHOLE_FILE_BYTES` or not parquet (csv); else of its parquet footer
    (``"footer"``: the schema, every row group's and column chunk's sizes, offsets and
    statistics) with, for a local file, its inode change time, which no one can set back
    (a file rewritten with equal footer and ``mtime`` still changes it; a copy or ``touch``
    costs a recomputation, never a wrong reuse).

    >>> import tempfile, os
    >>> f = os.path.join(tempfile.mkdtemp(), "a.csv")
    >>> _ = open(f, "w").write("x\\n1\\n")
    >>> content_fingerprint(f)[:2]
    ['content', 4]
    """
    fs = storage.filesystem(path, options)
    with (open(path, "rb") if fs is None else storage.guarded(fs.open, path, storage.strip(path),
                                                               "rb")) as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size > WHOLE_FILE_BYTES:
            f.seek(size - 8)
            tail = f.read(8)
            footer = int.from_bytes(tail[:4], "little")
            if tail[4:] == b"PAR1" and 0 < footer <= size - 12:
                f.seek(size - 8 - footer)
                changed = os.stat(path).st_ctime_ns if fs is None else None
                return ["footer", size, hashlib.sha256(f.read(footer)).hexdigest(), changed]
        f.seek(0)
        h = hashlib.sha256()
        while chunk := f.read(8 * 1024 * 1024):
            h.update(chunk)
        return ["content", size, h.hexdigest()]


def column_hash(values: pa.Array | pa.ChunkedArray) -> str:
    """A hash of a column's Arrow memory: type, then per chunk its length, offset and every
    buffer's bytes (a dictionary's too). Equal hashes mean equal values; equal values laid
    out otherwise (other chunks, other bytes under nulls) may hash apart, which only costs
    a recomputation. Buffers are hashed where they lie, never copied.

    >>> column_hash(pa.array([1, 2])) == column_hash(pa.array([1, 2]))
    True
    >>> column_hash(pa.array([1, 2])) == column_hash(pa.array([2, 1]))
    False
    >>> column_hash(pa.array([1, None])) == column_hash(pa.array([1, 0]))
    False
    """
    h = hashlib.sha256(str(values.type).encode())  # SHA-NI: about 1 GB/s
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    todo = list(chunks)
    while todo:
        arr = todo.pop(0)
        h.update(np.array([len(arr), arr.offset, arr.null_count], dtype=np.int64).tobytes())
        for buffer in arr.buffers():
            h.update(b"-" if buffer is None else memoryview(buffer))
        if pa.types.is_dictionary(arr.type):
            todo.append(arr.dictionary)
    return h.hexdigest()


def step_keys(output: Node, input_schema: Schema, ds: Dataset) -> dict[str, str | None]:
    """The key of every statistics step of the graph ending at ``output`` on ``ds``, by step
    id; ``None`` for a step without one (never reused)."""
    return fit_keys(output, input_schema, ds)[0]


def fit_keys(output: Node, input_schema: Schema, ds: Dataset
             ) -> tuple[dict[str, str | None], dict[str, str]]:
    """:func:`step_keys`, and the *statistics key* of each statistics step whose operator
    has ``finishing_params``: its key without those parameters (what the statistics its
    state is finished from depend on; see ``StatOperator.refinish_graph``). A step whose
    key has changed but whose statistics key is a previous fit's is finished from that
    fit's statistics, with no pass over the data.

    >>> import pandas as pd
    >>> from interactive_recsys import Dataset, ops
    >>> ds = Dataset(pd.DataFrame({"c": ["x", "y", "x"]}))
    >>> a = fit_keys(["c"] >> ops.Categorify(), ds.schema, ds)
    >>> b = fit_keys(["c"] >> ops.Categorify(freq_threshold=2), ds.schema, ds)
    >>> a[0] == b[0], a[1] == b[1], a[0]["categorify-1"] == a[1]["categorify-1"]
    (False, True, False)
    """
    ids = output.node_ids()
    schemas = output.schemas(input_schema, {})  # as predicted before the fit, every time
    fingerprints = _Fingerprints(ds)
    context = {"key_version": KEY_VERSION, "library": _library_version,
               "backend": ds.backend.name, "rows": ds.known_num_rows,
               "npartitions": ds.npartitions}
    node_keys: dict[int, str | None] = {}
    out: dict[str, str | None] = {}
    statistics: dict[str, str] = {}
    for node in output.walk():
        parents = [node_keys[id(p)] for p in node.parents]
        try:
            if None in parents:
                raise _NoKey("an upstream step has no key")
            if isinstance(node, SelectNode):
                columns = node.columns(input_schema)
                description: dict[str, Any] = {
                    "select": node.selector.to_config(),
                    "columns": [_column(input_schema, c) for c in columns],
                    "data": fingerprints.of(columns)}
            elif isinstance(node, OpNode):
                description = {"step": op_description(node.op), "parents": parents}
            else:
                description = {"concat": parents}
            node_keys[id(node)] = _digest(description)
        except _NoKey:
            node_keys[id(node)] = None
        if isinstance(node, OpNode) and node.op.is_stat:
            key = node_keys[id(node)]
            if key is not None:
                groups = node.input_groups(input_schema, schemas)
                reads = node.input_schema(input_schema, schemas)
                common = {"groups": [list(g) for g in groups],
                          "reads": [_column(reads, c) for g in groups for c in g],
                          "context": context}
                if node.op.finishing_params:  # parents have keys: so does the operator
                    statistics[ids[id(node)]] = _digest({"statistics": _digest({
                        "step": op_description(node.op, node.op.finishing_params),
                        "parents": parents}), **common})
                key = _digest({"node": key, **common})
            out[ids[id(node)]] = key
    return out, statistics


def _column(schema: Schema, name: str) -> list[Any]:
    col = schema[name]
    return [name, col.dtype, sorted(str(t) for t in col.tags)]


def state_digest(state: Any) -> str | None:
    """SHA-256 of a fitted state as saved (canonical JSON), or None when it is not JSON.

    A workflow records it when a fit makes the state; a state changed since (by
    ``Workflow.update``, or by hand) no longer matches it, so its key, which describes the
    data of that fit, is not trusted for reuse any more.

    >>> state_digest({"means": {"x": 1.5}}) == state_digest({"means": {"x": 1.5}})
    True
    """
    try:
        return _digest(state)
    except _NoKey:
        return None
