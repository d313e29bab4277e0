"""Apply an expression or a Python function to each selected column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pyarrow as pa

from interactive_recsys.backend import CpuBackend
from interactive_recsys.errors import NotFittedError, ParameterError, SchemaError
from interactive_recsys.ops._base import Operator
from interactive_recsys.ops._expressions import evaluate, parse
from interactive_recsys.params import Param, param_error
from interactive_recsys.schema import ColumnSchema, arrow_type, dtype_name, normalize_tags
from interactive_recsys.tables._context import OpContext


class FunctionRef:
    """A saved reference to a Python function, never imported automatically.

    A workflow loaded from disk holds this in place of the function; pass the real
    function with ``Workflow.load(path, functions={name: f})``.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any) -> Any:
        module, _, qualname = self.name.partition(":")
        if "<" in qualname or module in ("__main__", "?", ""):
            what = "a lambda" if "<lambda>" in qualname else (
                "a function defined inside another" if "<locals>" in qualname
                else "a function of a notebook or script")
            how = (f"It is {what}, which no other process can find by name: pass it back "
                   f"with Workflow.load(path, functions=[f]) (or functions={{{self.name!r}: "
                   "f}), or use an expression, which is saved as text and needs nothing "
                   "(e.g. ops.LambdaOp('x * 2')).")
        else:
            how = (f"Import it and pass it back: from {module} import "
                   f"{qualname.split('.')[0]}, then Workflow.load(path, functions=[{qualname}]).")
        raise NotFittedError(f"This workflow was loaded from disk and its LambdaOp uses the "
                             f"Python function {self.name!r}; loading never imports or runs "
                             f"code named in a saved workflow. {how}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FunctionRef) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"FunctionRef({self.name!r})"


def function_name(f: Callable) -> str:
    """The name a function is saved by: ``module:qualname``."""
    if isinstance(f, FunctionRef):
        return f.name
    return f"{getattr(f, '__module__', '?')}:{getattr(f, '__qualname__', repr(f))}"


def functions_by_name(functions: Any) -> dict[str, Callable]:
    """``Workflow.load``'s ``functions``: a mapping of saved names to functions, or the
    functions themselves (each found under its :func:`function_name`).

    >>> import math
    >>> functions_by_name([math.sqrt])
    {'math:sqrt': <built-in function sqrt>}
    """
    if functions is None:
        return {}
    if isinstance(functions, dict):
        return dict(functions)
    if callable(functions):
        functions = [functions]
    out = {}
    for f in functions:
        if not callable(f):
            raise param_error("functions", "Workflow.load", "must be a mapping of saved "
                              "names to functions or a list of functions. Got "
                              f"{f!r} in the list instead.")
        out[function_name(f)] = f
    return out


class LambdaOp(Operator):
    """Transform each selected column with an expression of ``x`` or a function.

    An expression (``"x * 2"``, ``"log1p(x)"``, ``"x > 3"``) is safe to save and load. A
    callable ``f(series) -> series`` is saved by name only (see ``FunctionRef``).

    >>> import pandas as pd, interactive_recsys as irs
    >>> wf = irs.Workflow(["a"] >> LambdaOp("x * 2 + 1"))
    >>> wf.fit_transform(pd.DataFrame({"a": [1, 2]}))["a"].tolist()
    [3, 5]
    """

    summary = "Apply an expression of x (or a function) to each column"
    f = Param(kind="callable_or_expr", doc="Expression of x, e.g. 'x * 2', or a function.")
    dtype = Param(None, kind="str", nullable=True, doc="Output dtype (None: input dtype).")
    add_tags = Param([], kind="strs", doc="Tags added to the output columns.")

    def check_params(self) -> None:
        if isinstance(self.f, str):
            try:
                parse(self.f)
            except ParameterError as exc:
                raise param_error("f", "LambdaOp", f"is invalid: {exc}") from None

    def to_config(self) -> dict[str, Any]:
        config = super().to_config()
        if callable(self.f):
            config["params"]["f"] = {"function": function_name(self.f)}
        return config

    @classmethod
    def saved_params(cls, params: dict[str, Any],
                     functions: dict[str, Callable] | None) -> dict[str, Any]:
        """Turn a saved function reference back into a callable (or a FunctionRef)."""
        f = params.get("f")
        if isinstance(f, dict):
            if "function" not in f:
                raise ParameterError(f"LambdaOp's saved 'f' is malformed: {f!r}.")
            name = f["function"]
            params = {**params, "f": functions_by_name(functions).get(name, FunctionRef(name))}
        return params

    def output_dtype(self, input_dtype: str) -> str:
        """``dtype`` if given, else the dtype the function gives on an empty column."""
        if self.dtype:
            return self.dtype
        if isinstance(self.f, FunctionRef):
            self.f()  # raises: the function must be passed back to Workflow.load first
        empty = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([], arrow_type(input_dtype))))
        try:
            result = self._apply(empty)
            return dtype_name(CpuBackend().from_series(result).type)
        except Exception as exc:
            raise SchemaError(f"LambdaOp({self.f!r}) cannot predict its output dtype from an "
                              f"empty {input_dtype} column ({exc}); pass dtype=...") from None

    def _apply(self, series: Any) -> Any:
        return evaluate(self.f, {"x": series}) if isinstance(self.f, str) else self.f(series)

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        out = col.with_(dtype=self.output_dtype(col.dtype))
        return out.with_(tags=out.tags | normalize_tags(self.add_tags))

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        out = {}
        for n in df.columns:
            col = b.column(df, n)
            try:
                result = b.from_series(self._apply(b.series(col)))
            except (pa.ArrowInvalid, OverflowError) as exc:
                raise ParameterError(
                    f"LambdaOp({self.f!r}) fails on column {n!r} ({b.dtype(col)}): {exc}. The "
                    f"result does not fit {b.dtype(col)}: cast the column to float first, "
                    f"e.g. [{n!r}] >> ops.LambdaOp('x', dtype='float64') >> "
                    f"ops.LambdaOp({self.f!r}).") from None
            dtype = self.output_dtype(b.dtype(col))
            out[n] = result if b.dtype(result) == dtype else b.cast(result, dtype)
        return b.with_columns(df, out)
