"""The saved format: ``workflow.json`` + ``artifacts/``, written atomically, read back with
every field checked, every failure one :class:`WorkflowFormatError`.

:func:`write_workflow` writes a folder (only the artifact files the states name, each with
its SHA-256).

A saved workflow is a file people send to each other, so :func:`read_config` trusts nothing
in it: wrong types, missing keys, bad JSON, references to later nodes (cycles), deep nesting
and artifact paths leading outside the workflow folder all give a
:class:`~interactive_recsys.errors.WorkflowFormatError` that names the field, never a raw
``KeyError``/``IndexError``/``TypeError``/``RecursionError``.

>>> import json, tempfile, os
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, "workflow.json"), "w") as f:
...     _ = f.write(json.dumps({"format": FORMAT_NAME, "format_version": 1, "nodes": "x"}))
>>> try:
...     read_config(folder)
... except WorkflowFormatError as exc:
...     print(str(exc).split(": ", 1)[1])
'nodes' must be a list, got str 'x'.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from interactive_recsys._version import __version__ as _library_version
from interactive_recsys.errors import IRSError, NotFittedError, VersionError, WorkflowFormatError
from interactive_recsys.ops._base import OPERATORS, Operator, SavedParamError
from interactive_recsys.schema import ColumnSelector, Schema
from interactive_recsys.store import commit, storage
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.store._folder_rules import (
    artifact_paths,
    copy_named,
    named_files,
    refuse_links,
    verify_checksums,
    warn_unrecorded,
)
from interactive_recsys.store._outputs import atomic_directory
from interactive_recsys.tables._vocabulary_check import check_parquet_files
from interactive_recsys.workflow._graph import NODE_TYPES, Node, OpNode

FORMAT_NAME = "interactive-recsys-workflow"
FORMAT_VERSION = 1
#: Largest workflow.json read (bytes): a workflow is a small description, not data.
MAX_CONFIG_BYTES = 64 * 1024 * 1024
#: Deepest nesting of lists/dicts accepted in workflow.json.
MAX_DEPTH = 64


@dataclass
class LoadedConfig:
    """What ``workflow.json`` describes, checked."""

    nodes: list[Node]
    output: Node
    states: dict[str, dict[str, Any]]  # by step id (``Node.node_ids``)
    input_schema: Schema | None
    fitted: bool
    artifacts_dir: str | None
    #: each fitted step's key and its state's digest when fitted (``{"key", "state"}``, see
    #: :mod:`interactive_recsys.workflow._reuse`), and its statistics key (``"statistics"``)
    #: when its operator has finishing parameters, by step id; {} when saved without
    keys: dict[str, dict[str, str]] = field(default_factory=dict)
    #: SHA-256 of every artifact file recorded at save (``{relative path: sha256}``), None
    #: for a folder saved without them; checked at load for a local folder
    #: (:mod:`.folder_rules`), before reuse or update for a URL
    artifact_sums: dict[str, str] | None = None


def _fail(config_path: str, field: str, problem: str) -> WorkflowFormatError:
    return WorkflowFormatError(f"{config_path!r} is not a valid saved workflow: {field!r} "
                               f"{problem}")


def _type_name(value: Any) -> str:
    return {dict: "object", list: "list", str: "str", bool: "bool", int: "int",
            float: "float", type(None): "null"}.get(type(value), type(value).__name__)


def _depth(value: Any) -> int:
    """Nesting depth of JSON data, without recursion; only containers are visited (a list of
    millions of numbers or strings costs one pass in C, not a Python step per element)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                return depth
            children = item.values() if isinstance(item, dict) else item
            if _has_containers(children):
                todo.extend([(v, depth + 1) for v in children if type(v) in _CONTAINERS])
    return deepest


_CONTAINERS = (dict, list)


def _has_containers(values: Any) -> bool:
    """Whether ``values`` holds a dict or list (the types are gathered in C)."""
    return not set(map(type, values)).isdisjoint(_CONTAINERS)


def _paths(value: Any) -> list[tuple[str, Any]]:
    """Every ``"path"`` entry inside a state, with where it sits; only containers are
    visited, and a place is spelled out only for an entry found."""
    found: list[tuple[str, Any]] = []
    todo: list[tuple[Any, Any]] = [((), value)]
    while todo:
        where, item = todo.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if k == "path":
                    found.append((_spelled((where, f".{k}")), v))
                if type(v) in _CONTAINERS:
                    todo.append(((where, f".{k}"), v))
        elif _has_containers(item):
            todo.extend([((where, i), v) for i, v in enumerate(item)
                         if type(v) in _CONTAINERS])
    return found


def _spelled(where: Any) -> str:
    parts = []
    while where:
        where, part = where
        parts.append(f"[{part}]" if isinstance(part, int) else part)
    return "".join(reversed(parts))


