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
current branch and the selected step), each change as one :class:`~.builder_events.Change`:

>>> seen = []
>>> m.observe(seen.append, names="selection")
>>> m.select(0, 0); m.select(0, 0)  # the second selects what is selected: no event
>>> seen
[Change(name='selection', old=(1, (1, 0)), new=(0, (0, 0)))]
"""

from __future__ import annotations

import copy
import difflib
import os
import posixpath
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from operator import add
from typing import Any

import dask
import pyarrow as pa

from interactive_recsys.errors import DatasetError, ParameterError, SchemaError
from interactive_recsys.io._dataset import Dataset, as_dataset, input_files
from interactive_recsys.runtime.jobs import Job
from interactive_recsys.schema import Schema
from interactive_recsys.selector import flatten
from interactive_recsys.store import storage
from interactive_recsys.store._outputs import check_output
from interactive_recsys.ui.builder._branches import Branch, Step, branches_of, make_operator
from interactive_recsys.ui.builder._codegen import training_code, workflow_code
from interactive_recsys.ui.builder._column_profile import ROLES, ColumnProfile, profile_table
from interactive_recsys.ui.builder._events import FieldEvents
from interactive_recsys.ui.builder._oov_check import OOVWarning, check_oov
from interactive_recsys.ui.builder._suggest import suggest_branches, vocab_plan
from interactive_recsys.ui.builder._vocab_budget import MAX_LOSS, MEMORY_BUDGET
from interactive_recsys.ui.builder._vocab_measure import MeasuredColumn, measure_columns
from interactive_recsys.workflow._graph import Node
from interactive_recsys.workflow._workflow import Workflow


def _same_selection(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return [list(x) if not isinstance(x, str) else x for x in a] == \
        [list(x) if not isinstance(x, str) else x for x in b]


class BuilderModel(FieldEvents):
    """Steps and branches of a workflow being built on ``dataset``.

    Parameters
    ----------
    dataset : an :class:`~interactive_recsys.Dataset`, a path or a DataFrame.
    sample_rows : rows read (from the first partitions) for the column profile.

    Notes
    -----
    :meth:`observe` (see :class:`.FieldEvents`) reports two fields, each change once:

    - ``"branches"``: the list of :class:`Branch` (old and new lists), after adding,
      updating, removing or moving a step, a new or removed branch, :meth:`suggest`,
      :meth:`load` or :meth:`undo` -- when the steps really differ;
    - ``"selection"``: :attr:`selection`, the pair ``(current branch, selected step or
      None)``, after :meth:`select` or an edit that moves the selection.

    An edit that changes both sends ``"branches"`` first.
    """

    FIELDS = ("branches", "selection")

    def __init__(self, dataset: Any, *, sample_rows: int = 10_000) -> None:
        super().__init__()
        if isinstance(dataset, str | os.PathLike) and not storage.is_remote(dataset) \
                and not os.path.exists(dataset) \
                and not any(ch in os.fspath(dataset) for ch in "*?["):
            raise DatasetError(f"Dataset path {os.fspath(dataset)!r} does not exist. Check the "
                               f"path (the current directory is {os.getcwd()!r}).")
        self.dataset: Dataset = as_dataset(dataset)
        #: the path the dataset was opened from (None for a Dataset or a frame)
        self.source = os.fspath(dataset) if isinstance(dataset, str | os.PathLike) else None
        self.sample_rows = sample_rows
        self.branches: list[Branch] = [Branch()]
        self.current = 0
        self.selected: tuple[int, int] | None = None
        self._history: list[tuple[list[Branch], int, tuple[int, int] | None]] = []
        self._profile: list[ColumnProfile] | None = None
        self.fitted_workflow: Workflow | None = None
        #: the workflows fitted by the last Run (or loaded) and the last Preview: each next
        #: Run / Preview passes its own as ``fit(..., reuse=)``, edits or not since
        self.reuse_run: Workflow | None = None
        self.reuse_preview: Workflow | None = None
        self.last_job: Any = None
        #: the last :meth:`suggest`'s vocabulary choice per categorical column
        self.vocab_choices: list[Any] = []
        self.vocab_fits = True
        self.vocab_max_loss = MAX_LOSS
        #: exact counts of the categorical columns over every row (measured by the first
        #: :meth:`suggest`, then kept: the dataset does not change)
        self.measured: dict[str, MeasuredColumn] | None = None
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
        from interactive_recsys.ui.preview._preview import (  # lazy: ipywidgets
            read_sample,
        )

        with dask.config.set(scheduler="sync"):  # a quick local read, not a cluster job
            return read_sample(self.dataset, n_rows, columns)

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
            self._emit("branches", old_branches, branches)
        self._emit("selection", old_selection, self.selection)

    def _checkpoint(self) -> None:
        self._history.append((copy.deepcopy(self.branches), self.current, self.selected))
        del self._history[:-100]

    def _commit(self, branches: list[Branch], current: int,
                selected: tuple[int, int] | None) -> None:
        """Validate ``branches`` as a whole, then make them the model's state (undoable)."""
        self._validate(branches)
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

    # ---- validation -----------------------------------------------------------------------
    def _check_columns(self, columns: Sequence[Any]) -> list[Any]:
        columns = [c if isinstance(c, str) else list(c) for c in columns]
        if not columns:
            raise ParameterError("No columns are selected: select at least one input column "
                                 "(tick it in the column table, or pick a role) before adding "
                                 "a step.")
        missing = [n for n in flatten([(c,) if isinstance(c, str) else tuple(c)
                                       for c in columns]) if n not in self.schema]
        if missing:
            raise SchemaError(f"Column {missing[0]!r} is not in the dataset"
                              f"{did_you_mean(missing[0], self.schema.names)}; available "
                              f"columns: {self.schema.names}.")
        return columns

    def _check_param_columns(self, op: str, params: dict[str, Any] | None) -> None:
        """Parameters that name columns (TargetEncoding's ``target``, ...) must name a column
        of the dataset or of a branch's output; a misspelt one says which it could be."""
        spec = make_operator(op, params).params
        known, outputs = set(self.schema.names), None
        for key, value in (params or {}).items():
            if key not in spec or not spec[key].columns or value is None:
                continue
            names = [value] if isinstance(value, str) else \
                [v for v in value if isinstance(v, str)] if isinstance(value, list | tuple) else []
            for name in names:
                if name in known:
                    continue
                if outputs is None:  # a column a branch makes counts too
                    outputs = self._output_names()
                    known |= outputs
                    if name in known:
                        continue
                raise SchemaError(f"{op}'s {key} {name!r} is not a column of the dataset"
                                  f"{did_you_mean(name, sorted(known))}; available columns: "
                                  f"{self.schema.names}.")

    def _output_names(self) -> set[str]:
        try:
            return set(self.output_schema().names)
        except Exception:  # an invalid state has no outputs to offer
            return set()

    def threshold_note(self, op: str, params: dict[str, Any] | None) -> str | None:
        """A warning when ``Categorify(freq_threshold=...)`` is above the dataset's row
        count (when known): every value of its columns would be out of vocabulary.

        >>> import pandas as pd
        >>> m = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"]}))
        >>> m.threshold_note("Categorify", {"freq_threshold": 5}).split(":")[0]
        'freq_threshold=5 is above the 3 rows of the dataset'
        >>> m.threshold_note("Categorify", {"freq_threshold": 2}) is None
        True
        """
        threshold = (params or {}).get("freq_threshold") or 0
        rows = self.dataset.known_num_rows
        if op != "Categorify" or not isinstance(threshold, int) or rows is None \
                or threshold <= rows:
            return None
        return (f"freq_threshold={threshold:,} is above the {rows:,} rows of the dataset: every "
                f"value would be out of vocabulary (no value can occur {threshold:,} times).")

    def _validate(self, branches: list[Branch]) -> None:
        for k, branch in enumerate(branches):
            if not branch.columns and not branch.tags and branch.steps:
                raise ParameterError(f"Branch {k + 1} has steps but no columns; select columns.")
            if branch.columns or branch.tags:  # raises "In step [...] >> Op(): <why>"
                branch.node().output_schema(self.schema)
        names = [n for b in branches if b.columns or b.tags
                 for n in b.node().output_schema(self.schema).names]
        twice = list(dict.fromkeys(n for n in names if names.count(n) > 1))
        if twice:
            raise SchemaError(f"Output column(s) {twice} would come out of two branches; rename "
                              "one (ops.Rename(postfix=...)) or remove one of the branches.")

    # ---- editing --------------------------------------------------------------------------
    def add_step(self, columns: Sequence[Any], op: str, params: dict[str, Any] | None = None,
                 *, branch: int | None = None) -> tuple[int, int]:
        """Append ``op(**params)`` on ``columns``; returns ``(branch, step)``.

        The step goes to the current branch when that branch is empty or works on the same
        columns; otherwise a new branch is started for ``columns``.
        """
        columns = self._check_columns(columns)
        self._check_param_columns(op, params)
        branches = copy.deepcopy(self.branches)
        k = self.current if branch is None else branch
        if not 0 <= k < len(branches):
            raise ParameterError(f"There is no branch {k + 1}; there are {len(branches)}.")
        target = branches[k]
        if target.steps and not _same_selection(target.columns, columns):
            branches.append(Branch())
            k, target = len(branches) - 1, branches[-1]
        target.columns = columns
        target.steps.append(Step(op, dict(params or {})))
        self._commit(branches, k, (k, len(target.steps) - 1))
        return k, len(target.steps) - 1

    def update_step(self, branch: int, index: int, *, op: str | None = None,
                    params: dict[str, Any] | None = None,
                    columns: Sequence[Any] | None = None) -> None:
        """Change a step's operator and/or parameters, and/or its branch's columns."""
        step = self._step(branch, index)
        op = op or step.op
        params = dict(step.params if params is None and op == step.op else params or {})
        self._check_param_columns(op, params)
        branches = copy.deepcopy(self.branches)
        branches[branch].steps[index] = Step(op, params)
        if columns is not None:
            branches[branch].columns = self._check_columns(columns)
        self._commit(branches, branch, (branch, index))

    def remove_step(self, branch: int, index: int) -> None:
        self._step(branch, index)
        branches = copy.deepcopy(self.branches)
        del branches[branch].steps[index]
        steps = len(branches[branch].steps)
        self._commit(branches, branch, (branch, min(index, steps - 1)) if steps else None)

    def move_step(self, branch: int, index: int, offset: int) -> None:
        """Move a step up (``offset=-1``) or down (``+1``) within its branch."""
        self._step(branch, index)
        new = index + offset
        if not 0 <= new < len(self.branches[branch].steps):
            raise ParameterError(f"Step {index + 1} of branch {branch + 1} cannot move "
                                 f"{'up' if offset < 0 else 'down'}: it is already "
                                 f"{'first' if offset < 0 else 'last'}.")
        branches = copy.deepcopy(self.branches)
        steps = branches[branch].steps
        steps[index], steps[new] = steps[new], steps[index]
        self._commit(branches, branch, (branch, new))

    def new_branch(self, columns: Sequence[Any] = ()) -> int:
        """Start a new branch (optionally a pass-through of ``columns``); returns its index."""
        columns = self._check_columns(columns) if columns else []
        branches = copy.deepcopy(self.branches)
        if branches and not branches[-1].columns and not branches[-1].steps and not columns:
            self._commit(branches, len(branches) - 1, None)  # reuse the empty last branch
            return len(branches) - 1
        branches.append(Branch(columns=columns))
        self._commit(branches, len(branches) - 1, None)
        return len(branches) - 1

    def remove_branch(self, branch: int) -> None:
        if not 0 <= branch < len(self.branches):
            raise ParameterError(f"There is no branch {branch + 1}; there are "
                                 f"{len(self.branches)}.")
        branches = copy.deepcopy(self.branches)
        del branches[branch]
        branches = branches or [Branch()]
        self._commit(branches, min(self.current, len(branches) - 1), None)

    def suggest(self, max_loss: float | None = None,
                memory_budget: int | str | None = None, *,
                measure: bool = True) -> list[Branch]:
        """Replace the steps by a pipeline proposed from the column profile (:mod:`.suggest`);
        undoable, every step editable. ``max_loss`` (share of a column's non-null lookups
        that may become out-of-vocabulary, default 1%) and ``memory_budget`` (of fp32
        embedding weights, default 16 GiB) set each ``Categorify``'s threshold; the choice
        per column is in :attr:`vocab_choices` (``vocab_fits``: within budget).

        ``measure``: count every row of the categorical columns first (:meth:`measure`, one
        pass, done once), so that the thresholds and the lookups they lose are exact;
        ``False`` estimates them from the profile's sample."""
        if max_loss is not None and not 0 <= max_loss < 1:
            raise ParameterError(f"The share of lookups that may be lost must be in [0, 1) "
                                 f"(0.01 = 1%). Got {max_loss!r} instead.")
        self.vocab_max_loss = MAX_LOSS if max_loss is None else max_loss
        self.vocab_choices, self.vocab_fits = vocab_plan(
            self.profile, self.vocab_max_loss,
            MEMORY_BUDGET if memory_budget is None else memory_budget,
            self.measure() if measure else None)
        branches = suggest_branches(self.profile, self.vocab_choices)
        self._commit(branches, len(branches) - 1, None)
        return branches

    def measure(self) -> dict[str, MeasuredColumn]:
        """Exact value counts of the categorical columns over every row
        (:func:`.measure_columns`), computed once."""
        if self.measured is None:
            self.measured = measure_columns(self.dataset, self.columns_by_role("categorical"))
        return self.measured

    def items(self) -> list[tuple[str, tuple[int, int]]]:
        """What the step list shows: ``(text, (branch, step))`` per step, and
        ``(text, (branch, -1))`` for a pass-through branch (columns without steps)."""
        out = []
        for k, branch in enumerate(self.branches):
            if not branch.steps and (branch.columns or branch.tags):
                out.append((f"branch {k + 1} · pass through: {branch.selector()!r}", (k, -1)))
            for j, step in enumerate(branch.steps):
                params = ", ".join(f"{a}={b!r}" for a, b in step.params.items())
                out.append((f"branch {k + 1} · step {j + 1}: {branch.selector()!r} >> "
                            f"{step.op}({params})", (k, j)))
        return out

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
        self._emit("selection", old, self.selection)

    def _step(self, branch: int, index: int) -> Step:
        try:
            if branch < 0 or index < 0:
                raise IndexError
            return self.branches[branch].steps[index]
        except IndexError:
            raise ParameterError(f"There is no step {index + 1} in branch {branch + 1}.") \
                from None

    # ---- the workflow ---------------------------------------------------------------------
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

    @classmethod
    def from_workflow(cls, workflow: Workflow, dataset: Any, **kwargs: Any) -> BuilderModel:
        """A model holding the branches of ``workflow`` (``a >> op >> op + b >> op ...``)."""
        model = cls(dataset, **kwargs)
        branches = branches_of(workflow.output_node)
        model._validate(branches)
        model.branches, model.current = branches, len(branches) - 1
        if workflow.fitted:
            model.fitted_workflow = model.reuse_run = workflow
        return model

    def export_code(self, workflow_dir: str = "my_workflow/") -> str:
        """Python code that builds the identical workflow (see :mod:`..codegen`); after a fit
        also "Train from raw data": the loader code of the pre-processed and the online path
        (:func:`~..codegen.training_code`, the fitted workflow saved in ``workflow_dir``)."""
        code = workflow_code(self.to_workflow())
        if self.fitted_workflow is None:
            return code
        folders = sorted({os.path.dirname(f) for f in self.dataset.files})
        data = folders[0] + "/" if len(folders) == 1 else "raw/"
        return (code + "\n\n# ---- Train from raw data " + "-" * 60 + "\n"
                + training_code(self.fitted_workflow, data=data, workflow_dir=workflow_dir))

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> str:
        """Save as JSON (+ parquet vocabularies when fitted by :meth:`run`)."""
        wf = self.fitted_workflow or self.to_workflow()
        return wf.save(path, overwrite=overwrite)

    def load(self, path: str | os.PathLike) -> None:
        """Replace the steps by those of a saved workflow (undoable)."""
        wf = Workflow.load(path)
        branches = branches_of(wf.output_node)
        self._commit(branches, len(branches) - 1, None)
        if wf.fitted:
            self.fitted_workflow = self.reuse_run = wf

    # ---- running --------------------------------------------------------------------------
    def preview(self, n_rows: int = 1000) -> PreviewResult:
        """Fit and transform the first ``n_rows`` rows in this process (a quick look)."""
        started = time.perf_counter()
        inputs = flatten([g for b in self.branches if b.columns or b.tags
                          for g in b.selector().resolve(self.schema)])
        sample = self.head(n_rows, inputs)
        wf = self.to_workflow()  # a temporary artifacts folder, removed with the workflow
        with dask.config.set(scheduler="sync"):
            wf.fit(sample, reuse=self.reuse_preview)  # the same sample: unchanged steps reused
            output = wf.transform(sample, training=True, dtype_backend="pyarrow")  # as the sample
        self.reuse_preview = wf
        return PreviewResult(sample, output, wf, time.perf_counter() - started)

    def default_output(self) -> str | None:
        """Where Run writes by default: ``<input>-processed`` next to a dataset read from
        files (a directory ``data/`` -> ``data-processed``); None (fit only) for a dataset
        in memory.

        >>> import pandas as pd
        >>> BuilderModel(pd.DataFrame({"a": [1]})).default_output() is None
        True
        """
        import glob

        source = self.source
        files = self.dataset.files
        if (source or (files[0] if files else "")).find("://") > 0 and storage.is_remote(
                source or files[0]):  # URLs: beside them, in the store
            if source is None or glob.has_magic(source):
                scheme = files[0].split("://", 1)[0]
                common = posixpath.commonpath([storage.strip(f) for f in files])
                source = f"{scheme}://" + (posixpath.dirname(common) if len(files) == 1
                                           else common)
            base = source.rstrip("/")
            return (base.rsplit(".", 1)[0] if base.endswith((".parquet", ".csv")) else base) \
                + "-processed"
        if source is None or glob.has_magic(source):
            files = [os.path.abspath(f) for f in self.dataset.files]
            if not files:
                return None
            source = os.path.dirname(os.path.commonpath(files)) if len(files) == 1 \
                else os.path.commonpath(files)
        source = source.rstrip("/" + os.sep) or source
        if os.path.isfile(source):
            source = os.path.splitext(source)[0]
        return source + "-processed"

    def run(self, output: str | os.PathLike | None = None, *,
            on_done: Callable[[Job], None] | None = None, client: Any = None,
            overwrite: bool = False) -> Job:
        """Fit on the whole dataset (and write the transformed data to ``output``) as a
        background :class:`~interactive_recsys.runtime.jobs.Job` on the active Dask client (if any).

        Written atomically: a failed or cancelled run leaves no partial output. A bad
        output (:meth:`check_output`; an existing one unless ``overwrite``) raises at once
        and leaves no job (:meth:`wait_run` gives ``None``). ``on_done(job)``: called from a
        helper thread at the end; ``client``: a ``distributed.Client`` instead of the active
        one."""
        output = self.check_output(output, overwrite)
        wf, dataset, previous = self.to_workflow(), self.dataset, self.reuse_run
        nodes = wf.to_config()["nodes"]

        def work() -> Workflow:
            wf.fit(dataset, reuse=previous)  # only the steps edited since are computed
            if output is not None:
                wf.transform(dataset).to_parquet(output, overwrite=overwrite)
            return wf

        job = Job(work, name="builder-run", client=client).start()
        self.last_job = job
        ended = self._run_ended = threading.Event()

        def finished() -> None:
            job.exception()  # waits for the end
            try:
                if job.status == "finished":
                    self.reuse_run = wf
                    self.oov_warnings = check_oov(wf, self.vocab_choices,
                                                  max_loss=self.vocab_max_loss,
                                                  measured=self.measured)
                if job.status == "finished" and self.to_workflow().to_config()["nodes"] == nodes:
                    self.fitted_workflow = wf
                if on_done is not None:
                    on_done(job)
            finally:
                ended.set()

        threading.Thread(target=finished, name="irs-builder-run-done", daemon=True).start()
        return job

    def check_output(self, output: Any, overwrite: bool = False) -> str | None:
        """Every output check of :meth:`run` now, before any work (exists, is, contains or
        is inside the input, not writable); the "last run" is this one from now on."""
        if not self.running:
            self.last_job, self._run_ended = None, None
            self.oov_warnings = []
        if output is None:
            return None
        if not os.fspath(output).strip():
            raise ParameterError("The output path is empty: type a directory to write "
                                 "to, or run without an output (fit only).")
        output = os.fspath(output)
        if storage.is_remote(output):  # object stores: exists, is/contains the input
            storage.check_remote_destination(output, {"the input": input_files(self.dataset)})
            if storage.exists(output, self.dataset.storage_options) and not overwrite:
                raise DatasetError(f"Output {output!r} already exists; choose another path "
                                   "or allow replacing it (overwrite=True, the 'replace' box).")
        else:
            check_output(output, input_files(self.dataset), overwrite=overwrite)
        return output

    @property
    def running(self) -> bool:
        """Whether the last :meth:`run` (or its ``on_done``) has not ended yet."""
        ended = getattr(self, "_run_ended", None)
        return ended is not None and not ended.is_set()

    def wait_run(self, timeout: float | None = None) -> Job | None:
        """Wait until the last :meth:`run` has ended and its ``on_done`` has returned; its job,
        or ``None`` when it was refused before anything ran (an existing output, say)."""
        ended = getattr(self, "_run_ended", None)
        if ended is not None and not ended.wait(timeout):
            raise TimeoutError(f"The run did not end within {timeout} s; its status is "
                               f"{self.last_job.status!r}.")
        return self.last_job


