"""NVTabular's operators that take a Python function: ``Rename(f=)``, ``Filter(f)``,
``LambdaOp(f, dependency=)``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.compat.nvtabular.ops._steps import Steps
from interactive_recsys.compat.nvtabular.tags import TagSet
from interactive_recsys.compat.nvtabular.types import dtype_name_of
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.schema import Schema


class _RenameBy(_ops.Rename, register=False):
    """``Rename(f=function)``: new names from a function (not saved: a function)."""

    def __init__(self, f: Callable[[str], str]) -> None:
        super().__init__(postfix="")
        self.f = f

    def check_params(self) -> None:
        """A function replaces the mapping."""

    def new_name(self, name: str) -> str:
        return self.f(name)

    def __repr__(self) -> str:
        return f"Rename(f={self.f!r})"


def Rename(f: Callable[[str], str] | None = None, postfix: str | None = None,
           name: str | None = None) -> _ops.Rename:
    """NVTabular's ``Rename(f=, postfix=, name=)``: a function of the name, a postfix, or
    one new ``name`` for a single column."""
    if sum(x is not None for x in (f, postfix, name)) != 1:
        raise ParameterError("Rename takes exactly one of f=, postfix= or name=.")
    if postfix is not None:
        return _ops.Rename(postfix=postfix)
    if name is not None:
        return _RenameOne(name)
    assert f is not None
    return _RenameBy(f)


class _RenameOne(_RenameBy, register=False):
    """``Rename(name=...)``: the one selected column gets this name."""

    def __init__(self, name: str) -> None:
        super().__init__(lambda _: name)
        self.new = name

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        if len(input_schema) != 1:
            raise SchemaError(f"Rename(name={self.new!r}) renames one column; it got "
                              f"{input_schema.names}. Use Rename(f=...) or Rename(postfix=...).")
        return super().output_schema(input_schema, groups, state)

    def __repr__(self) -> str:
        return f"Rename(name={self.new!r})"


class _FilterBy(_ops.RowFilter, register=False):
    """``Filter(f=function)``: ``f(frame)`` gives the rows kept (a boolean column)."""

    def __init__(self, f: Callable[[Any], Any]) -> None:
        super().__init__()
        self.f = f

    def row_mask(self, df: Any, state: dict[str, Any] | None, ctx: _ops.OpContext) -> Any:
        b = ctx.backend
        frame = b.to_pandas(df) if b.name == "cpu" else df
        mask = self.f(frame)
        if hasattr(mask, "columns"):  # the kept rows themselves, as NVTabular allows
            mask = frame.index.isin(mask.index)
        if not hasattr(mask, "__len__") or isinstance(mask, str) or len(mask) != len(frame):
            raise SchemaError(f"Filter(f={self.f!r}) must return a boolean column or the kept "
                              f"rows (e.g. df['x'] > 0 or df[df['x'] > 0]); got {mask!r:.80}.")
        return b.from_series(pd.Series(np.asarray(mask, dtype=bool)) if b.name == "cpu"
                             else mask)

    def __repr__(self) -> str:
        return f"Filter(f={self.f!r})"


def Filter(f: Any) -> _ops.RowFilter:
    """NVTabular's ``Filter(f)``: ``f(frame) -> boolean column``; an expression string is the
    core's saved form (``Filter("x > 0")``)."""
    return _ops.Filter(f) if isinstance(f, str) else _FilterBy(f)


class _FrameLambda(_ops.LambdaOp, register=False):
    """``LambdaOp(f)`` with ``f(col, df)``: ``df`` holds the selected columns and the
    ``dependency`` columns, which are read, not output."""

    def __init__(self, f: Callable[..., Any], dependency: Sequence[str], **kwargs: Any) -> None:
        super().__init__(f, **kwargs)
        self.needs = list(dependency)

    def dependencies(self) -> list[str]:
        return self.needs

    def _outputs(self, names: Sequence[str]) -> list[str]:
        return [n for n in names if n not in self.needs] or list(names)

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        return Schema(input_schema[n].with_(dtype=self.dtype or input_schema[n].dtype)
                      .with_tags(add=self.add_tags) for n in self._outputs(input_schema.names))

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: _ops.OpContext) -> Any:
        b = ctx.backend
        frame = b.to_pandas(df) if b.name == "cpu" else df
        out = {}
        for n in self._outputs(list(df.columns)):
            result = self.f(frame[n], frame)
            if b.name == "cpu" and not isinstance(result, pd.Series):
                result = pd.Series(result, index=frame.index)
            col = b.from_series(result)
            out[n] = b.cast(col, self.dtype) if self.dtype and b.dtype(col) != self.dtype else col
        return b.select(b.with_columns(df, out), list(out))


def LambdaOp(f: Any, dependency: Any = None, label: str | None = None, dtype: Any = None,
             tags: Any = None, properties: Mapping[str, Any] | None = None) -> Any:
    """NVTabular's ``LambdaOp``: ``f(col)``, or ``f(col, df)`` with ``df`` holding the
    ``dependency`` columns; ``tags`` and ``properties`` are set on the outputs; ``label`` only
    named the step there (no effect)."""
    params: dict[str, Any] = {"dtype": None if dtype is None else dtype_name_of(dtype),
                              "add_tags": sorted(TagSet(tags or ()))}
    two = callable(f) and len(inspect.signature(f).parameters) >= 2
    if dependency is not None or two:
        if not two:
            raise ParameterError("LambdaOp(dependency=...) needs f(col, df).")
        deps = [dependency] if isinstance(dependency, str) else list(dependency or ())
        if any(not isinstance(d, str) for d in deps):
            raise ParameterError("LambdaOp(dependency=...) takes column names.")
        op: Any = _FrameLambda(f, deps, **params)
    else:
        op = _ops.LambdaOp(f, **params)
    if not properties:
        return op
    return Steps([(None, [op, _ops.AddProperties(dict(properties))])], f"LambdaOp({f!r})")