def read_json(config_path: str, storage_options: Any = None) -> dict[str, Any]:
    """The JSON object of ``workflow.json`` (a path or an fsspec URL), or
    :class:`WorkflowFormatError`."""
    fs = storage.filesystem(config_path, storage_options)
    found = os.path.isfile(config_path) if fs is None else \
        storage.guarded(fs.isfile, config_path, storage.strip(config_path))
    if not found:
        raise VersionError(f"{os.path.dirname(config_path)!r} holds no workflow.json; is it a "
                           "directory written by Workflow.save?")
    size = os.path.getsize(config_path) if fs is None else \
        storage.guarded(fs.size, config_path, storage.strip(config_path))
    if size > MAX_CONFIG_BYTES:
        raise WorkflowFormatError(f"{config_path!r} is larger than {MAX_CONFIG_BYTES:,} bytes; "
                                  "a saved workflow is a small description, not data.")
    try:
        if fs is None:
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        else:
            config = json.loads(storage.guarded(fs.cat_file, config_path,
                                                storage.strip(config_path)).decode("utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise WorkflowFormatError(f"{config_path!r} is not valid JSON ({type(exc).__name__}: "
                                  f"{str(exc)[:200]}); save the workflow again.") from None
    if not isinstance(config, dict):
        raise _fail(config_path, "(top level)", f"must be an object, got {_type_name(config)}.")
    if _depth(config) > MAX_DEPTH:
        raise _fail(config_path, "(top level)", f"nests deeper than {MAX_DEPTH} levels.")
    if config.get("format") != FORMAT_NAME:
        raise VersionError(f"{config_path!r} is not an interactive-recsys workflow (its "
                           f"'format' is {str(config.get('format'))[:80]!r}).")
    version = config.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise VersionError(f"{config_path!r} was written in workflow format {version!r} (by "
                           f"interactive-recsys {str(config.get('library_version'))[:40]}); "
                           f"this is version {_library_version}, which reads format "
                           f"{FORMAT_VERSION}. Re-fit the workflow or install the matching "
                           "version.")
    return config


def _expect(config_path: str, field: str, value: Any, kind: type | tuple) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        names = " or ".join(_type_name(k()) for k in (kind if isinstance(kind, tuple)
                                                      else (kind,)))
        raise _fail(config_path, field, f"must be {'an' if names[0] in 'aeiou' else 'a'} "
                                        f"{names}, got {_type_name(value)} "
                                        f"{str(value)[:60]!r}.")
    return value


def _node(config_path: str, i: int, nc: Any, nodes: list[Node],
          functions: dict[str, Callable] | None) -> Node:
    where = f"nodes[{i}]"
    _expect(config_path, where, nc, dict)
    kind = nc.get("kind")
    if not isinstance(kind, str) or kind not in NODE_TYPES:
        raise _fail(config_path, f"{where}.kind", f"must be 'select', 'op' or 'concat', got "
                                                  f"{str(kind)[:60]!r}.")
    parents = _expect(config_path, f"{where}.parents", nc.get("parents", []), list)
    for p in parents:
        _expect(config_path, f"{where}.parents", p, int)
        if not 0 <= p < i:
            raise _fail(config_path, f"{where}.parents", f"refers to node {p}, which does not "
                                                         "come before it (nodes are listed "
                                                         "parents first; cycles are not "
                                                         "allowed).")
    wanted = {"select": (0, 0), "op": (1, 1 << 30), "concat": (1, 1 << 30)}[kind]
    if not wanted[0] <= len(parents) <= wanted[1]:
        raise _fail(config_path, f"{where}.parents", f"has {len(parents)} entries, which a "
                                                     f"{kind!r} node cannot have.")
    op = selector = None
    try:
        if kind == "op":
            oc = _expect(config_path, f"{where}.op", nc.get("op"), dict)
            params = _expect(config_path, f"{where}.op.params", oc.get("params", {}), dict)
            name = _expect(config_path, f"{where}.op.op", oc.get("op"), str)
            if name in OPERATORS:
                try:
                    params = OPERATORS[name].saved_params(params, functions)
                except SavedParamError as exc:
                    raise _fail(config_path, f"{where}.op.params.{exc.param}", str(exc)) from None
            op = Operator.from_config({"op": name, "params": params})
        if kind == "select":
            sc = _expect(config_path, f"{where}.selector", nc.get("selector"), dict)
            names = _expect(config_path, f"{where}.selector.names", sc.get("names", []), list)
            tags = _expect(config_path, f"{where}.selector.tags", sc.get("tags", []), list)
            optional = _expect(config_path, f"{where}.selector.optional",
                               sc.get("optional", []), list)
            selector = ColumnSelector.from_config({"names": names, "tags": tags,
                                                   "optional": optional})
    except WorkflowFormatError:
        raise
    except (IRSError, TypeError, ValueError, KeyError, IndexError, AttributeError,
            RecursionError) as exc:
        field = f"{where}.op" if kind == "op" else f"{where}.selector"
        raise _fail(config_path, field, f"is invalid: {exc}") from exc
    return Node(kind, selector=selector, op=op, parents=[nodes[p] for p in parents])


def read_config(path: str, functions: dict[str, Callable] | None = None,
                storage_options: Any = None) -> LoadedConfig:
    """Read and check the workflow saved in folder ``path`` (a path or an fsspec URL)."""
    config_path = storage.join(path, "workflow.json")
    refuse_links(path)  # a link would read (and a save copy) a file from elsewhere
    config = read_json(config_path, storage_options)
    nodes, output = _graph_of(config_path, config, functions)
    fitted = _expect(config_path, "fitted", config.get("fitted", False), bool)
    artifacts = storage.join(path, "artifacts")
    artifacts_dir = artifacts if storage.isdir(artifacts, storage_options) else None
    ids = nodes[output].node_ids()  # states are keyed by step id (unreachable steps: dropped)
    states = _states_of(config_path, config, nodes, ids, artifacts_dir, storage_options)
    keys: dict[str, dict[str, str]] = {}
    for key, value in _expect(config_path, "keys", config.get("keys", {}), dict).items():
        _expect(config_path, f"keys.{key}", value, dict)
        for part in ("key", "state"):
            _expect(config_path, f"keys.{key}.{part}", value.get(part), str)
        if "statistics" in value:  # an operator with finishing parameters
            _expect(config_path, f"keys.{key}.statistics", value["statistics"], str)
        if not key.isdigit() or not int(key) < len(nodes):
            raise _fail(config_path, f"keys.{key}", "is not the index of a node.")
        if id(nodes[int(key)]) in ids and ids[id(nodes[int(key)])] in states:
            keys[ids[id(nodes[int(key)])]] = {
                part: value[part] for part in ("key", "state", "statistics") if part in value}
    sums = _sums_of(config_path, config, artifacts_dir, not storage.is_remote(path))
    if sums is None and artifacts_dir is not None and artifact_paths(states):
        warn_unrecorded(config_path, "workflow", artifact_paths(states))  # an older save
    input_schema = _input_schema_of(config_path, config)
    if fitted:
        missing = [i for i, n in enumerate(nodes) if isinstance(n, OpNode) and n.op.is_stat
                   and id(n) in ids and ids[id(n)] not in states]
        if missing:
            raise _fail(config_path, f"states.{missing[0]}", "is missing: the workflow is "
                                                             "marked fitted.")
        if input_schema is None:
            raise _fail(config_path, "input_schema", "is missing: the workflow is marked "
                                                     "fitted.")
    if input_schema is not None:  # the graph, its parameters and states must fit together
        try:
            nodes[output].output_schema(input_schema, states if fitted else None)
        except NotFittedError:
            pass  # a function not passed back yet (a saved function step): said when used
        except (IRSError, TypeError, ValueError, KeyError, IndexError, AttributeError,
                RecursionError) as exc:
            raise _fail(config_path, "states" if fitted else "nodes",
                        f"do not match the input schema: {type(exc).__name__}: "
                        f"{str(exc)[:300]}") from exc
    return LoadedConfig(nodes, nodes[output], states, input_schema, fitted, artifacts_dir, keys,
                        sums)


def _graph_of(config_path: str, config: dict[str, Any],
              functions: dict[str, Callable] | None) -> tuple[list[Node], int]:
    """The nodes of ``config`` (parents first) and the index of the output node."""
    raw_nodes = _expect(config_path, "nodes", config.get("nodes"), list)
    if not raw_nodes:
        raise _fail(config_path, "nodes", "is empty; a workflow has at least one node.")
    nodes: list[Node] = []
    for i, nc in enumerate(raw_nodes):
        nodes.append(_node(config_path, i, nc, nodes, functions))
    output = _expect(config_path, "output", config.get("output"), int)
    if not 0 <= output < len(nodes):
        raise _fail(config_path, "output", f"is {output}, not a node index (0 to "
                                           f"{len(nodes) - 1}).")
    return nodes, output


def _states_of(config_path: str, config: dict[str, Any], nodes: list[Node],
               ids: dict[int, str], artifacts_dir: str | None,
               storage_options: Any) -> dict[str, dict[str, Any]]:
    """The saved states by step id, each checked by its operator, with every artifact it
    names inside the artifacts folder and present."""
    raw_states = _expect(config_path, "states", config.get("states", {}), dict)
    states: dict[str, dict[str, Any]] = {}
    for key, state in raw_states.items():
        field = f"states.{key}"
        if not key.isdigit() or not int(key) < len(nodes):
            raise _fail(config_path, field, "is not the index of a node.")
        node = nodes[int(key)]
        if not isinstance(node, OpNode) or not node.op.is_stat:
            raise _fail(config_path, field, "belongs to a step without statistics.")
        _expect(config_path, field, state, dict)
        try:
            node.op.check_state(state)
        except (ValueError, TypeError, KeyError) as exc:
            raise _fail(config_path, field, f"is malformed: {exc}.") from None
        for where, relative in _paths(state):
            if artifacts_dir is None:
                raise _fail(config_path, field + where, "names an artifact, but the folder "
                                                        "holds no artifacts/.")
            full = resolve(artifacts_dir, relative, f"artifact path ({field}{where})")
            if not storage.exists(full, storage_options):
                raise _fail(config_path, field + where, f"names {relative!r}, which is missing "
                                                        "from the artifacts folder.")
        if artifacts_dir is not None and _paths(state):  # footers only: cheap
            check_parquet_files(artifacts_dir, named_files(
                artifacts_dir, [r for _, r in _paths(state)], storage_options), storage_options)
            node.op.check_saved_files(state, artifacts_dir, storage_options)
        if id(node) in ids:
            states[ids[id(node)]] = state
    return states


def _sums_of(config_path: str, config: dict[str, Any], artifacts_dir: str | None,
             local: bool) -> dict[str, str] | None:
    """The artifact files' SHA-256 recorded at save (None when saved without them), checked
    against the files for a ``local`` folder."""
    if config.get("artifacts") is None:
        return None
    sums = _expect(config_path, "artifacts", config["artifacts"], dict)
    for rel, digest in sums.items():
        _expect(config_path, f"artifacts.{rel}", digest, str)
        if len(digest) != 64 or artifacts_dir is None:
            raise _fail(config_path, f"artifacts.{rel}", "is not the SHA-256 of a file of "
                                                         "the artifacts folder.")
        resolve(artifacts_dir, rel, f"artifact file (artifacts.{rel})")
    if local and artifacts_dir is not None:
        verify_checksums(artifacts_dir, sums, config_path)
    return sums


def _input_schema_of(config_path: str, config: dict[str, Any]) -> Schema | None:
    if config.get("input_schema") is None:
        return None
    raw = _expect(config_path, "input_schema", config["input_schema"], dict)
    try:
        columns = _expect(config_path, "input_schema.columns", raw.get("columns"), list)
        for j, c in enumerate(columns):
            _expect(config_path, f"input_schema.columns[{j}]", c, dict)
            _expect(config_path, f"input_schema.columns[{j}].name", c.get("name"), str)
            _expect(config_path, f"input_schema.columns[{j}].dtype", c.get("dtype"), str)
            _expect(config_path, f"input_schema.columns[{j}].tags", c.get("tags", []), list)
            _expect(config_path, f"input_schema.columns[{j}].properties",
                    c.get("properties", {}), dict)
        return Schema.from_dict(raw)
    except WorkflowFormatError:
        raise
    except (IRSError, TypeError, ValueError) as exc:
        raise _fail(config_path, "input_schema", f"is invalid: {exc}") from exc


# ---- writing ----------------------------------------------------------------------------------
def write_workflow(path: str, config: dict[str, Any], states: dict[str, dict[str, Any]],
                   artifacts_dir: str | None, artifacts_options: Any, options: Any,
                   overwrite: bool) -> str:
    """Write ``config`` as ``workflow.json`` into folder ``path`` (opened with ``options``)
    with the files of ``artifacts_dir`` that ``states`` name, copied file by file with
    their SHA-256 recorded (``config["artifacts"]``), atomically: a failed write leaves no
    partial folder; a URL's folder is published with a ``_SUCCESS`` manifest, as a local
    one is."""
    has_artifacts = bool(artifacts_dir) and storage.isdir(artifacts_dir, artifacts_options)
    named = artifact_paths(states) if has_artifacts else []
    if storage.is_remote(path):
        with commit.remote_atomic_directory(path, options, overwrite=overwrite) as tmp:
            config["artifacts"] = copy_named(artifacts_dir, storage.join(
                tmp, "artifacts"), named, artifacts_options, options) if named else {}
            text = json.dumps(config, indent=2, allow_nan=False)
            storage.guarded(storage.filesystem(path, options).pipe_file, path,
                            storage.strip(storage.join(tmp, "workflow.json")), text.encode())
            commit.expect(tmp, {"workflow.json": len(text.encode())})
        return path
    with atomic_directory(path, overwrite=overwrite) as tmp:
        config["artifacts"] = copy_named(artifacts_dir, os.path.join(
            tmp, "artifacts"), named, artifacts_options) if named else {}
        with open(os.path.join(tmp, "workflow.json"), "w") as f:
            f.write(json.dumps(config, indent=2, allow_nan=False))
        storage.local_manifest(tmp)  # last: every file with its size
    return path
