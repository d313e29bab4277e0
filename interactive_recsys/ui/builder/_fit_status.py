"""Which steps of a builder's last fit were reused from the fit before it (badges, messages).

The Studio passes the workflow its last Run (or Preview) fitted as ``fit(..., reuse=)``:
the steps whose key is unchanged adopt their states, and those whose only change is to a
finishing parameter (Categorify's ``freq_threshold``) are refinished from the saved counts
(see :mod:`interactive_recsys.workflow._reuse`). This module says which, per builder step
and in words.

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> m = BuilderModel(pd.DataFrame({"c": ["x", "y"], "n": [1.0, 2.0]}))
>>> m.add_step(["c"], "Categorify"); m.new_branch(); m.add_step(["n"], "Normalize")
(0, 0)
1
(1, 0)
>>> first = m.to_workflow().fit(m.dataset.frame)
>>> reuse_text(first)  # nothing to reuse: nothing to say
''
>>> m.update_step(1, 0, op="NormalizeMinMax")
>>> wf = m.to_workflow().fit(m.dataset.frame, reuse=first)
>>> step_status(m, wf)
{(0, 0): 'reused', (1, 0): 'computed'}
>>> reuse_text(wf)
'reused 1 of 2 fitted steps; computed normalizeminmax-3'
>>> reuse_text(wf, m)  # as users read it: operator and position
'reused 1 of 2 fitted steps; computed NormalizeMinMax (step 1 of branch 2)'
>>> m.update_step(0, 0, params={"freq_threshold": 2})
>>> again = m.to_workflow().fit(m.dataset.frame, reuse=wf)
>>> step_status(m, again)
{(0, 0): 'refinished', (1, 0): 'reused'}
>>> reuse_text(again, m)
'reused 1 of 2 fitted steps; refinished Categorify (step 1 of branch 1) from the saved counts'
"""

from __future__ import annotations

from typing import Any

from interactive_recsys.workflow._graph import ConcatNode, Node, OpNode
from interactive_recsys.workflow._workflow import Workflow


def _tails(node: Node) -> list[Node]:
    """The last node of each branch of ``b1 + b2 + ...``."""
    if isinstance(node, ConcatNode):
        return [t for p in node.parents for t in _tails(p)]
    return [node]


def _positions(model: Any, wf: Workflow) -> dict[tuple[int, int], OpNode]:
    """``{(branch, step): node}``: the node of ``wf`` that each builder step became."""
    kept = [k for k, b in enumerate(model.branches) if b.columns or b.tags]
    tails = _tails(wf.output_node)
    if len(tails) != len(kept):
        return {}
    out = {}
    for k, node in zip(kept, tails, strict=True):
        chain = []
        while isinstance(node, OpNode):
            chain.append(node)
            node = node.parents[0]
        for j, step in enumerate(reversed(chain)):
            out[(k, j)] = step
    return out


def _how(step: Any) -> str:
    """How a fit made a :class:`~interactive_recsys.workflow._fitted.FittedStep`'s state."""
    return "reused" if step.reused else "refinished" if step.refinished else "computed"


def step_status(model: Any, workflow: Workflow | None = None) -> dict[tuple[int, int], str]:
    """``{(branch, step): "reused", "refinished" or "computed"}`` for the statistics steps
    of ``workflow`` (default: the one the model's last Run fitted, while its steps are
    unchanged): whether its fit adopted the state from the previous fit, finished it from
    the previous fit's saved counts (only finishing parameters changed), or computed it."""
    wf = workflow or model.fitted_workflow
    if wf is None or not wf.fitted:
        return {}
    how = {s.node_id: _how(s) for s in wf.fitted_steps()}
    out = {}
    for (k, j), step in _positions(model, wf).items():
        if wf.node_id(step) in how:
            out[(k, j)] = how[wf.node_id(step)]
    return out


def step_names(model: Any, workflow: Workflow) -> dict[str, str]:
    """``{node id: "Categorify (step 1 of branch 1)"}``: the builder steps of ``workflow`` as
    users read them (operator and position, as in the Steps list), keyed by node id."""
    return {workflow.node_id(node): f"{type(node.op).__name__} (step {j + 1} of branch {k + 1})"
            for (k, j), node in _positions(model, workflow).items()}


def reuse_text(workflow: Workflow, model: Any = None) -> str:
    """What a fit adopted from the previous one, in words ("" for a fit given nothing to
    reuse, or without statistics steps). With the builder ``model`` that built ``workflow``
    the refinished and computed steps are named by operator and position
    (:func:`step_names`), else by node id."""
    steps = list(workflow.fitted_steps())
    if not steps or "reused" not in workflow.fit_stats:
        return ""
    names = step_names(model, workflow) if model is not None else {}
    computed = [names.get(s.node_id, s.node_id) for s in steps if _how(s) == "computed"]
    refinished = [names.get(s.node_id, s.node_id) for s in steps if s.refinished]
    kept = sum(s.reused for s in steps)
    text = f"reused {kept} of {len(steps)} fitted steps"
    if refinished:
        text += f"; refinished {_listed(refinished)} from the saved counts"
    if computed and len(computed) < len(steps):
        text += f"; computed {_listed(computed)}"
    return text


def _listed(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
