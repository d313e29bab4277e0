"""NVTabular's ``Groupby`` on this project's: keys as NVTabular takes them, ``ascending``.

* one key column may be a plain string; keys read from the input without being selected are
  not output (``["product_id"] >> Groupby(groupby_cols=["day"])``: ``product_id_count``);
* ``ascending=False``: the ``list`` aggregations come in descending ``sort_cols`` order,
  while ``first`` and ``last`` keep their ascending meaning, as NVTabular 23.08 gives them
  (its ``_first_or_last``): the core's ``Groupby`` (ascending), then each list reversed
  (:func:`reverse_lists`). Rows whose ``sort_cols`` tie come in reverse dataset order, and
  rows with a null ``sort_cols`` value first.

>>> import pandas as pd
>>> from interactive_recsys.compat.nvtabular import Dataset, Workflow
>>> df = pd.DataFrame({"k": [1, 1, 1], "t": [2, 1, 3], "x": [20, 10, 30]})
>>> node = ["k", "t", "x"] >> Groupby("k", sort_cols="t", aggs={"x": ["list", "first"]},
...                                   ascending=False)
>>> out = Workflow(node).fit_transform(Dataset(df)).compute()
>>> out["x_list"][0].tolist(), out["x_first"][0]
([30, 20, 10], np.int64(10))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from interactive_recsys import ops as _core
from interactive_recsys.compat.nvtabular.operator import OperatorAPI
from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.operands import OperatorOperand
from interactive_recsys.schema import ColumnSelector
from interactive_recsys.workflow._graph import Node, SelectNode


def from_input(columns: Any) -> Any:
    """Key columns read from the workflow input when not selected (NVTabular's
    dependencies): a selection of the names (a step stays a step)."""
    if isinstance(columns, Node | ColumnSelector):
        return columns
    return ColumnSelector([columns] if isinstance(columns, str) else list(columns))


def Groupby(groupby_cols: Any = None, sort_cols: Any = None, aggs: Any = "list",
            name_sep: str = "_", ascending: bool = True) -> Any:
    """NVTabular's ``Groupby`` (see the module docstring)."""
    op = _ops.Groupby(from_input(groupby_cols or ()),
                      sort_cols=None if sort_cols is None else from_input(sort_cols),
                      aggs=aggs, name_sep=name_sep)
    keys = [groupby_cols] if isinstance(groupby_cols, str) else groupby_cols
    keys = list(keys) if isinstance(keys, list | tuple) else []
    if not keys and ascending:
        return op
    return _NvtGroupby(op, keys, ascending)


class _NvtGroupby(OperatorAPI, OperatorOperand):
    """The core's ``Groupby``, its lists reversed for ``ascending=False``, without the keys
    that were read from the input but not selected."""

    def __init__(self, op: _core.Groupby, keys: list[str], ascending: bool) -> None:
        self.op, self.keys, self.ascending = op, keys, ascending

    def expand_after(self, node: Node) -> Node:
        out = node >> self.op
        if not self.ascending:
            out = out >> _core.LambdaOp(reverse_lists)
        if isinstance(node, SelectNode):
            sel = node.selector
            chosen = set(sel.names) | {n for g in sel.groups for n in g}
            extra = [k for k in self.keys if k not in chosen]
            if extra and not sel.tags:
                out = out - extra
        return out

    def __repr__(self) -> str:
        return repr(self.op) + ("" if self.ascending else " (lists descending)")


def reverse_lists(col: Any) -> Any:
    """Each list of a list column in reverse order (nulls stay null); any other column as it
    is. A pandas (Arrow) column here, a cuDF one through Arrow."""
    if not isinstance(col, pd.Series):  # cuDF
        import cudf

        if not isinstance(col.dtype, cudf.ListDtype):
            return col
        return cudf.Series.from_arrow(_reversed(pa.chunked_array([col.to_arrow()])))
    arr = pa.chunked_array(pa.array(col, from_pandas=True))
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        return col
    return pd.Series(pd.arrays.ArrowExtensionArray(_reversed(arr)), index=col.index,
                     name=col.name)


def _reversed(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    chunks = []
    for c in arr.chunks:
        offsets = c.offsets.to_numpy()
        lengths = np.diff(offsets)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        take = np.repeat(offsets[1:] - 1, lengths) - (np.arange(lengths.sum()) - starts)
        values = c.values.take(pa.array(take, pa.int64()))
        new = np.concatenate([[0], np.cumsum(lengths)]).astype(offsets.dtype)
        chunks.append(type(c).from_arrays(pa.array(new), values, mask=c.is_null()))
    return pa.chunked_array(chunks, type=arr.type)


__all__ = ["Groupby", "from_input", "reverse_lists"]
