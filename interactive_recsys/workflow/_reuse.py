"""Step-level fit reuse: adopting the states of another fit whose keys match.

``Workflow.fit(data, reuse=previous)`` compares each statistics step's key (what its state
depends on: :mod:`.keys`) with ``previous``'s: a step whose key is there adopts that state
(:func:`adopt`: its artifact files are linked or copied into the new artifacts folder,
under the new step id) instead of computing it. A step whose key is not there but whose
statistics key is (only its operator's ``finishing_params`` changed, e.g. Categorify's
``freq_threshold``) is finished from that state's statistics (:func:`refinish`), in one
computation that reads no data.

>>> matches({"categorify-1": "k1", "normalize-3": "k2"}, {"categorify-4": "k1"},
...         {"categorify-4": {"vocabs": {}}})
{'categorify-1': 'categorify-4'}
"""

from __future__ import annotations

import copy
import os
import shutil
from collections.abc import Iterator, Mapping
from typing import Any

from interactive_recsys.ops._base import SavedStatistics
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.store._folder_rules import refuse_links
from interactive_recsys.workflow._graph import States


# ---- adopting states --------------------------------------------------------------------------
def matches(keys: Mapping[str, str | None], previous_keys: Mapping[str, str | None],
            previous_states: States) -> dict[str, str]:
    """``{new step id: previous step id}`` of the steps whose key is one of ``previous``'s."""
    by_key = {k: i for i, k in previous_keys.items() if k is not None and i in previous_states}
    return {i: by_key[k] for i, k in keys.items() if k is not None and k in by_key}


def refinish(plan: Any, matched: Mapping[str, str], previous_states: States,
             source: str | None, source_options: Any = None) -> States:
    """The states of the ``matched`` steps (``{new id: previous id}``, matched by statistics
    key) finished from the previous states' statistics (``StatOperator.refinish_graph``;
    their files under folder ``source``), computed as one phase, ``"refinish"``, that reads
    no data. A step whose operator finds no statistics it can use there is left out (it is
    fitted). ``plan`` is the fit's, bound to its artifacts folder.

    When ``source`` is that folder itself (a refit into a fixed ``artifacts_dir``), only a
    step finished from its own previous state (same step id) is refinished: its files are
    read before they are rewritten in place, whereas another step's could be rewritten
    while it reads them."""
    same = source is not None and plan.artifacts_dir is not None \
        and _real(source) == _real(plan.artifacts_dir)
    graphs = {}
    for step in plan.steps:
        if step.node_id in matched and not (same and matched[step.node_id] != step.node_id):
            previous = SavedStatistics(previous_states[matched[step.node_id]], source,
                                       source_options)
            graph = step.op.refinish_graph(previous, plan.context(step))
            if graph is not None:
                graphs[step.node_id] = graph
    if not graphs:
        return {}
    return dict(zip(graphs, compute(*graphs.values(), phase="refinish"), strict=True))


def _paths(state: Any) -> Iterator[dict[str, Any]]:
    """Every mapping of ``state`` that has a ``"path"`` (an artifact, relative to the
    artifacts folder)."""
    todo = [state]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            if isinstance(item.get("path"), str):
                yield item
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)


def _moved(relative: str, old_id: str, new_id: str) -> str:
    """An artifact path of step ``old_id`` under step ``new_id`` (artifacts live under their
    step id: ``categorify-1/vocab-000``); one that is not (a side table) stays."""
    head, _, rest = relative.replace(os.sep, "/").partition("/")
    return f"{new_id}/{rest}" if head == old_id and rest else relative


def adopt(matched: Mapping[str, str], previous_states: States, source: str | None,
          target: str, source_options: Any = None, target_options: Any = None) -> States:
    """The previous states of ``matched`` steps (``{new id: previous id}``), with their
    artifacts linked (or copied) from folder ``source`` into ``target`` under the new step
    ids and their paths rewritten so. A step whose artifacts are missing from ``source``,
    or whose place in ``target`` holds another adopted step's source, is left out (it is
    computed)."""
    plans: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {}
    for new_id, old_id in matched.items():
        state = copy.deepcopy(previous_states[old_id])  # its paths are rewritten below
        copies = []
        for entry in _paths(state):
            moved = _moved(entry["path"], old_id, new_id)
            if source is None:
                break
            copies.append((resolve(source, entry["path"]), resolve(target, moved)))
            entry["path"] = moved
        else:
            if all(storage.exists(s, source_options) for s, _ in copies):
                plans[new_id] = state, copies
    sources = {_real(s) for _, copies in plans.values() for s, _ in copies}
    adopted: States = {}
    for new_id, (state, copies) in plans.items():
        if any(_real(d) != _real(s) and _real(d) in sources for s, d in copies):
            continue  # it would overwrite what another step copies from
        for src, dst in copies:
            if _real(src) != _real(dst):
                _copy(src, dst, source_options, target_options)
        adopted[new_id] = state
    return adopted


def _real(path: str) -> str:
    return path if storage.is_remote(path) else os.path.realpath(path)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)  # the files are never rewritten in place (atomic renames)
    except OSError:
        shutil.copy2(src, dst)


def _copy(src: str, dst: str, source_options: Any, target_options: Any) -> None:
    """Copy a file or folder ``src`` to ``dst`` (replacing it): hard links when both are on
    this machine's disk, else the store's copies."""
    if not storage.is_remote(src) and not storage.is_remote(dst):
        refuse_links(os.path.dirname(src) if os.path.islink(src) else src,
                     "artifacts folder")  # never copy what a link points to
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        elif os.path.exists(dst):
            os.remove(dst)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dst, copy_function=_link_or_copy)
        else:
            _link_or_copy(src, dst)
        return
    target = storage.filesystem(dst, target_options)
    if target is not None and storage.guarded(target.exists, dst, storage.strip(dst)):
        storage.guarded(target.rm, dst, storage.strip(dst), recursive=True)
    if storage.isdir(src, source_options):
        storage.copy_directory(src, dst, source_options, target_options)
        return
    fs = storage.filesystem(src, source_options)
    if fs is not None:
        data = storage.guarded(fs.cat_file, src, storage.strip(src))
    else:
        with open(src, "rb") as f:
            data = f.read()
    if target is None:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
    else:
        storage.guarded(target.pipe_file, dst, storage.strip(dst), data)
