"""Suggest: a complete pipeline proposed from the column profile (``_rules``), each
``Categorify``'s vocabulary chosen by its effect (``_vocab_budget``) from exact counts
(``_vocab_measure``), the tables fitted into a memory budget by thresholds within a share
of lost lookups and then smaller dimensions (``_vocab_choose``), and the check of a
fitted workflow's lost lookups (``_oov_check``), and the ``max_frequency`` cut proposed where
a value holds an outsized share of a column (``_max_frequency``). Plain Python: the card that
shows the choice is a view (``views.SuggestCard``)."""

from interactive_recsys.ui.builder.suggest._max_frequency import (
    FrequencyCut,
    frequency_cut,
    frequency_hints,
    outsized_cut,
)
from interactive_recsys.ui.builder.suggest._oov_check import (
    OOVWarning,
    check_oov,
    lost_lookups,
    oov_summary,
)
from interactive_recsys.ui.builder.suggest._rules import (
    VocabPlan,
    explain,
    profile_defaults,
    suggest_branches,
    suggested_dims,
    vocab_plan,
)
from interactive_recsys.ui.builder.suggest._vocab_budget import (
    MAX_LOSS,
    MEMORY_BUDGET,
    VocabChoice,
    VocabOption,
)
from interactive_recsys.ui.builder.suggest._vocab_choose import DIM_FLOOR, Shortfall, choose
from interactive_recsys.ui.builder.suggest._vocab_measure import MeasuredColumn, measure_columns

__all__ = ["DIM_FLOOR", "MAX_LOSS", "MEMORY_BUDGET", "FrequencyCut", "MeasuredColumn",
           "OOVWarning", "Shortfall", "VocabChoice", "VocabOption", "VocabPlan", "check_oov",
           "choose", "explain", "frequency_cut", "frequency_hints", "lost_lookups",
           "measure_columns", "oov_summary", "outsized_cut", "profile_defaults",
           "suggest_branches", "suggested_dims", "vocab_plan"]
