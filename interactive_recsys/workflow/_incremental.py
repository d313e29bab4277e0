"""Incremental updates: a fitted workflow extended with new data (``Workflow.update``).

Production recommenders are fine-tuned every day on the new day's logs. Refitting on all the
days renumbers every categorical value, so the trained embedding rows no longer match. An
update instead:

1. fits each statistics step on the **new data only**, phase by phase, as ``fit`` does (the
   new data's rows transformed by the already *merged* states of the earlier phases), with
   the operator's :meth:`~.ops.base.StatOperator.delta_op` (Categorify counts every value);
2. merges that state into the fitted one with the operator's own
   :meth:`~.ops.base.StatOperator.merge_state`: exact, the state a fit on all the data would
   give (Categorify keeps every id and appends new values; see
   :mod:`.tables.vocabulary_update`);
3. refuses, before writing anything the caller sees, an operator that cannot merge
   (:class:`~.errors.NotMergeableError` names it, its columns and the fix: a full refit), and
   a statistics step downstream of one whose update changes the outputs of rows already seen
   (its old partial statistics were computed on the old outputs).

The result is a **new** fitted workflow with its own artifacts folder: the original one, and
the folder it was loaded from, are never written. ``save`` writes the new one.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "b", "a"]}))
>>> day2 = wf.update(pd.DataFrame({"c": ["z", "b", "y", "z"]}))
>>> day2.transform(pd.DataFrame({"c": ["a", "b", "z", "y"]}))["c"].tolist()  # a, b kept
[3, 4, 5, 6]
>>> day2.output_schema["c"].properties["new_rows"], wf.output_schema["c"].cardinality
([5, 7], 5)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import warnings
from collections.abc import Iterator
from typing import Any

from interactive_recsys.errors import NotMergeableError, WorkflowFormatError
from interactive_recsys.ops._base import StateFolders
from interactive_recsys.store._artifacts import (
    TemporaryArtifacts,
    check_temporary_artifacts_reach_workers,
)
from interactive_recsys.workflow._fitted import FittedState
from interactive_recsys.workflow._graph import Node, OpNode, States
from interactive_recsys.workflow._plan import (
    OpStep,
    Plan,
    fit_phases,
    prepare,
    states_without_data,
)


class UpdateWarning(UserWarning):
    """An update left something out (an operator's ``update_warnings``: values a vocabulary
    refused, for example)."""


def updated(output: Node, fitted: FittedState, data: Any,
            storage_options: dict[str, Any] | None = None) -> FittedState:
    """A new fitted state: ``fitted`` (of the graph ending at ``output``) extended with
    ``data`` (see the module docstring); ``fitted`` is left as it is."""
    ds, plan = prepare(output, data, "update with", fitted.input_schema)
    steps = {s.node_id: s for s in fitted.steps(output)}
    nodes = list(output.walk())
    for node in output.stat_nodes():  # refuse before any work
        step = plan.steps[nodes.index(node)]
        ctx = plan.context(step)
        ctx.groups = list(steps[step.node_id].groups)
        with _older_format(step.node_id, node.op):
            node.op.check_mergeable(steps[step.node_id].state, ctx)
    check_temporary_artifacts_reach_workers()
    temporary = TemporaryArtifacts()
    plan.bind(ds, temporary.path, temporary, storage_options, fitted.artifacts_dir)
    started = time.perf_counter()
    given = states_without_data(plan)  # given statistics: built again, unchanged
    merged, report, phases = _merged_phases(output, fitted, plan, ds, temporary.path, given)
    for node in output.stat_nodes():  # what each step's own update left out
        node_id = plan.steps[nodes.index(node)].node_id
        for note in node.op.update_warnings(merged[node_id]):
            warnings.warn(f"{node_id}: {note}", UpdateWarning, stacklevel=2)
    return FittedState(merged, fitted.input_schema, True,
                       fit_stats={"phases": phases, "seconds": time.perf_counter() - started,
                                  "update": {"rows": ds.known_num_rows, "steps": report}},
                       artifacts_dir=temporary.path, temporary=temporary)


def _merged_phases(output: Node, fitted: FittedState, plan: Plan, ds: Any, target: str,
                   given: States | None = None
                   ) -> tuple[States, dict[str, Any], list[dict[str, Any]]]:
    """Each phase fitted on the new data with the operators' delta operators and merged
    into the fitted states: the merged states, what the update did per step, the phases.
    The ``given`` states (statistics that need no data) are taken as they are."""
    ids = output.node_ids()
    walked = list(output.walk())  # step i of the plan is node i
    folders = StateFolders(fitted.artifacts_dir, target)
    merged: States = dict(given or {})
    changed: list[str] = []  # steps whose update changes the outputs of rows already seen
    report: dict[str, Any] = {}
    phases = []
    for k, targets in enumerate(plan.phases(frozenset(merged))):
        nodes = [walked[t] for t in targets]
        _refuse_after_changed(output, nodes, changed)
        plan.set_states(merged)  # first: it gives every step its node's operator back
        for t in targets:
            step = plan.steps[t]
            assert isinstance(step, OpStep) and step.op is not None
            step.op = step.op.delta_op()
        phase_started = time.perf_counter()
        for _, delta, _seconds in fit_phases(plan, ds, [targets]):
            for t, node in zip(targets, nodes, strict=True):
                step = plan.steps[t]
                step.op = node.op
                old = fitted.states[step.node_id]
                with _older_format(step.node_id, node.op):
                    state = node.op.merge_state(old, delta[step.node_id], plan.context(step),
                                                folders)
                _remove_delta_files(target, step.node_id)
                if node.op.update_changes_seen_rows(old, state):
                    changed.append(step.node_id)
                merged[step.node_id] = state
                report[step.node_id] = _step_report(state)
        phases.append({"phase": k + 1, "operators": [ids[id(n)] for n in nodes],
                       "seconds": time.perf_counter() - phase_started})
    return merged, report, phases


@contextlib.contextmanager
def _older_format(node_id: str, op: Any) -> Iterator[None]:
    """A state without a field an update needs (saved by an older version, or edited) is a
    :class:`~.errors.WorkflowFormatError` naming the step, the field and the fix."""
    try:
        yield
    except KeyError as exc:
        field = exc.args[0] if exc.args else "?"
        raise WorkflowFormatError(
            f"The state of step {node_id!r} ({type(op).__name__}) has no field {field!r}, "
            "which Workflow.update needs: the workflow was saved by an older version (or its "
            "workflow.json was edited). Fit the workflow again on all the data (wf.fit(...)) "
            "and save it; later updates then work.") from None


def _refuse_after_changed(output: Node, nodes: list, changed: list[str]) -> None:
    """Refuse a statistics step that reads the output of one whose update changed the
    outputs of rows already seen."""
    ids = output.node_ids()
    for node in nodes:
        upstream = [ids[id(n)] for n in node.walk() if n is not node
                    and isinstance(n, OpNode) and ids[id(n)] in changed]
        if upstream:
            raise NotMergeableError(
                f"{type(node.op).__name__} ({ids[id(node)]}) cannot be updated exactly: it "
                f"reads the output of {upstream[0]}, whose update changes the values of rows "
                "already seen (e.g. a new mean, or a value that crossed a frequency "
                "threshold), so its statistics of the old rows no longer hold. Refit the "
                "workflow on all the data instead (wf.fit(all_days)).")


def _remove_delta_files(artifacts_dir: str, node_id: str) -> None:
    """Remove what the new data's own fit wrote under the step's folder (the merged state's
    files are in its ``merged`` subfolder)."""
    folder = os.path.join(artifacts_dir, node_id)
    if not os.path.isdir(folder):
        return
    for entry in os.listdir(folder):
        if entry != "merged":
            path = os.path.join(folder, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def _step_report(state: dict[str, Any]) -> dict[str, Any]:
    """What an update did to a step: per vocabulary, its version and new rows (Categorify)."""
    vocabs = state.get("vocabs")
    if not isinstance(vocabs, dict):
        return {}
    return {key: {name: info[name] for name in ("version", "new_rows", "appended", "refused",
                                                "promoted") if name in info}
            for key, info in vocabs.items()}


def new_rows(wf: Any) -> dict[str, tuple[int, int]]:
    """``{vocabulary key: (first, stop)}`` of a fitted workflow: the ids each embedding
    table gained in the last update (empty ranges for tables that did not grow; none before
    any update). A trainer appends rows ``first .. stop - 1`` to the table, keeping the
    trained ones."""
    out = {}
    for step in wf.fitted_steps():
        for key, info in (step.state.get("vocabs") or {}).items():
            if "new_rows" in info:
                out[key] = (int(info["new_rows"][0]), int(info["new_rows"][1]))
    return out
