"""``nvtabular.io`` / ``merlin.io``: ``Dataset`` and ``Shuffle``.

>>> Shuffle.PER_PARTITION.value
'partition'
"""

from .dataset import Dataset, Shuffle

__all__ = ["Dataset", "Shuffle"]
