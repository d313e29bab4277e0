"""Workflow: fit statistics phase by phase, transform lazily, save and load as JSON + parquet.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> df = pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, None, 3.0]})
>>> conts = ["n"] >> ops.FillMissing(0) >> ops.Normalize()
>>> wf = irs.Workflow((["c"] >> ops.Categorify()) + conts)
>>> out = wf.fit_transform(df)
>>> out["c"].tolist()   # 0 padding, 1 null, 2 out-of-vocabulary, then x (2 rows), y
[3, 4, 3]
>>> wf.output_schema["c"].cardinality
5
"""

from __future__ import annotations

import html
import json
import os
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from interactive_recsys._version import __version__ as _library_version
from interactive_recsys.backend import convert
from interactive_recsys.backend._user_frames import check_dtype_backend, user_frame
from interactive_recsys.errors import (
    DatasetError,
    IRSError,
    NotFittedError,
    ParameterWarning,
    SchemaError,
    WorkflowFormatError,
)
from interactive_recsys.io._dataset import Dataset, as_dataset, describe_input
from interactive_recsys.ops._base import Operator
from interactive_recsys.ops._lambda_op import functions_by_name
from interactive_recsys.params import param_error
from interactive_recsys.runtime.jobs import Job, background_job, compute
from interactive_recsys.schema import RESERVED_PREFIX, Schema, element_dtype, is_numeric_dtype
from interactive_recsys.selector import flatten
from interactive_recsys.store import commit, storage
from interactive_recsys.store._artifacts import (
    TemporaryArtifacts,
    check_temporary_artifacts_reach_workers,
)
from interactive_recsys.store._folder_rules import artifact_paths, copy_named, verify_checksums
from interactive_recsys.store._outputs import atomic_directory
from interactive_recsys.workflow._execution import compile_plan, fit_phases, transform
from interactive_recsys.workflow._format import FORMAT_NAME, FORMAT_VERSION, json_safe, read_config
from interactive_recsys.workflow._graph import ConcatNode, Node, OpNode, SelectNode
from interactive_recsys.workflow._incremental import updated
from interactive_recsys.workflow._plan import Plan
from interactive_recsys.workflow._reuse import adopt, matches, state_digest, step_keys


@dataclass(frozen=True)
class FittedStep:
    """One fitted statistics step of a workflow (see :meth:`Workflow.fitted_steps`).

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
    key : what the state depends on, hashed (see :mod:`.reuse`); None when unknown.
    """

    node_id: str
    op: Operator
    columns: tuple[str, ...]
    outputs: tuple[str, ...]
    state: dict[str, Any]
    groups: tuple[tuple[str, ...], ...] = ()
    reused: bool = False
    key: str | None = None


