"""Per-value chains: consecutive elementwise steps of a plan run as one call per column.

A run of per-value steps (``Operator.elementwise``: FillMissing -> Clip -> LogOp ->
Normalize) whose outputs nothing else reads builds no frame between them:
:meth:`~interactive_recsys.workflow._plan.Plan.evaluate` collects each column's steps in a
:class:`Chain` and runs them with one ``Backend.elementwise`` call when something reads it.

>>> import pandas as pd
>>> from interactive_recsys import ops
>>> from interactive_recsys.backend import get_backend
>>> b = get_backend("cpu")
>>> chain = Chain(b.from_pandas(pd.DataFrame({"x": [1.0, None]})), {"x": []})
>>> chain = chain.then({"x": ops.FillMissing(0).elementwise(None, "x")})
>>> out = chain.then({"x": ops.LogOp().elementwise(None, "x")}).run(b)
>>> [round(float(v), 3) for v in out["x"]]  # log1p(1), log1p(0)
[0.693, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from interactive_recsys.backend import Backend
from interactive_recsys.ops._base import RowFilter


def chain_steps(step: Any, columns: Any) -> dict[str, tuple] | None:
    """The per-value step of plan step ``step`` on each of ``columns`` (None: it has none,
    or it is no operator step)."""
    if getattr(step, "op", None) is None or len(step.parents) != 1 \
            or isinstance(step.op, RowFilter) or step.op.shuffle_keys() is not None \
            or (step.op.is_stat and step.state is None):
        return None
    steps = {}
    for n in columns:
        one = step.op.elementwise(step.state, n)
        if one is None:
            return None
        steps[n] = one
    return steps


@dataclass
class Chain:
    """Per-value steps pending on the columns of ``frame``: each column's steps run as one
    ``Backend.elementwise`` call when something reads the result (:meth:`run`)."""

    frame: Any
    steps: dict[str, list[tuple]]

    @property
    def columns(self) -> list[str]:
        return list(self.steps)

    def then(self, steps: dict[str, tuple]) -> Chain:
        return Chain(self.frame, {n: [*s, steps[n]] for n, s in self.steps.items()})

    def run(self, b: Backend) -> Any:
        return b.with_columns(self.frame, {n: b.elementwise(b.column(self.frame, n), s)
                                           for n, s in self.steps.items()})
