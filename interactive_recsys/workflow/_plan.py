"""The plan: a workflow graph compiled once into steps that run on one partition, and the
Dask graphs built around them (the fit phases, the shuffles and the transform).

A :class:`Plan` travels to the workers: steps with integer parent indices, each operator
with its state and context; evaluating a partition runs every needed step once, in one task.
On the client, :func:`prepare` checks the data and compiles the plan a fit or an update
starts from, :func:`fit_phases` runs one named, cancellable Dask computation
(:func:`~interactive_recsys.runtime.jobs.compute`) per phase and :func:`transform` applies
the plan lazily.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> node = ["n"] >> ops.FillMissing(0) >> ops.Normalize()
>>> ds, plan = prepare(node, pd.DataFrame({"n": [1.0, None, 3.0]}), "fit on")
>>> plan.phases()
[[2]]
>>> for phase, states, seconds in fit_phases(plan, ds, plan.phases()):
...     print(phase, sorted(states), sorted(states["normalize-2"]))
1 ['normalize-2'] ['means', 'moments', 'stds']
>>> [round(v, 3) for v in transform(plan, ds).compute()["n"]]
[-0.267, -1.069, 1.336]
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np

from interactive_recsys.backend import Backend, get_backend
from interactive_recsys.errors import DatasetError, SchemaError
from interactive_recsys.io._dataset import Dataset, as_dataset
from interactive_recsys.ops._base import Operator, RowFilter
from interactive_recsys.runtime._memory_release import release_memory
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.schema import RESERVED_PREFIX, ColumnSchema, Schema, flatten
from interactive_recsys.tables._context import OpContext, RunFacts
from interactive_recsys.tables._reduce import delayed_task, delayed_tasks, pick, tree
from interactive_recsys.workflow._chains import Chain, chain_steps
from interactive_recsys.workflow._graph import (
    ConcatNode,
    Node,
    OpNode,
    SelectNode,
    States,
    checked_names,
)

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
    """Steps in topological order plus what they share (backend, artifacts, the run's facts)."""

    steps: list[Step]
    backend_name: str
    artifacts_dir: str | None
    run: RunFacts = field(default_factory=RunFacts)
    #: keeps a temporary artifacts folder alive while a lazy result may read it (pickled: a path)
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

    def phases(self, skip: Collection[str] = ()) -> list[list[int]]:
        """The statistics steps by phase (:meth:`Node.phases`), as step indices; the steps in
        ``skip`` (step ids whose states are known) take no phase."""
        index = {id(n): i for i, n in enumerate(self.graph.walk())}
        return [[index[id(n)] for n in nodes] for nodes in self.graph.phases(skip)]

    @property
    def backend(self) -> Backend:
        return get_backend(self.backend_name)

    def bind(self, ds: Dataset, artifacts_dir: str, keep: Any,
             storage_options: dict[str, Any] | None, previous_artifacts: str | None) -> None:
        """Bind a fit's or an update's plan to its run: artifacts, options, facts of ``ds``."""
        self.artifacts_dir, self.keep = artifacts_dir, keep
        self.storage_options = storage_options or None
        self.run = RunFacts(ds.known_num_rows, ds.npartitions, previous_artifacts,
                            self.graph.row_filters())

    def context(self, step: OpStep) -> OpContext:
        return OpContext(self.backend, step.groups, step.node_id, self.artifacts_dir, self.run,
                         self.storage_options)

    def evaluate(self, df: Any, targets: list[int],
                 entry: int | None = None) -> dict[int, tuple[Any, Any]]:
        """Outputs ``(frame, keep_mask_or_None)`` of the ``targets`` steps on one partition.

        With ``entry`` (a shuffling step), ``df`` is a partition of that step's shuffled input
        (see :meth:`shuffle_input`): the step and what follows it run, nothing before it.

        Consecutive per-value steps (``Operator.elementwise``: FillMissing -> Clip -> LogOp
        -> Normalize) whose outputs nothing else reads run as one chain per column
        (:class:`~._chains.Chain`, ``Backend.elementwise``), with no frame built between them.
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
                        chain_steps(later[0], chained.columns) is not None
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

    def _chained(self, step: Step, results: dict[int, tuple[Any, Any]]) -> Chain | None:
        """``step`` appended to the chain of per-value steps its one parent ends (or starts
        one on the parent's output); None when ``step`` is no such step."""
        if len(step.parents) != 1:
            return None
        parent = results[step.parents[0]][0]
        columns = parent.columns
        steps = chain_steps(step, columns)
        if steps is None:
            return None
        chain = parent if isinstance(parent, Chain) else Chain(parent, {n: [] for n in columns})
        return chain.then(steps)

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
            if isinstance(frame, Chain):
                frame = frame.run(b)
            names = [c for c in frame.columns if c not in seen]
            if len(names) < len(frame.columns):
                frame = b.select(frame, names)
            seen.update(names)
            frames.append(frame)
        return b.hconcat(frames), mask


# ---- preparing a fit and compiling ---------------------------------------------------------
def prepare(output: Node, data: Any, action: str, fitted: Schema | None = None,
            why: str = "") -> tuple[Dataset, Plan]:
    """The dataset of ``data`` and the plan (without states) a fit or an update of the graph
    ending at ``output`` starts from, checked before any work: ``data`` has rows, no column
    changed its kind since the fit on ``fitted`` (an update), no name read or output is
    reserved, shuffling steps line up. ``action`` and ``why`` word the empty-data error."""
    ds = as_dataset(data)
    if ds.npartitions == 0 or ds.known_num_rows == 0:
        raise DatasetError(f"Cannot {action} an empty dataset: {ds.describe_input()} has no "
                           f"rows{why}. Check the input path and any filter.")
    output.check_kinds(ds.schema, fitted)
    output.check_input(ds.schema)
    plan = compile_plan(output, ds.schema, {}, ds.backend.name, None)  # once
    checked_names(plan.steps[-1].schema)
    plan.shuffles([len(plan.steps) - 1])
    return ds, plan


def compile_plan(output: Node, input_schema: Schema, states: States, backend_name: str,
                 artifacts_dir: str | None, run: RunFacts | None = None,
                 keep: Any = None, storage_options: dict[str, Any] | None = None) -> Plan:
    """The plan that runs the graph ending at ``output`` on data of ``input_schema``: one
    step per node in :meth:`Node.walk` order, each with its output schema (and an operator
    step with its input schema, column groups and fitted state), computed here once; a fit
    gives the plan its states phase by phase (:meth:`Plan.set_states`), not a new plan."""
    nodes = list(output.walk())
    index = {id(n): i for i, n in enumerate(nodes)}
    ids = output.node_ids()
    steps: list[Step] = []
    for i, node in enumerate(nodes):
        common = {"index": i, "parents": [index[id(p)] for p in node.parents],
                  "node_id": ids[id(node)], "schema": Schema()}
        if isinstance(node, SelectNode):
            steps.append(SelectStep(**common, columns=node.columns(input_schema)))
        elif isinstance(node, OpNode):
            steps.append(OpStep(**common, op=node.op))
        else:
            assert isinstance(node, ConcatNode)
            steps.append(ConcatStep(**common))
    plan = Plan(steps, backend_name, artifacts_dir, run or RunFacts(), keep=keep,
                storage_options=storage_options, graph=output, input_schema=input_schema)
    plan.set_states(states)
    return plan


# ---- running --------------------------------------------------------------------------------
def fit_phases(plan: Plan, ds: Dataset, phases: list[list[int]]
               ) -> Iterator[tuple[int, States, float]]:
    """Fit the statistics steps of ``phases`` (lists of step indices, each phase depending
    only on earlier ones): one Dask computation per phase. Yields ``(phase number, states by
    step id, seconds)`` after each, once the plan has those states (the next phase's
    partitions are transformed with them)."""
    for k, targets in enumerate(phases):
        started = time.perf_counter()
        token = uuid.uuid4().hex[:8]
        picked: dict[int, list] = {}
        for stage, group in _by_stage(plan, targets).items():  # statistics after a shuffle
            ddf, entry = stage_ddf(plan, ds, group)             # read the shuffled rows
            partials = [dask.delayed(plan.fit_partition, pure=False)(
                part, group, entry, dask_key_name=f"fit-phase{k + 1}{stage}-{i}-{token}")
                for i, part in enumerate(ddf.to_delayed())]
            for target in group:
                picked[target] = [dask.delayed(pick, pure=False)(
                    p, target, dask_key_name=f"{plan.steps[target].node_id}-partial-{i}-"
                    f"{token}") for i, p in enumerate(partials)]
        graphs = [_fit_graph(plan.steps[t], picked[t], plan) for t in targets]
        computed = compute(*graphs, phase=f"fit {k + 1}/{len(phases)}",
                           reads=plan.input_columns(targets))
        states = {plan.steps[t].node_id: s for t, s in zip(targets, computed, strict=True)}
        plan.set_states({**plan.states(), **states})
        yield k + 1, states, time.perf_counter() - started


def states_without_data(plan: Plan, skip: Collection[str] = ()) -> States:
    """The states of the statistics steps that need no pass over the data
    (``StatOperator.state_without_data``: given statistics), but those in ``skip``, computed
    as one phase, ``"given"``, that reads no data, and given to the plan's steps. ``plan`` is
    bound to its artifacts folder."""
    graphs = {}
    for step in plan.steps:
        op = step.op if isinstance(step, OpStep) else None
        if op is not None and op.is_stat and step.node_id not in skip:
            graph = op.state_without_data(plan.context(step), step.input_schema)
            if graph is not None:
                graphs[step.node_id] = graph
    if not graphs:
        return {}
    given = dict(zip(graphs, compute(*graphs.values(), phase="given"), strict=True))
    plan.set_states({**plan.states(), **given})
    return given


def transform(plan: Plan, ds: Dataset) -> Dataset:
    """The plan's output on ``ds``, lazily (rows dropped by row filters removed)."""
    output = len(plan.steps) - 1  # the output node comes last in walk order
    schema = plan.steps[output].schema
    ddf, entry = stage_ddf(plan, ds, [output])
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = ddf.map_partitions(plan.transform_partition, output, schema.names, entry,
                                 meta=ds.backend.empty(schema), enforce_metadata=False,
                                 token=f"transform-{uuid.uuid4().hex[:8]}")
    changes_rows = any(isinstance(s, OpStep) and s.op.changes_rows for s in plan.steps)
    return Dataset.from_ddf(ddf, schema, ds.backend, None if changes_rows else ds.known_num_rows)


def stage_ddf(plan: Plan, ds: Dataset, targets: list[int]) -> tuple[Any, int | None]:
    """The partitions that ``targets`` read, and the shuffling step they start at (None:
    the dataset's own partitions). Before each shuffling step of the way (an operator with
    ``shuffle_keys``, e.g. Groupby) the rows are hash-partitioned by its keys."""
    ddf = ds.arrow_ddf(plan.input_columns(targets), plan.dictionary_columns(targets))
    entry = None
    for target in plan.shuffles(targets):
        step = plan.steps[target]  # an OpStep: its input schema comes with the plan
        meta = ds.backend.empty(Schema([step.input_schema[c] for c in flatten(step.groups)]
                                       + [ColumnSchema(ORDER_COLUMN, "int64")]))
        token = f"{plan.steps[target].node_id}-{uuid.uuid4().hex[:8]}"
        with dask.config.set({"dataframe.convert-string": False}):
            ddf = ddf.map_partitions(plan.shuffle_input, entry, target, meta=meta,
                                     enforce_metadata=False, token=f"shuffle-input-{token}")
            if ddf.npartitions > 1:  # p2p logs warnings per shuffle: "tasks" by default
                method = dask.config.get("interactive-recsys.shuffle-method", "tasks")
                ddf = ddf.shuffle(on=plan.shuffle_keys(target), npartitions=ddf.npartitions,
                                  shuffle_method=method)
        entry = target
    return ddf, entry


def _by_stage(plan: Plan, targets: list[int]) -> dict[str, list[int]]:
    """Targets grouped by the shuffling steps they read through ("" when none)."""
    stages: dict[str, list[int]] = {}
    for t in targets:
        stages.setdefault("".join(f"-s{s}" for s in plan.shuffles([t])), []).append(t)
    return stages


def _fit_graph(step: Any, partials: list[Any], plan: Plan) -> Any:
    """The delayed state of one statistics step (its operator's own graph, or a tree
    reduction of the partial statistics)."""
    op, ctx = step.op, plan.context(step)
    if hasattr(op, "fit_graph"):
        return op.fit_graph(partials, ctx)
    # keys named after the operator: the task stream shows whose work
    combined = tree(partials, op.fit_combine, delayed_tasks(ctx.node_id, "combine"))
    return delayed_task(ctx.node_id, "finalize", op.fit_finalize, combined, ctx)