class Workflow:
    """A graph of operators to fit on a dataset and apply to any data of the same shape.

    Parameters
    ----------
    output : the graph's output: a node built with ``>>`` and ``+``, or column names.
    artifacts_dir : where fitted artifacts (vocabularies) are written, a local folder or an
        fsspec URL (``s3://bucket/wf-artifacts``). The Dask workers write and read them
        there: on a cluster whose workers share no disk with each other it must be a URL
        of an object store (or a shared filesystem). Default: a new local temporary folder.
    storage_options : fsspec options for ``artifacts_dir`` and for :meth:`save` when they
        are URLs (credentials, ``client_kwargs={"endpoint_url": ...}``...).
    """

    def __init__(self, output: Any, *, artifacts_dir: str | os.PathLike | None = None,
                 storage_options: dict[str, Any] | None = None) -> None:
        self.output_node = Node.as_node(output)
        self.nodes: list[Node] = list(self.output_node.walk())
        self._ids = self.output_node.node_ids()
        #: fitted states by step id (``node_id``); read them with :meth:`fitted_steps`
        self._states: dict[str, dict[str, Any]] = {}
        #: what each state depends on, hashed (:mod:`.reuse`), and the states the last fit
        #: adopted from ``reuse=`` (by step id)
        self._keys: dict[str, str | None] = {}
        self._reused: set[str] = set()
        #: each state's digest when its fit made it: a state changed since (``update``)
        #: no longer matches its key (:func:`.reuse.state_digest`)
        self._state_digests: dict[str, str | None] = {}
        self.input_schema: Schema | None = None
        self.artifacts_dir = os.fspath(artifacts_dir) if artifacts_dir else None
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        #: the temporary artifacts folder this workflow made (removed once unused), if any
        self._temporary: TemporaryArtifacts | None = None
        #: artifacts of a loaded folder: read, never written (a refit writes fresh ones)
        self._read_only_artifacts = False
        self.fitted = False
        self.fit_stats: dict[str, Any] = {}

    # ---- schema ---------------------------------------------------------------------------
    def node_id(self, node: Node) -> str:
        """The step id of ``node`` (e.g. ``"categorify-1"``), which keys its fitted state."""
        return self._ids[id(node)]

    def compute_schema(self, input_schema: Schema | Dataset) -> Schema:
        """The output schema for data of ``input_schema``, without fitting (cardinalities are
        filled in after ``fit``)."""
        if isinstance(input_schema, Dataset):
            input_schema = input_schema.schema
        return _checked(self.output_node.output_schema(self._checked_input(input_schema),
                                                          self._states))

    @property
    def output_schema(self) -> Schema:
        if self.input_schema is None:
            raise NotFittedError("The output schema needs an input schema: call fit(dataset) or "
                                 "compute_schema(dataset.schema) first.")
        return self.compute_schema(self.input_schema)

    @property
    def output_columns(self) -> list[str]:
        return self.output_schema.names

    def fitted_steps(self, op_type: type | tuple[type, ...] | None = None
                     ) -> Iterator[FittedStep]:
        """The fitted statistics steps in graph order, only those whose operator is an
        instance of ``op_type`` when given.

        >>> import pandas as pd, interactive_recsys as irs
        >>> from interactive_recsys import ops
        >>> wf = irs.Workflow(["c"] >> ops.Categorify())
        >>> _ = wf.fit(pd.DataFrame({"c": ["x", "y", "x"]}))
        >>> [(s.node_id, s.columns, s.outputs) for s in wf.fitted_steps(ops.Categorify)]
        [('categorify-1', ('c',), ('c',))]
        """
        if not self._states:
            return
        if self.input_schema is None:
            raise NotFittedError("This workflow has fitted states but no input schema; fit "
                                 "it again with wf.fit(dataset).")
        schemas = self.output_node.schemas(self.input_schema, self._states)
        for node in self.nodes:
            state = self._states.get(self.node_id(node))
            if state is None or (op_type is not None and not isinstance(node.op, op_type)):
                continue
            groups = tuple(tuple(g) for g in node.input_groups(self.input_schema, schemas))
            node_id = self.node_id(node)
            yield FittedStep(node_id, node.op, tuple(flatten(groups)),
                             tuple(schemas[id(node)].names), state, groups,
                             node_id in self._reused, self._keys.get(node_id))

    # ---- planning -------------------------------------------------------------------------
    def _plan(self, input_schema: Schema, backend_name: str, extra: dict | None = None) -> Plan:
        """The plan for data of ``input_schema`` with the fitted states (each step's schema
        computed once, in the plan; see :mod:`.execution`)."""
        return compile_plan(self.output_node, input_schema, self._states, backend_name,
                            self.artifacts_dir, extra, keep=self._temporary,
                            storage_options=self.storage_options or None)

    def _stat_nodes(self) -> list[OpNode]:
        return [n for n in self.nodes if isinstance(n, OpNode) and n.op.is_stat]

    def phases(self, skip: Collection[str] = ()) -> list[list[Node]]:
        """Statistics operators grouped so that each group depends only on earlier groups;
        the steps in ``skip`` (step ids whose states are known: reused) take no phase."""
        phase: dict[int, int] = {}
        stats = [n for n in self._stat_nodes() if self.node_id(n) not in skip]
        for node in self.nodes:
            upstream = [phase[id(p)] for p in node.parents]
            level = max(upstream, default=0)
            if any(node is n for n in stats):
                level += 1
            phase[id(node)] = level
        count = max((phase[id(n)] for n in stats), default=0)
        return [[n for n in stats if phase[id(n)] == k] for k in range(1, count + 1)]

    # ---- fit ------------------------------------------------------------------------------
    @background_job("fit")
    def fit(self, data: Any, *, background: bool = False,
            reuse: Workflow | str | os.PathLike | None = None) -> Workflow | Job:
        """Compute every statistic: one Dask computation per dependency phase.

        With ``background=True`` the fit runs in a background thread on the active Dask
        client and a :class:`~interactive_recsys.runtime.jobs.Job` is returned at once (status,
        progress per phase, ``cancel()``, ``result()`` -> this workflow).

        ``reuse``: a fitted workflow, or the folder of a saved one. Every statistics step
        whose key (its operator and parameters, the steps upstream, the columns it reads
        and a fingerprint of the data: see :mod:`.reuse`) equals one of ``reuse``'s takes
        that state (its artifacts are linked or copied here) and is not computed; only the
        other steps are, in as few phases as their dependencies allow, and none at all
        (no pass over the data) when every state is reused. ``fitted_steps()`` tells which
        (``reused``), as does ``fit_stats["reused"]`` (set when ``reuse`` is given).

        >>> import pandas as pd, interactive_recsys as irs
        >>> from interactive_recsys import ops
        >>> df = pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, 2.0, 6.0]})
        >>> first = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.Normalize()))
        >>> _ = first.fit(df)
        >>> edited = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.NormalizeMinMax()))
        >>> _ = edited.fit(df, reuse=first)
        >>> [(s.node_id, s.reused) for s in edited.fitted_steps()]
        [('categorify-1', True), ('normalizeminmax-3', False)]
        """
        source = self._reuse_source(reuse)  # before this fit resets anything (reuse=self)
        ds = as_dataset(data)
        if ds.npartitions == 0 or ds.known_num_rows == 0:
            raise DatasetError(f"Cannot fit on an empty dataset: {describe_input(ds)} has no "
                               "rows, and statistics of zero rows mean nothing. Check the "
                               "input path and any filter.")
        self._checked_input(ds.schema)  # before any work: names, schemas, shuffles
        plan = compile_plan(self.output_node, ds.schema, {}, ds.backend.name, None)  # once
        _checked(plan.steps[-1].schema)
        plan.shuffles([len(plan.steps) - 1])
        previous, previous_owner = self.artifacts_dir, self._temporary  # alive during the fit
        if self.artifacts_dir is None or self._temporary is not None \
                or self._read_only_artifacts:  # a refit never rewrites what others may read
            check_temporary_artifacts_reach_workers()
            self._temporary = TemporaryArtifacts()
            self.artifacts_dir, self._read_only_artifacts = self._temporary.path, False
        self._states, self.fitted = {}, False  # a failed fit leaves an unfitted workflow
        self._keys, self._reused, self._state_digests = {}, set(), {}
        self.input_schema = ds.schema
        self.fit_stats = {"phases": []}
        started = time.perf_counter()
        self._keys = step_keys(self.output_node, ds.schema, ds)
        if source is not None:
            states, keys, folder, options, _owner = source
            self._states = adopt(matches(self._keys, keys, states), states, folder,
                                 self.artifacts_dir, options, self.storage_options)
            self._reused = set(self._states)
            plan.set_states(self._states)
        plan.artifacts_dir, plan.keep = self.artifacts_dir, self._temporary
        plan.storage_options = self.storage_options or None
        plan.extra = {"num_rows": ds.known_num_rows, "npartitions": ds.npartitions,
                      "previous_artifacts": previous,  # e.g. JoinExternal's stored side table
                      "row_filters": self._row_filters()}
        phases = [[self.nodes.index(n) for n in nodes] for nodes in self.phases(self._reused)]
        for k, states, seconds in fit_phases(plan, ds, phases):
            self._states.update(states)
            self.fit_stats["phases"].append({"phase": k, "operators": list(states),
                                             "seconds": seconds})
        del previous_owner, source  # previous temporary folders may go once nothing reads them
        self._state_digests = {i: state_digest(s) for i, s in self._states.items()}
        if reuse is not None:  # which states were adopted (those not: computed)
            self.fit_stats["reused"] = [i for i in self._keys if i in self._reused]
        self.fit_stats["seconds"] = time.perf_counter() - started
        self.fitted = True
        self._warn_thresholds()
        return self

    def _warn_thresholds(self) -> None:
        """A ``ParameterWarning`` per Categorify whose ``freq_threshold`` is above the rows it
        was fitted on: every value of its columns is out of vocabulary."""
        import warnings

        for node in self.nodes:
            op = node.op if isinstance(node, OpNode) else None
            threshold = getattr(op, "freq_threshold", 0) or 0
            state = self._states.get(self.node_id(node)) if threshold > 1 else None
            for key, info in ((state or {}).get("vocabs") or {}).items():
                rows = info.get("value_count")
                if rows is not None and threshold > rows:
                    warnings.warn(
                        f"{type(op).__name__}(freq_threshold={threshold:,}) on {key!r} is above "
                        f"the {rows:,} values it was fitted on: every value is out of vocabulary. "
                        f"Lower freq_threshold (or remove it).", ParameterWarning, stacklevel=3)

    def _reuse_source(self, reuse: Any) -> tuple | None:
        """``(states, keys, artifacts folder, its storage options, owner)`` of ``reuse`` (a
        fitted workflow or a saved folder); the owner keeps a temporary folder alive."""
        if reuse is None:
            return None
        if isinstance(reuse, str | os.PathLike):
            reuse = Workflow.load(reuse, storage_options=self.storage_options or None)
        if not isinstance(reuse, Workflow):
            raise param_error("reuse", "Workflow.fit", "must be a fitted Workflow, the folder "
                              f"of a saved one or None. Got {type(reuse).__name__} instead.")
        if not reuse.fitted:
            raise param_error("reuse", "Workflow.fit", "must be a fitted Workflow, but this "
                              "one is not fitted: fit it first, or pass reuse=None.")
        reuse.verify_artifacts()  # a changed vocabulary is never adopted
        keys = {}
        for i, key in reuse._keys.items():  # only the states unchanged since their fit
            digest = state_digest(reuse._states[i]) if i in reuse._states else None
            if digest is not None and reuse._state_digests.get(i) == digest:
                keys[i] = key
        return (dict(reuse._states), keys, reuse.artifacts_dir,
                reuse.storage_options or None, reuse._temporary)

    @background_job("update")
    def update(self, data: Any, *, background: bool = False) -> Workflow | Job:
        """A NEW fitted workflow: this one extended with ``data`` (e.g. the next day's logs),
        as a fit on all the data so far would be, except that Categorify keeps every id it
        gave and appends new values after them (:mod:`.incremental`).

        This workflow, and a folder it was loaded from, are never written; ``save`` the new
        one. An operator whose statistics cannot be merged (FillMedian, ...) raises
        :class:`~interactive_recsys.errors.NotMergeableError` naming it and the fix (a full
        refit). ``background=True`` returns a :class:`~interactive_recsys.jobs.Job`.

        >>> import pandas as pd, interactive_recsys as irs
        >>> from interactive_recsys import ops
        >>> wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["x", "y"]}))
        >>> wf2 = wf.update(pd.DataFrame({"c": ["z", "y"]}))
        >>> wf2.transform(pd.DataFrame({"c": ["x", "y", "z"]}))["c"].tolist()  # z appended
        [3, 4, 5]
        """
        self.verify_artifacts()
        return updated(self, data)

    def _checked_input(self, schema: Schema) -> Schema:
        """``schema``, refused when a column the workflow reads has a reserved name."""
        for node in self.nodes:
            if isinstance(node, SelectNode):
                _checked(Schema(schema[n] for n in node.columns(schema)))
        return schema

    def _check_types_since_fit(self, schema: Schema) -> None:
        """Refuse a column whose kind of values (strings, numbers, timestamps...) changed since
        the fit: its statistics (a vocabulary of strings, a mean) no longer apply, and
        Categorify would map every value out of vocabulary."""
        fitted = self.input_schema
        if fitted is None or not self._stat_nodes():
            return
        for node in self.nodes:
            if not isinstance(node, SelectNode):
                continue
            for name in node.columns(schema):
                if name in fitted.names and _kind(schema[name].dtype) != _kind(
                        fitted[name].dtype):
                    raise SchemaError(
                        f"Column {name!r} is {schema[name].dtype} here, but it was "
                        f"{fitted[name].dtype} when this workflow was fit: its statistics do "
                        f"not apply to these values. Convert it back (e.g. df[{name!r}].astype("
                        f"{fitted[name].dtype!r}), or dtypes={{{name!r}: "
                        f"{fitted[name].dtype!r}}} for csv input), or fit the workflow again "
                        "on data of the new type.")

    def _row_filters(self) -> dict[str, list[str]]:
        """Each statistics step's upstream row filters, as text (for "saw no rows" errors)."""
        out = {}
        for node in self._stat_nodes():
            out[self.node_id(node)] = [f"{n.op!r} ({self.node_id(n)})" for n in node.walk()
                                       if n is not node and isinstance(n, OpNode)
                                       and n.op.changes_rows]
        return out

    # ---- transform ------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not self.fitted:
            needs = [self.node_id(n) for n in self._stat_nodes()]
            if needs or self.input_schema is None:
                raise NotFittedError(f"This workflow is not fitted (statistics needed by "
                                     f"{needs or 'no operator'}); call wf.fit(dataset) first.")

    def transform(self, data: Any, *, training: bool = False,
                  dtype_backend: str = "numpy_nullable") -> Any:
        """Apply the fitted workflow: a lazy Dataset for a Dataset or path, and a DataFrame of
        the same library for a pandas or cuDF DataFrame.

        ``training=True`` marks ``data`` as the training data (``fit_transform`` sets it):
        operators that must not leak targets (``TargetEncoding``) then encode out-of-fold.
        ``dtype_backend`` (a pandas frame's result, as ``Dataset.compute``): NumPy dtypes
        (nullable ones for integer/boolean columns with nulls), or ``"pyarrow"``."""
        check_dtype_backend(dtype_backend, "Workflow.transform")
        if not self.fitted and not self._stat_nodes():
            self.fitted = True  # nothing to fit
        self._check_fitted()
        in_memory = not isinstance(data, Dataset | str | os.PathLike | list | tuple) \
            and hasattr(data, "columns") and not hasattr(data, "dask")
        ds = as_dataset(data)
        out = self._transform_dataset(ds, training)
        if in_memory:  # the same library back: pandas in -> pandas out, cuDF in -> cuDF out
            frame = compute(out.arrow_ddf(), phase="transform")[0].reset_index(drop=True)
            return user_frame(convert(frame, like=data), dtype_backend)
        return out

    def _transform_dataset(self, ds: Dataset, training: bool = False) -> Dataset:
        self._check_types_since_fit(ds.schema)
        plan = self._plan(self._checked_input(ds.schema), ds.backend.name, {"training": training})
        _checked(plan.steps[-1].schema)
        out = transform(plan, ds)
        out.storage_options = ds.storage_options  # to_parquet's default for URLs
        return out

    @background_job("fit_transform")
    def fit_transform(self, data: Any, *, background: bool = False,
                      dtype_backend: str = "numpy_nullable") -> Any:
        """``fit(data)`` then ``transform(data, training=True)``; with ``background=True`` a
        :class:`~interactive_recsys.runtime.jobs.Job` whose result is the transformed data."""
        return self.fit(data).transform(data, training=True, dtype_backend=dtype_backend)

    # ---- persistence ----------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        index = {id(n): i for i, n in enumerate(self.nodes)}
        return {
            "format": FORMAT_NAME, "format_version": FORMAT_VERSION,
            "library_version": _library_version,
            "nodes": [n.to_config(index) for n in self.nodes],
            "output": index[id(self.output_node)],
            "fitted": self.fitted,
            "input_schema": self.input_schema.to_dict() if self.input_schema else None,
            "states": {str(i): json_safe(self._states[self.node_id(n)])
                       for i, n in enumerate(self.nodes) if self.node_id(n) in self._states},
            "keys": {str(i): {"key": self._keys[self.node_id(n)],
                              "state": self._state_digests[self.node_id(n)]}
                     for i, n in enumerate(self.nodes) if self._keys.get(self.node_id(n))
                     and self._state_digests.get(self.node_id(n))
                     and self.node_id(n) in self._states},
        }

    def save(self, path: str | os.PathLike, *, overwrite: bool = False,
             storage_options: dict[str, Any] | None = None) -> str:
        """Write ``workflow.json`` and the fitted artifacts (parquet) into directory ``path``,
        atomically: a failed save leaves no partial directory. ``path`` may be an fsspec
        URL (opened with ``storage_options``, default the workflow's): the folder is then
        published with a ``_SUCCESS`` manifest (:mod:`.storage`), as a local one is.

        Only the artifact files that the fitted states name are copied, file by file
        (never a link, never a stray file of the artifacts folder), and each one's SHA-256
        is recorded in ``workflow.json`` (``"artifacts"``): :meth:`load` refuses a file
        changed since (:mod:`.io.folder_rules`). Storage options are never written."""
        path = os.fspath(path)
        options = self.storage_options if storage_options is None else dict(storage_options)
        config = self.to_config()
        if self.fitted and self.input_schema is not None:
            config["output_schema"] = self.output_schema.to_dict()
        has_artifacts = bool(self.artifacts_dir) and storage.isdir(self.artifacts_dir,
                                                                   self.storage_options)
        named = artifact_paths(self._states) if has_artifacts else []
        self.verify_artifacts()  # a loaded folder's changed file is never copied on
        if storage.is_remote(path):
            with commit.remote_atomic_directory(path, options, overwrite=overwrite) as tmp:
                config["artifacts"] = copy_named(self.artifacts_dir, storage.join(
                    tmp, "artifacts"), named, self.storage_options, options) if named else {}
                text = json.dumps(config, indent=2, allow_nan=False)
                storage.guarded(storage.filesystem(path, options).pipe_file, path,
                                storage.strip(storage.join(tmp, "workflow.json")),
                                text.encode())
                commit.expect(tmp, {"workflow.json": len(text.encode())})
            return path
        with atomic_directory(path, overwrite=overwrite) as tmp:
            config["artifacts"] = copy_named(self.artifacts_dir, os.path.join(
                tmp, "artifacts"), named, self.storage_options) if named else {}
            with open(os.path.join(tmp, "workflow.json"), "w") as f:
                f.write(json.dumps(config, indent=2, allow_nan=False))
            storage.local_manifest(tmp)  # last: every file with its size
        return path

    @classmethod
    def load(cls, path: str | os.PathLike,
             functions: dict[str, Callable] | list[Callable] | None = None, *,
             storage_options: dict[str, Any] | None = None) -> Workflow:
        """Load a saved workflow. Never executes code from the files: Python functions of
        ``LambdaOp`` are only taken from ``functions``, the functions themselves
        (``functions=[double]``, matched by their ``module:qualname``) or a mapping of the
        saved names to them (``{"__main__:<lambda>": f}``); a step whose function is not
        given raises when it runs, naming the function and how to pass it.

        ``path`` may be an fsspec URL (opened with ``storage_options``): the artifacts are
        then read there by the workers, never copied to this machine. A folder whose
        ``_SUCCESS`` manifest is incomplete (an interrupted save) is refused.

        Folders are closed: a symbolic link anywhere inside the folder (``artifacts/``
        itself included) is refused, never followed, and every artifact file must have the
        SHA-256 recorded at save (checked here for a local folder; for a URL, before the
        files are reused or updated, so a load does not download them).

        The folder is only read: fitting the loaded workflow again writes fresh artifacts
        (a new temporary folder, or ``artifacts_dir`` when set), and only ``save(path)``
        writes to a folder. A malformed ``workflow.json`` raises
        :class:`~interactive_recsys.errors.WorkflowFormatError` naming the field.
        """
        path = os.fspath(path)
        published = storage.published_output(path, storage_options, sizes=False)
        if storage.is_remote(path) and published is not None \
                and published[0] != path.rstrip("/"):  # a load only reads: it never finishes
            raise DatasetError(f"The saved workflow {path!r} is being published (a save "
                               "committed it and is copying it into the folder). Load it when "
                               f"that save has finished; if it was killed, `irs clean {path}` "
                               "finishes it once its lease has expired.")
        functions = functions_by_name(functions)  # before reading: a bad argument is named
        loaded = read_config(path, functions, storage_options)
        wf = cls(loaded.output, storage_options=storage_options)
        wf._states = loaded.states
        wf._keys = {i: k["key"] for i, k in loaded.keys.items()}
        wf._state_digests = {i: k["state"] for i, k in loaded.keys.items()}
        wf.input_schema = loaded.input_schema
        wf.fitted = loaded.fitted
        wf.artifacts_dir = loaded.artifacts_dir
        wf._read_only_artifacts = True
        wf._artifact_sums = loaded.artifact_sums
        wf._sums_checked = not storage.is_remote(path)  # read_config checked local files
        wf._check_state_keys(storage.join(path, "workflow.json"))
        return wf

    def verify_artifacts(self) -> None:
        """Refuse (:class:`~interactive_recsys.errors.WorkflowFormatError`) artifact files of
        a loaded workflow that changed since it was saved (their SHA-256 is recorded in
        ``workflow.json``); run before a reuse or an update reads them. Nothing to do for a
        workflow fitted here or saved without checksums."""
        sums = getattr(self, "_artifact_sums", None)
        if sums and not getattr(self, "_sums_checked", True) and self.artifacts_dir:
            verify_checksums(self.artifacts_dir, sums,
                             storage.join(os.path.dirname(self.artifacts_dir.rstrip("/")),
                                          "workflow.json"), self.storage_options)
            self._sums_checked = True

    def _check_state_keys(self, config_path: str) -> None:
        """Refuse a loaded state that lacks an entry its step needs (a raw ``KeyError`` at
        transform otherwise); the step's input groups are known once the schema is."""
        if not self.fitted or self.input_schema is None:
            return
        try:
            steps = list(self.fitted_steps())
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

    # ---- display --------------------------------------------------------------------------
    def source_text(self, node: Node) -> str:
        """How a step's output is named: its columns, its step id, or a sum of those."""
        if isinstance(node, SelectNode):
            return repr(node.selector)
        if isinstance(node, ConcatNode):
            return " + ".join(self.source_text(p) for p in node.parents)
        return self.node_id(node)

    def step_text(self, node: Node) -> str:
        """One operator step in words: what it reads and the operator."""
        return " + ".join(self.source_text(p) for p in node.parents) + f" >> {node.op!r}"

    def __repr__(self) -> str:
        status = "fitted" if self.fitted else "not fitted"
        lines = [f"Workflow ({status}):"]
        lines += [f"  {self.node_id(n)}: {self.step_text(n)}" for n in self.nodes
                  if isinstance(n, OpNode)]
        lines.append(f"  output: {self.source_text(self.output_node)}")
        if self.input_schema is not None:
            names = self.output_columns
            shown = ", ".join(names[:3]) + (f", ..., {names[-1]}" if len(names) > 3 else "")
            lines[-1] += f" -> {len(names)} columns ({shown})"
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{self.node_id(n)}</td><td><code>"
                       f"{html.escape(self.step_text(n))}</code></td></tr>"
                       for n in self.nodes if isinstance(n, OpNode))
        status = "fitted" if self.fitted else "not fitted"
        schema = self.output_schema._repr_html_() if self.input_schema is not None else ""
        return (f"<b>Workflow</b> ({status})<table><tr><th>step</th><th>operator</th></tr>"
                f"{rows}</table>{schema}")


def _kind(dtype: str) -> str:
    """The kind of values of a dtype: string, number (bool, int, float) or the dtype's name
    without its unit (timestamps, dates, lists of those...)."""
    base = element_dtype(dtype)
    kind = ("string" if base in ("string", "large_string") else "number"
            if is_numeric_dtype(base) else base.split("[")[0])
    return f"list<{kind}>" if base != dtype else kind


def _checked(schema: Schema) -> Schema:
    """``schema``, refused when a column name is reserved for internal columns."""
    for name in schema.names:
        if name.startswith(RESERVED_PREFIX):
            raise SchemaError(f"Column {name!r} starts with {RESERVED_PREFIX!r}, which "
                              "interactive-recsys reserves for its internal columns; rename it "
                              "(e.g. df.rename(columns=...) or ops.Rename) before the workflow.")
    return schema
