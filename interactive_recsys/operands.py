"""``>>`` and ``+`` on the classes that build a workflow graph: column selections and operators.

The methods live on these mixins, which :class:`~interactive_recsys.schema.ColumnSelector`
and :class:`~interactive_recsys.ops._base.Operator` inherit. They build nodes of
``interactive_recsys.workflow._graph``, which sits above both classes and registers its ``Node``
class here when it is defined (``GraphOperand.node``), so that no import runs upward.

>>> from interactive_recsys import ColumnSelector, ops
>>> ColumnSelector(["a"]) >> ops.Normalize()
Node(['a'] >> Normalize())
"""

from __future__ import annotations

from typing import Any, ClassVar


class GraphOperand:
    """A class whose instances take part in ``>>`` and ``+``."""

    #: ``interactive_recsys.workflow._graph.Node`` (registered by that module).
    #:
    #: :meta private:
    node: ClassVar[Any] = None


class SelectionOperand(GraphOperand):
    """``selection >> op`` and ``selection + other``: a selection starts a graph."""

    def __rshift__(self, op: Any) -> Any:
        return self.node.as_node(self) >> op

    def __add__(self, other: Any) -> Any:
        return self.node.as_node(self) + other


class OperatorOperand(GraphOperand):
    """``["a", "b"] >> op``: an operator follows a selection (a list of names included)."""

    def __rrshift__(self, selection: Any) -> Any:
        return self.node.as_node(selection) >> self
