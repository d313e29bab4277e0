"""A builder's workflow as data: branches of ``columns >> op >> op`` joined with ``+``.

A :class:`Branch` selects input columns and chains :class:`Step` s (an operator's class name and
its parameters); :func:`branches_of` reads a workflow graph back into branches.

>>> b = Branch(columns=["n"], steps=[Step("FillMissing", {"fill_val": -1}), Step("Normalize")])
>>> b.node()
Node(['n'] >> FillMissing(fill_val=-1) >> Normalize())
>>> branches_of(b.node()) == [b]
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.ops import OPERATORS
from interactive_recsys.ops._base import Operator
from interactive_recsys.schema import ColumnSelector
from interactive_recsys.workflow._graph import ConcatNode, Node, OpNode, SelectNode


# ---- steps and branches -----------------------------------------------------------------------
@dataclass
class Step:
    """One operator of a branch: its class name in ``OPERATORS`` and its parameters."""

    op: str
    params: dict[str, Any] = field(default_factory=dict)

    def operator(self) -> Operator:
        return make_operator(self.op, self.params)


@dataclass
class Branch:
    """Selected input columns (names, or lists for column groups) and a chain of steps."""

    columns: list[Any] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def selector(self) -> ColumnSelector:
        return ColumnSelector(self.columns, tags=self.tags)

    def node(self, upto: int | None = None) -> Node:
        node = Node.select(self.selector())
        for step in self.steps[:upto]:
            node = node >> step.operator()
        return node


def make_operator(name: str, params: dict[str, Any] | None = None) -> Operator:
    """The operator ``name`` with ``params``; errors are the operator's own messages."""
    if name not in OPERATORS:
        raise ParameterError(f"Unknown operator {name!r}; choose one of {sorted(OPERATORS)}.")
    return OPERATORS[name](**(params or {}))


# ---- from a workflow graph --------------------------------------------------------------------
def _chain(node: Node) -> Branch:
    ops: list[Step] = []
    while isinstance(node, OpNode):
        if len(node.parents) != 1:
            raise SchemaError(f"The builder shows branches of the form columns >> op >> op; the "
                              f"step {node.label()} reads several inputs.")
        spec = node.op.params
        ops.append(Step(type(node.op).__name__, {k: v for k, v in node.op.get_params().items()
                                                 if v != spec[k].default}))
        node = node.parents[0]
    if not isinstance(node, SelectNode):
        raise SchemaError(f"The builder shows branches of the form columns >> op >> op joined "
                          f"with +; {node.label()} is a sum inside a branch. Rewrite it as one "
                          "selection or as separate branches.")
    config = node.selector.to_config()
    return Branch(columns=list(config["names"]), tags=list(config["tags"]), steps=ops[::-1])


def branches_of(node: Node) -> list[Branch]:
    """The branches of a graph ``b1 + b2 + ...`` where each ``b`` is ``columns >> op >> ...``."""
    if isinstance(node, ConcatNode):
        return [b for p in node.parents for b in branches_of(p)]
    return [_chain(node)]


def step_items(branches: list[Branch]) -> list[tuple[str, tuple[int, int]]]:
    """What the builder's step list shows: ``(text, (branch, step))`` per step, and
    ``(text, (branch, -1))`` for a pass-through branch (columns without steps).

    >>> step_items([Branch(columns=["n"], steps=[Step("Normalize")])])
    [("branch 1 · step 1: ['n'] >> Normalize()", (0, 0))]
    """
    out = []
    for k, branch in enumerate(branches):
        if not branch.steps and (branch.columns or branch.tags):
            out.append((f"branch {k + 1} · pass through: {branch.selector()!r}", (k, -1)))
        for j, step in enumerate(branch.steps):
            params = ", ".join(f"{a}={b!r}" for a, b in step.params.items())
            out.append((f"branch {k + 1} · step {j + 1}: {branch.selector()!r} >> "
                        f"{step.op}({params})", (k, j)))
    return out
