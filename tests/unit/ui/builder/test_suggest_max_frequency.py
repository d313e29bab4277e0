"""Suggest and ``Categorify(max_frequency=N)`` (issue 53, item 3): what a cut would send out
of vocabulary, exactly (pandas' ``value_counts`` is the expectation), and the cut proposed
where a value holds an outsized share of a large column — plain Python, the model and the
card's note."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.suggest._max_frequency import (
    MIN_DISTINCT,
    OUTSIZED_SHARE,
    frequency_cut,
    frequency_hints,
    outsized_cut,
)
from interactive_recsys.ui.builder.suggest._vocab_measure import MeasuredColumn, measure_columns
from interactive_recsys.ui.builder.views._suggest_card import SuggestCard


def _logs(rows: int = 12_000, seed: int = 5) -> pd.DataFrame:
    """``user``: 3,000+ ids, one placeholder ("unknown") on 30% of the rows and a bot on 12%;
    ``device``: 3 values, one on 60% of the rows (a common category, not a placeholder)."""
    rng = np.random.default_rng(seed)
    users = np.array([f"u{v}" for v in rng.integers(0, 4_000, rows)], dtype=object)
    draw = rng.random(rows)
    users[draw < 0.30] = "unknown"
    users[(draw >= 0.30) & (draw < 0.42)] = "bot"
    users[rng.random(rows) < 0.02] = None
    device = rng.choice(["phone", "desktop", "tablet"], rows, p=[0.6, 0.3, 0.1])
    return pd.DataFrame({"user": users, "device": device, "label": rng.integers(0, 2, rows)})


@pytest.mark.parametrize("limit", [1, 3, 50, 1_000])
def test_a_cut_counts_the_values_and_rows_it_sends_out_exactly(limit):
    df = _logs()
    measured = measure_columns(irs.Dataset(df), ["user"])["user"]
    counts = df["user"].value_counts()
    cut = frequency_cut(measured, limit)
    assert cut.values == int((counts > limit).sum())
    assert cut.share == pytest.approx(counts[counts > limit].sum() / counts.sum())
    # what the operator then does: those rows out of vocabulary
    wf = irs.Workflow(["user"] >> ops.Categorify(max_frequency=limit)).fit(df)
    info = next(wf.fitted_steps()).state["vocabs"]["user"]
    assert (info["cut_values"], info["cut_count"]) == \
        (cut.values, int(counts[counts > limit].sum()))


def test_outsized_values_of_a_large_column_are_proposed_for_a_cut():
    df = _logs()
    measured = measure_columns(irs.Dataset(df), ["user", "device"])
    counts = df["user"].value_counts()
    cut = outsized_cut(measured["user"])
    outsized = counts[counts >= OUTSIZED_SHARE * counts.sum()]
    assert set(outsized.index) == {"unknown", "bot"}
    assert cut.values == 2 and cut.share == pytest.approx(outsized.sum() / counts.sum())
    assert cut.max_frequency == counts[counts < OUTSIZED_SHARE * counts.sum()].max()
    assert outsized_cut(measured["device"]) is None  # 3 values: a category, not a bot
    assert [c.column for c in frequency_hints(measured)] == ["user"]
    assert "user: max_frequency=" in cut.text() and "cut 2 values" in cut.text()


def test_no_cut_without_an_outsized_value_or_below_the_column_size():
    even = MeasuredColumn("c", ((1, 500), (2, 700)), 1900, 0, 1900)
    assert even.distinct >= MIN_DISTINCT and outsized_cut(even) is None
    small = MeasuredColumn("c", ((1, 10), (500, 1)), 510, 0, 510)
    assert outsized_cut(small) is None and outsized_cut(small, min_distinct=5) is not None
    every = MeasuredColumn("c", ((600, 2),), 1200, 0, 1200)
    assert outsized_cut(every, min_distinct=1) is None  # it would cut every value


def test_the_head_of_a_long_tailed_column_is_not_taken_for_a_bot():
    """A Zipf law over 5,000 values: its first value holds over 10% of the rows, but the
    second is half as frequent (no gap), so no cut is proposed; a placeholder added on top,
    ten times the first value's count, is."""
    counts = pd.Series(np.maximum((200_000 / np.arange(1, 5_001)).round().astype(int), 1),
                       index=[f"i{r}" for r in range(5_000)])
    assert counts.iloc[0] / counts.sum() > OUTSIZED_SHARE
    df = pd.DataFrame({"item": np.repeat(counts.index.to_numpy(), counts.to_numpy())})
    assert outsized_cut(measure_columns(irs.Dataset(df), ["item"])["item"]) is None
    placeholder = pd.DataFrame({"item": ["unknown"] * int(10 * counts.iloc[0])})
    both = pd.concat([df, placeholder], ignore_index=True)
    cut = outsized_cut(measure_columns(irs.Dataset(both), ["item"])["item"])
    share = placeholder.shape[0] / both.shape[0]
    assert (cut.values, cut.max_frequency) == (1, int(counts.iloc[0]))
    assert cut.share == pytest.approx(share)


def test_suggest_measures_the_counts_the_proposal_is_made_from():
    model = BuilderModel(_logs())
    model.suggest()
    hints = frequency_hints(model.measured)
    assert [h.column for h in hints] == ["user"]
    card = SuggestCard()
    card.show(model.vocab_choices, model.vocab_fits, model.vocab_shortfall)
    card.show_frequency(hints)
    assert card.frequency_note.layout.display is None
    assert "user: max_frequency=" in card.frequency_note.value
    card.show([], True)  # another dataset: the note goes with the table
    assert card.frequency_note.layout.display == "none"
