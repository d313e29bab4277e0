"""From a fitted workflow to its serving module (``Workflow.to_torch()``).

The per-row steps are those of the loader's online transform, from the same definition
(:mod:`interactive_recsys.workflow._per_row`): each output column traced back to its raw
column, its data steps compiled with their constants, steps that change only the schema
passed, and every other step refused by name. Each compiled step becomes a module of
:mod:`._steps`; Categorify's vocabulary is read from its files once, here, into the module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import torch

from interactive_recsys.errors import SchemaError
from interactive_recsys.hashing import hash_array
from interactive_recsys.schema import is_float_dtype, is_integer_dtype, is_list_dtype
from interactive_recsys.serving._columns import NumericColumn, StringColumn, StringIds
from interactive_recsys.serving._steps import step_module
from interactive_recsys.serving._transform import NumericTransform, TorchTransform
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._context import RunFacts
from interactive_recsys.workflow._per_row import _traces, _why, compiled_steps, refusal
from interactive_recsys.workflow._plan import OpStep, Plan

#: Torch dtypes of the package's dtype names (the others keep the steps' dtype).
TORCH_DTYPES = {"int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
                "int64": torch.int64, "uint8": torch.uint8, "float16": torch.float16,
                "float32": torch.float32, "float64": torch.float64, "bool": torch.bool}


def to_torch(workflow: Any) -> TorchTransform:
    """The serving module of a fitted workflow (see :class:`~._transform.TorchTransform`)."""
    workflow._check_fitted()
    schema = workflow.input_schema
    plan = workflow._plan(workflow._checked_input(schema), "cpu", RunFacts(training=False))
    for step in plan.steps:  # refused before anything else: a row-changing step too
        if isinstance(step, OpStep) and not (type(step.op).online or type(step.op).schema_only):
            raise refusal(step.op, step.node_id, _why(step.op))
    output_schema = plan.steps[-1].schema
    numeric, strings, passed = [], [], []
    for name, (source, trace) in _traces(plan).items():
        dtype = schema[source].dtype
        if not trace:
            if _kind(dtype) != "string":
                passed.append((source, name))
            continue
        if is_list_dtype(dtype) or _kind(dtype) is None:
            raise SchemaError(f"Workflow.to_torch reads single numbers, booleans and strings; "
                              f"column {source!r} is {dtype}. Encode it offline first.")
        steps = compiled_steps(plan, trace, dtype, name)
        out_dtype = TORCH_DTYPES.get(output_schema[name].dtype, torch.int64)
        if _kind(dtype) == "string":
            strings.append(_string_column(plan, source, name, trace, steps, out_dtype))
        else:
            numeric.append(_numeric_column(plan, source, name, dtype, trace, steps, out_dtype))
    return TorchTransform(NumericTransform(numeric, passed), strings, output_schema.names)


def _kind(dtype: str) -> str | None:
    if is_integer_dtype(dtype) or dtype == "bool":
        return "int"
    if is_float_dtype(dtype):
        return "float"
    return "string" if dtype == "string" else None


def _modules(plan: Plan, trace: list, steps: list[tuple], integer: bool) -> list[torch.nn.Module]:
    """The module of each compiled step; ``integer``: whether the first step's input is."""
    modules = []
    for (op, step, column), compiled in zip(trace, steps, strict=True):
        vocabulary = None
        if compiled[0] == "categorify":
            values, ids = _vocabulary(plan, op, step, column)
            keys = hash_array(values).view(np.int64)  # a bijection on integers and floats
            order = np.argsort(keys, kind="stable")
            vocabulary = (keys[order], ids[order])
        modules.append(step_module(compiled, integer, vocabulary))
        integer = compiled[0] in ("categorify", "hash_bucket") or (
            integer and compiled[0] in ("fill", "clip"))
    return modules


def _numeric_column(plan: Plan, source: str, name: str, dtype: str, trace: list,
                    steps: list[tuple], out_dtype: torch.dtype) -> NumericColumn:
    integer = _kind(dtype) == "int"
    keeps_nulls = integer and not any(s[0] in ("fill", "categorify", "hash_bucket", "log1p",
                                                "affine") for s in steps)
    raw = TORCH_DTYPES.get(dtype, torch.float64)
    return NumericColumn(source, name, raw, integer, _modules(plan, trace, steps, integer),
                         out_dtype, keeps_nulls)


def _string_column(plan: Plan, source: str, name: str, trace: list, steps: list[tuple],
                   out_dtype: torch.dtype) -> StringColumn:
    first, (op, step, column) = steps[0], trace[0]
    if first[0] == "categorify":
        values, ids = _vocabulary(plan, op, step, column)
        head = StringIds(dict(zip(values.to_pylist(), ids.tolist(), strict=True)),
                         first[2] or 0)
    else:
        head = StringIds(None, first[1])
    return StringColumn(source, name, head, _modules(plan, trace[1:], steps[1:], True),
                        out_dtype)


def _vocabulary(plan: Plan, op: Any, step: OpStep, column: str) -> tuple[pa.Array, np.ndarray]:
    """Categorify's vocabulary of ``column``: its values and their ids, read from the
    fitted state's files."""
    ctx = plan.context(step)
    info = step.state["vocabs"][op.output_names(list(ctx.groups))[column]]
    directory = resolve(ctx.artifacts_dir, info["path"], "vocabulary path")
    table = vocab.read_vocabulary(directory, info["splits"], ctx.storage_options)
    values = table["value"].combine_chunks()
    return values, table["index"].to_numpy().astype(np.int64)
