"""Evaluation: per-user train/test splits and ranking metrics computed on the cluster.

>>> from interactive_recsys import eval as ev
>>> sorted(name for name in ev.__all__)
['ranking_metrics', 'split']
"""

from interactive_recsys.eval._metrics import ranking_metrics
from interactive_recsys.eval._split import split

__all__ = ["ranking_metrics", "split"]
