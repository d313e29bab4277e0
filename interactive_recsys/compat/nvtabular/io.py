"""``nvtabular.io`` / ``merlin.io``: ``Dataset`` and ``Shuffle``.

>>> Shuffle.PER_PARTITION.value
'partition'
"""

from interactive_recsys.compat.nvtabular.dataset import Dataset, Shuffle

__all__ = ["Dataset", "Shuffle"]
