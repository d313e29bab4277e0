"""Edits of a builder model's steps and branches: each builds the new list of branches,
which :meth:`~._model.BuilderModel.commit` validates, records for undo and tells (functions
over the model that its methods of the same names forward to).

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> m = BuilderModel(pd.DataFrame({"c": ["x", "y"], "n": [1.0, 2.0]}))
>>> add_step(m, ["c"], "Categorify"), add_step(m, ["n"], "Normalize")
((0, 0), (1, 0))
>>> move_step(m, 1, 0, -1)
Traceback (most recent call last):
...
interactive_recsys.errors.ParameterError: Step 1 of branch 2 cannot move up: it is already first.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.ui.builder._branches import Branch, Step
from interactive_recsys.ui.builder.model._validate import check_columns, check_param_columns

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState


def _same_selection(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return [list(x) if not isinstance(x, str) else x for x in a] == \
        [list(x) if not isinstance(x, str) else x for x in b]


def step_at(model: ModelState, branch: int, index: int) -> Step:
    try:
        if branch < 0 or index < 0:
            raise IndexError
        return model.branches[branch].steps[index]
    except IndexError:
        raise ParameterError(f"There is no step {index + 1} in branch {branch + 1}.") \
            from None


def add_step(model: ModelState, columns: Sequence[Any], op: str,
             params: dict[str, Any] | None = None, *,
             branch: int | None = None) -> tuple[int, int]:
    """Append ``op(**params)`` on ``columns``; returns ``(branch, step)``.

    The step goes to the current branch when that branch is empty or works on the same
    columns; otherwise a new branch is started for ``columns``.
    """
    columns = check_columns(model.schema, columns)
    check_param_columns(model, op, params)
    branches = copy.deepcopy(model.branches)
    k = model.current if branch is None else branch
    if not 0 <= k < len(branches):
        raise ParameterError(f"There is no branch {k + 1}; there are {len(branches)}.")
    target = branches[k]
    if target.steps and not _same_selection(target.columns, columns):
        branches.append(Branch())
        k, target = len(branches) - 1, branches[-1]
    target.columns = columns
    target.steps.append(Step(op, dict(params or {})))
    model.commit(branches, k, (k, len(target.steps) - 1))
    return k, len(target.steps) - 1


def update_step(model: ModelState, branch: int, index: int, *, op: str | None = None,
                params: dict[str, Any] | None = None,
                columns: Sequence[Any] | None = None) -> None:
    """Change a step's operator and/or parameters, and/or its branch's columns."""
    step = step_at(model, branch, index)
    op = op or step.op
    params = dict(step.params if params is None and op == step.op else params or {})
    check_param_columns(model, op, params)
    branches = copy.deepcopy(model.branches)
    branches[branch].steps[index] = Step(op, params)
    if columns is not None:
        branches[branch].columns = check_columns(model.schema, columns)
    model.commit(branches, branch, (branch, index))


def remove_step(model: ModelState, branch: int, index: int) -> None:
    step_at(model, branch, index)
    branches = copy.deepcopy(model.branches)
    del branches[branch].steps[index]
    steps = len(branches[branch].steps)
    model.commit(branches, branch, (branch, min(index, steps - 1)) if steps else None)


def move_step(model: ModelState, branch: int, index: int, offset: int) -> None:
    """Move a step up (``offset=-1``) or down (``+1``) within its branch."""
    step_at(model, branch, index)
    new = index + offset
    if not 0 <= new < len(model.branches[branch].steps):
        raise ParameterError(f"Step {index + 1} of branch {branch + 1} cannot move "
                             f"{'up' if offset < 0 else 'down'}: it is already "
                             f"{'first' if offset < 0 else 'last'}.")
    branches = copy.deepcopy(model.branches)
    steps = branches[branch].steps
    steps[index], steps[new] = steps[new], steps[index]
    model.commit(branches, branch, (branch, new))


def new_branch(model: ModelState, columns: Sequence[Any] = ()) -> int:
    """Start a new branch (optionally a pass-through of ``columns``); returns its index."""
    columns = check_columns(model.schema, columns) if columns else []
    branches = copy.deepcopy(model.branches)
    if branches and not branches[-1].columns and not branches[-1].steps and not columns:
        model.commit(branches, len(branches) - 1, None)  # reuse the empty last branch
        return len(branches) - 1
    branches.append(Branch(columns=columns))
    model.commit(branches, len(branches) - 1, None)
    return len(branches) - 1


def remove_branch(model: ModelState, branch: int) -> None:
    if not 0 <= branch < len(model.branches):
        raise ParameterError(f"There is no branch {branch + 1}; there are "
                             f"{len(model.branches)}.")
    branches = copy.deepcopy(model.branches)
    del branches[branch]
    branches = branches or [Branch()]
    model.commit(branches, min(model.current, len(branches) - 1), None)


__all__ = ["add_step", "move_step", "new_branch", "remove_branch", "remove_step", "step_at",
           "update_step"]
