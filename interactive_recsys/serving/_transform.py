"""The serving module: a fitted workflow's per-row steps as one ``torch.nn.Module``.

:class:`TorchTransform` (what ``Workflow.to_torch()`` returns) takes a batch of raw rows as
numeric tensors and string lists and gives the columns ``wf.transform`` gives. Its numeric
part, :class:`NumericTransform` (``module.numeric``), takes tensors only, so that
``torch.export`` takes it too (``torch.export`` has no string inputs).

Examples
--------
>>> import torch
>>> from interactive_recsys.serving._columns import NumericColumn, StringColumn, StringIds
>>> from interactive_recsys.serving._steps import Fill
>>> n = NumericColumn("x", "x", torch.float64, integer=False, steps=[Fill(0.5, False)],
...                   out_dtype=torch.float32, keeps_nulls=False)
>>> c = StringColumn("c", "c", StringIds({"a": 3}, buckets=0), [], torch.int64)
>>> m = TorchTransform(NumericTransform([n], passed=[("y", "y")]), [c], ["c", "x", "y"])
>>> out = m({"x": torch.tensor([float("nan"), 2.0])}, {"c": ["a", None]})
>>> {k: v.tolist() for k, v in out.items()}   # "y" passes only when given
{'c': [3, 1], 'x': [0.5, 2.0]}
"""

from torch import Tensor, nn

from interactive_recsys.serving._columns import NumericColumn, StringColumn


class NumericTransform(nn.Module):
    """The columns computed from numeric inputs, and the pass-through columns.

    Parameters
    ----------
    columns : the numeric columns (``NumericColumn`` modules).
    passed : ``(raw column, output column)`` of the columns the workflow passes unchanged
        (a label): output only when given.
    """

    passed_sources: list[str]  # (typed for TorchScript: they may be empty)
    passed_outputs: list[str]

    def __init__(self, columns: list[NumericColumn], passed: list[tuple[str, str]]) -> None:
        super().__init__()
        self.columns = nn.ModuleList(columns)
        self.passed_sources = [s for s, _ in passed]
        self.passed_outputs = [o for _, o in passed]

    def forward(self, tensors: dict[str, Tensor], nulls: dict[str, Tensor] | None = None
                ) -> dict[str, Tensor]:
        """The output columns of ``tensors`` (raw column -> 1-D tensor; NaN: null);
        ``nulls``: raw column -> boolean mask (True: null), for integer columns."""
        out: dict[str, Tensor] = {}
        rows = -1
        for column in self.columns:
            source = column.source
            if source not in tensors:
                raise ValueError(f"The serving module needs column '{source}' in tensors: a "
                                 "1-D tensor of its raw values (NaN or a mask in nulls for "
                                 "nulls).")
            x = tensors[source]
            if rows < 0:
                rows = x.shape[0]
            elif x.shape[0] != rows:
                raise ValueError(f"Column '{source}' has {x.shape[0]} rows, another column "
                                 f"{rows}: give every column the batch's rows.")
            missing: Tensor | None = None
            if nulls is not None and source in nulls:
                missing = nulls[source]
            out[column.output] = column(x, missing)
        for i in range(len(self.passed_sources)):
            if self.passed_sources[i] in tensors:
                out[self.passed_outputs[i]] = tensors[self.passed_sources[i]]
        return out


class TorchTransform(nn.Module):
    """A fitted workflow's per-row steps (``Workflow.to_torch()``).

    ``forward(tensors, strings, nulls=None)`` takes one batch of raw rows by raw column
    name: numeric and boolean columns in ``tensors`` (1-D tensors; NaN is null in floating
    columns), string columns in ``strings`` (lists of ``str``, None for null), and
    optionally ``nulls``: a boolean mask per column (True: null), the way to give nulls of
    an integer column. It returns the workflow's output columns by name, in its order, as
    ``wf.transform`` gives them: ids equal (out-of-vocabulary and null ids included), floats
    within 1 ulp of float32 (LogOp; the other steps exactly), in the offline output's
    dtype. An integer column whose steps keep its nulls (Clip alone) comes as float64 with
    NaN for null, as a tensor has no null. Columns the workflow passes unchanged (a label)
    are not needed, and come back unchanged when given in ``tensors``.

    Parameters
    ----------
    numeric : the numeric columns and the pass-through ones (:class:`NumericTransform`).
    strings : the string columns (``StringColumn`` modules).
    outputs : the output columns in the workflow's order.
    """

    outputs: list[str]  # (typed for TorchScript)

    def __init__(self, numeric: NumericTransform, strings: list[StringColumn],
                 outputs: list[str]) -> None:
        super().__init__()
        self.numeric = numeric
        self.strings = nn.ModuleList(strings)
        self.outputs = list(outputs)

    def forward(self, tensors: dict[str, Tensor], strings: dict[str, list[str | None]],
                nulls: dict[str, Tensor] | None = None) -> dict[str, Tensor]:
        found = self.numeric(tensors, nulls)
        rows = -1
        for column in self.numeric.columns:
            rows = tensors[column.source].shape[0]
        for column in self.strings:
            source = column.source
            if source not in strings:
                raise ValueError(f"The serving module needs string column '{source}' in "
                                 "strings: a list of str, None for null.")
            values = strings[source]
            if rows < 0:
                rows = len(values)
            elif len(values) != rows:
                raise ValueError(f"Column '{source}' has {len(values)} rows, another column "
                                 f"{rows}: give every column the batch's rows.")
            found[column.output] = column(values)
        out: dict[str, Tensor] = {}
        for name in self.outputs:
            if name in found:
                out[name] = found[name]
        return out