def did_you_mean(name: str, names: Sequence[str]) -> str:
    """`` (did you mean 'label'?)`` for the closest of ``names``, or nothing.

    >>> did_you_mean("lable", ["c", "label"]), did_you_mean("zzz", ["c", "label"])
    (" (did you mean 'label'?)", '')
    """
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    if not close:
        close = [n for n in names if n.lower() == name.lower()]
    return f" (did you mean {close[0]!r}?)" if close else ""


def job_text(job: Job) -> str:
    """One line about a run: running (with progress per phase), finished or why it failed."""
    seconds = ((job.stopped or time.time()) - job.started) if job.started else 0.0
    if job.status in ("error", "cancelled"):
        error = job.exception(0)
        return f"Run {job.status} after {seconds:.1f} s: {type(error).__name__}: {error}"
    progress = ", ".join(f"{name} {fraction:.0%}" for name, fraction in job.progress.items())
    if job.status == "finished":
        return f"Run finished in {seconds:.1f} s" + (f" ({progress})." if progress else ".")
    return f"Run {job.status}: {progress or 'starting'}..."


@dataclass
class PreviewResult:
    """Input sample and its transformed rows (``workflow`` is fitted on the sample only)."""

    input: Any
    output: Any
    workflow: Workflow
    seconds: float


__all__ = ["Branch", "BuilderModel", "PreviewResult", "Step", "branches_of", "job_text",
           "make_operator"]
