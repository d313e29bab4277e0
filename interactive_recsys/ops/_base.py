"""The operator contract.

Every operator:

* declares its keyword parameters once, as :class:`~.params.Param` class attributes
  (validation, save/load, ``repr`` and the builder's forms all read that table);
* predicts its output schema from its input schema (:meth:`Operator.output_schema`);
* transforms one partition purely: ``transform(df, state, ctx) -> df``;
* keeps fitted state apart: a :class:`StatOperator` returns its state from ``fit_*``
  methods and the workflow stores it; the operator object itself never changes.
* says whether its fitted state can be extended with new data (``Workflow.update``): a
  :class:`StatOperator` merges it with a state fitted on the new data only
  (:meth:`StatOperator.merge_state`), or refuses with an error naming itself.

Examples
--------
>>> from interactive_recsys.ops import Clip
>>> Clip(min_value=0)
Clip(min_value=0)
>>> try:
...     Clip(min_value="a")
... except ParameterError as exc:
...     print(exc)
The 'min_value' parameter of Clip must be a finite number or None. Got 'a' instead.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from interactive_recsys.errors import DatasetError, NotMergeableError, ParameterError, SchemaError
from interactive_recsys.operands import OperatorOperand, SelectionOperand
from interactive_recsys.ops._state_check import check_shape
from interactive_recsys.params import REQUIRED, Param, declared_params, param_error, validate_values
from interactive_recsys.runtime.jobs import name_task_group
from interactive_recsys.schema import ColumnSchema, Schema, is_numeric_dtype
from interactive_recsys.tables._context import OpContext

#: Every concrete operator class, by name (filled by ``Operator.__init_subclass__``).
OPERATORS: dict[str, type[Operator]] = {}


def is_graph_value(value: Any) -> bool:
    """Whether ``value`` is a workflow step (a node built with ``>>``/``+``) or a
    :class:`~interactive_recsys.schema.ColumnSelector`, not plain column names."""
    node = OperatorOperand.node  # registered by interactive_recsys.workflow._graph
    return isinstance(value, SelectionOperand) or (node is not None and isinstance(value, node))


def _signature(params: dict[str, Param]) -> inspect.Signature:
    """The constructor's signature from the declared parameters (for ``Op?`` and completion).

    Parameters keep their declared order (positional arguments fill them in that order); a
    required parameter after one with a default, and every one after it, is keyword-only.
    """
    out, keyword_only = [], False
    for name, spec in params.items():
        keyword_only = keyword_only or (spec.required and any(p.default is not
                                        inspect.Parameter.empty for p in out))
        kind = (inspect.Parameter.KEYWORD_ONLY if keyword_only
                else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        default = inspect.Parameter.empty if spec.required else spec.default
        out.append(inspect.Parameter(name, kind, default=default, annotation=spec.annotation))
    return inspect.Signature(out)


_SECTION_START = re.compile(r"^(?:>>>|Examples\n-{3,}|Notes\n-{3,}|See Also\n-{3,})", re.M)


def _with_parameters_section(doc: str | None, params: dict[str, Param]) -> str | None:
    """``doc`` with a numpydoc ``Parameters`` section generated from ``params``.

    The section goes after the description, before the first example or later section; a
    docstring that already has one is left as it is.
    """
    if not params or (doc and re.search(r"^\s*Parameters\n\s*-{3,}", doc, re.M)):
        return doc
    text = inspect.cleandoc(doc or "")
    section = "Parameters\n----------\n" + "\n".join(
        spec.numpydoc(name) for name, spec in params.items())
    match = _SECTION_START.search(text)
    if match is None:
        return f"{text}\n\n{section}\n" if text else section + "\n"
    head, tail = text[:match.start()].rstrip(), text[match.start():]
    if tail.startswith(">>>"):
        tail = "Examples\n--------\n" + tail
    return f"{head}\n\n{section}\n\n{tail}\n"


@dataclass(frozen=True)
class StateFolders:
    """Where the files of the two states that :meth:`StatOperator.merge_state` merges are:
    the artifacts folders that their relative paths start from."""

    old: str | None
    new: str | None


@dataclass(frozen=True)
class SavedStatistics:
    """A state of an earlier fit of a step whose statistics are this step's: the same
    operator on the same data, columns and upstream steps, with other values of the
    parameters in :attr:`StatOperator.finishing_params` only (see
    :meth:`StatOperator.refinish_graph`). Its file paths are relative to ``folder``, read
    with ``storage_options``."""

    state: dict[str, Any]
    folder: str | None
    storage_options: Any = None


def merged_directory(ctx: OpContext) -> str:
    """The folder a merged state writes its files into: under the step's own folder of the
    updated workflow's artifacts (the new data's fit wrote next to it, and is removed)."""
    return os.path.join(ctx.artifacts_dir or ".", ctx.node_id, "merged")


class Operator(OperatorOperand):
    """Base class of all operators; see the module docstring for the contract."""

    params: ClassVar[dict[str, Param]] = {}
    #: One line shown in the builder's palette and the documentation's operator table.
    summary: ClassVar[str] = ""
    #: Category in the palette.
    category: ClassVar[str] = "transform"
    #: Whether string inputs may arrive dictionary-encoded (``backend.dictionary_codes``
    #: gives codes and dictionary): a column that only such operators read is then read
    #: from parquet without decoding its dictionary pages.
    dictionary_input: ClassVar[bool] = False

    def __init_subclass__(cls, register: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = declared_params(cls, getattr(cls, "params", {}))
        cls.params = declared
        cls.__signature__ = _signature(declared)
        cls.__doc__ = _with_parameters_section(vars(cls).get("__doc__"), declared)
        if register:
            OPERATORS[cls.__name__] = cls
            name_task_group(cls.__name__.lower(), cls.__name__)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = list(self.params)
        if len(args) > len(names):
            raise ParameterError(f"{type(self).__name__} takes at most {len(names)} positional "
                                 f"arguments ({', '.join(names)}); got {len(args)}.")
        for name, value in zip(names, args, strict=False):
            if name in kwargs:
                raise ParameterError(f"{type(self).__name__} got two values for {name!r}.")
            kwargs[name] = value
        # a workflow step or a selection given where column names go: kept until the
        # workflow knows its output columns (see :meth:`with_dependency_columns`)
        pending = {k: v for k, v in kwargs.items()
                   if k in self.params and self.params[k].columns and is_graph_value(v)}
        values = validate_values(type(self).__name__,
                                 {k: p for k, p in self.params.items() if k not in pending},
                                 {k: v for k, v in kwargs.items() if k not in pending})
        self._params = {k: pending[k] if k in pending else values[k] for k in self.params}
        self._pending = pending
        if not pending:  # else checked once the names are known
            self.check_params()

    def __getattr__(self, name: str) -> Any:
        params = self.__dict__.get("_params", {})
        if name in params:
            return params[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def check_params(self) -> None:
        """Cross-parameter checks (override); raise :class:`~interactive_recsys.ParameterError`."""

    def data_warnings(self, num_rows: int | None,
                      state: dict[str, Any] | None = None) -> list[str]:
        """Why these parameters cannot work on the data, one message per problem (override):
        before a fit (``state`` None) on data of ``num_rows`` rows (None: not known), after
        one on the data ``state`` was fitted on. The workflow warns each message after a fit
        (a :class:`~interactive_recsys.errors.ParameterWarning`), the builder shows the first
        next to the step; by default there is none.

        >>> from interactive_recsys.ops import Clip
        >>> Clip(min_value=0).data_warnings(3)
        []
        """
        return []

    def get_params(self) -> dict[str, Any]:
        return dict(self._params)

    # ---- parameters given as workflow steps -----------------------------------------------
    def dependency_nodes(self) -> dict[str, Any]:
        """The column parameters given as a workflow step or a selection (NVTabular's
        ``JoinGroupby(cont_cols=node)``), by parameter name; the workflow graph makes them
        inputs of this step and fills in their output columns."""
        return dict(self.__dict__.get("_pending", {}))

    def with_dependency_columns(self, columns: dict[str, list[str]]) -> Operator:
        """This operator with the parameters given as steps replaced by ``columns`` (the
        steps' output columns), checked as if the names had been given."""
        params = {k: v for k, v in self._params.items() if k not in self.dependency_nodes()}
        for name, names in columns.items():
            if self.params[name].kind == "str":
                if len(names) != 1:
                    raise param_error(name, type(self).__name__, "must name one column, but "
                                      f"the step given for it outputs {list(names)}. Pick one, "
                                      f"e.g. node[{(names or ['col'])[0]!r}].",
                                      error=SchemaError)
                params[name] = names[0]
            else:
                params[name] = list(names)
        return type(self)(**params)

    def named_columns(self, *params: str) -> list[str]:
        """The column names given in ``params`` (a name or a list of names; parameters
        given as workflow steps are not known here and left out)."""
        out: list[str] = []
        for name in params:
            value = self._params[name]
            if name in self.dependency_nodes() or value is None:
                continue
            out += [value] if isinstance(value, str) else list(value)
        return out

    # ---- persistence ----------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """JSON-able description: the class name and the non-default parameters."""
        if self.dependency_nodes():
            raise ParameterError(
                f"{type(self).__name__} takes {sorted(self.dependency_nodes())} from workflow "
                "steps whose columns are known only with the data; compute the workflow's "
                "schema first (fit it, or Workflow.compute_schema(dataset)).")
        return {"op": type(self).__name__, "params": {
            k: v for k, v in self._params.items() if v != self.params[k].default}}

    @classmethod
    def saved_params(cls, params: dict[str, Any], functions: dict[str, Any] | None
                     ) -> dict[str, Any]:
        """The parameters of a step read from a saved ``workflow.json``, as the constructor
        takes them; default: unchanged. An operator whose saved form differs (a function
        saved by name, a side table saved by its content hash) overrides it, and refuses a
        bad saved value with ``SavedParamError`` naming the parameter.

        >>> from interactive_recsys.ops import Clip
        >>> Clip.saved_params({"min_value": 0}, None)
        {'min_value': 0}
        """
        return params

    @staticmethod
    def from_config(config: dict[str, Any]) -> Operator:
        name = config.get("op")
        if name not in OPERATORS:
            raise ParameterError(f"Unknown operator {name!r} in a saved workflow; known "
                                 f"operators: {sorted(OPERATORS)}.")
        return OPERATORS[name](**config.get("params", {}))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._params.items()
                          if (v is not REQUIRED and v != self.params[k].default)
                          or self.params[k].required)
        return f"{type(self).__name__}({shown})"

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        """The input column (one of ``inputs``) whose values the output column ``output``
        holds unchanged, for a step that keeps them (it renames, tags or selects columns,
        filters rows, joins); None (the default) when this step computes them.
        ``Workflow.inverse_transform`` follows such steps back to the ``Categorify`` that
        made the ids.

        >>> from interactive_recsys.ops import Clip, Rename
        >>> Rename(postfix="_id").unchanged_input("item_id", ["item"])
        'item'
        >>> print(Clip(min_value=0).unchanged_input("x", ["x"]))
        None
        """
        return None

    #: Whether the output columns are input columns unchanged (SelectColumns, DropColumns):
    #: the same column reached twice through such steps is one column, not two.
    keeps_columns: ClassVar[bool] = False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._params == other._params  # type: ignore[attr-defined]

    __hash__ = object.__hash__

    # ---- schema ---------------------------------------------------------------------------
    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        """The output columns; default: one output per input column (see ``column_schema``)."""
        return Schema(self.column_schema(input_schema[n], state) for n in input_schema.names)

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        return col

    # ---- execution ------------------------------------------------------------------------
    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        raise NotImplementedError

    def elementwise(self, state: dict[str, Any] | None, column: str) -> tuple | None:
        """This operator on ``column`` as one per-value step of ``Backend.elementwise``
        (``("clip", 0, None)``...), or None (the default) when it is not one. The plan runs
        consecutive steps of a branch as one chain per column, with no frame built between
        them (``Backend.elementwise``); ``transform`` gives the same result as the step."""
        return None

    #: Whether the online transform (``irs.Loader(raw_data, workflow=wf)``) applies this
    #: operator to each batch on the training device: its output row is a function of its
    #: input row and of its fitted state, and :meth:`online_step` describes it. The online
    #: transform refuses every other step by name (shuffles, joins, groupbys, row filters,
    #: user functions): those run offline, ``wf.transform(ds).to_parquet(path)``.
    online: ClassVar[bool] = False

    def online_step(self, state: dict[str, Any] | None, column: str,
                    ctx: OpContext) -> tuple | None:
        """This operator on ``column`` as one step of the online transform
        (``loader._online``), or None when these parameters have none
        (the step is then refused); default: :meth:`elementwise`."""
        return self.elementwise(state, column)

    #: Whether this operator changes only the schema: tags, properties, names or which
    #: columns go on (AddTags, AddProperties, Rename, SelectColumns, DropColumns); every
    #: output column is an input column's values unchanged (:meth:`unchanged_input`) and
    #: every row stays. It is no data step: the online transform and ``Workflow.to_torch``
    #: pass it.
    schema_only: ClassVar[bool] = False

    @property
    def is_stat(self) -> bool:
        return False

    @property
    def changes_rows(self) -> bool:
        return False

    def shuffle_keys(self) -> list[str] | None:
        """Columns whose equal values must meet in one partition before ``transform`` runs.

        ``None`` (the default): rows stay where they are. Otherwise the workflow hash-partitions
        the operator's input rows by these columns (a Dask shuffle), in dataset order within
        each key, and the operator may reorder or aggregate rows: its output can then only be
        combined with columns that pass through it.
        """
        return None


