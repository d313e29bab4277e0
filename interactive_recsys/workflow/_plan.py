"""A workflow graph flattened into steps that run on one partition.

A :class:`Plan` is what travels to Dask workers: plain steps with integer parent
indices, each operator with its fitted state and context. Evaluating a partition
runs every needed step once, in order, fused into one task. :mod:`.execution` compiles
the plan (once per fit or transform) and builds the Dask graphs around it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interactive_recsys.backend import Backend, get_backend
from interactive_recsys.errors import SchemaError
from interactive_recsys.ops._base import OpContext, Operator, RowFilter
from interactive_recsys.runtime._memory_release import release_memory
from interactive_recsys.schema import RESERVED_PREFIX, Schema
from interactive_recsys.selector import flatten

#: Column that carries each row's place in the dataset through a shuffle (dropped after it).
ORDER_COLUMN = RESERVED_PREFIX + "order"


@dataclass
class Step:
    """One node of the graph, ready to run, with its output schema."""

    index: int
    parents: list[int]
    node_id: str
    schema: Schema

    @property
    def output_columns(self) -> list[str]:
        return self.schema.names

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (for Dask workers) without the schemas: they serve the client, which
        builds each stage's meta from them; a partition runs without them."""
        return {**vars(self), "schema": None} | (
            {"input_schema": None} if "input_schema" in vars(self) else {})


@dataclass
class SelectStep(Step):
    """Input columns, read from the partition."""

    columns: list[str] = field(default_factory=list)


@dataclass
class OpStep(Step):
    """An operator on its parents' outputs: its column groups, input schema and state."""

    op: Operator | None = None
    groups: list[tuple[str, ...]] = field(default_factory=list)
    state: dict[str, Any] | None = None
    input_schema: Schema = field(default_factory=Schema)


@dataclass
class ConcatStep(Step):
    """Its parents' outputs side by side."""


