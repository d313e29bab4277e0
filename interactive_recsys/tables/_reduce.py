"""The tree reduction every statistics build runs, and how many hash splits its tables get.

Statistics are computed per data partition (a *partial*), then combined ``FAN_IN`` at a
time, level by level, until one result is left (:func:`tree`); no task holds more than
``FAN_IN`` partials. A table with one row per value (a vocabulary, keyed statistics, value
counts) is first split by the value-defined hash into ``S`` tables (:func:`num_splits`);
after a first level over whole partials (:func:`first_level`), each split is reduced on its
own, so above it no task holds more than one split of it.

How a task is made is the caller's (``dask.delayed`` calls, or a low-level :class:`Graph`
where a graph of many splits must be built in linear time); the tree is the same:

>>> tree(list(range(20)), sum, lambda func, chunk, depth, index: func(chunk))
190
>>> num_splits(rows=20_000_000, npartitions=4, split_out=None)   # about 8M rows a split
3
>>> num_splits(rows=None, npartitions=40, split_out=None)  # unknown: 500k rows a partition
3
>>> num_splits(rows=20_000_000, npartitions=4, split_out=5)
5
"""

from __future__ import annotations

import functools
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import dask
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

#: Items combined by one task of the tree.
FAN_IN = 8
#: Data rows per hash split when ``split_out`` is not given.
ROWS_PER_SPLIT = 8_000_000
#: Rows assumed per partition when the row count is unknown (e.g. csv input).
ROWS_PER_PARTITION_GUESS = ROWS_PER_SPLIT // 16
#: Most hash splits chosen automatically; ``split_out`` may ask for up to ``MAX_SPLITS``.
AUTO_MAX_SPLITS = 64
#: Most hash splits of a vocabulary or statistics table (``split_out``).
MAX_SPLITS = 1024
#: First-level tasks wanted at least, so that few large partitions still spread over the
#: workers (see :func:`first_level_by_keys`).
MIN_FIRST_TASKS = 32

#: ``task(func, chunk, depth, index)``: a node computing ``func(chunk)`` (``chunk`` a list
#: of nodes of the level below; ``depth`` 0 is the first level, ``index`` the chunk's number).
Task = Callable[[Callable[[list[Any]], Any], list[Any], int, int], Any]


def estimated_rows(rows: int | None, npartitions: int) -> int:
    """``rows``, or a guess of ``ROWS_PER_PARTITION_GUESS`` a partition when unknown."""
    return rows if rows is not None else npartitions * ROWS_PER_PARTITION_GUESS


def num_splits(rows: int | None, npartitions: int, split_out: int | None) -> int:
    """Hash splits of a statistics table: ``split_out``, or about ``ROWS_PER_SPLIT`` data
    rows a split (at most ``AUTO_MAX_SPLITS``); ``rows`` is ``None`` when unknown."""
    if split_out:
        return split_out
    rows = estimated_rows(rows, npartitions)
    return max(1, min(AUTO_MAX_SPLITS, math.ceil(rows / ROWS_PER_SPLIT)))


def pick(mapping: Mapping[Any, Any], key: Any) -> Any:
    """``mapping[key]``: one operator's or one key's part of a partial, as a task."""
    return mapping[key]


