"""The workflow: the operator graph, its phase plan, fitting and applying it on the cluster,
reusing and updating fitted statistics, and its saved format (``workflow.json`` + parquet).
"""

from typing import TYPE_CHECKING

from interactive_recsys.lazy import lazy_dir, lazy_exports

_LAZY = {"FittedStep": "._fitted", "Workflow": "._workflow"}
__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(__name__, _LAZY)
__all__ = ["FittedStep", "Workflow"]

if TYPE_CHECKING:
    from interactive_recsys.workflow._fitted import FittedStep
    from interactive_recsys.workflow._workflow import Workflow
