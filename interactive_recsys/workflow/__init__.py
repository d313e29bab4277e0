"""The workflow: the operator graph, its phase plan, fitting and applying it on the cluster,
reusing and updating fitted statistics, and its saved format (``workflow.json`` + parquet).
"""

from interactive_recsys.workflow._fitted import FittedStep
from interactive_recsys.workflow._workflow import Workflow

__all__ = ["FittedStep", "Workflow"]
