"""Porting helpers: other projects' meanings on top of this project's operators.

* :mod:`.nvtabular`: NVTabular 23.08's ``Categorify(max_size)``, ``ListSlice(k)``,
  ``TargetEncoding(kfold=1)`` and ``JoinGroupby`` defaults.
"""

from . import nvtabular

__all__ = ["nvtabular"]
