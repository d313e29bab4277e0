"""Suggest proposes, for each column too large to keep whole, the HashBucket table in the same
memory, and the card shows its collision rate next to the lookups the threshold loses; the
rate is checked against ``irs.hash_collision_rate`` itself (no browser)."""

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.suggest._hash_size import (
    MIN_BUCKETS,
    choose_buckets,
    largest_buckets,
    propose_hashing,
)
from interactive_recsys.ui.builder.suggest._vocab_budget import VocabChoice, VocabOption
from interactive_recsys.ui.builder.views._suggest_card import SuggestCard


def _frame(rows: int = 60_000, seed: int = 4) -> pd.DataFrame:
    """``tail``: a long tail (many values seen once); ``city``: a few values."""
    rng = np.random.default_rng(seed)
    tail = rng.zipf(1.2, rows) % 200_000
    return pd.DataFrame({"tail": [f"t{v}" for v in tail],
                         "city": [f"c{v}" for v in rng.integers(0, 12, rows)]})


def test_a_column_too_large_to_keep_whole_gets_the_hashed_table_of_its_memory():
    frame = _frame()
    model = BuilderModel(frame, sample_rows=5_000)
    model.suggest()
    whole = {c.column: c.option for c in model.vocab_choices}
    # half of every value at the smallest dimension (16): some values must go
    model.suggest(max_loss=0.3, memory_budget=whole["tail"].table_rows * 16 * 4 // 2)
    choices = {c.column: c for c in model.vocab_choices}
    assert choices["tail"].option.freq_threshold > 0 and choices["city"].option.freq_threshold \
        == 0
    assert set(model.hash_proposals) == {"tail"}  # city is kept whole
    proposal = model.hash_proposals["tail"]
    rows = choices["tail"].option.table_rows
    buckets = proposal.num_buckets
    assert buckets & (buckets - 1) == 0 and buckets + 2 <= rows < 2 * buckets + 2
    # the rate is HashBucket's, measured on every row
    assert proposal.collision_rate == irs.hash_collision_rate(frame, "tail", buckets)
    assert proposal.target == 0.3 and not proposal.within_target  # equal memory: far over
    assert proposal.collision_rate > max(0.6, choices["tail"].option.lost)  # fewer rows than values

    card = SuggestCard()
    card.loss_percent.value = 30  # the budget Suggest ran with: no loss over it, no red
    card.show(model.vocab_choices, model.vocab_fits, model.vocab_shortfall,
              model.hash_proposals)
    table = card.table.value
    lost = choices["tail"].lost_text
    assert (f"<td>{lost}</td><td>{buckets:,}: {proposal.collision_rate:.2%}</td>" in table)
    assert "<td>—</td>" in table and "hashed instead" in table  # city: no proposal
    card.show(model.vocab_choices, model.vocab_fits, model.vocab_shortfall)
    assert "hashed instead" not in card.table.value  # none given: no column


def test_the_smallest_power_of_two_within_the_target():
    frame = _frame(30_000, seed=6)
    distinct = frame["tail"].nunique()
    option = VocabOption(2, 2**16 + 2, 0.02)  # a table of 65,538 rows
    choice = VocabChoice("tail", distinct, option)
    assert largest_buckets(choice) == 2**16
    proposal = propose_hashing(irs.Dataset(frame), [choice], target=0.5)["tail"]
    buckets = proposal.num_buckets
    assert MIN_BUCKETS < buckets < 2**16 and proposal.within_target
    assert proposal.collision_rate == irs.hash_collision_rate(frame, "tail", buckets) <= 0.5
    assert irs.hash_collision_rate(frame, "tail", buckets // 2) > 0.5  # half: over target
    kept = VocabChoice("city", 12, VocabOption(0, 15, 0.0))
    assert propose_hashing(frame, [kept], target=0.5) == {}  # kept whole: nothing to hash
    assert choose_buckets({1024: 0.2}, 0.1) == 1024
