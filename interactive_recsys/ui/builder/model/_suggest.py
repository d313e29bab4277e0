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
from numbers import Real
from typing import TYPE_CHECKING, Any

from interactive_recsys.errors import IRSError, ParameterError
from interactive_recsys.runtime.jobs import JobCancelledError, current_job
from interactive_recsys.stats._memory_plan import parse_memory
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
from interactive_recsys.ui.builder.suggest._hash_size import propose_hashing

if TYPE_CHECKING:
    from interactive_recsys.ui.builder.model._state import ModelState


#: Why a Suggest is refused while another one counts (its steps would replace these).
SUGGEST_BUSY = ("Suggest is already counting the values of the categorical columns: wait for "
                "it to end, or click Cancel next to Suggest (job.cancel()).")
#: Why a Run is refused while a background Suggest counts.
SUGGEST_COUNTING = ("Suggest is counting the values of the categorical columns, and its steps "
                    "will replace these: wait for it to end, then click Run (or click Cancel "
                    "next to Suggest to run the steps as they are).")
#: Why Suggest is refused while a Run goes on.
RUN_BUSY = ("A Run is in progress: Suggest would replace the steps it is fitting, and count on "
            "the same workers. Wait for the Run to end, or click Cancel next to Run.")


def suggest(model: ModelState, max_loss: float | None = None,
            memory_budget: int | str | None = None, *,
            measure: bool = True) -> list[Branch]:
    """Replace the steps by a pipeline proposed from the column profile (:mod:`.suggest`);
    undoable, every step editable. ``max_loss`` (share of a column's non-null lookups
    that may become out-of-vocabulary, default 1%) and ``memory_budget`` (of fp32
    embedding weights, default 16 GiB) set each ``Categorify``'s threshold and, past the
    lookup budget, each table's embedding dimension; the choice per column is in
    :attr:`vocab_choices` (``vocab_fits``: within budget, else ``vocab_shortfall`` says
    what it would take), the lowered dimensions in :attr:`vocab_dims`, and for each column
    too large to keep whole the hashed table in the same memory in :attr:`hash_proposals`
    (``suggest._hash_size``; measured only).

    ``measure``: count every row of the categorical columns first (:meth:`measure`, one
    pass, done once), so that the thresholds and the lookups they lose are exact;
    ``False`` estimates them from the profile's sample. Blocks until done (the Studio's
    button runs it as a background job: ``_suggest_job.start_suggest``); refused while a
    Suggest started that way or a Run goes on."""
    check_idle(model)
    return apply_suggest(model, max_loss, memory_budget, measure=measure)


def check_budgets(max_loss: float | None, memory_budget: int | str | None) -> None:
    """Refuse a lookup or memory budget that Suggest cannot use, naming it and the fix."""
    if max_loss is not None and not (isinstance(max_loss, Real) and 0 <= max_loss < 1):
        raise ParameterError(f"The share of lookups that may be lost must be in [0, 1) "
                             f"(0.01 = 1%). Got {max_loss!r} instead.")
    if memory_budget is not None:
        parse_memory(memory_budget, "memory_budget")


def check_idle(model: ModelState) -> None:
    """Refuse a Suggest while another one counts, or while a Run goes on."""
    if suggesting(model):
        raise IRSError(SUGGEST_BUSY)
    if model.run_ended is not None and not model.run_ended.is_set():
        raise IRSError(RUN_BUSY)


def apply_suggest(model: ModelState, max_loss: float | None = None,
                  memory_budget: int | str | None = None, *,
                  measure: bool = True) -> list[Branch]:
    """:func:`suggest` without the refusals (a background Suggest's job runs this). Nothing
    of the model changes before the counting has ended; a job cancelled meanwhile changes
    nothing at all."""
    check_budgets(max_loss, memory_budget)
    measured = model.measured
    if measure and measured is None:
        measured = measure_columns(model.dataset, model.columns_by_role("categorical"))
    max_loss = MAX_LOSS if max_loss is None else max_loss
    memory_budget = MEMORY_BUDGET if memory_budget is None else memory_budget
    plan = vocab_plan(model.profile, max_loss, memory_budget, measured if measure else None)
    # measured: the hashed alternative of each column too large to keep whole (a pass)
    hashing = propose_hashing(model.dataset, plan.choices, max_loss) if measure else {}
    job = current_job()  # run by a background Suggest: its Cancel wins until here
    if job is not None and job.cancel_requested:
        raise JobCancelledError(f"Suggest was cancelled (job {job.name!r}): the steps, the "
                                "Suggest card and the counts are as they were.")
    if measure and model.measured is None:
        model.measured = measured
        model._events.emit("measured", None, measured)
    model.vocab_max_loss, model.vocab_budget = max_loss, memory_budget
    model.vocab_choices, model.vocab_fits, model.vocab_shortfall = plan
    model.hash_proposals = hashing
    branches = suggest_branches(model.profile, model.vocab_choices)
    model.suggested_branches = copy.deepcopy(branches)  # before observers hear of them
    model.commit(branches, len(branches) - 1, None)
    return branches


def suggesting(model: ModelState) -> bool:
    """Whether a background Suggest (``_suggest_job.start_suggest``) has not ended yet (its
    job, or the drawing of its end)."""
    ended = model.suggest_ended
    return ended is not None and not ended.is_set()


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


__all__ = ["RUN_BUSY", "SUGGEST_BUSY", "SUGGEST_COUNTING", "apply_suggest", "check_budgets",
           "check_idle", "counted_profile", "measure_counts", "suggest", "suggest_current",
           "suggesting", "threshold_note", "vocab_dims"]
