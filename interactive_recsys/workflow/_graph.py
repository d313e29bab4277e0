"""The operator graph: selections chained with ``>>`` and concatenated with ``+``.

Three node types: a :class:`SelectNode` picks input columns, an :class:`OpNode` applies an
operator to its parents' outputs, a :class:`ConcatNode` puts its parents' outputs side by
side. ``>>`` and ``+`` on column selections and operators (:mod:`.operands`, mixins they
inherit) build these nodes (this module registers :class:`Node` there).
:func:`interactive_recsys.workflow._plan.compile_plan` turns a graph into the
:class:`~interactive_recsys.workflow._plan.Plan` that runs, with every step's schema computed once.

>>> from interactive_recsys import ops
>>> node = ["a", "b"] >> ops.FillMissing(0) >> ops.Normalize()
>>> (node + ["label"]).output_schema(Schema.from_arrow(pa.schema(
...     [("a", pa.int64()), ("b", pa.float64()), ("label", pa.int8())]))).names
['a', 'b', 'label']
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any, ClassVar

import pyarrow as pa  # noqa: F401  (used by the doctest)

from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.operands import GraphOperand
from interactive_recsys.ops._base import Operator
from interactive_recsys.ops._lambda_op import LambdaOp
from interactive_recsys.ops._select import DropColumns, SelectColumns
from interactive_recsys.schema import (
    RESERVED_PREFIX,
    ColumnSelector,
    Schema,
    element_dtype,
    flatten,
    is_numeric_dtype,
)


class StepList:
    """The operator steps of a graph, one line each (what ``node.graph`` shows)."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def __repr__(self) -> str:
        steps = [n for n in self.node.walk() if isinstance(n, OpNode)]
        return "\n".join(f"{i}: {n.label()}" for i, n in enumerate(steps, 1)) or repr(self.node)


#: Fitted states, keyed by step id (see :meth:`Node.node_ids`).
States = dict[str, dict[str, Any]]


