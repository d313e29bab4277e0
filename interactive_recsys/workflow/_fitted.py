"""The fitted state of a workflow: one object that a fit, an update and a load build.

A :class:`FittedState` holds what fitting a graph produced: each statistics step's state
(by step id), the input schema it was fitted on, what each state depends on (its key and
its digest when fitted: ``_keys``), which states the fit adopted (``reuse=``), the fit's
statistics, and the artifacts folder the states' files live in (with whether this
workflow owns it as a temporary folder, or only reads it: a loaded folder). The graph is
not part of it: the methods that need the steps take the graph's output node.

``Workflow.fit`` builds one, ``Workflow.update`` builds a new one (the original is left as it
was), ``Workflow.save`` writes one (:mod:`.format`) and ``Workflow.load`` reads one back.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> node = ["n"] >> ops.Normalize()
>>> state = FittedState(states={"normalize-1": {"means": {"n": 2.0}, "stds": {"n": 1.0}}},
...                     input_schema=irs.Dataset(pd.DataFrame({"n": [1.0, 3.0]})).schema,
...                     fitted=True)
>>> [(s.node_id, s.columns, s.outputs) for s in state.steps(node)]
[('normalize-1', ('n',), ('n',))]
>>> state.config(list(node.walk()), node.node_ids())["states"]  # by node index, as saved
{'1': {'means': {'n': 2.0}, 'stds': {'n': 1.0}}}
>>> FittedState().fitted, FittedState().steps(node)
(False, [])
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from interactive_recsys.errors import IRSError, NotFittedError, WorkflowFormatError
from interactive_recsys.ops._base import Operator
from interactive_recsys.schema import Schema, flatten
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import TemporaryArtifacts
from interactive_recsys.store._folder_rules import verify_checksums
from interactive_recsys.workflow._graph import Node, States
from interactive_recsys.workflow._keys import json_safe, state_digest


@dataclass(frozen=True)
class FittedStep:
    """One fitted statistics step of a workflow (see
    :meth:`~interactive_recsys.Workflow.fitted_steps`).

    Attributes
    ----------
    node_id : the step id, e.g. ``"categorify-1"``.
    op : the operator (never changed by fitting).
    columns : the input columns it reads.
    outputs : the output columns it produces.
    state : its fitted state (JSON-like; file paths in it are relative to the
        workflow's ``artifacts_dir``).
    groups : the input column groups (singletons unless the selection grouped columns).
    reused : whether the last fit adopted this state from ``fit(..., reuse=previous)``
        instead of computing it.
    key : what the state depends on, hashed (see ``_keys``); None when unknown.
    refinished : whether the last fit built this state from the statistics of
        ``reuse=previous``'s step, which differed only in finishing parameters
        (Categorify's ``freq_threshold``: the vocabulary cut again from the saved counts),
        without reading the data.
    """

    node_id: str
    op: Operator
    columns: tuple[str, ...]
    outputs: tuple[str, ...]
    state: dict[str, Any]
    groups: tuple[tuple[str, ...], ...] = ()
    reused: bool = False
    key: str | None = None
    refinished: bool = False


@dataclass
class FittedState:
    """What fitting a workflow's graph produced (see the module docstring).

    Attributes
    ----------
    states : each statistics step's fitted state, by step id.
    input_schema : the schema of the data it was fitted on (None before any fit).
    fitted : whether every statistics step has its state.
    keys : what each state depends on, hashed (:func:`.keys.step_keys`), by step id.
    digests : each state's digest when its fit made it: a state changed since (an update)
        no longer matches its key (:func:`.keys.state_digest`).
    reused : the step ids whose states the fit adopted from ``reuse=``.
    fit_stats : the fit's phases and seconds (``Workflow.fit_stats``).
    artifacts_dir : the folder (or URL) the states' artifact files are in.
    temporary : the temporary folder this state owns (removed once nothing uses it).
    read_only : the artifacts are a loaded folder's: read, never written.
    artifact_sums : each artifact file's SHA-256 recorded at save (a loaded folder).
    sums_checked : whether ``artifact_sums`` were checked (a URL's are checked on use).
    statistics_keys : the statistics key of each step whose operator has finishing
        parameters (:func:`.keys.fit_keys`), by step id.
    refinished : the step ids whose states the fit finished from ``reuse=``'s statistics.
    """

    states: States = field(default_factory=dict)
    input_schema: Schema | None = None
    fitted: bool = False
    keys: dict[str, str | None] = field(default_factory=dict)
    digests: dict[str, str | None] = field(default_factory=dict)
    reused: frozenset[str] = frozenset()
    fit_stats: dict[str, Any] = field(default_factory=dict)
    artifacts_dir: str | None = None
    temporary: TemporaryArtifacts | None = field(default=None, repr=False)
    read_only: bool = False
    artifact_sums: dict[str, str] | None = field(default=None, repr=False)
    sums_checked: bool = True
    statistics_keys: dict[str, str] = field(default_factory=dict)
    refinished: frozenset[str] = frozenset()

    # ---- the fitted steps -----------------------------------------------------------------
    def schemas(self, output: Node) -> dict[int, Schema]:
        """Every step's output schema (by ``id(node)``) with these states."""
        if self.input_schema is None:
            raise NotFittedError("This workflow has fitted states but no input schema; fit "
                                 "it again with wf.fit(dataset).")
        return output.schemas(self.input_schema, self.states)

    def steps(self, output: Node, op_type: type | tuple[type, ...] | None = None
              ) -> list[FittedStep]:
        """The fitted statistics steps of the graph ending at ``output``, in graph order,
        only those whose operator is an instance of ``op_type`` when given."""
        if not self.states:
            return []
        schemas = self.schemas(output)
        ids = output.node_ids()
        out = []
        for node in output.walk():
            node_id = ids[id(node)]
            state = self.states.get(node_id)
            if state is None or (op_type is not None and not isinstance(node.op, op_type)):
                continue
            assert self.input_schema is not None  # schemas() refused it
            groups = tuple(tuple(g) for g in node.input_groups(self.input_schema, schemas))
            out.append(FittedStep(node_id, node.op, tuple(flatten(groups)),
                                  tuple(schemas[id(node)].names), state, groups,
                                  node_id in self.reused, self.keys.get(node_id),
                                  node_id in self.refinished))
        return out

    # ---- reuse ----------------------------------------------------------------------------
    def reusable_keys(self, statistics: bool = False) -> dict[str, str]:
        """The keys of the states unchanged since their fit made them (by step id): only
        those may be adopted by another fit. With ``statistics``, their statistics keys:
        only those states may be finished again with other finishing parameters."""
        keys = {}
        for i, key in (self.statistics_keys if statistics else self.keys).items():
            digest = state_digest(self.states[i]) if i in self.states else None
            if key is not None and digest is not None and self.digests.get(i) == digest:
                keys[i] = key
        return keys

    def verify_artifacts(self, storage_options: Any = None) -> None:
        """Refuse (:class:`~interactive_recsys.errors.WorkflowFormatError`) artifact files of
        a loaded folder changed since it was saved; checked once."""
        if self.artifact_sums and not self.sums_checked and self.artifacts_dir:
            verify_checksums(self.artifacts_dir, self.artifact_sums,
                             storage.join(os.path.dirname(self.artifacts_dir.rstrip("/")),
                                          "workflow.json"), storage_options)
            self.sums_checked = True

    # ---- saving and loading ---------------------------------------------------------------
    def config(self, nodes: list[Node], ids: dict[int, str]) -> dict[str, Any]:
        """The fitted part of ``workflow.json``: states and keys by node index."""
        fitted = [(str(i), ids[id(n)]) for i, n in enumerate(nodes) if ids[id(n)] in self.states]
        return {
            "fitted": self.fitted,
            "input_schema": self.input_schema.to_dict() if self.input_schema else None,
            "states": {i: json_safe(self.states[s]) for i, s in fitted},
            "keys": {i: {"key": self.keys[s], "state": self.digests[s],
                         **({"statistics": self.statistics_keys[s]}
                            if s in self.statistics_keys else {})}
                     for i, s in fitted if self.keys.get(s) and self.digests.get(s)},
        }

    @classmethod
    def from_loaded(cls, loaded: Any, remote: bool) -> FittedState:
        """The state a checked ``workflow.json`` describes (:class:`.format.LoadedConfig`);
        its artifacts are read only. A local folder's checksums were checked on reading."""
        return cls(states=loaded.states, input_schema=loaded.input_schema,
                   fitted=loaded.fitted, keys={i: k["key"] for i, k in loaded.keys.items()},
                   digests={i: k["state"] for i, k in loaded.keys.items()},
                   statistics_keys={i: k["statistics"] for i, k in loaded.keys.items()
                                    if "statistics" in k},
                   artifacts_dir=loaded.artifacts_dir, read_only=True,
                   artifact_sums=loaded.artifact_sums, sums_checked=not remote)

    def check_state_keys(self, output: Node, config_path: str) -> None:
        """Refuse a loaded state that lacks an entry its step needs (a raw ``KeyError`` at
        transform otherwise); the step's input groups are known once the schema is."""
        if not self.fitted or self.input_schema is None:
            return
        try:
            steps = self.steps(output)
        except KeyError as exc:  # a schema read from a state entry that is not there
            raise WorkflowFormatError(
                f"{config_path}: a step's state has no entry {exc}, which the step needs. "
                "The file was changed after saving: save the workflow again from a fitted "
                "one.") from None
        except IRSError:  # a graph that does not fit its schema: reported when used
            return
        for step in steps:
            for entry, keys in step.op.state_keys(step.groups).items():
                held = step.state.get(entry, {})
                missing = [k for k in keys if k not in held]
                if missing:
                    raise WorkflowFormatError(
                        f"{config_path}: the state of step {step.node_id!r} has no "
                        f"{entry}[{missing[0]!r}], which the step needs for its input "
                        f"{missing[0]!r}. The file was changed after saving: save the "
                        "workflow again from a fitted one.")
