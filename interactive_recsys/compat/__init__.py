"""Porting helpers: other projects' APIs and meanings on top of this project.

* :mod:`.nvtabular`: NVTabular 23.08's API (``import interactive_recsys.compat.nvtabular as
  nvt``): ``Dataset``, ``Workflow``, ``ops``, ``io``, ``dispatch``, ``tags``, with its
  keywords and meanings (``Categorify(max_size)``, ``ListSlice(k)``,
  ``TargetEncoding(kfold)``, ``JoinGroupby`` defaults) mapped onto the core.
"""

from interactive_recsys.compat import nvtabular

__all__ = ["nvtabular"]