class Node:
    """One step of a workflow graph (see :class:`SelectNode`, :class:`OpNode`,
    :class:`ConcatNode`).

    ``Node(kind, selector=..., op=..., parents=...)`` builds the node type named by
    ``kind`` (``"select"``, ``"op"`` or ``"concat"``, as ``workflow.json`` stores them).
    """

    #: the node type's name in ``workflow.json``
    kind: ClassVar[str] = ""

    def __new__(cls, kind: str | None = None, *args: Any, **kwargs: Any) -> Node:
        if cls is Node:
            if kind not in NODE_TYPES:
                raise SchemaError(f"Unknown node kind {kind!r}; use one of "
                                  f"{sorted(NODE_TYPES)}.")
            cls = NODE_TYPES[kind]
        return super().__new__(cls)

    def __init__(self, kind: str | None = None, selector: ColumnSelector | None = None,
                 op: Operator | None = None, parents: list[Node] | None = None) -> None:
        if kind is not None and kind != self.kind:
            raise SchemaError(f"A {type(self).__name__} has kind {self.kind!r}, not {kind!r}.")
        self.selector = selector
        self.op = op
        self.parents: list[Node] = list(parents or [])

    # ---- construction ---------------------------------------------------------------------
    @classmethod
    def select(cls, selector: ColumnSelector) -> SelectNode:
        return SelectNode(selector=selector)

    @classmethod
    def as_node(cls, obj: Any) -> Node:
        """A node from a node, a selector, a column name or a list of names/groups."""
        if isinstance(obj, Node):
            return obj
        if isinstance(obj, ColumnSelector):
            return SelectNode(selector=obj)
        if isinstance(obj, str | list | tuple):
            return SelectNode(selector=ColumnSelector(obj))
        if hasattr(obj, "tolist") and getattr(obj, "ndim", 0) == 1:  # df.columns, an array
            return SelectNode(selector=ColumnSelector(obj.tolist()))
        raise SchemaError(f"Cannot use {obj!r} in a workflow graph; use column names, lists of "
                          "names, ColumnSelector(...) or the result of `>>`.")

    def __rshift__(self, op: Any) -> Node:
        if callable(getattr(op, "expand_after", None)):  # a step made of several nodes
            return op.expand_after(self)  # (compat.nvtabular's per-column parameters)
        if isinstance(op, type) and issubclass(op, Operator):
            op = op()
        elif callable(op) and not isinstance(op, Operator | type):
            op = LambdaOp(op)  # `node >> function`, as in NVTabular
        if not isinstance(op, Operator):
            raise SchemaError(f"`>>` must be followed by an operator (e.g. ops.Normalize()); got "
                              f"{op!r}.")
        deps = getattr(op, "dependencies", None)
        deps = [d for d in (deps() if callable(deps) else []) if d]
        parents = self._with_dependencies(deps)
        steps = op.dependency_nodes()  # parameters given as steps: inputs of this step too
        depends = {name: len(parents) + i for i, name in enumerate(steps)}
        return OpNode(op=op, parents=[*parents, *map(Node.as_node, steps.values())],
                      depends=depends)

    __iter__ = None  # ``node[...]`` selects columns: a node is no sequence (``list(node)``)

    def __getitem__(self, columns: str | list[str]) -> OpNode:
        """``node["a"]`` / ``node[["a", "b"]]``: some output columns of this step (as
        NVTabular's; :class:`~interactive_recsys.ops.SelectColumns` after it)."""
        return self >> SelectColumns([columns] if isinstance(columns, str) else list(columns))

    def __sub__(self, columns: str | list[str]) -> OpNode:
        """``node - ["a"]``: this step's output without some columns (as NVTabular's;
        :class:`~interactive_recsys.ops.DropColumns` after it)."""
        return self >> DropColumns([columns] if isinstance(columns, str) else list(columns))

    def _with_dependencies(self, deps: list[str]) -> list[Node]:
        """The parents of an operator that reads ``deps`` besides this node's output (as
        NVTabular's ``JoinGroupby(cont_cols)``/``TargetEncoding(target)``). Only a selection
        takes them in (see :meth:`SelectNode._with_dependencies`): after another step, the
        step's output must hold them, as before (which columns it outputs is known only
        with the data); missing ones are left to the operator's own error."""
        return [self]

    def __add__(self, other: Any) -> ConcatNode:
        return ConcatNode(parents=[self, Node.as_node(other)])

    def __radd__(self, other: Any) -> ConcatNode:
        return ConcatNode(parents=[Node.as_node(other), self])

    # ---- traversal ------------------------------------------------------------------------
    def walk(self) -> Iterator[Node]:
        """Every node of the graph once, parents before children; a cycle (a node among its
        own ancestors, e.g. made its own parent) is a :class:`SchemaError` naming it."""
        seen: set[int] = set()
        path: set[int] = set()

        def visit(node: Node) -> Iterator[Node]:
            if id(node) in path:
                what = repr(node.op) if node.op is not None else f"the {node.kind} node"
                raise SchemaError(f"The workflow graph has a cycle: step {what} is "
                                  "among its own parents (e.g. node.parents.append(node)). "
                                  "Build steps with >> and + only; each step's input comes "
                                  "from steps before it.")
            if id(node) in seen:
                return
            seen.add(id(node))
            path.add(id(node))
            for p in node.parents:
                yield from visit(p)
            path.discard(id(node))
            yield node

        yield from visit(self)

    def node_ids(self) -> dict[int, str]:
        """Each node's step id (its operator's name, or its kind, and its place in
        :meth:`walk` order, e.g. ``"categorify-1"``), keyed by ``id(node)``. Fitted states
        are keyed by these ids."""
        return {id(n): f"{n.name}-{i}" for i, n in enumerate(self.walk())}

    def stat_nodes(self) -> list[OpNode]:
        """The statistics steps (operators with ``is_stat``) of the graph, in walk order."""
        return [n for n in self.walk() if isinstance(n, OpNode) and n.op.is_stat]

    def phases(self, skip: Collection[str] = ()) -> list[list[Node]]:
        """Statistics steps grouped so that each group depends only on earlier groups; the
        steps in ``skip`` (step ids whose states are known: reused) take no phase."""
        ids = self.node_ids()
        stats = [n for n in self.stat_nodes() if ids[id(n)] not in skip]
        taking = {id(n) for n in stats}
        level: dict[int, int] = {}
        for node in self.walk():
            upstream = max((level[id(p)] for p in node.parents), default=0)
            level[id(node)] = upstream + (id(node) in taking)
        count = max((level[id(n)] for n in stats), default=0)
        return [[n for n in stats if level[id(n)] == k] for k in range(1, count + 1)]

    def row_filters(self) -> dict[str, list[str]]:
        """Each statistics step's upstream row filters, as text (for "saw no rows" errors)."""
        ids = self.node_ids()
        return {ids[id(node)]: [f"{n.op!r} ({ids[id(n)]})" for n in node.walk()
                                if n is not node and isinstance(n, OpNode) and n.op.changes_rows]
                for node in self.stat_nodes()}

    # ---- input checks ---------------------------------------------------------------------
    def check_input(self, schema: Schema) -> Schema:
        """``schema``, refused when a column the graph reads has a reserved name."""
        for node in self.walk():
            if isinstance(node, SelectNode):
                checked_names(Schema(schema[n] for n in node.columns(schema)))
        return schema

    def check_kinds(self, schema: Schema, fitted: Schema | None) -> None:
        """Refuse a column whose kind of values (strings, numbers, timestamps...) changed
        since the fit on ``fitted``: its statistics (a vocabulary of strings, a mean) no
        longer apply, and Categorify would map every value out of vocabulary."""
        if fitted is None or not self.stat_nodes():
            return
        for node in self.walk():
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

    @property
    def graph(self) -> StepList:
        """The steps ending here, for display (NVTabular's ``node.graph``)."""
        return StepList(self)

    @property
    def name(self) -> str:
        return self.kind

    # ---- schemas --------------------------------------------------------------------------
    def parent_schema(self, schemas: dict[int, Schema]) -> Schema:
        """The parents' outputs side by side; a column that two parents output is kept once
        when it is the same column (the same step's output, or the same input column, reached
        twice: ``["a"] + ["a"]``), and refused when two different steps make it."""
        return merge_outputs([(schemas[id(p)], _sources(schemas).get(id(p), {}))
                              for p in self.parents])[0]

    def output_schema(self, input_schema: Schema, states: States | None = None) -> Schema:
        return self.schemas(input_schema, states)[id(self)]

    def schemas(self, input_schema: Schema, states: States | None = None) -> dict[int, Schema]:
        """The output schema of every node (keyed by ``id(node)``), predicted from the input
        schema and the fitted states (keyed by step id, see :meth:`node_ids`)."""
        ids = self.node_ids()
        schemas = Schemas()
        for node in self.walk():
            schemas[id(node)] = node._schema(input_schema, schemas,
                                             (states or {}).get(ids[id(node)]))
            schemas.sources[id(node)] = node._sources(schemas)
        return schemas

    def _sources(self, schemas: dict[int, Schema]) -> dict[str, Source]:
        """Where each output column of this node comes from (its schema is computed)."""
        return merge_outputs([(schemas[id(p)], _sources(schemas).get(id(p), {}))
                              for p in self.parents])[1]

    def _schema(self, input_schema: Schema, schemas: dict[int, Schema],
                state: dict[str, Any] | None) -> Schema:
        """This node's output schema, given its parents' (in ``schemas``)."""
        return self.parent_schema(schemas)

    # ---- display and persistence ----------------------------------------------------------
    def label(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"Node({self.label()})"

    def to_config(self, ids: dict[int, int]) -> dict[str, Any]:
        config: dict[str, Any] = {"kind": self.kind, "parents": [ids[id(p)] for p in self.parents]}
        if self.selector is not None:
            config["selector"] = self.selector.to_config()
        if self.op is not None:
            config["op"] = self.op.to_config()
        return config


class SelectNode(Node):
    """A selection of input columns (``selector``)."""

    kind = "select"
    selector: ColumnSelector

    def __init__(self, kind: str | None = None, selector: ColumnSelector | None = None,
                 op: Operator | None = None, parents: list[Node] | None = None) -> None:
        if selector is None or op is not None or parents:
            raise SchemaError("A selection node takes a ColumnSelector and no operator or "
                              "parents.")
        super().__init__(kind, selector=selector)

    def _with_dependencies(self, deps: list[str]) -> list[Node]:
        sel = self.selector  # the columns join the selection, if the data has them
        have = set(sel.names) | {n for g in sel.groups for n in g} | set(sel.optional)
        missing = [d for d in dict.fromkeys(deps) if d not in have]
        if not missing:
            return [self]
        return [SelectNode(selector=ColumnSelector([*sel.names, *map(list, sel.groups)],
                                                   tags=sel.tags,
                                                   optional=[*sel.optional, *missing]))]

    def columns(self, input_schema: Schema) -> list[str]:
        """The input columns selected from data of ``input_schema``."""
        return flatten(self.selector.resolve(input_schema))

    def _sources(self, schemas: dict[int, Schema]) -> dict[str, Source]:
        return {n: (None, n) for n in schemas[id(self)].names}

    def _schema(self, input_schema: Schema, schemas: dict[int, Schema],
                state: dict[str, Any] | None) -> Schema:
        return input_schema.select(self.columns(input_schema))

    def label(self) -> str:
        return repr(self.selector)


class OpNode(Node):
    """An operator (``op``) applied to its parents' outputs side by side."""

    kind = "op"
    op: Operator

    def __init__(self, kind: str | None = None, selector: ColumnSelector | None = None,
                 op: Operator | None = None, parents: list[Node] | None = None,
                 depends: dict[str, int] | None = None) -> None:
        if not isinstance(op, Operator) or not parents or selector is not None:
            raise SchemaError("An operator node takes an operator and at least one parent.")
        super().__init__(kind, op=op, parents=parents)
        #: the operator as given, whose parameters ``depends`` are workflow steps (the
        #: parents at those indices): ``op`` is it with their output columns filled in
        #: (by the schema computation, which needs the input schema)
        self.template = op
        self.depends = dict(depends or {})
        if sorted(self.depends) != sorted(op.dependency_nodes()):
            raise SchemaError(f"{op!r} takes {sorted(op.dependency_nodes())} from workflow "
                              "steps; build the step with `>>`.")

    @property
    def name(self) -> str:
        return type(self.op).__name__.lower()

    @property
    def reads_selection(self) -> bool:
        """Whether the operator reads a selection directly (whose groups it then keeps)."""
        return isinstance(self.parents[0], SelectNode)

    def input_groups(self, input_schema: Schema, schemas: dict[int, Schema]) -> list[tuple]:
        """Column groups this node's operator works on: the first parent's (a selection's
        groups, if it is one), then the columns of the other parents (steps the operator's
        parameters name), one by one."""
        first = self.parents[0]
        if self.reads_selection:
            groups = list(first.selector.resolve(input_schema))
        else:
            groups = [(n,) for n in schemas[id(first)].names]
        taken = set(flatten(groups))
        for n in self.input_schema(input_schema, schemas).names:
            if n not in taken:
                groups.append((n,))
                taken.add(n)
        return groups

    def input_schema(self, input_schema: Schema, schemas: dict[int, Schema]) -> Schema:
        """The schema of the operator's input (parents' outputs side by side)."""
        return self.parent_schema(schemas)

    def _schema(self, input_schema: Schema, schemas: dict[int, Schema],
                state: dict[str, Any] | None) -> Schema:
        try:
            if self.depends:  # the steps given as parameters: their columns, now known
                self.op = self.template.with_dependency_columns(
                    {name: schemas[id(self.parents[i])].names
                     for name, i in self.depends.items()})
            groups = self.input_groups(input_schema, schemas)
            return self.op.output_schema(self.input_schema(input_schema, schemas), groups, state)
        except (SchemaError, ParameterError) as exc:
            raise SchemaError(f"In step {self.label()}: {exc}") from None

    def _sources(self, schemas: dict[int, Schema]) -> dict[str, Source]:
        if not self.op.keeps_columns:  # new columns: this step's
            return {n: (self, n) for n in schemas[id(self)].names}
        upstream = super()._sources(schemas)
        return {n: upstream.get(n, (self, n)) for n in schemas[id(self)].names}

    def label(self) -> str:
        return f"{self.parents[0].label()} >> {self.template!r}"


class ConcatNode(Node):
    """Its parents' outputs side by side (``a + b``)."""

    kind = "concat"

    def __init__(self, kind: str | None = None, selector: ColumnSelector | None = None,
                 op: Operator | None = None, parents: list[Node] | None = None) -> None:
        if not parents or selector is not None or op is not None:
            raise SchemaError("A concatenation node takes at least one parent.")
        super().__init__(kind, parents=parents)

    def __add__(self, other: Any) -> ConcatNode:
        return ConcatNode(parents=[*self.parents, Node.as_node(other)])

    def label(self) -> str:
        return " + ".join(p.label() for p in self.parents)


#: Where an output column comes from: ``(step, name)``, the step ``None`` for an input column.
Source = tuple[Node | None, str]


class Schemas(dict):
    """Output schemas by ``id(node)`` and, in ``sources``, where each column comes from."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: dict[int, dict[str, Source]] = {}


def _sources(schemas: dict[int, Schema]) -> dict[int, dict[str, Source]]:
    return getattr(schemas, "sources", {})


def _describe(source: Source | None) -> str:
    if source is None:
        return "a step"
    node, name = source
    return f"input column {name!r}" if node is None else f"step {node.label()}"


def merge_outputs(parts: list[tuple[Schema, dict[str, Source]]]
                  ) -> tuple[Schema, dict[str, Source]]:
    """Outputs side by side: a name seen twice from the same source is kept once; from two
    different sources it is a :class:`SchemaError` naming both."""
    columns, sources = {}, {}
    for schema, where in parts:
        for col in schema.values():
            source = where.get(col.name)
            if col.name in columns:
                known = sources[col.name]
                if source is not None and known is not None and known[0] is source[0] \
                        and known[1] == source[1]:
                    continue  # the same column reached twice
                raise SchemaError(
                    f"Column {col.name!r} is output twice, by two different computations: "
                    f"{_describe(known)} and {_describe(source)}. Rename one of them "
                    "(ops.Rename(postfix=...)), or keep only one.")
            columns[col.name], sources[col.name] = col, source
    return Schema(columns.values()), sources


def checked_names(schema: Schema) -> Schema:
    """``schema``, refused when a column name is reserved for internal columns."""
    for name in schema.names:
        if name.startswith(RESERVED_PREFIX):
            raise SchemaError(f"Column {name!r} starts with {RESERVED_PREFIX!r}, which "
                              "interactive-recsys reserves for its internal columns; rename it "
                              "(e.g. df.rename(columns=...) or ops.Rename) before the workflow.")
    return schema


def _kind(dtype: str) -> str:
    """The kind of values of a dtype: string, number (bool, int, float) or the dtype's name
    without its unit (timestamps, dates, lists of those...)."""
    base = element_dtype(dtype)
    kind = ("string" if base in ("string", "large_string") else "number"
            if is_numeric_dtype(base) else base.split("[")[0])
    return f"list<{kind}>" if base != dtype else kind


#: The node type of each ``kind`` (as ``workflow.json`` names them).
NODE_TYPES: dict[str, type[Node]] = {c.kind: c for c in (SelectNode, OpNode, ConcatNode)}


#: ``>>`` and ``+`` on selections and operators (:mod:`.operands`) build these nodes.
GraphOperand.node = Node
