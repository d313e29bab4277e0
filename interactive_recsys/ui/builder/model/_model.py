"""The pipeline builder's model: plain Python, no widgets.

A workflow under construction is a list of *branches*; each branch selects input columns
and chains operators on them (``columns >> op >> op``); the branches are joined with
``+``. Every change is validated at once (parameters by the operator's declared
:class:`~interactive_recsys.params.Param` table, columns by the operator's output
schema) and can be undone.

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, None, 3.0], "label": [0, 1, 0]})
>>> m = BuilderModel(df)
>>> [(p.name, p.role) for p in m.profile]
[('c', 'categorical'), ('n', 'continuous'), ('label', 'label')]
>>> m.add_step(["c"], "Categorify")
(0, 0)
>>> m.new_branch()
1
>>> m.add_step(["n"], "FillMissing", {"fill_val": 0})
(1, 0)
>>> m.add_step(["n"], "Normalize")
(1, 1)
>>> m.output_schema().dtypes
{'c': 'int64', 'n': 'float32'}
>>> try:
...     m.add_step(["c"], "Clip", {"min_value": "a"})
... except ParameterError as exc:
...     print(exc)
The 'min_value' parameter of Clip must be a finite number or None. Got 'a' instead.
>>> m.undo(); len(m.branches[1].steps)
1

Views observe the fields they draw: ``"branches"`` (the steps) and ``"selection"`` (the
current branch and the selected step), each change as one :class:`~._events.Change`:

>>> seen = []
>>> m.observe(seen.append, names="selection")
>>> m.select(0, 0); m.select(0, 0)  # the second selects what is selected: no event
>>> seen
[Change(name='selection', old=(1, (1, 0)), new=(0, (0, 0)))]
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from operator import add
from types import MappingProxyType
from typing import Any, Self

import dask
import pyarrow as pa

from interactive_recsys.errors import ParameterError
from interactive_recsys.io._dataset import Dataset, as_dataset
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.schema import Schema
from interactive_recsys.ui.builder._branches import (
    Branch,
    Step,
    branches_of,
    make_operator,
    step_items,
)
from interactive_recsys.ui.builder._column_profile import ROLES, ColumnProfile, profile_table
from interactive_recsys.ui.builder.model import _edits, _run, _store, _suggest, _suggest_job
from interactive_recsys.ui.builder.model._events import FieldEvents, Listener
from interactive_recsys.ui.builder.model._run import PreviewResult
from interactive_recsys.ui.builder.model._run_diff import RunDiff
from interactive_recsys.ui.builder.model._validate import (
    check_dataset_path,
    did_you_mean,
    validate,
)
from interactive_recsys.ui.builder.suggest import (
    MAX_LOSS,
    MEMORY_BUDGET,
    MeasuredColumn,
    OOVWarning,
)
from interactive_recsys.workflow._graph import Node
from interactive_recsys.workflow._workflow import Workflow


class BuilderModel:
    """Steps and branches of a workflow being built on ``dataset``.

    Parameters
    ----------
    dataset : an :class:`~interactive_recsys.Dataset`, a path or a DataFrame.
    sample_rows : rows read (from the first partitions) for the column profile.

    Notes
    -----
    :meth:`observe` reports each change once: ``"branches"`` (the steps differ after an
    edit, :meth:`suggest`, :meth:`load` or :meth:`undo`), then :attr:`selection`, and
    :attr:`measured`. Validation (``_validate``), Preview and Run (``_run``), Suggest
    (``_suggest``, ``_suggest_job``), save, load and export (``_store``) are functions
    over the model's state that its methods forward to.
    """

    FIELDS = ("branches", "selection", "measured")
    #: per column too large to keep whole: the hashed table in the same memory
    #: (``suggest._hash_size.HashProposal``), from the last measured :meth:`suggest`
    hash_proposals: Mapping[str, Any] = MappingProxyType({})
    #: after a Run that refit a previous one: what changed (``_run_diff.RunDiff``)
    run_diff: RunDiff | None = None

    def __init__(self, dataset: Any, *, sample_rows: int = 10_000) -> None:
        self._events = FieldEvents(self.FIELDS, "BuilderModel")
        self.dataset: Dataset = as_dataset(check_dataset_path(dataset))
        #: the path the dataset was opened from (None for a Dataset or a frame)
        self.source = os.fspath(dataset) if isinstance(dataset, str | os.PathLike) else None
        #: the call that opens :attr:`source` in exported code
        self.source_reader = "irs.Dataset"
        self.sample_rows = sample_rows
        self.branches: list[Branch] = [Branch()]
        self.current = 0
        self.selected: tuple[int, int] | None = None
        self._history: list[tuple[list[Branch], int, tuple[int, int] | None]] = []
        self._profile: list[ColumnProfile] | None = None
        self.fitted_workflow: Workflow | None = None
        self.export_places: tuple[str, str | None] = ("my_workflow/", None)  #: Export's folders
        #: the last Run's (or loaded) and Preview's fits: the next ones' ``fit(..., reuse=)``
        self.reuse_run: Workflow | None = None
        self.reuse_preview: Workflow | None = None
        self.last_job: Any = None
        #: ``(output, fitted workflow folder)`` of the last Run that wrote one, or restored
        self.run_output: tuple[str, str] | None = None
        #: set when the last Run (and its ``on_done``) ended; None: no run, or refused
        self.run_ended: threading.Event | None = None
        #: the last :meth:`suggest`'s vocabulary choice per categorical column
        self.vocab_choices: list[Any] = []
        self.vocab_fits = True
        #: when the tables do not fit: by how much, and what loss would fit
        self.vocab_shortfall: Any = None
        self.vocab_max_loss = MAX_LOSS
        #: the memory budget of the last :meth:`suggest` (bytes of fp32 embedding weights)
        self.vocab_budget: int | str = MEMORY_BUDGET
        #: the steps the last :meth:`suggest` proposed (its choices describe these steps only)
        self.suggested_branches: list[Branch] | None = None
        #: exact counts of the categorical columns over every row (first Suggest's, kept)
        self.measured: dict[str, MeasuredColumn] | None = None
        #: the last background Suggest and the event set once it (and on_done) ended
        self.suggest_job: Job | None = None
        self.suggest_ended: threading.Event | None = None
        #: after a Run: the columns that lost more lookups than their budget, with the fix
        self.oov_warnings: list[OOVWarning] = []

    # ---- profile --------------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        return self.dataset.schema

    @property
    def profile(self) -> list[ColumnProfile]:
        """Column profiles from the first ``sample_rows`` rows (computed once)."""
        if self._profile is None:
            frame = self.head(self.sample_rows, self.schema.names)
            table = pa.Table.from_pandas(frame, preserve_index=False)
            self._profile = profile_table(table, self.schema, self.dataset.known_num_rows)
        return self._profile

    def head(self, n_rows: int, columns: list[str]) -> Any:
        """The first ``n_rows`` rows of ``columns`` (parquet: only those rows are decoded)."""
        with dask.config.set(scheduler="sync"):  # a quick local read, not a cluster job
            return self.dataset.head(n_rows, columns=columns)

    def columns_by_role(self, role: str) -> list[str]:
        if role not in ROLES:
            raise ParameterError(f"Unknown role {role!r}; roles are {list(ROLES)}.")
        return [p.name for p in self.profile if p.role == role]

    # ---- change tracking ------------------------------------------------------------------
    @property
    def selection(self) -> tuple[int, tuple[int, int] | None]:
        """``(current branch, selected (branch, step) or None)``: the "selection" field."""
        return self.current, self.selected

    def _set(self, branches: list[Branch], current: int,
             selected: tuple[int, int] | None) -> None:
        """Make this the state and tell the observers of each field that changed."""
        old_branches, old_selection = self.branches, self.selection
        self.branches, self.current, self.selected = branches, current, selected
        if branches != old_branches:
            self.fitted_workflow = None
            self._events.emit("branches", old_branches, branches)
        self._events.emit("selection", old_selection, self.selection)

    def _checkpoint(self) -> None:
        self._history.append((copy.deepcopy(self.branches), self.current, self.selected))
        del self._history[:-100]

    def commit(self, branches: list[Branch], current: int,
               selected: tuple[int, int] | None) -> None:
        """Validate ``branches`` as a whole, then make them the model's state (undoable)."""
        self.validate(branches)
        self._checkpoint()
        self._set(branches, current, selected)

    @property
    def can_undo(self) -> bool:
        return bool(self._history)

    def undo(self) -> None:
        """Revert the last change."""
        if not self._history:
            raise ParameterError("Nothing to undo.")
        self._set(*self._history.pop())

    def validate(self, branches: list[Branch]) -> None:
        """Raise when ``branches`` cannot work on the dataset (see ``_validate.validate``)."""
        validate(self.schema, branches)

    def observe(self, callback: Listener, names: str | Sequence[str] | None = None) -> None:
        """Call ``callback(change)`` after each change of a field in ``names`` (None: both)."""
        self._events.observe(callback, names)

    def unobserve(self, callback: Listener, names: str | Sequence[str] | None = None) -> None:
        self._events.unobserve(callback, names)

    # ---- editing --------------------------------------------------------------------------
    def add_step(self, columns: Sequence[Any], op: str, params: dict[str, Any] | None = None,
                 *, branch: int | None = None) -> tuple[int, int]:
        """Append ``op(**params)`` on ``columns`` (to the current branch when it is empty or
        works on the same columns, else a new one); returns ``(branch, step)``."""
        return _edits.add_step(self, columns, op, params, branch=branch)

    def update_step(self, branch: int, index: int, *, op: str | None = None,
                    params: dict[str, Any] | None = None,
                    columns: Sequence[Any] | None = None) -> None:
        """Change a step's operator and/or parameters, and/or its branch's columns."""
        _edits.update_step(self, branch, index, op=op, params=params, columns=columns)

    def remove_step(self, branch: int, index: int) -> None:
        _edits.remove_step(self, branch, index)

    def move_step(self, branch: int, index: int, offset: int) -> None:
        """Move a step up (``offset=-1``) or down (``+1``) within its branch."""
        _edits.move_step(self, branch, index, offset)

    def new_branch(self, columns: Sequence[Any] = ()) -> int:
        """Start a new branch (optionally a pass-through of ``columns``); its index."""
        return _edits.new_branch(self, columns)

    def remove_branch(self, branch: int) -> None:
        _edits.remove_branch(self, branch)

    # ---- selection ------------------------------------------------------------------------
    def items(self) -> list[tuple[str, tuple[int, int]]]:
        """What the step list shows (``step_items``)."""
        return step_items(self.branches)

    @property
    def selected_item(self) -> tuple[int, int] | None:
        """The selected step, or ``(branch, -1)`` when a pass-through branch is selected."""
        if self.selected is not None:
            return self.selected
        branch = self.branches[self.current] if self.current < len(self.branches) else None
        if branch is not None and not branch.steps and (branch.columns or branch.tags):
            return self.current, -1
        return None

    def remove_selected(self) -> str:
        """Remove the selected step (or pass-through branch); returns what was removed."""
        item = self.selected_item
        if item is None:
            raise ParameterError("No step is selected: click a step in the graph or the step "
                                 "list.")
        k, j = item
        if j < 0:
            self.remove_branch(k)
            return f"the pass-through branch {k + 1}"
        self.remove_step(k, j)
        return f"step {j + 1} of branch {k + 1}"

    def select(self, branch: int, index: int | None) -> None:
        """Select a step for editing (``index`` None or -1: the branch itself; not an
        undoable change; selecting what is selected sends no event)."""
        index = None if index is not None and index < 0 else index
        if index is not None:
            self._step(branch, index)
        elif not 0 <= branch < len(self.branches):
            raise ParameterError(f"There is no branch {branch + 1}; there are "
                                 f"{len(self.branches)}.")
        old = self.selection
        self.current = branch
        self.selected = None if index is None else (branch, index)
        self._events.emit("selection", old, self.selection)

    def _step(self, branch: int, index: int) -> Step:
        return _edits.step_at(self, branch, index)

    def output_node(self) -> Node:
        branches = [b for b in self.branches if b.columns or b.tags]
        if not branches:
            raise ParameterError("The workflow is empty: select columns and add a step first.")
        return reduce(add, (b.node() for b in branches))

    def to_workflow(self, **kwargs: Any) -> Workflow:
        """A new (unfitted) :class:`~interactive_recsys.Workflow` of the current steps."""
        return Workflow(self.output_node(), **kwargs)

    def output_schema(self) -> Schema:
        """Output names and dtypes predicted before any fit."""
        return self.to_workflow().compute_schema(self.schema)

    # ---- Preview and Run (``_run``) -------------------------------------------------
    def preview(self, n_rows: int = 1000) -> PreviewResult:
        """The first ``n_rows`` rows transformed in this process (``_run.preview``)."""
        return _run.preview(self, n_rows)

    def run(self, output: str | os.PathLike | None = None, *,
            on_done: Callable[[Job], None] | None = None, client: Any = None,
            overwrite: bool = False) -> Job:
        """Fit (and write ``output``) as a background job (``_run.run``)."""
        return _run.run(self, output, on_done=on_done, client=client, overwrite=overwrite)

    def check_output(self, output: Any, overwrite: bool = False) -> str | None:
        """Every output check of :meth:`run`, now (``_run.check_output``)."""
        return _run.check_output(self, output, overwrite)

    @property
    def running(self) -> bool:
        """Whether the last :meth:`run` (or its ``on_done``) has not ended yet."""
        return _run.running(self)

    def wait_run(self, timeout: float | None = None) -> Job | None:
        """Wait for the end of the last :meth:`run` (``_run.wait_run``)."""
        return _run.wait_run(self, timeout)

    def default_output(self) -> str | None:
        """Where Run writes by default (``_run.default_output``)."""
        return _run.default_output(self)

    # ---- Suggest (``_suggest``) ------------------------------------------------------
    def suggest(self, max_loss: float | None = None, memory_budget: int | str | None = None,
                *, measure: bool = True) -> list[Branch]:
        """Replace the steps by a proposed pipeline (``_suggest.suggest``)."""
        return _suggest.suggest(self, max_loss, memory_budget, measure=measure)

    def start_suggest(self, max_loss: float | None = None, memory_budget: int | str | None
                      = None, *, client: Any = None, on_done: Callable | None = None) -> Job:
        """:meth:`suggest` as a cancellable background job (``_suggest_job``)."""
        return _suggest_job.start_suggest(self, max_loss, memory_budget, client=client,
                                          on_done=on_done)

    @property
    def suggesting(self) -> bool:
        """Whether a background Suggest has not ended yet (``_suggest.suggesting``)."""
        return _suggest.suggesting(self)

    def wait_suggest(self, timeout: float | None = None) -> Job | None:
        """Wait for the end of the last background Suggest (``_suggest_job.wait_suggest``)."""
        return _suggest_job.wait_suggest(self, timeout)

    def measure(self) -> dict[str, MeasuredColumn]:
        """Exact value counts of the categorical columns (``_suggest.measure_counts``)."""
        return _suggest.measure_counts(self)

    def threshold_note(self, op: str, params: dict[str, Any] | None) -> str | None:
        """A warning for a threshold above the row count (``_suggest.threshold_note``)."""
        return _suggest.threshold_note(self, op, params)

    @property
    def vocab_dims(self) -> dict[str, int]:
        """The embedding dimensions the last Suggest lowered (``_suggest.vocab_dims``)."""
        return _suggest.vocab_dims(self)

    @property
    def suggest_current(self) -> bool:
        """Whether the last Suggest describes the steps now (``_suggest.suggest_current``)."""
        return _suggest.suggest_current(self)

    # ---- save, load and code (``_store``) -------------------------------------------
    @classmethod
    def from_workflow(cls, workflow: Workflow, dataset: Any, **kwargs: Any) -> Self:
        """A model holding the branches of ``workflow`` (``a >> op >> op + b >> op ...``)."""
        model = cls(dataset, **kwargs)
        _store.adopt_workflow(model, workflow)
        return model

    def export_code(self, workflow_dir: str | None = None, output: str | None = None) -> str:
        """Code of the workflow or job (``_store.export_code``; None: ``export_places``)."""
        return _store.export_code(self, workflow_dir, output)

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> str:
        """Save as JSON (+ parquet vocabularies when fitted by :meth:`run`)."""
        return _store.save(self, path, overwrite=overwrite)

    def load(self, path: str | os.PathLike) -> None:
        """Replace the steps by those of a saved workflow (undoable)."""
        _store.load(self, path)

    def restore(self, branches: list[Branch]) -> None:
        """Replace the steps by ``branches`` (an autosave's), checked first (undoable)."""
        _store.restore(self, branches)


__all__ = ["Branch", "BuilderModel", "Step", "branches_of", "did_you_mean", "make_operator"]