class StatOperator(Operator, register=False):
    """An operator with statistics computed over the whole dataset by ``fit``.

    The workflow maps ``fit_partition`` over partitions, reduces the partial results
    with ``fit_combine`` as a tree, and calls ``fit_finalize`` once to get the state.
    Operators needing a different reduction override ``fit_graph``.
    """

    category = "statistics"

    @property
    def is_stat(self) -> bool:
        return True

    def fit_partition(self, df: Any, ctx: OpContext) -> Any:
        raise NotImplementedError

    def fit_combine(self, partials: list[Any]) -> Any:
        raise NotImplementedError

    def fit_finalize(self, partial: Any, ctx: OpContext) -> dict[str, Any]:
        raise NotImplementedError

    #: The shape of the fitted state (see ``_state_check``), checked on load.
    state_shape: ClassVar[Any] = "any"

    def check_state(self, state: dict[str, Any]) -> None:
        """Check a state read from a saved workflow against ``state_shape``; raise
        ``ValueError`` naming the entry that is malformed."""
        check_shape(state, self.state_shape)

    def check_saved_files(self, state: dict[str, Any], folder: str,
                          storage_options: Any = None) -> None:
        """Check the artifact files a state read from a saved workflow names (``folder``:
        the artifacts folder), cheaply (footers); raise
        :class:`~interactive_recsys.errors.WorkflowFormatError` naming the file and the check.
        Default: nothing beyond what the loader checks for every file."""

    # ---- incremental updates (``Workflow.update``) --------------------------------------
    def delta_op(self) -> StatOperator:
        """The operator fitted on the new data only, whose state :meth:`merge_state` merges
        (default: this one; Categorify fits without its threshold and size cap, which apply
        to the cumulative counts)."""
        return self

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: StateFolders) -> dict[str, Any]:
        """The state of a fit on the data of ``old`` and of ``new`` together, exactly.

        ``new`` is ``delta_op()``'s state fitted on the new data only. Files of ``old`` are
        under ``folders.old``, those of ``new`` under ``folders.new`` (relative paths, as in
        the states); the merged state writes its own under ``merged_directory(ctx)``, in
        ``ctx.artifacts_dir``, and never changes the others. The default refuses: an operator
        whose state cannot be merged raises :class:`~interactive_recsys.errors.NotMergeableError`
        naming itself."""
        raise self.not_mergeable(ctx, "its fitted state holds no partial statistics that "
                                      "can be merged with new data")

    def check_mergeable(self, state: dict[str, Any], ctx: OpContext) -> None:
        """Refuse (:class:`~interactive_recsys.errors.NotMergeableError`) before any work when
        ``state`` cannot be merged (default: when the operator does not override
        :meth:`merge_state`)."""
        if type(self).merge_state is StatOperator.merge_state:
            self.merge_state(state, state, ctx, StateFolders(None, None))

    def update_changes_seen_rows(self, old: dict[str, Any], merged: dict[str, Any]) -> bool:
        """Whether the merged state transforms rows already seen differently from ``old``
        (a new mean does; Categorify's stable ids do not). A statistics step downstream of
        one that does cannot be merged exactly: its old partial statistics were computed on
        the old outputs. Default: True unless the states are equal."""
        return old != merged

    def update_warnings(self, merged: dict[str, Any]) -> list[str]:
        """What an update into ``merged`` left out that the user should know (override),
        one message each; the workflow warns them as an ``UpdateWarning``, with the step's
        id. Default: none."""
        return []

    def not_mergeable(self, ctx: OpContext, why: str) -> NotMergeableError:
        """The error of a step that cannot be updated: names it, its columns, why, the fix."""
        columns = [c for g in ctx.groups for c in g]
        return NotMergeableError(
            f"{type(self).__name__} ({ctx.node_id or 'a step'}) on columns {columns} cannot be "
            f"updated with new data: {why}. Refit the workflow on all the data instead "
            "(wf.fit(all_days)), or replace the step by one that can be merged.")

    # ---- refits that change only finishing parameters (``Workflow.fit(..., reuse=)``) ----
    #: Parameters read only when the state is finished from statistics of the data that do
    #: not depend on them (Categorify cuts its vocabulary from the value counts by
    #: ``freq_threshold``): a refit whose only change is to these builds the state from the
    #: previous fit's statistics (:meth:`refinish_graph`), with no pass over the data.
    #: Empty (the default): any change of a parameter fits the step again.
    finishing_params: ClassVar[tuple[str, ...]] = ()

    def refinish_graph(self, previous: SavedStatistics, ctx: OpContext) -> Any | None:
        """This operator's state built from ``previous`` (the state of a fit of the same
        statistics with other :attr:`finishing_params`), as a ``dask`` delayed object whose
        result is the state a fit on the data would give; it writes its files under
        ``ctx.artifacts_dir`` as ``fit_graph`` does, and never changes ``previous``'s.
        None when ``previous`` does not hold what is needed (the step is then fitted on the
        data). Default: None."""
        return None

    # ---- statistics that are given, not computed (``Categorify(vocabulary=...)``) ----------
    def state_without_data(self, ctx: OpContext, input_schema: Schema) -> Any | None:
        """This step's state when it needs no pass over the data (its statistics are given,
        as ``Categorify(vocabulary=...)``'s): a ``dask`` delayed object whose result is the
        state, its files written under ``ctx.artifacts_dir`` as ``fit_graph`` would
        write them (``input_schema``: the step's input). None (the default): the step is
        fitted on the data. A fit and an update build these states first, in no phase of
        their own, so the step's columns are never read for it; an update builds the state
        again, unchanged by the new data."""
        return None

    #: Entries of the state that map every input column to a value (e.g. Normalize's
    #: ``means``); see :meth:`state_keys`.
    per_column_state: ClassVar[tuple[str, ...]] = ()

    def state_keys(self, groups: Sequence[tuple[str, ...]]) -> dict[str, list[str]]:
        """The keys each map of the fitted state must hold for these input groups (checked
        when a saved workflow is loaded, so a hand-edited state missing one is refused
        there, not at transform); default: the input columns in ``per_column_state``."""
        columns = [c for g in groups for c in g]
        return {entry: columns for entry in self.per_column_state}


