"""A workflow graph flattened into steps that run on one partition.

A :class:`Plan` is what travels to Dask workers: plain steps with integer parent
indices, each operator with its fitted state and context. Evaluating a partition
runs every needed step once, in order, fused into one task.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from dataclasses import dataclass, field
from typing import Any

from .backend import CpuBackend, get_backend
from .ops.base import OpContext, Operator
from .selector import flatten


@functools.cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_memory() -> None:
    """Give freed heap memory back to the OS (glibc ``malloc_trim``), so that a memory-limited
    Dask worker does not see a partition's temporaries as unmanaged memory and pause."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


@dataclass
class Step:
    """One node of the graph, ready to run."""

    index: int
    kind: str  # "select" | "op" | "concat"
    parents: list[int]
    columns: list[str] = field(default_factory=list)  # select: the input columns
    op: Operator | None = None
    groups: list[tuple[str, ...]] = field(default_factory=list)
    node_id: str = ""
    state: dict[str, Any] | None = None
    output_columns: list[str] = field(default_factory=list)


@dataclass
class Plan:
    """Steps in topological order plus what they share (backend, artifacts, extras)."""

    steps: list[Step]
    backend_name: str
    artifacts_dir: str | None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def backend(self) -> CpuBackend:
        return get_backend(self.backend_name)

    def context(self, step: Step) -> OpContext:
        return OpContext(self.backend, step.groups, step.node_id, self.artifacts_dir, self.extra)

    def evaluate(self, df: Any, targets: list[int]) -> dict[int, tuple[Any, Any]]:
        """Outputs ``(frame, keep_mask_or_None)`` of the ``targets`` steps on one partition."""
        b = self.backend
        needed = self._ancestors(targets)
        results: dict[int, tuple[Any, Any]] = {}
        for step in self.steps:
            if step.index not in needed:
                continue
            if step.kind == "select":
                results[step.index] = (b.select(df, step.columns), None)
                continue
            frame, mask = self._join(results, step.parents)
            if step.kind == "op":
                ctx = self.context(step)
                if step.op.changes_rows:
                    keep = step.op.row_mask(frame, step.state, ctx)
                    mask = keep if mask is None else b.logical_and(mask, keep)
                frame = step.op.transform(frame, step.state, ctx)
            results[step.index] = (frame, mask)
        return {t: results[t] for t in targets}

    def input_columns(self, targets: list[int]) -> list[str]:
        """Input columns that the ``targets`` steps read (so only those are loaded)."""
        needed = self._ancestors(targets)
        return flatten([tuple(s.columns) for s in self.steps
                        if s.kind == "select" and s.index in needed])

    def _ancestors(self, targets: list[int]) -> set[int]:
        by_index = {s.index: s for s in self.steps}
        todo, seen = list(targets), set()
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                todo.extend(by_index[i].parents)
        return seen

    def transform_partition(self, df: Any, output: int, columns: list[str]) -> Any:
        """The workflow output of one partition (rows dropped by row filters removed)."""
        frame, mask = self.evaluate(df, [output])[output]
        if mask is not None:
            frame = self.backend.filter_rows(frame, mask)
        frame = self.backend.select(frame, columns)
        release_memory()
        return frame

    def fit_partition(self, df: Any, targets: list[int]) -> dict[int, Any]:
        """Partial statistics of every ``targets`` step (each a StatOperator) on one partition."""
        b = self.backend
        by_index = {s.index: s for s in self.steps}
        inputs = self.evaluate_inputs(df, targets)
        out = {}
        for t in targets:
            frame, mask = inputs[t]
            if mask is not None:
                frame = b.filter_rows(frame, mask)
            step = by_index[t]
            out[t] = step.op.fit_partition(frame, self.context(step))
        del inputs, frame
        release_memory()
        return out

    def evaluate_inputs(self, df: Any, targets: list[int]) -> dict[int, tuple[Any, Any]]:
        """The input (parents' outputs side by side) of each target step."""
        by_index = {s.index: s for s in self.steps}
        parents = sorted({p for t in targets for p in by_index[t].parents})
        outs = self.evaluate(df, parents)
        inputs = {}
        for t in targets:
            frame, mask = self._join(outs, by_index[t].parents)
            inputs[t] = (self.backend.select(frame, flatten(by_index[t].groups)), mask)
        return inputs

    def _join(self, outputs: dict[int, tuple[Any, Any]], parents: list[int]) -> tuple[Any, Any]:
        """Parents' frames side by side, and the rows all of their row filters keep."""
        b = self.backend
        mask = None
        for p in parents:
            m = outputs[p][1]
            if m is not None:
                mask = m if mask is None else b.logical_and(mask, m)
        return b.hconcat([outputs[p][0] for p in parents]), mask