def tree(items: list[Any], combine: Callable[[list[Any]], Any], task: Task,
         first: Callable[[list[Any]], Any] | None = None, fan_in: int = FAN_IN) -> Any:
    """Combine ``items`` ``fan_in`` at a time until one is left.

    ``first`` (when given) makes the first level, even of a single chunk (e.g. it turns
    partials into what ``combine`` takes); ``combine`` every level above it. Without
    ``first`` a single item is returned as it is.
    """
    items = list(items)
    depth = 0
    if first is not None:
        items = [task(first, items[i:i + fan_in], 0, i // fan_in)
                 for i in range(0, len(items), fan_in)]
    while len(items) > 1:
        depth += 1
        items = [task(combine, items[i:i + fan_in], depth, i // fan_in)
                 for i in range(0, len(items), fan_in)]
    return items[0]


def first_level(items: list[Any], combine: Callable[[list[Any]], Any], task: Task,
                fan_in: int = FAN_IN) -> list[Any]:
    """One level of :func:`tree`: ``combine`` of ``fan_in`` items at a time (the items as
    they are when there is at most one).

    A split table's trees start from this level over whole partials (every key and split
    of ``fan_in`` partitions summed by one task), not from one level per key and split:
    that made ``keys x splits x partitions / fan_in`` tasks, and since the splits and the
    partitions both grow with the rows, their product grew with the square of the rows
    (100M Kaggle-profile rows: 13 splits, 400 partitions, 17k first-level tasks). A task
    still holds at most ``fan_in`` partitions' statistics.

    >>> first_level(list(range(20)), sum, lambda func, chunk, depth, index: func(chunk))
    [28, 92, 70]
    """
    if len(items) <= 1:
        return list(items)
    return [task(combine, items[i:i + fan_in], 0, i // fan_in)
            for i in range(0, len(items), fan_in)]


def first_level_by_keys(items: list[Any], keys: list[Any],
                        combine: Callable[..., Any], task: Task,
                        fan_in: int = FAN_IN, cut: Task | None = None) -> dict[Any, list[Any]]:
    """:func:`first_level` of partials holding several keys, for each chunk of the keys:
    ``{key: the first-level nodes that hold it}``; ``combine(items, keys=chunk)`` combines
    the chunk's keys of ``items``; ``cut`` makes the tasks that take a chunk's keys of one
    partial (``task`` when not given).

    With many partitions the keys stay together (one chunk: every key and split of
    ``fan_in`` partitions in one task). With few, one task per ``fan_in`` partitions would
    leave the workers idle: 8 partitions of 1M rows made one task summing all 26
    vocabularies while the other worker waited. The keys are then cut into chunks, for
    about :data:`MIN_FIRST_TASKS` tasks in all (at most one chunk a key), so the level
    stays linear in the partitions.

    Each chunk's task then takes the chunk's keys of every partial, cut where the partial
    is (one small task each), not the whole partials: a Dask scheduler weighs the bytes a
    task would fetch, and whole partials (every vocabulary's counts of a partition) made
    every chunk's task heavy to move, so they ran one after another on the worker that had
    fetched the partials while the other one waited (8M Kaggle-profile rows in 8 files on
    2 workers: one worker idle for the last 1.5 s of a 6 s fit).

    >>> nodes = first_level_by_keys([{"a": 1, "b": 2}, {"a": 3, "b": 4}], ["a", "b"],
    ...     lambda items, keys: {k: sum(i[k] for i in items) for k in keys},
    ...     lambda func, chunk, depth, index: func(chunk))
    >>> nodes
    {'a': [{'a': 4}], 'b': [{'b': 6}]}
    """
    if not keys:
        return {}
    groups = math.ceil(len(items) / fan_in)
    chunks = 1 if len(items) <= 1 else max(1, min(len(keys), MIN_FIRST_TASKS // groups))
    nodes: dict[Any, list[Any]] = {}
    for c in range(chunks):
        chunk = tuple(keys[c * len(keys) // chunks:(c + 1) * len(keys) // chunks])
        parts = items if chunks == 1 else [(cut or task)(functools.partial(_keys_of, keys=chunk),
                                                        [item], 0, i)
                                           for i, item in enumerate(items)]
        level = first_level(parts, functools.partial(combine, keys=chunk), task, fan_in)
        nodes.update(dict.fromkeys(chunk, level))
    return nodes


def _keys_of(items: list[Mapping[Any, Any]], keys: tuple[Any, ...]) -> dict[Any, Any]:
    """The ``keys`` of the one partial in ``items`` (a task's chunk of one)."""
    return {k: items[0][k] for k in keys}


def delayed_task(prefix: str, what: str, func: Callable, *args: Any) -> Delayed:
    """``func(*args)`` as a ``dask.delayed`` call keyed ``{prefix}-{what}-{random}`` (the
    prefix shows in the task stream whose work it is)."""
    return dask.delayed(func, pure=False)(*args, dask_key_name=f"{prefix}-{what}-"
                                                                f"{uuid.uuid4().hex[:12]}")


def delayed_tasks(prefix: str, what: str) -> Task:
    """Tasks of :func:`tree` as :func:`delayed_task` calls."""
    return lambda func, chunk, depth, index: delayed_task(prefix, what, func, chunk)


class Graph:
    """A low-level Dask graph built task by task: ``task`` adds ``func(*args)`` under a new
    key named after the step and returns the key, which later tasks take as an argument.

    (Chaining ``dask.delayed`` calls instead merges every input's graph layers on each
    call, which made building a graph of many splits quadratic in ``split_out``.)

    >>> g = Graph("demo")
    >>> total = tree([g.task("one", int, "1") for _ in range(3)], sum, g.tasks("sum"))
    >>> g.delayed(total, []).compute()
    3
    """

    def __init__(self, prefix: str) -> None:
        self.prefix, self.dsk = prefix, {}

    def task(self, what: str, func: Callable, *args: Any) -> str:
        key = f"{self.prefix}-{what}-{uuid.uuid4().hex[:12]}"
        self.dsk[key] = (func, *args)
        return key

    def tasks(self, what: str) -> Task:
        """Tasks of :func:`tree` in this graph (each chunk's keys as separate arguments)."""
        return lambda func, chunk, depth, index: self.task(what, listed(func), *chunk)

    def delayed(self, key: str, inputs: list[Any]) -> Delayed:
        return Delayed(key, HighLevelGraph.from_collections(key, self.dsk, dependencies=inputs))


def listed(func: Callable[[list[Any]], Any]) -> Callable[..., Any]:
    """``func(list)`` as ``f(*items)``, for tasks whose inputs are separate arguments."""
    return functools.partial(_call_with_list, func)


def _call_with_list(func: Callable[[list[Any]], Any], *items: Any) -> Any:
    return func(list(items))
