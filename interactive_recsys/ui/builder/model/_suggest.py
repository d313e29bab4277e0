"""Suggest and the vocabulary of the builder's model: a pipeline proposed from the column
profile, each ``Categorify``'s threshold chosen from exact counts (:mod:`.suggest`), and
the warning for a threshold that no value can reach.

Functions over a ``BuilderModel`` (its methods of the same names forward
here); they read and set the vocabulary state its ``__init__`` declares. Plain Python, no
widgets.

>>> import pandas as pd
>>> from interactive_recsys.ui.builder.model._model import BuilderModel
>>> m = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, None, 3.0]}))
>>> [[s.op for s in b.steps] for b in m.suggest()]
[['Categorify'], ['FillMissing', 'Clip', 'Normalize']]
>>> m.measured["c"].distinct, m.vocab_fits
(2, True)
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.ui.builder._branches import Branch, make_operator
from interactive_recsys.ui.builder._column_profile import ColumnProfile
from interactive_recsys.ui.builder.suggest import (
    MAX_LOSS,
    MEMORY_BUDGET,
    MeasuredColumn,
    measure_columns,
    suggest_branches,
    suggested_dims,
    vocab_plan,
)

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState


def suggest(model: ModelState, max_loss: float | None = None,
            memory_budget: int | str | None = None, *,
            measure: bool = True) -> list[Branch]:
    """Replace the steps by a pipeline proposed from the column profile (:mod:`.suggest`);
    undoable, every step editable. ``max_loss`` (share of a column's non-null lookups
    that may become out-of-vocabulary, default 1%) and ``memory_budget`` (of fp32
    embedding weights, default 16 GiB) set each ``Categorify``'s threshold and, past the
    lookup budget, each table's embedding dimension; the choice per column is in
    :attr:`vocab_choices` (``vocab_fits``: within budget, else ``vocab_shortfall`` says
    what it would take), the lowered dimensions in :attr:`vocab_dims`.

    ``measure``: count every row of the categorical columns first (:meth:`measure`, one
    pass, done once), so that the thresholds and the lookups they lose are exact;
    ``False`` estimates them from the profile's sample."""
    if max_loss is not None and not 0 <= max_loss < 1:
        raise ParameterError(f"The share of lookups that may be lost must be in [0, 1) "
                             f"(0.01 = 1%). Got {max_loss!r} instead.")
    model.vocab_max_loss = MAX_LOSS if max_loss is None else max_loss
    model.vocab_budget = MEMORY_BUDGET if memory_budget is None else memory_budget
    model.vocab_choices, model.vocab_fits, model.vocab_shortfall = vocab_plan(
        model.profile, model.vocab_max_loss, model.vocab_budget,
        measure_counts(model) if measure else None)
    branches = suggest_branches(model.profile, model.vocab_choices)
    model.suggested_branches = copy.deepcopy(branches)  # before observers hear of them
    model.commit(branches, len(branches) - 1, None)
    return branches


def vocab_dims(model: ModelState) -> dict[str, int]:
    """``{column: dim}`` of the tables whose embedding dimension the last :meth:`suggest`
    lowered below NVTabular's rule to fit the memory budget (empty when none was):
    the per-table ``dims`` of :class:`~interactive_recsys.stats.EmbeddingReport` and
    :func:`interactive_recsys.torchrec.embedding_configs`."""
    return suggested_dims(model.vocab_choices)


def suggest_current(model: ModelState) -> bool:
    """Whether the last :meth:`suggest`'s choices describe the steps as they are now
    (``False`` before any Suggest, and after any edit of the steps since; an Undo back
    to the suggested steps makes them current again).

    >>> import pandas as pd
    >>> from interactive_recsys.ui.builder.model._model import BuilderModel
    >>> m = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"], "n": [1.0, 2.0, 3.0]}))
    >>> m.suggest_current
    False
    >>> _ = m.suggest(measure=False); m.suggest_current
    True
    >>> m.update_step(0, 0, params={"freq_threshold": 2}); m.suggest_current
    False
    >>> m.undo(); m.suggest_current
    True
    """
    return model.suggested_branches is not None and model.branches == model.suggested_branches


def measure_counts(model: ModelState) -> dict[str, MeasuredColumn]:
    """Exact value counts of the categorical columns over every row
    (:func:`.measure_columns`), computed once."""
    if model.measured is None:
        model.measured = measure_columns(model.dataset, model.columns_by_role("categorical"))
        model._events.emit("measured", None, model.measured)
    return model.measured


def counted_profile(model: ModelState) -> list[ColumnProfile]:
    """The column profile as the views show it: each column's distinct count exact once
    ``measure_counts`` counted it over every row, else the sample's estimate.

    >>> import pandas as pd
    >>> from interactive_recsys.ui.builder.model._model import BuilderModel
    >>> m = BuilderModel(pd.DataFrame({"c": ["x", "y", "x"]}))
    >>> m.measured = {"c": MeasuredColumn("c", ((1, 40), (2, 60)), 160, 0, 160)}
    >>> [p.distinct_text for p in counted_profile(m)]
    ['100 exact']
    """
    measured = model.measured or {}
    return [p.counted(measured[p.name].distinct) if p.name in measured else p
            for p in model.profile]


def threshold_note(model: ModelState, op: str, params: dict[str, Any] | None) -> str | None:
    """The operator's own warning about its parameters on this dataset's row count (its
    ``Operator.data_warnings``), or ``None``: the builder names no operator's rule."""
    notes = make_operator(op, params).data_warnings(model.dataset.known_num_rows)
    return notes[0] if notes else None


__all__ = ["counted_profile", "measure_counts", "suggest", "suggest_current", "threshold_note",
           "vocab_dims"]