class SavedParamError(ValueError):
    """A saved step's parameter ``param`` that its operator cannot take back (see
    :meth:`Operator.saved_params`); the message says why."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class RowFilter(Operator, register=False):
    """An operator that keeps some rows: ``row_mask`` returns the rows to keep.

    Rows dropped by a row filter are dropped from the whole workflow output, wherever the
    filter stands; statistics downstream of it see only the kept rows.
    """

    category = "rows"

    @property
    def changes_rows(self) -> bool:
        return True

    def row_mask(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        raise NotImplementedError

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        return df

    def unchanged_input(self, output: str, inputs: Sequence[str]) -> str | None:
        """The rows it keeps hold their input values unchanged (a join adds columns)."""
        return output if output in inputs else None


def no_rows_error(op: Operator, ctx: OpContext) -> Exception:
    """The error of a statistic fitted on no rows: names the step and the row filters before
    it (``ctx.run.row_filters``, filled by the workflow)."""
    filters = ctx.run.row_filters_of(ctx.node_id)
    before = (f"after {', '.join(filters)}, which dropped every row" if filters
              else "(every row was dropped before it)")
    return DatasetError(f"{type(op).__name__} ({ctx.node_id}) saw no rows {before}; its "
                        "statistics would be empty. Loosen the filter or check the data.")


def require_numeric(op: Operator, col: ColumnSchema) -> None:
    """Raise a clear error when ``col`` is not numeric."""
    if not is_numeric_dtype(col.dtype) or col.is_list:
        raise SchemaError(f"{type(op).__name__} needs numeric columns, but column {col.name!r} "
                          f"has dtype {col.dtype}. Encode it first (e.g. ops.Categorify) or "
                          "select only numeric columns.")


def group_names(op: Operator, groups: Sequence[Sequence[str]], name: Any = "_".join,
                outputs: Any = None) -> dict[str, tuple[str, ...]]:
    """``{name(group): group}`` for an operator that names its outputs after column groups,
    refusing two groups that get one name (their outputs would overwrite each other), e.g.
    ``["a", "b"]`` and ``"a_b"``, or ``["a", "b_c"]`` and ``["a_b", "c"]``.

    ``outputs(key)`` lists the output columns of one key, when they are more than the key
    itself; those must be unique across groups too.

    >>> from interactive_recsys.ops import Categorify
    >>> try:
    ...     group_names(Categorify(), [("a", "b"), ("a_b",)])
    ... except SchemaError as exc:
    ...     print(str(exc)[:75])
    Categorify would name the outputs of column group ['a', 'b'] and of ['a_b']
    """
    keys: dict[str, tuple[str, ...]] = {}
    made: dict[str, tuple[str, ...]] = {}
    for group in groups:
        group = tuple(group)
        key = name(group)
        for out in (outputs(key) if outputs else [key]):
            if out in made and made[out] != group:
                other = list(made[out])
                raise SchemaError(
                    f"{type(op).__name__} would name the outputs of column group {other} and "
                    f"of {list(group)} both {out!r}, so one would overwrite the other. Rename a "
                    f"column first (ops.Rename) or encode the groups in two separate steps.")
            made[out] = group
        keys[key] = group
    return keys


def transform_elementwise(op: Operator, df: Any, state: dict[str, Any] | None,
                          ctx: OpContext) -> Any:
    """``transform`` of an operator that is one ``elementwise`` step on every column."""
    b = ctx.backend
    return b.with_columns(df, {n: b.elementwise(b.column(df, n), [op.elementwise(state, n)])
                               for n in df.columns})
