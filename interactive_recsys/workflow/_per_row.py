"""A fitted workflow's per-row steps: each output column traced back to its raw column
(:func:`_traces`) and its data steps compiled with their constants as the offline kernels
use them (:func:`compiled_steps`); a step that needs more than the row is refused by name
(:func:`refusal`), a step that changes only the schema passes.

One definition for both users of the per-row steps: the loader's online transform
(``irs.Loader(raw, workflow=wf)``, which keeps each column as a :class:`Chain`) and the
serving module (``Workflow.to_torch``)."""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from interactive_recsys.backend._arrow import check_fill_value, integer_bounds
from interactive_recsys.errors import SchemaError
from interactive_recsys.ops._base import OPERATORS
from interactive_recsys.schema import is_float_dtype, is_integer_dtype
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.workflow._plan import ConcatStep, OpStep, Plan, SelectStep


def online_operators() -> list[str]:
    """The operators that the online transform applies (``Operator.online``)."""
    return sorted(name for name, cls in OPERATORS.items() if cls.online)


def refusal(op: Any, node_id: str, why: str) -> SchemaError:
    """The error of a step the online transform cannot apply: its name, why, the fix."""
    return SchemaError(
        f"The online transform cannot apply {op!r} ({node_id}): {why}. It applies per-row "
        f"steps only ({', '.join(online_operators())}), and passes the steps that change "
        "only the schema (AddTags, AddProperties, Rename, SelectColumns, DropColumns). Run "
        "this workflow offline: "
        "wf.transform(dataset).to_parquet(path), then irs.Loader(path, ...); or move the "
        "step into an offline workflow whose output the online one reads.")


@dataclass
class Chain:
    """One output column: the raw column it comes from and the compiled steps."""

    output: str
    source: str
    dtype: str  # the raw column's dtype
    steps: list[tuple] = field(default_factory=list)
    null_bit: int | None = None  # bit of the raw column's nulls (int and string columns)
    absent_bit: int | None = None  # strings of another length than the vocabulary's
    cpu_lookup: tuple | None = None  # (tables, num_buckets) of a lookup done on the CPU
    width: int | None = None  # the vocabulary's common string length (absent_bit)
    clears_nulls: bool = False  # whether a step maps nulls to values (else none may come)


def _traces(plan: Plan) -> dict[str, tuple[str, list[tuple[Any, OpStep, str]]]]:
    """Each output column of the plan: its raw column and its data steps, as (operator,
    step, the column's name at that step); a step that changes only the schema
    (:attr:`~..ops.base.Operator.schema_only`: tags, names, which columns go on) is no data
    step and passes."""
    out: dict[int, dict[str, tuple[str, list]]] = {}
    for step in plan.steps:
        if isinstance(step, SelectStep):
            out[step.index] = {c: (c, []) for c in step.columns}
            continue
        joined: dict[str, tuple[str, list]] = {}
        for p in step.parents:
            for name, trace in out[p].items():
                joined.setdefault(name, trace)
        if isinstance(step, ConcatStep):
            out[step.index] = {n: joined[n] for n in step.output_columns if n in joined}
            continue
        assert isinstance(step, OpStep)
        op = step.op
        inputs = {c for g in step.groups for c in g}
        if type(op).schema_only:
            names = [c for c in joined if c in inputs]
            out[step.index] = {n: joined[op.unchanged_input(n, names)]
                               for n in step.output_columns}
            continue
        if not type(op).online:
            raise refusal(op, step.node_id, "its output rows do not follow from each input "
                          "row alone (or it has no device kernel)")
        here = {}
        for name in step.output_columns:
            if name not in inputs or name not in joined:
                raise refusal(op, step.node_id, f"its output column {name!r} is not one of "
                              "its input columns transformed value by value")
            source, ops = joined[name]
            here[name] = (source, [*ops, (op, step, name)])
        out[step.index] = here
    return out[plan.steps[-1].index]


def compiled_steps(plan: Plan, trace: list[tuple[Any, OpStep, str]], dtype: str,
                   output: str) -> list[tuple]:
    """The data steps of one output column (``trace``: :func:`_traces`'), each with its
    constants as the offline kernel uses them on its input's dtype (``dtype``: the raw
    column's); a step whose parameters have no per-row form is refused by name."""
    steps = []
    for op, step, column in trace:
        one = op.online_step(step.state, column, plan.context(step))
        if one is None:
            raise refusal(op, step.node_id, "with these parameters it adds or joins "
                          "columns rather than mapping each value")
        compiled = _compile_step(one, dtype, output)
        steps.append(compiled)
        dtype = _dtype_after(dtype, compiled[0], compiled)
    return steps


def _dtype_after(dtype: str, kind: str, step: tuple) -> str:
    if kind in ("log1p",):
        return "float32"
    if kind == "affine":
        return step[3]
    if kind in ("categorify", "hash_bucket"):
        return "int64"
    return dtype


def _compile_step(step: tuple, dtype: str, column: str) -> tuple:
    """``step`` with its constants as the offline kernel uses them on a ``dtype`` column."""
    kind = step[0]
    if kind not in ("categorify", "hash_bucket") and not (
            is_integer_dtype(dtype) or is_float_dtype(dtype) or dtype == "bool"):
        raise SchemaError(f"The online transform cannot apply {kind!r} to column {column!r} "
                          f"({dtype}): encode it first (Categorify or HashBucket), or run "
                          "this workflow offline.")
    if kind in ("fill", "fill_median"):
        value = step[1]
        if is_integer_dtype(dtype) or dtype == "bool":
            value = math.floor(value + 0.5) if kind == "fill_median" else value
            check_fill_value(dtype, value)
            return ("fill", int(value))
        return ("fill", float(np.float32(value)) if dtype == "float32" else float(value))
    if kind == "clip":
        lo, hi = step[1], step[2]
        if is_integer_dtype(dtype):
            lo, hi = integer_bounds(pa.from_numpy_dtype(np.dtype(dtype)), lo, hi)
        elif dtype == "float32":
            with np.errstate(over="ignore"):
                lo, hi = (None if b is None else float(np.float32(b)) for b in (lo, hi))
        return ("clip", lo, hi)
    if kind == "affine":
        if step[3] not in ("float32", "float64"):
            raise SchemaError(f"The online transform computes column {column!r} in float32 or "
                              f"float64, not {step[3]}; run this workflow offline.")
        return ("affine", float(step[1]), float(step[2]), step[3])
    if kind in ("log1p", "hash_bucket", "categorify"):
        return step
    raise SchemaError(f"Unknown online step {kind!r} for column {column!r}.")


def _device_table(tables: Sequence[vocab.VocabTable]) -> tuple[np.ndarray, np.ndarray] | None:
    """All splits' hashes (as int64, sorted) and ids, or None when a hash does not identify
    its value in some split (the lookup then needs the values)."""
    keys, ids = [], []
    for t in tables:
        if not len(t.index):
            continue
        if not t._keys_only():
            return None
        keys.append(t._keys)
        ids.append(t.index if t._rows is None else t.index[t._rows])
    if not keys:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = np.concatenate(keys).view(np.int64)
    order = np.argsort(k, kind="stable")
    return k[order], np.concatenate(ids).astype(np.int64)[order]


def _widths(tables: Sequence[vocab.VocabTable]) -> set[Any]:
    return {t._width for t in tables if len(t.index)}


def _why(op: Any) -> str:
    if op.shuffle_keys() is not None:
        return f"it regroups rows by {op.shuffle_keys()} (a shuffle)"
    if op.changes_rows:
        return "it drops rows"
    return "its output rows do not follow from each input row alone (or it has no device kernel)"
