"""Save, load and export the builder's model: the workflow as JSON (+ parquet vocabularies
once fitted), a model made from an existing workflow, and the Python code that rebuilds it.

Functions over a ``BuilderModel`` (its methods of the same names forward
here); plain Python, no widgets.

>>> import pandas as pd, tempfile, os
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> frame = pd.DataFrame({"c": ["x", "y", "x"]})
>>> m = BuilderModel(frame)
>>> m.add_step(["c"], "Categorify")
(0, 0)
>>> tmp = tempfile.TemporaryDirectory()
>>> path = m.save(os.path.join(tmp.name, "wf"))
>>> other = BuilderModel(frame); other.load(path)
>>> other.branches == m.branches, other.can_undo
(True, True)
>>> print(other.export_code().splitlines()[-1])
workflow = irs.Workflow(["c"] >> ops.Categorify())
>>> tmp.cleanup()
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING

from interactive_recsys.ui.builder._branches import Branch, branches_of
from interactive_recsys.ui.builder._codegen import job_code, training_code, workflow_code
from interactive_recsys.ui.builder.model._suggest import suggest_current, vocab_dims
from interactive_recsys.workflow._workflow import Workflow

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState


def processed_path(source: str) -> str:
    """Where exported code writes the processed copy of ``source`` by default: beside it,
    named after it (a file's extension and a glob's pattern dropped).

    >>> processed_path("day_0/"), processed_path("s3://b/day_0.parquet"), processed_path("d/*.csv")
    ('day_0-processed/', 's3://b/day_0-processed/', 'd-processed/')
    """
    base = source.rstrip("/")
    if any(ch in base for ch in "*?["):
        base = base.rsplit("/", 1)[0] if "/" in base else "data"
    stem, ext = os.path.splitext(base)
    if ext.lower() in (".parquet", ".csv", ".tsv", ".txt", ".gz", ".bz2"):
        base = os.path.splitext(stem)[0] if ext.lower() in (".gz", ".bz2") else stem
    return base + "-processed/"


def adopt_workflow(model: ModelState, workflow: Workflow) -> None:
    """Make the branches of ``workflow`` (``a >> op >> op + b >> op ...``) the model's
    steps, not undoable (a model made from a workflow: ``BuilderModel.from_workflow``)."""
    branches = branches_of(workflow.output_node)
    model.validate(branches)
    model.branches, model.current = branches, len(branches) - 1
    if workflow.fitted:
        model.fitted_workflow = model.reuse_run = workflow


def export_code(model: ModelState, workflow_dir: str | None = None, output: str | None = None
                ) -> str:
    """Python code that builds the identical workflow (see :mod:`..codegen`); for a
    dataset opened from a path, the whole job, which runs as it is: open the data, fit,
    write parquet to ``output`` (default: the data's path + ``-processed/``) and save
    the fitted workflow to ``workflow_dir`` (:func:`~..codegen.job_code`). Then the
    embedding dimensions the current Suggest lowered (``dims``), and "Train from raw
    data": the loader code of the pre-processed and the online path
    (:func:`~..codegen.training_code`), once the folder is saved or the model fitted.
    ``workflow_dir`` and ``output`` left None are ``model.export_places`` (the Studio's
    Workflow and Output fields at its last Export code; at first ``my_workflow/`` and the
    default output), so the Studio's code area and ``model.export_code()`` agree."""
    workflow_dir = workflow_dir or model.export_places[0]
    output = output or model.export_places[1]
    if model.source is not None:
        output = output or processed_path(model.source)
        code = job_code(model.to_workflow(), model.source, output, workflow_dir,
                        model.source_reader)
    else:
        code = workflow_code(model.to_workflow())
    dims = vocab_dims(model) if suggest_current(model) else {}
    if dims:
        code += ("\n\n# Embedding dimensions Suggest lowered to fit the memory budget (the "
                 "other tables: NVTabular's rule),\n# for the fitted workflow's "
                 "tables: irs.torchrec.embedding_configs(workflow, dims=dims)\n"
                 f"dims = {dims!r}")
    if model.fitted_workflow is None and model.source is None:
        return code
    folders = sorted({os.path.dirname(f) for f in model.dataset.files})
    data = model.source or (folders[0] + "/" if len(folders) == 1 else "raw/")
    return (code + "\n\n# ---- Train from raw data " + "-" * 60 + "\n"
            + training_code(model.fitted_workflow or model.to_workflow(), data=data,
                            workflow_dir=workflow_dir, processed=output))


def save(model: ModelState, path: str | os.PathLike, *, overwrite: bool = False) -> str:
    """Save as JSON (+ parquet vocabularies when fitted by :meth:`run`)."""
    wf = model.fitted_workflow or model.to_workflow()
    return wf.save(path, overwrite=overwrite)


def restore(model: ModelState, branches: list[Branch]) -> None:
    """Replace the steps by ``branches`` (an autosave's, say), checked against the
    dataset first (undoable)."""
    branches = copy.deepcopy(branches)
    model.commit(branches, len(branches) - 1, None)


def load(model: ModelState, path: str | os.PathLike) -> None:
    """Replace the steps by those of a saved workflow (undoable)."""
    wf = Workflow.load(path)
    branches = branches_of(wf.output_node)
    model.commit(branches, len(branches) - 1, None)
    if wf.fitted:
        model.fitted_workflow = model.reuse_run = wf


__all__ = ["adopt_workflow", "export_code", "load", "processed_path", "restore", "save"]