@dataclass
class Plan:
    """Steps in topological order plus what they share (backend, artifacts, extras)."""

    steps: list[Step]
    backend_name: str
    artifacts_dir: str | None
    extra: dict[str, Any] = field(default_factory=dict)
    #: keeps a temporary artifacts folder alive while a lazy result may still read it
    #: (``artifacts.TemporaryArtifacts``; pickled as its path only)
    keep: Any = field(default=None, repr=False, compare=False)
    #: fsspec options of ``artifacts_dir`` when it is a URL; they travel with the plan
    storage_options: dict[str, Any] | None = field(default=None, repr=False)
    #: the graph and the input schema the plan was compiled from (on the client only)
    graph: Any = field(default=None, repr=False, compare=False)
    input_schema: Schema | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (for Dask workers) without the graph: the steps are what runs."""
        return {**vars(self), "graph": None, "input_schema": None}

    def set_states(self, states: dict[str, dict[str, Any]]) -> None:
        """Give the operator steps these fitted states (by step id) and every step the
        schemas, input schemas and column groups that follow from them (a fitted step can
        change the columns of the steps after it)."""
        nodes = list(self.graph.walk())
        schemas = self.graph.schemas(self.input_schema, states)
        for node, step in zip(nodes, self.steps, strict=True):
            step.schema = schemas[id(node)]
            if isinstance(step, OpStep):
                if step.op is None or step.op.dependency_nodes():  # parameters given as
                    step.op = node.op  # steps: now with their columns (a step's op set
                    # since, e.g. an update's delta operator, stays)
                step.state = states.get(step.node_id)
                step.groups = node.input_groups(self.input_schema, schemas)
                step.input_schema = node.input_schema(self.input_schema, schemas)

    def states(self) -> dict[str, dict[str, Any]]:
        """The fitted states of the plan's steps, by step id."""
        return {s.node_id: s.state for s in self.steps
                if isinstance(s, OpStep) and s.state is not None}

    @property
    def backend(self) -> Backend:
        return get_backend(self.backend_name)

    def context(self, step: OpStep) -> OpContext:
        return OpContext(self.backend, step.groups, step.node_id, self.artifacts_dir, self.extra,
                         self.storage_options)

    def evaluate(self, df: Any, targets: list[int],
                 entry: int | None = None) -> dict[int, tuple[Any, Any]]:
        """Outputs ``(frame, keep_mask_or_None)`` of the ``targets`` steps on one partition.

        With ``entry`` (a shuffling step), ``df`` is a partition of that step's shuffled input
        (see :meth:`shuffle_input`): the step and what follows it run, nothing before it.

        Consecutive per-value steps (``Operator.elementwise``: FillMissing -> Clip -> LogOp
        -> Normalize) whose outputs nothing else reads run as one chain per column
        (:class:`_Chain`, ``Backend.elementwise``), with no frame built between them.
        """
        b = self.backend
        needed = self._ancestors(targets, entry)
        readers: dict[int, list[Step]] = {}
        for step in self.steps:
            if step.index in needed and step.index != entry:
                for p in step.parents:
                    readers.setdefault(p, []).append(step)
        results: dict[int, tuple[Any, Any]] = {}
        for step in self.steps:
            if step.index not in needed:
                continue
            if isinstance(step, SelectStep):
                results[step.index] = (b.select(df, step.columns), None)
                continue
            if step.index != entry:
                chained = self._chained(step, results)
                if chained is not None:
                    later = readers.get(step.index, [])
                    pending = step.index not in targets and len(later) == 1 and \
                        self._chain_steps(later[0], chained.columns) is not None
                    results[step.index] = (chained if pending else chained.run(b),
                                           results[step.parents[0]][1])
                    continue
            if step.index == entry:  # restore dataset order, which the shuffle may mix up
                ordered = b.sort_rows(df, ORDER_COLUMN)
                frame = b.select(ordered, [c for c in df.columns if c != ORDER_COLUMN])
                mask = None
            else:
                frame, mask = self._join(results, step.parents)
            if isinstance(step, OpStep):
                ctx = self.context(step)
                if isinstance(step.op, RowFilter):
                    keep = step.op.row_mask(frame, step.state, ctx)
                    mask = keep if mask is None else b.logical_and(mask, keep)
                elif step.op.shuffle_keys() is not None and mask is not None:
                    frame, mask = b.filter_rows(frame, mask), None  # rows regroup: drop first
                frame = step.op.transform(frame, step.state, ctx)
            results[step.index] = (frame, mask)
        return {t: results[t] for t in targets}

    def _chained(self, step: Step, results: dict[int, tuple[Any, Any]]) -> _Chain | None:
        """``step`` appended to the chain of per-value steps its one parent ends (or starts
        one on the parent's output); None when ``step`` is no such step."""
        if len(step.parents) != 1:
            return None
        parent = results[step.parents[0]][0]
        columns = parent.columns
        steps = self._chain_steps(step, columns)
        if steps is None:
            return None
        chain = parent if isinstance(parent, _Chain) else _Chain(parent, {n: [] for n in columns})
        return chain.then(steps)

    @staticmethod
    def _chain_steps(step: Step, columns: Any) -> dict[str, tuple] | None:
        """The per-value step of ``step`` on each of ``columns`` (None: it has none)."""
        if not isinstance(step, OpStep) or len(step.parents) != 1 \
                or isinstance(step.op, RowFilter) or step.op.shuffle_keys() is not None \
                or (step.op.is_stat and step.state is None):
            return None
        steps = {}
        for n in columns:
            one = step.op.elementwise(step.state, n)
            if one is None:
                return None
            steps[n] = one
        return steps

    def input_columns(self, targets: list[int]) -> list[str]:
        """Input columns that the ``targets`` steps read (so only those are loaded)."""
        needed = self._ancestors(targets)
        return flatten([tuple(s.columns) for s in self.steps
                        if isinstance(s, SelectStep) and s.index in needed])

    def dictionary_columns(self, targets: list[int]) -> list[str]:
        """Input columns that only operators taking dictionary-encoded strings read
        (``Operator.dictionary_input``), so they may be read without decoding."""
        if self.shuffles(targets):
            return []
        needed = self._ancestors(targets)
        readers: dict[int, list[Step]] = {}
        for step in self.steps:
            for p in step.parents:
                readers.setdefault(p, []).append(step)
        good, bad = set(), set()
        for step in self.steps:
            if not isinstance(step, SelectStep) or step.index not in needed:
                continue
            children = [c for c in readers.get(step.index, []) if c.index in needed]
            only_dictionary_ops = step.index not in targets and bool(children) and all(
                isinstance(c, OpStep) and c.op.dictionary_input for c in children)
            (good if only_dictionary_ops else bad).update(step.columns)
        return sorted(good - bad)

    def _ancestors(self, targets: list[int], stop: int | None = None) -> set[int]:
        """The ``targets`` and every step they read from (not looking past step ``stop``)."""
        by_index = {s.index: s for s in self.steps}
        todo, seen = list(targets), set()
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                if i != stop:
                    todo.extend(by_index[i].parents)
        return seen

    # ---- shuffling steps ------------------------------------------------------------------
    def shuffles(self, targets: list[int]) -> list[int]:
        """The shuffling steps (operators with ``shuffle_keys``) that ``targets`` read through,
        in the order they run. Each one starts a stage: the rows are hash-partitioned by its
        keys, so every step after it must read only rows that went through it."""
        chain: list[int] = []
        frontier = list(targets)
        while True:
            found = [i for i in self._ancestors(frontier) if self._keys(i) is not None]
            if not found:
                return chain[::-1]
            last = max(found)  # steps are in topological order
            steps = {s.index: s for s in self.steps}
            stray = [steps[i] for i in self._ancestors(frontier, last) if i != last and (
                isinstance(steps[i], SelectStep) or self._keys(i) is not None)]
            if stray:
                step = steps[last]
                names = flatten([tuple(s.columns) for s in stray if isinstance(s, SelectStep)])
                raise SchemaError(
                    f"{step.op!r} ({step.node_id}) regroups rows by {self._keys(last)}, but "
                    f"the output also reads columns {names or [s.node_id for s in stray]} that do "
                    f"not pass through it, so their rows would not line up. Select those columns "
                    f"as input of {type(step.op).__name__} (it passes them through or aggregates "
                    "them) or leave them out.")
            chain.append(last)
            frontier = steps[last].parents

    def _keys(self, index: int) -> list[str] | None:
        step = next(s for s in self.steps if s.index == index)
        return step.op.shuffle_keys() if isinstance(step, OpStep) else None

    def shuffle_keys(self, index: int) -> list[str]:
        """The columns that step ``index`` hash-partitions its input by."""
        keys = self._keys(index)
        assert keys is not None, f"step {index} does not shuffle"
        return keys

    def shuffle_input(self, df: Any, entry: int | None, target: int,
                      partition_info: dict | None = None) -> Any:
        """The input rows of shuffling step ``target`` in one partition (filtered rows dropped),
        with :data:`ORDER_COLUMN`: the row's place in the dataset (partition, position)."""
        frame, mask = self.evaluate_inputs(df, [target], entry)[target]
        b = self.backend
        if mask is not None:
            frame = b.filter_rows(frame, mask)
        number = (partition_info or {}).get("number", 0)
        positions = np.arange(b.num_rows(frame), dtype=np.int64) + (np.int64(number) << 32)
        out = b.with_columns(frame, {ORDER_COLUMN: b.from_numpy(positions)})
        release_memory()
        return out

    def transform_partition(self, df: Any, output: int, columns: list[str],
                            entry: int | None = None) -> Any:
        """The workflow output of one partition (rows dropped by row filters removed)."""
        frame, mask = self.evaluate(df, [output], entry)[output]
        if mask is not None:
            frame = self.backend.filter_rows(frame, mask)
        frame = self.backend.select(frame, columns)
        release_memory()
        return frame

    def fit_partition(self, df: Any, targets: list[int],
                      entry: int | None = None) -> dict[int, Any]:
        """Partial statistics of every ``targets`` step (each a StatOperator) on one partition."""
        b = self.backend
        by_index = {s.index: s for s in self.steps}
        inputs = self.evaluate_inputs(df, targets, entry)
        out = {}
        for t in targets:
            frame, mask = inputs[t]
            if mask is not None:
                frame = b.filter_rows(frame, mask)
            step = by_index[t]
            out[t] = step.op.fit_partition(frame, self.context(step))
        del inputs, frame
        release_memory()
        return out

    def evaluate_inputs(self, df: Any, targets: list[int],
                        entry: int | None = None) -> dict[int, tuple[Any, Any]]:
        """The input (parents' outputs side by side) of each target step."""
        by_index = {s.index: s for s in self.steps}
        parents = sorted({p for t in targets for p in by_index[t].parents})
        outs = self.evaluate(df, parents, entry)
        inputs = {}
        for t in targets:
            frame, mask = self._join(outs, by_index[t].parents)
            inputs[t] = (self.backend.select(frame, flatten(by_index[t].groups)), mask)
        return inputs

    def _join(self, outputs: dict[int, tuple[Any, Any]], parents: list[int]) -> tuple[Any, Any]:
        """Parents' frames side by side, and the rows all of their row filters keep."""
        b = self.backend
        mask = None
        for p in parents:
            m = outputs[p][1]
            if m is not None:
                mask = m if mask is None else b.logical_and(mask, m)
        frames, seen = [], set()
        for p in parents:  # a column two parents output is one column (checked by the schema)
            frame = outputs[p][0]
            if isinstance(frame, _Chain):
                frame = frame.run(b)
            names = [c for c in frame.columns if c not in seen]
            if len(names) < len(frame.columns):
                frame = b.select(frame, names)
            seen.update(names)
            frames.append(frame)
        return b.hconcat(frames), mask


@dataclass
class _Chain:
    """Per-value steps pending on the columns of ``frame``: each column's steps run as one
    ``Backend.elementwise`` call when something reads the result (:meth:`run`)."""

    frame: Any
    steps: dict[str, list[tuple]]

    @property
    def columns(self) -> list[str]:
        return list(self.steps)

    def then(self, steps: dict[str, tuple]) -> _Chain:
        return _Chain(self.frame, {n: [*s, steps[n]] for n, s in self.steps.items()})

    def run(self, b: Backend) -> Any:
        return b.with_columns(self.frame, {n: b.elementwise(b.column(self.frame, n), s)
                                           for n, s in self.steps.items()})
