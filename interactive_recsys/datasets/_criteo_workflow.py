"""The standard Criteo workflow (``irs demo``, ``irs criteo --to parquet``).

>>> import pandas as pd
>>> from interactive_recsys.datasets import CRITEO_COLUMNS
>>> df = pd.DataFrame({n: [1, 2] if n[0] != "C" else ["a", "b"] for n in CRITEO_COLUMNS})
>>> out = standard_criteo_workflow(freq_threshold=1).fit_transform(df)
>>> out["C1"].tolist(), out.shape
([3, 4], (2, 40))
"""

from __future__ import annotations

from interactive_recsys import ops
from interactive_recsys.datasets._criteo import CRITEO_CATEGORICAL, CRITEO_CONTINUOUS, CRITEO_LABEL
from interactive_recsys.workflow._workflow import Workflow

__all__ = ["standard_criteo_workflow"]


def standard_criteo_workflow(freq_threshold: int = 0) -> Workflow:
    """The standard Criteo workflow: Categorify every C*, FillMissing -> Clip -> LogOp ->
    Normalize every I*, and the label."""
    cats = CRITEO_CATEGORICAL >> ops.Categorify(freq_threshold=freq_threshold)
    conts = (CRITEO_CONTINUOUS >> ops.FillMissing(0) >> ops.Clip(min_value=0) >> ops.LogOp()
             >> ops.Normalize())
    return Workflow(cats + conts + [CRITEO_LABEL])
