"""What the builder's model keeps across a kernel restart beyond its steps: the last Run's
output and fitted workflow, and what Suggest measured (the exact counts behind its card).

:func:`handoff_fields` gives the JSON-able fields an autosave holds (``run`` and
``suggest``, checked on read by :mod:`.._autosave_check`); :func:`adopt_run` and
:func:`restore_suggest` put them back into a model whose steps were restored. Plain Python,
no widgets.

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> m = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"]}))
>>> _ = m.suggest()
>>> fields = handoff_fields(m)
>>> fields["suggest"]["measured"]
[{'name': 'c', 'histogram': [[1, 1], [2, 1]], 'lookups': 3, 'nulls': 0, 'rows': 3}]
>>> other = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"]}))
>>> other.restore(m.branches); restore_suggest(other, fields["suggest"])
True
>>> other.vocab_choices == m.vocab_choices, other.suggest_current
(True, True)
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

from interactive_recsys.store import storage
from interactive_recsys.ui.builder.suggest import MeasuredColumn, suggest_branches, vocab_plan
from interactive_recsys.workflow._workflow import Workflow

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState


def data_identity(model: ModelState) -> list[list[Any]] | None:
    """The local files the dataset reads with their sizes and modification times (ns), in
    order; None for data that has no such identity (in memory, or in an object store)."""
    try:
        files = model.dataset.input_files()
    except Exception:  # a frame built elsewhere: nothing to compare
        return None
    if not files or any(storage.is_remote(f) for f in files):
        return None
    out = []
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            return None
        out.append([os.path.abspath(path), info.st_size, info.st_mtime_ns])
    return out


def handoff_fields(model: ModelState, budget: int | None = None) -> dict[str, Any]:
    """The autosave's ``run`` (the last Run's output and fitted workflow folder, or None)
    and ``suggest`` (the last Suggest's budgets, exact counts and the data's identity, or
    None) fields; ``budget``: the memory budget the Suggest card shows."""
    run = None
    if model.run_output is not None:
        run = {"output": model.run_output[0], "workflow": model.run_output[1]}
    suggest = None
    budget = budget if budget is not None else model.vocab_budget
    if model.measured is not None and model.suggested_branches is not None \
            and isinstance(budget, int):
        suggest = {"max_loss": model.vocab_max_loss,
                   "memory_budget": budget,
                   "data": data_identity(model),
                   "measured": [{"name": c.name, "histogram": [list(p) for p in c.histogram],
                                 "lookups": c.lookups, "nulls": c.nulls, "rows": c.rows}
                                for c in model.measured.values()]}
    return {"run": run, "suggest": suggest}


def restore_suggest(model: ModelState, saved: dict[str, Any]) -> bool:
    """Put back the Suggest of ``saved`` (an autosave's checked ``suggest`` field): its
    exact counts, and the choices and suggested steps computed from them and the budgets
    as Suggest computed them. Whether the data may have changed since it was measured
    (its files, sizes or modification times differ, or it has no such identity)."""
    model.measured = {c["name"]: MeasuredColumn(c["name"], tuple(map(tuple, c["histogram"])),
                                                c["lookups"], c["nulls"], c["rows"])
                      for c in saved["measured"]}
    model.vocab_max_loss, model.vocab_budget = saved["max_loss"], saved["memory_budget"]
    model.vocab_choices, model.vocab_fits, model.vocab_shortfall = vocab_plan(
        model.profile, model.vocab_max_loss, model.vocab_budget, model.measured)
    model.suggested_branches = copy.deepcopy(suggest_branches(model.profile,
                                                              model.vocab_choices))
    identity = data_identity(model)
    return identity is None or identity != saved["data"]


def adopt_run(model: ModelState, output: str, workflow: str) -> tuple[bool, str]:
    """Use the fitted workflow a Run saved to ``workflow`` (beside ``output``) as the
    model's, when it has the model's steps and parameters (the Run's own test: the same
    workflow nodes); else leave the model unfitted. Whether it was used, and the line that
    says so."""
    try:
        wf = Workflow.load(workflow)
    except Exception as exc:  # removed, moved or damaged since: named, one line
        why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        return False, (f"The last Run's fitted workflow {workflow!r} could not be loaded "
                       f"({type(exc).__name__}: {why}): it is not used; Run fits again.")
    if not wf.fitted or wf.to_config()["nodes"] != model.to_workflow().to_config()["nodes"]:
        return False, (f"The last Run's fitted workflow {workflow!r} does not match the "
                       "restored steps (their operators or parameters differ): it is not "
                       "used; Run fits them again.")
    model.fitted_workflow = model.reuse_run = wf
    model.run_output = (output, workflow)
    return True, (f"The last Run's fitted workflow {workflow!r} (output {output!r}) matches "
                  "the restored steps: Save, Export code and Embeddings use it, without a "
                  "new fit.")


__all__ = ["adopt_run", "data_identity", "handoff_fields", "restore_suggest"]
