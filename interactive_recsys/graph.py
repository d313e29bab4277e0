"""The operator graph: selections chained with ``>>`` and concatenated with ``+``.

>>> from interactive_recsys import ops
>>> node = ["a", "b"] >> ops.FillMissing(0) >> ops.Normalize()
>>> (node + ["label"]).output_schema(Schema.from_arrow(pa.schema(
...     [("a", pa.int64()), ("b", pa.float64()), ("label", pa.int8())]))).names
['a', 'b', 'label']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa  # noqa: F401  (used by the doctest)

from .errors import SchemaError
from .ops.base import Operator
from .schema import Schema
from .selector import ColumnSelector, flatten


class Node:
    """One step of a workflow graph: a selection of input columns, an operator applied to
    the outputs of its parents, or a concatenation of its parents' outputs."""

    def __init__(self, kind: str, selector: ColumnSelector | None = None,
                 op: Operator | None = None, parents: list[Node] | None = None) -> None:
        self.kind = kind
        self.selector = selector
        self.op = op
        self.parents = parents or []

    # ---- construction ---------------------------------------------------------------------
    @classmethod
    def select(cls, selector: ColumnSelector) -> Node:
        return cls("select", selector=selector)

    @classmethod
    def as_node(cls, obj: Any) -> Node:
        """A node from a node, a selector, a column name or a list of names/groups."""
        if isinstance(obj, Node):
            return obj
        if isinstance(obj, ColumnSelector):
            return cls.select(obj)
        if isinstance(obj, str | list | tuple):
            return cls.select(ColumnSelector(obj))
        raise SchemaError(f"Cannot use {obj!r} in a workflow graph; use column names, lists of "
                          "names, ColumnSelector(...) or the result of `>>`.")

    def __rshift__(self, op: Any) -> Node:
        if isinstance(op, type) and issubclass(op, Operator):
            op = op()
        if not isinstance(op, Operator):
            raise SchemaError(f"`>>` must be followed by an operator (e.g. ops.Normalize()); got "
                              f"{op!r}.")
        deps = getattr(op, "dependencies", None)
        deps = [d for d in (deps() if callable(deps) else []) if d]
        return Node("op", op=op, parents=self._with_dependencies(deps))

    def _with_dependencies(self, deps: list[str]) -> list[Node]:
        """The parents of an operator that reads ``deps`` besides this node's output (as
        NVTabular's ``JoinGroupby(cont_cols)``/``TargetEncoding(target)``): the columns come
        from the workflow input without being selected as outputs. Missing ones are left to
        the operator's own error. After another step (not a selection) the step's output
        must hold them, as before: which columns it outputs is known only with the data."""
        if not deps or self.kind != "select":
            return [self]
        sel = self.selector  # a selection: the columns join it, if the data has them
        have = set(sel.names) | {n for g in sel.groups for n in g} | set(sel.optional)
        missing = [d for d in dict.fromkeys(deps) if d not in have]
        if not missing:
            return [self]
        return [Node.select(ColumnSelector([*sel.names, *map(list, sel.groups)], tags=sel.tags,
                                           optional=[*sel.optional, *missing]))]

    def __add__(self, other: Any) -> Node:
        parts = (self.parents if self.kind == "concat" else [self]) + [Node.as_node(other)]
        return Node("concat", parents=parts)

    def __radd__(self, other: Any) -> Node:
        return Node("concat", parents=[Node.as_node(other), self])

    # ---- traversal ------------------------------------------------------------------------
    def walk(self) -> Iterator[Node]:
        """Every node of the graph once, parents before children."""
        seen: set[int] = set()

        def visit(node: Node) -> Iterator[Node]:
            if id(node) in seen:
                return
            seen.add(id(node))
            for p in node.parents:
                yield from visit(p)
            yield node

        yield from visit(self)

    def input_groups(self, input_schema: Schema, schemas: dict[int, Schema]) -> list[tuple]:
        """Column groups this node's operator works on (from a selection's groups, if any)."""
        if len(self.parents) == 1 and self.parents[0].kind == "select":
            return self.parents[0].selector.resolve(input_schema)
        return [(n,) for n in self.parent_schema(schemas).names]

    def parent_schema(self, schemas: dict[int, Schema]) -> Schema:
        out = Schema()
        for p in self.parents:
            out = out + schemas[id(p)]
        return out

    def output_schema(self, input_schema: Schema,
                      states: dict[int, dict[str, Any]] | None = None) -> Schema:
        return self.schemas(input_schema, states)[id(self)]

    def schemas(self, input_schema: Schema,
                states: dict[int, dict[str, Any]] | None = None) -> dict[int, Schema]:
        """The output schema of every node, predicted from the input schema (and states)."""
        schemas: dict[int, Schema] = {}
        for node in self.walk():
            if node.kind == "select":
                groups = node.selector.resolve(input_schema)
                schemas[id(node)] = input_schema.select(flatten(groups))
            elif node.kind == "concat":
                schemas[id(node)] = node.parent_schema(schemas)
            else:
                groups = node.input_groups(input_schema, schemas)
                parent = input_schema.select(flatten(groups)) if node.parents[0].kind == "select" \
                    else node.parent_schema(schemas)
                try:
                    schemas[id(node)] = node.op.output_schema(
                        parent, groups, (states or {}).get(id(node)))
                except SchemaError as exc:
                    raise SchemaError(f"In step {node.label()}: {exc}") from None
        return schemas

    def label(self) -> str:
        if self.kind == "select":
            return repr(self.selector)
        if self.kind == "concat":
            return " + ".join(p.label() for p in self.parents)
        return f"{self.parents[0].label()} >> {self.op!r}"

    def __repr__(self) -> str:
        return f"Node({self.label()})"

    # ---- persistence ----------------------------------------------------------------------
    def to_config(self, ids: dict[int, int]) -> dict[str, Any]:
        config: dict[str, Any] = {"kind": self.kind, "parents": [ids[id(p)] for p in self.parents]}
        if self.selector is not None:
            config["selector"] = self.selector.to_config()
        if self.op is not None:
            config["op"] = self.op.to_config()
        return config
