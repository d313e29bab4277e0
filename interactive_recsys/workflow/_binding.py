"""The one binding step of a fit and an update: the plan bound to its run (the artifacts
folder its states write into, and the facts of the data every operator's context carries).
"""

from __future__ import annotations

from typing import Any

from interactive_recsys.io._dataset import Dataset
from interactive_recsys.tables._context import RunFacts
from interactive_recsys.workflow._plan import Plan

__all__ = ["bind"]


def bind(plan: Plan, ds: Dataset, artifacts_dir: str, keep: Any,
         storage_options: dict[str, Any] | None, previous_artifacts: str | None) -> None:
    """Bind ``plan`` to the run of a fit or an update on ``ds``: the artifacts folder its
    states write into (kept alive by ``keep``, a temporary folder or None) and its options,
    and the facts every step's :class:`~interactive_recsys.tables._context.OpContext`
    carries: the rows and partitions of ``ds``, the folder of the fitted state the run starts
    from (``previous_artifacts``) and each statistics step's row filters.

    >>> import pandas as pd
    >>> from interactive_recsys import ops
    >>> from interactive_recsys.workflow._plan import prepare
    >>> ds, plan = prepare(["n"] >> ops.Normalize(), pd.DataFrame({"n": [1.0, 3.0]}), "fit on")
    >>> bind(plan, ds, "artifacts", None, None, previous_artifacts=None)
    >>> run = plan.context(plan.steps[-1]).run
    >>> run.num_rows, run.npartitions, run.row_filters, plan.artifacts_dir
    (2, 1, {'normalize-1': []}, 'artifacts')
    """
    plan.artifacts_dir, plan.keep = artifacts_dir, keep
    plan.storage_options = storage_options or None
    plan.run = RunFacts(num_rows=ds.known_num_rows, npartitions=ds.npartitions,
                        previous_artifacts=previous_artifacts,
                        row_filters=plan.graph.row_filters())
