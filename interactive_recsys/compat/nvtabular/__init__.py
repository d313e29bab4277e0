"""NVTabular 23.08's API on this project: ``import interactive_recsys.compat.nvtabular as nvt``.

NVTabular code runs with only its imports changed (``import nvtabular as nvt`` and the
``merlin.*`` helpers it uses):

================================================  ==========================================
NVTabular / Merlin                                here
================================================  ==========================================
``import nvtabular as nvt``                       ``import interactive_recsys.compat.nvtabular
                                                  as nvt``
``from nvtabular import ops``                     ``from interactive_recsys.compat.nvtabular
                                                  import ops``
``merlin.io`` / ``nvt.io``                        ``nvt.io`` (``Dataset``, ``Shuffle``)
``merlin.schema`` (``Tags``, ``TagSet``,          ``nvt.tags``, ``nvt.Schema``,
``Schema``, ``ColumnSchema``)                     ``nvt.ColumnSchema``
``merlin.core.dispatch`` (``make_df``,            ``nvt.dispatch``
``get_lib``)
``nvtabular.utils`` / ``merlin.core.compat``      ``nvt.utils``
(``device_mem_size``)
================================================  ==========================================

Everything maps onto the core (``interactive_recsys``): ``nvt.Dataset`` and
``nvt.Workflow`` are its classes with NVTabular's keywords (``dataset``,
:mod:`.workflow`); ``nvt.ops`` holds NVTabular's operator signatures (:mod:`.ops`). The
differences are listed in docs/guide/nvtabular.md.

>>> import pandas as pd
>>> import interactive_recsys.compat.nvtabular as nvt
>>> wf = nvt.Workflow(["a"] >> nvt.ops.Categorify(freq_threshold=2))
>>> ds = nvt.Dataset(pd.DataFrame({"a": list("xxy")}), cpu=True)
>>> wf.fit_transform(ds).compute()["a"].tolist()
[3, 3, 2]
"""

from __future__ import annotations

from interactive_recsys.compat.nvtabular import dispatch, io, ops, tags, utils
from interactive_recsys.compat.nvtabular._operators import operator_attribute
from interactive_recsys.compat.nvtabular.dataset import Dataset
from interactive_recsys.compat.nvtabular.schema import ColumnSchema, Schema
from interactive_recsys.compat.nvtabular.tags import Tags, TagSet
from interactive_recsys.compat.nvtabular.workflow import Workflow
from interactive_recsys.schema import ColumnSelector

#: NVTabular's pre-0.6 name of a column selection (``ColumnGroup(["a"]) >> op``).
ColumnGroup = ColumnSelector

#: ``nvt.Categorify`` and the other operators, as ``nvt.ops.*``.
__getattr__ = operator_attribute

__all__ = ["ColumnGroup", "ColumnSchema", "ColumnSelector", "Dataset", "Schema", "TagSet",
           "Tags", "Workflow", "dispatch", "io", "ops", "tags", "utils"]
