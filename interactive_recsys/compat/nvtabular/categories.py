"""NVTabular's category files: ``Categorify(out_path=...)`` writes them after ``fit``.

NVTabular 23.08 writes, per encoded column (or column group) ``<col>``, under
``<out_path>/categories/``:

* ``unique.<col>.parquet``: the vocabulary in id order, columns ``<col>`` (the value) and
  ``<col>_size`` (its count in the fitted data), indexed by the id it encodes to;
* ``meta.<col>.parquet``: one row per kind of id (``pad``, ``null``, ``oov``, ``unique``)
  with its first id (``offset``), how many ids it has (``num_indices``) and how many rows
  of the fitted data got one (``num_observed``).

Here they are copies of the step's fitted vocabulary (the core keeps its own, in its
artifacts: ``Workflow.fitted_steps()``), written once the compat ``Workflow.fit`` is done,
each file atomically, and only where ``out_path`` is given (NVTabular's default, ``./``,
would write into the working folder unasked). One file per column, whatever ``split_out``.

>>> import os, tempfile, pandas as pd
>>> from interactive_recsys.compat.nvtabular import Dataset, Workflow, ops
>>> out = tempfile.mkdtemp()
>>> wf = Workflow(["c"] >> ops.Categorify(out_path=out))
>>> _ = wf.fit(Dataset(pd.DataFrame({"c": ["x", "y", "x", None]})))
>>> pd.read_parquet(os.path.join(out, "categories", "unique.c.parquet"))
   c  c_size
3  x       2
4  y       1
>>> pd.read_parquet(os.path.join(out, "categories", "meta.c.parquet"))["num_observed"].tolist()
[0, 1, 0, 3]
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from interactive_recsys import ops as _core
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.store._outputs import atomic_file
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX
from interactive_recsys.tables._vocabulary import read_vocabulary

#: The attribute of a compat ``Categorify`` holding its ``out_path`` (not a parameter: it
#: only says where the copies go, and is not saved).
OUT_PATH = "_nvt_out_path"


def write_categories(workflow: Any) -> None:
    """Write NVTabular's category files of every fitted ``Categorify`` given an
    ``out_path`` (see the module docstring)."""
    for step in workflow.fitted_steps(_core.Categorify):
        out_path = step.op.__dict__.get(OUT_PATH)
        if out_path is None:
            continue
        folder = os.path.join(os.fspath(out_path), "categories")
        os.makedirs(folder, exist_ok=True)
        buckets = step.op.num_buckets or 1
        for key, info in step.state["vocabs"].items():
            table = read_vocabulary(resolve(workflow.artifacts_dir, info["path"],
                                            "vocabulary path"), info["splits"],
                                    workflow.storage_options or None)
            values = table.to_pandas()
            uniques = pd.DataFrame({key: values["value"], f"{key}_size": values["count"]})
            uniques.index = pd.Index(values["index"].to_numpy())
            meta = pd.DataFrame({
                "kind": ["pad", "null", "oov", "unique"],
                "offset": [0, NULL_INDEX, FIRST_FREE_INDEX, FIRST_FREE_INDEX + buckets],
                "num_indices": [1, 1, buckets, len(values)],
                "num_observed": [0, info.get("null_count", 0), info.get("oov_count", 0),
                                 int(values["count"].sum())]})  # given: not counted
            for name, frame in (("unique", uniques), ("meta", meta)):
                with atomic_file(os.path.join(folder, f"{name}.{key}.parquet")) as tmp:
                    frame.to_parquet(tmp)


__all__ = ["OUT_PATH", "write_categories"]
