"""The execution layer: a workflow graph compiled once into a :class:`~.plan.Plan` that carries
every step's schema, and run on Dask: the fit phases, the shuffles and the transform.

:class:`~interactive_recsys.workflow._workflow.Workflow` keeps the graph, save/load and display, and
calls these. :mod:`.plan` holds what runs on one partition (on the workers); this module
builds the Dask graphs around it (on the client), and every computation goes through
:func:`~interactive_recsys.runtime.jobs.compute` (named phases, cancellable).

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> node = ["n"] >> ops.FillMissing(0) >> ops.Normalize()
>>> ds = irs.Dataset(pd.DataFrame({"n": [1.0, None, 3.0]}))
>>> plan = compile_plan(node, ds.schema, {}, "cpu", None)
>>> for phase, states, seconds in fit_phases(plan, ds, [[2]]):
...     print(phase, sorted(states), sorted(states["normalize-2"]))
1 ['normalize-2'] ['means', 'moments', 'stds']
>>> [round(v, 3) for v in transform(plan, ds).compute()["n"]]
[-0.267, -1.069, 1.336]
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import dask

from interactive_recsys.io._dataset import Dataset
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.schema import ColumnSchema, Schema
from interactive_recsys.selector import flatten
from interactive_recsys.tables._reduce import delayed_task, delayed_tasks, pick, tree
from interactive_recsys.workflow._graph import ConcatNode, Node, OpNode, SelectNode, States
from interactive_recsys.workflow._plan import (
    ORDER_COLUMN,
    ConcatStep,
    OpStep,
    Plan,
    SelectStep,
    Step,
)


# ---- compiling ------------------------------------------------------------------------------
def compile_plan(output: Node, input_schema: Schema, states: States, backend_name: str,
                 artifacts_dir: str | None, extra: dict[str, Any] | None = None,
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
    plan = Plan(steps, backend_name, artifacts_dir, dict(extra or {}), keep=keep,
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
        computed = compute(*graphs, phase=f"fit {k + 1}/{len(phases)}")
        states = {plan.steps[t].node_id: s for t, s in zip(targets, computed, strict=True)}
        plan.set_states({**plan.states(), **states})
        yield k + 1, states, time.perf_counter() - started


def transform(plan: Plan, ds: Dataset) -> Dataset:
    """The plan's output on ``ds``, lazily (rows dropped by row filters removed)."""
    output = len(plan.steps) - 1  # the output node comes last in walk order
    schema = plan.steps[output].schema
    meta = ds.backend.empty(schema)
    ddf, entry = stage_ddf(plan, ds, [output])
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = ddf.map_partitions(
            plan.transform_partition, output, schema.names, entry,
            meta=meta, enforce_metadata=False, token=f"transform-{uuid.uuid4().hex[:8]}")
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
