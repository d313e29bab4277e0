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
import os
import time
import warnings
from collections.abc import Callable, Collection, Iterator
from dataclasses import replace
from typing import Any

from interactive_recsys._version import __version__ as _library_version
from interactive_recsys.backend import convert
from interactive_recsys.backend._user_frames import check_dtype_backend, user_frame
from interactive_recsys.errors import DatasetError, NotFittedError, ParameterWarning
from interactive_recsys.io._dataset import Dataset, as_dataset
from interactive_recsys.ops._lambda_op import functions_by_name
from interactive_recsys.params import param_error
from interactive_recsys.runtime.jobs import Job, background_job, compute
from interactive_recsys.schema import Schema
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import (
    TemporaryArtifacts,
    check_temporary_artifacts_reach_workers,
)
from interactive_recsys.tables._context import RunFacts
from interactive_recsys.workflow._fitted import FittedState, FittedStep
from interactive_recsys.workflow._format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    read_config,
    write_workflow,
)
from interactive_recsys.workflow._graph import ConcatNode, Node, OpNode, SelectNode, checked_names
from interactive_recsys.workflow._incremental import updated
from interactive_recsys.workflow._inverse import inverse_dataset, vocabulary_series
from interactive_recsys.workflow._keys import fit_keys, state_digest
from interactive_recsys.workflow._plan import (
    Plan,
    compile_plan,
    fit_phases,
    prepare,
    states_without_data,
    transform,
)
from interactive_recsys.workflow._reuse import adopt, matches, refinish


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
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        #: everything fitting made (states, keys, input schema, artifacts folder): one
        #: object that fit, update and load replace (:mod:`.fitted`)
        self._state = FittedState(artifacts_dir=os.fspath(artifacts_dir) if artifacts_dir
                                  else None)

    # ---- the fitted state -----------------------------------------------------------------
    @property
    def fitted(self) -> bool:
        """Whether every statistics step has its fitted state."""
        return self._state.fitted

    @fitted.setter
    def fitted(self, value: bool) -> None:
        self._state = replace(self._state, fitted=value)

    @property
    def input_schema(self) -> Schema | None:
        """The schema of the data the workflow was fitted on (None before a fit)."""
        return self._state.input_schema

    @input_schema.setter
    def input_schema(self, value: Schema | None) -> None:
        self._state = replace(self._state, input_schema=value)

    @property
    def artifacts_dir(self) -> str | None:
        """The folder (or URL) of the fitted artifacts (see the class parameters)."""
        return self._state.artifacts_dir

    @artifacts_dir.setter
    def artifacts_dir(self, value: str | os.PathLike | None) -> None:
        self._state = replace(self._state, artifacts_dir=os.fspath(value) if value else None)

    @property
    def fit_stats(self) -> dict[str, Any]:
        """The last fit's phases (operators, seconds), its seconds and, with ``reuse=``,
        the steps it reused; an update's rows and what it did per step."""
        return self._state.fit_stats

    @fit_stats.setter
    def fit_stats(self, value: dict[str, Any]) -> None:
        self._state = replace(self._state, fit_stats=value)

    @property
    def _states(self) -> dict[str, dict[str, Any]]:
        """The fitted states by step id (read them with :meth:`fitted_steps`)."""
        return self._state.states

    # ---- schema ---------------------------------------------------------------------------
    def node_id(self, node: Node) -> str:
        """The step id of ``node`` (e.g. ``"categorify-1"``), which keys its fitted state."""
        return self._ids[id(node)]

    def compute_schema(self, input_schema: Schema | Dataset) -> Schema:
        """The output schema for data of ``input_schema``, without fitting (cardinalities are
        filled in after ``fit``)."""
        if isinstance(input_schema, Dataset):
            input_schema = input_schema.schema
        return checked_names(self.output_node.output_schema(self._checked_input(input_schema),
                                                            self._state.states))

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
        return iter(self._state.steps(self.output_node, op_type))

    def phases(self, skip: Collection[str] = ()) -> list[list[Node]]:
        """Statistics operators grouped so that each group depends only on earlier groups;
        the steps in ``skip`` (step ids whose states are known: reused) take no phase."""
        return self.output_node.phases(skip)

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
        and a fingerprint of the data: see ``_keys``) equals one of ``reuse``'s takes
        that state (its artifacts are linked or copied here) and is not computed; only the
        other steps are, in as few phases as their dependencies allow, and none at all
        (no pass over the data) when every state is reused. A step whose only change is to
        its operator's ``finishing_params`` (Categorify's ``freq_threshold``, ``max_size``,
        ``max_frequency``, ``num_buckets``, ``dtype``) is *refinished*: its state is built
        from the statistics ``reuse``'s state saved (the vocabulary cut again from the saved
        counts), without reading the data. ``fitted_steps()`` tells which (``reused``,
        ``refinished``), as do ``fit_stats["reused"]`` and ``fit_stats["refinished"]`` (set
        when ``reuse`` is given).

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
        source = self._reuse_source(reuse)  # before this fit replaces the state (reuse=self)
        ds, plan = prepare(self.output_node, data, "fit on",
                           why=", and statistics of zero rows mean nothing")
        previous = self._state  # alive during the fit (its temporary folder)
        artifacts_dir, temporary = previous.artifacts_dir, None
        if artifacts_dir is None or previous.temporary is not None \
                or previous.read_only:  # a refit never rewrites what others may read
            check_temporary_artifacts_reach_workers()
            temporary = TemporaryArtifacts()
            artifacts_dir = temporary.path
        states: dict[str, dict[str, Any]] = {}
        stats: dict[str, Any] = {"phases": []}
        self._state = FittedState(states, ds.schema, fit_stats=stats,  # unfitted until done
                                  artifacts_dir=artifacts_dir, temporary=temporary)
        started = time.perf_counter()
        keys, statistics = fit_keys(self.output_node, ds.schema, ds)
        if source is not None:
            reused, options = source
            states.update(adopt(matches(keys, reused.reusable_keys(), reused.states),
                                reused.states, reused.artifacts_dir, artifacts_dir, options,
                                self.storage_options))
            plan.set_states(states)
        adopted = frozenset(states)
        plan.bind(ds, artifacts_dir, temporary, self.storage_options,
                  previous.artifacts_dir)  # a side table found there is not read again
        if source is not None:  # only finishing parameters changed: no pass over the data
            more = time.perf_counter()
            states.update(refinish(plan, matches(
                {i: k for i, k in statistics.items() if i not in adopted},
                reused.reusable_keys(statistics=True), reused.states),
                reused.states, reused.artifacts_dir, options))
            plan.set_states(states)
            stats["refinish_seconds"] = time.perf_counter() - more
        refinished = frozenset(states) - adopted
        states.update(states_without_data(plan, adopted | refinished))  # given: no data read
        for k, new, seconds in fit_phases(plan, ds, plan.phases(frozenset(states))):
            states.update(new)
            stats["phases"].append({"phase": k, "operators": list(new), "seconds": seconds})
        del previous, source  # previous temporary folders may go once nothing reads them
        if reuse is not None:  # which states were adopted or refinished (the rest: computed)
            stats["reused"] = [i for i in keys if i in adopted]
            stats["refinished"] = [i for i in keys if i in refinished]
        stats["seconds"] = time.perf_counter() - started
        self._state = FittedState(states, ds.schema, True, keys,
                                  {i: state_digest(s) for i, s in states.items()}, adopted,
                                  stats, artifacts_dir, temporary, statistics_keys=statistics,
                                  refinished=refinished)
        self._warn_data(ds.known_num_rows)
        return self

    def _warn_data(self, num_rows: int | None) -> None:
        """A ``ParameterWarning`` per message of each operator's
        :meth:`~interactive_recsys.ops.Operator.data_warnings` on the data it was fitted on
        (e.g. a frequency threshold above every count: every value out of vocabulary)."""
        for node in self.nodes:
            if isinstance(node, OpNode):
                state = self._state.states.get(self.node_id(node))
                for message in node.op.data_warnings(num_rows, state):
                    warnings.warn(message, ParameterWarning, stacklevel=3)

    def _reuse_source(self, reuse: Any) -> tuple[FittedState, Any] | None:
        """The fitted state of ``reuse`` (a fitted workflow or a saved folder) and its
        storage options; the state keeps a temporary folder alive."""
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
        return reuse._state, reuse.storage_options or None

    @background_job("update")
    def update(self, data: Any, *, background: bool = False) -> Workflow | Job:
        """A NEW fitted workflow: this one extended with ``data`` (e.g. the next day's logs),
        as a fit on all the data so far would be, except that Categorify keeps every id it
        gave and appends new values after them (``_incremental``).

        This workflow, and a folder it was loaded from, are never written; ``save`` the new
        one. An operator whose statistics cannot be merged (FillMedian, ...) raises
        :class:`~interactive_recsys.errors.NotMergeableError` naming it and the fix (a full
        refit). ``background=True`` returns a :class:`~interactive_recsys.runtime.jobs.Job`.

        >>> import pandas as pd, interactive_recsys as irs
        >>> from interactive_recsys import ops
        >>> wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["x", "y"]}))
        >>> wf2 = wf.update(pd.DataFrame({"c": ["z", "y"]}))
        >>> wf2.transform(pd.DataFrame({"c": ["x", "y", "z"]}))["c"].tolist()  # z appended
        [3, 4, 5]
        """
        self.verify_artifacts()
        self._check_fitted()
        new = type(self)(self.output_node, storage_options=self.storage_options or None)
        new._state = updated(self.output_node, self._state, data, self.storage_options or None)
        return new

    # ---- checks ---------------------------------------------------------------------------
    def _checked_input(self, schema: Schema) -> Schema:
        """``schema``, refused when a column the workflow reads has a reserved name."""
        return self.output_node.check_input(schema)

    def _check_types_since_fit(self, schema: Schema) -> None:
        """Refuse a column whose kind of values changed since the fit (:meth:`Node.check_kinds`)."""
        self.output_node.check_kinds(schema, self.input_schema)

    def _check_fitted(self) -> None:
        if not self.fitted:
            needs = [self.node_id(n) for n in self.output_node.stat_nodes()]
            if needs or self.input_schema is None:
                raise NotFittedError(f"This workflow is not fitted (statistics needed by "
                                     f"{needs or 'no operator'}); call wf.fit(dataset) first.")

    # ---- transform ------------------------------------------------------------------------
    def _plan(self, input_schema: Schema, backend_name: str, run: RunFacts | None = None
              ) -> Plan:
        """The plan for data of ``input_schema`` with the fitted states (each step's schema
        computed once, in the plan; see :mod:`.plan`)."""
        return compile_plan(self.output_node, input_schema, self._state.states, backend_name,
                            self.artifacts_dir, run, keep=self._state.temporary,
                            storage_options=self.storage_options or None)

    def transform(self, data: Any, *, training: bool = False,
                  dtype_backend: str = "numpy_nullable") -> Any:
        """Apply the fitted workflow: a lazy Dataset for a Dataset or path, and a DataFrame of
        the same library for a pandas or cuDF DataFrame.

        ``training=True`` marks ``data`` as the training data (``fit_transform`` sets it):
        operators that must not leak targets (``TargetEncoding``) then encode out-of-fold.
        ``dtype_backend`` (a pandas frame's result, as ``Dataset.compute``): NumPy dtypes
        (nullable ones for integer/boolean columns with nulls), or ``"pyarrow"``."""
        check_dtype_backend(dtype_backend, "Workflow.transform")
        if not self.fitted and not self.output_node.stat_nodes():
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
        plan = self._plan(self._checked_input(ds.schema), ds.backend.name,
                          RunFacts(training=training))
        checked_names(plan.steps[-1].schema)
        out = transform(plan, ds)
        out.storage_options = ds.storage_options  # to_parquet's default for URLs
        return out

    def inverse_transform(self, data: Any, *, columns: Collection[str] | None = None,
                          oov: dict[str, Any] | None = None,
                          dtype_backend: str = "numpy_nullable") -> Any:
        """Categorify's ids in ``data`` back to the values they stand for (scikit-learn's
        name): a DataFrame for a pandas or cuDF DataFrame, a lazy Dataset (partition by
        partition, on the cluster too) for a Dataset or path.

        ``data`` may hold any of the workflow's output columns, and others: every column a
        ``Categorify`` made (traced back through steps that keep values: renaming, tags,
        selection, row filters, joins) is read back, any other passes unchanged;
        ``columns`` limits the columns read back.
        ``HashBucket``/``HashedCross`` outputs and ids changed after their ``Categorify``
        are refused by name. Values come back in the column's original dtype (lists of ids
        as lists). Null and padding ids give null. An out-of-vocabulary id (the one OOV id,
        any ``num_buckets`` bucket, an id an update retired) gives the column's marker:
        ``"<OOV>"`` for strings, ``-1`` for numbers, or ``oov={column: marker}`` (``None``:
        null); other dtypes have none, and such an id is then an error. A marker is a value
        of the column's dtype that its vocabulary does not hold (one it holds is refused,
        naming it), so what comes back is a vocabulary value or the marker, never one
        mistaken for the other. An id outside ``[0, cardinality)`` is an error naming the
        column and the id. A ``combo`` column comes back as one column per member
        (``a_b.a``, ``a_b.b``, each in its dtype; ``oov`` takes a marker per member).

        >>> import pandas as pd, interactive_recsys as irs
        >>> from interactive_recsys import ops
        >>> df = pd.DataFrame({"user": [10, 20, 10], "item": ["x", "y", "x"]})
        >>> wf = irs.Workflow(["user", "item"] >> ops.Categorify()).fit(df)
        >>> back = wf.inverse_transform(wf.transform(df))
        >>> back.equals(df)
        True
        >>> wf.inverse_transform(pd.DataFrame({"item": [2, 4], "score": [0.5, 0.1]}))
            item  score
        0  <OOV>    0.5
        1      y    0.1
        """
        check_dtype_backend(dtype_backend, "Workflow.inverse_transform")
        self._check_fitted()
        in_memory = not isinstance(data, Dataset | str | os.PathLike | list | tuple) \
            and hasattr(data, "columns") and not hasattr(data, "dask")
        out = inverse_dataset(self, as_dataset(data), columns, oov)
        if in_memory:
            frame = compute(out.arrow_ddf(), phase="inverse transform")[0]
            return user_frame(convert(frame.reset_index(drop=True), like=data), dtype_backend)
        return out

    def vocabulary(self, column: str) -> Any:
        """The values of output column ``column``'s vocabulary in id order: a pandas Series
        indexed by id (``id``), named ``column``; ids an update retired
        (``max_frequency``) are absent. ``Categorify(vocabulary={column:
        wf.vocabulary(column)})`` starts another workflow from it: the values keep their
        order, and their ids when that step reserves as many out-of-vocabulary ids. A combo
        group's values are its keys (its members' values as text, joined by ``"\\x1f"``).

        >>> import pandas as pd, interactive_recsys as irs
        >>> from interactive_recsys import ops
        >>> wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["b", "a", "b"]}))
        >>> wf.vocabulary("c")
        id
        3    b
        4    a
        Name: c, dtype: str
        """
        return vocabulary_series(self, column)

    def to_torch(self) -> Any:
        """The fitted per-row steps as a ``torch.nn.Module`` for serving: a
        :class:`~interactive_recsys.serving.TorchTransform`.

        The steps are those the online loader runs (``irs.Loader(raw, workflow=wf)``):
        Categorify, HashBucket, FillMissing, FillMedian, Clip, LogOp, Normalize and
        NormalizeMinMax. Steps that change only the schema (AddTags, AddProperties, Rename,
        SelectColumns, DropColumns) pass; any other step is refused by name with a
        :class:`~interactive_recsys.errors.SchemaError`. ``torch.jit.script`` compiles the
        module, and the file ``torch.jit.save`` writes runs where this package is not
        installed; ``torch.export`` takes its numeric part (``module.numeric``).

        Examples
        --------
        >>> import pandas as pd, torch, interactive_recsys as irs
        >>> from interactive_recsys import ops
        >>> raw = pd.DataFrame({"c": ["a", "b", "a", None], "n": [1.0, None, 3.0, 4.0],
        ...                     "label": [0, 1, 0, 1]})
        >>> wf = irs.Workflow((["c"] >> ops.Categorify()) + (["n"] >> ops.FillMissing(0))
        ...                   + (["label"] >> ops.AddTags(["target"])))
        >>> _ = wf.fit(raw)
        >>> module = torch.jit.script(wf.to_torch())
        >>> out = module({"n": torch.tensor([float("nan"), 2.0])}, {"c": ["b", "unseen"]})
        >>> {name: values.tolist() for name, values in out.items()}
        {'c': [4, 2], 'n': [0.0, 2.0]}
        >>> wf.transform(pd.DataFrame({"c": ["b", "unseen"], "n": [None, 2.0],
        ...                            "label": [0, 0]}))[["c", "n"]].values.tolist()
        [[4.0, 0.0], [2.0, 2.0]]
        """
        from interactive_recsys.serving._build import to_torch  # lazy: torch is optional

        return to_torch(self)

    @background_job("fit_transform")
    def fit_transform(self, data: Any, *, background: bool = False,
                      dtype_backend: str = "numpy_nullable") -> Any:
        """``fit(data)`` then ``transform(data, training=True)``; with ``background=True`` a
        :class:`~interactive_recsys.runtime.jobs.Job` whose result is the transformed data."""
        return self.fit(data).transform(data, training=True, dtype_backend=dtype_backend)

    # ---- persistence ----------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """What ``workflow.json`` holds (without the output schema and artifact sums)."""
        index = {id(n): i for i, n in enumerate(self.nodes)}
        return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                "library_version": _library_version,
                "nodes": [n.to_config(index) for n in self.nodes],
                "output": index[id(self.output_node)],
                **self._state.config(self.nodes, self._ids)}

    def save(self, path: str | os.PathLike, *, overwrite: bool = False,
             storage_options: dict[str, Any] | None = None) -> str:
        """Write ``workflow.json`` and the fitted artifacts (parquet) into directory ``path``,
        atomically: a failed save leaves no partial directory. ``path`` may be an fsspec
        URL (opened with ``storage_options``, default the workflow's): the folder is then
        published with a ``_SUCCESS`` manifest (:mod:`.storage`), as a local one is.

        Only the artifact files that the fitted states name are copied, file by file
        (never a link, never a stray file of the artifacts folder), and each one's SHA-256
        is recorded in ``workflow.json`` (``"artifacts"``): :meth:`load` refuses a file
        changed since (``store._folder_rules``). Storage options are never written."""
        path = os.fspath(path)
        options = self.storage_options if storage_options is None else dict(storage_options)
        config = self.to_config()
        if self.fitted and self.input_schema is not None:
            config["output_schema"] = self.output_schema.to_dict()
        self.verify_artifacts()  # a loaded folder's changed file is never copied on
        return write_workflow(path, config, self._state.states, self.artifacts_dir,
                              self.storage_options, options, overwrite)

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
        wf._state = FittedState.from_loaded(loaded, remote=storage.is_remote(path))
        wf._state.check_state_keys(wf.output_node, storage.join(path, "workflow.json"))
        return wf

    def verify_artifacts(self) -> None:
        """Refuse (:class:`~interactive_recsys.errors.WorkflowFormatError`) artifact files of
        a loaded workflow that changed since it was saved (their SHA-256 is recorded in
        ``workflow.json``); run before a reuse or an update reads them. Nothing to do for a
        workflow fitted here or saved without checksums."""
        self._state.verify_artifacts(self.storage_options)

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
