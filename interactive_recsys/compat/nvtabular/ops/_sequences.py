"""NVTabular's sequence operators: ``ListSlice`` and ``DifferenceLag`` (several shifts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interactive_recsys.compat.nvtabular.groupby import from_input
from interactive_recsys.compat.nvtabular.operator import OperatorAPI
from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.errors import SchemaError
from interactive_recsys.operands import OperatorOperand
from interactive_recsys.workflow._graph import Node, SelectNode


def ListSlice(start: int, end: int | None = None, pad: bool = False,
              pad_value: Any = 0) -> _ops.ListSlice:
    """NVTabular's ``ListSlice``: one positive number ``k`` keeps the first ``k`` items
    (``row[:k]``); otherwise ``row[start:end]``."""
    if end is None and start > 0:
        start, end = 0, start
    return _ops.ListSlice(start, end, pad=pad, pad_value=pad_value)


def DifferenceLag(partition_cols: Any, shift: int | Sequence[int] = 1, **kwargs: Any) -> Any:
    """NVTabular's ``DifferenceLag``: several shifts give one step each
    (``<col>_difference_lag_<shift>``)."""
    keys = from_input(partition_cols)
    if isinstance(shift, int):
        return _ops.DifferenceLag(keys, shift, **kwargs)
    names = [partition_cols] if isinstance(partition_cols, str) else partition_cols
    return _Shifts([_ops.DifferenceLag(keys, s, **kwargs) for s in shift],
                   list(names) if isinstance(names, list | tuple) else [])


class _Shifts(OperatorAPI, OperatorOperand):
    """``DifferenceLag(shift=[1, -1])``: one step per shift, chained (each passes the
    others' columns through)."""

    def __init__(self, ops: list[_ops.DifferenceLag], keys: list[str]) -> None:
        self.ops, self.keys = ops, keys

    def expand_after(self, node: Node) -> Node:
        if not isinstance(node, SelectNode) or node.selector.tags or node.selector.groups:
            raise SchemaError(f"{self!r} after a step: select the columns by name, e.g. "
                              "['ts'] >> DifferenceLag(...), or use one DifferenceLag per "
                              "shift with Rename.")
        out = node >> self.ops[0]
        for op in self.ops[1:]:  # chained: each step regroups rows, side by side they
            cols = op.columns or [n for n in node.selector.names if n not in self.keys]
            params = {**op.get_params(), "partition_cols": self.keys, "columns": cols}
            out = out >> _ops.DifferenceLag(**params)  # would not line up
        return out

    def __repr__(self) -> str:
        return f"DifferenceLag(shift={[op.shift for op in self.ops]!r})"
