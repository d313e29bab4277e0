"""Suggest when thresholds alone cannot fit the memory budget: thresholds only as far as each
column stays within 1% of its lookups lost, then smaller dimensions for the largest tables,
and a plain account when even that does not fit — on the Kaggle-profile synthetic data at
reduced scale, with the budget scaled so that the situation of 32M rows arises, checked
against pandas' value counts and the rule worked out here by hand."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys.ui.builder.model._model import BuilderModel

ROWS = 300_000
MAX_LOSS = 0.01
MiB = 2**20
COLUMNS = [f"C{i}" for i in range(1, 27)]


def rule_dim(rows: int) -> int:
    """NVTabular's rule, as the docs state it."""
    return min(512, max(16, round(1.6 * rows ** 0.56)))


def table_rows(counts: pd.Series, threshold: int) -> int:
    """Rows of the table ``Categorify(freq_threshold=threshold)`` makes: padding, null,
    out-of-vocabulary, and the values seen at least ``threshold`` times."""
    return 3 + int((counts >= threshold).sum())


def lost(counts: pd.Series, threshold: int) -> float:
    """Share of non-null lookups whose value is seen fewer than ``threshold`` times."""
    return float(counts[counts < threshold].sum() / counts.sum())


def deepest_threshold(counts: pd.Series, max_loss: float) -> int:
    """The largest threshold that loses at most ``max_loss``: one above the largest count
    whose values (and every rarer one) can all go (0: none can)."""
    by_count = counts.groupby(counts).sum().sort_index()   # lookups of the values seen k times
    lost_after = by_count.cumsum() / counts.sum()          # lost by freq_threshold = k + 1
    within = lost_after[lost_after <= max_loss]
    return int(within.index.max()) + 1 if len(within) else 0


@pytest.fixture(scope="module")
def kaggle(tmp_path_factory):
    path = irs.datasets.synthetic_criteo(rows=ROWS, profile="kaggle",
                                         path=tmp_path_factory.mktemp("k") / "k")
    frame = pd.read_parquet(path, columns=COLUMNS)
    counts = {c: frame[c].value_counts() for c in COLUMNS}
    whole = {c: table_rows(counts[c], 0) for c in COLUMNS}
    small = {c for c in COLUMNS if whole[c] * rule_dim(whole[c]) * 4 < MiB}
    deepest = {c: 0 if c in small else deepest_threshold(counts[c], MAX_LOSS) for c in COLUMNS}
    return path, counts, whole, small, deepest


def nbytes(rows: int, dim: int) -> int:
    return rows * dim * 4


def halve_largest(tables: dict[str, int], small: set[str], budget: int) -> dict[str, int]:
    """The documented rule by hand: the largest table (bytes) to the next power of two below
    its dimension, never under 16, until all fit; the dimension cap of each column lowered."""
    dims = {c: rule_dim(rows) for c, rows in tables.items()}
    while sum(nbytes(tables[c], dims[c]) for c in tables) > budget:
        largest = max((c for c in tables if c not in small and dims[c] > 16),
                      key=lambda c: nbytes(tables[c], dims[c]))
        power = 16
        while power * 2 < dims[largest]:
            power *= 2
        dims[largest] = power
    return {c: d for c, d in dims.items() if d < rule_dim(tables[c])}


def test_thresholds_within_one_percent_then_smaller_dims_fit_the_budget(kaggle):
    path, counts, whole, small, deepest = kaggle
    at_rule = sum(nbytes(r, rule_dim(r)) for r in whole.values())
    deep = {c: table_rows(counts[c], deepest[c]) for c in COLUMNS}
    thresholds_only = sum(nbytes(r, rule_dim(r)) for r in deep.values())
    budget = thresholds_only // 3
    # the situation of 32M rows: the whole vocabulary does not fit, and thresholds that keep
    # every column within 1% do not either (fitting by thresholds alone would lose more)
    assert at_rule > budget and thresholds_only > budget
    model = BuilderModel(str(path))
    branches = model.suggest(memory_budget=budget)
    thresholds = {c: b.steps[0].params.get("freq_threshold", 0) for b in branches
                  for c in b.columns if b.steps and b.steps[0].op == "Categorify"}
    choices = {c.column: c for c in model.vocab_choices}
    assert model.vocab_fits and model.vocab_shortfall is None
    caps = halve_largest(deep, small, budget)
    total = 0
    for c in COLUMNS:
        option, t = choices[c].option, thresholds[c]
        assert option.freq_threshold == t
        assert lost(counts[c], t) <= MAX_LOSS, (c, t)            # pandas: the real loss
        assert option.lost == pytest.approx(lost(counts[c], t), abs=1e-12), c
        rows = table_rows(counts[c], t)
        assert option.table_rows == rows and choices[c].kept_ids == rows - 3, c
        expected_dim = min(rule_dim(rows), caps.get(c, 512))              # the rule, by hand
        assert option.dim == expected_dim, (c, option.dim, expected_dim)
        total += nbytes(rows, expected_dim)
        if c in small:  # tiny tables: every value, the rule's dimension
            assert t == 0 and option.dim == rule_dim(whole[c]) and choices[c].small, c
    assert total == sum(c.option.nbytes for c in model.vocab_choices) and total <= budget
    lowered = {c for c in COLUMNS if choices[c].option.dim < rule_dim(choices[c].option.table_rows)}
    assert lowered == set(caps) and not lowered & small
    assert model.vocab_dims == {c: choices[c].option.dim for c in lowered}
    assert all(d & (d - 1) == 0 and d >= 16 for d in model.vocab_dims.values())  # powers of 2
    # the card: ids kept, lookups lost, dim (lowered ones marked with the rule's), MiB, total
    from interactive_recsys.ui.builder.views import SuggestCard

    card = SuggestCard()
    card.memory_gib.value = budget / 2**30
    card.show(model.vocab_choices, model.vocab_fits, model.vocab_shortfall)
    for c in lowered:
        o = choices[c].option
        assert (f"<td>{c}</td><td>{choices[c].distinct:,}</td><td>{o.freq_threshold or '—'}"
                f"</td><td>{choices[c].kept_ids:,}</td><td>{o.lost:.2%}</td>"
                f"<td>{o.dim} ↓ ({o.rule_dim})</td><td>") in card.table.value, c
        # its MiB, cut (never rounded up) to 2 decimals under 10 MiB, 1 above
        shown = re.search(rf"<td>{c}</td>(?:<td>[^<]*</td>){{5}}<td>([\d,.]+)</td>",
                          card.table.value).group(1)
        step = 0.01 if o.nbytes < 10 * MiB else 0.1
        assert float(shown.replace(",", "")) <= o.nbytes / MiB < float(
            shown.replace(",", "")) + step, (c, shown, o.nbytes)
    assert f"all tables {total / 2**30:,.2f} GiB, within" in card.table.value
    # the code export carries the dimensions to the model's tables
    assert f"dims = {model.vocab_dims!r}" in model.export_code()


def test_a_budget_nothing_fits_within_the_loss_says_what_it_would_take(kaggle):
    path, counts, whole, small, _ = kaggle

    def least(max_loss: float) -> int:
        """The smallest the tables can be with no column over ``max_loss``: thresholds to
        the loss, every large table at dimension 16, small ones untouched."""
        out = 0
        for c in COLUMNS:
            if c in small:
                out += nbytes(whole[c], rule_dim(whole[c]))
            else:
                out += nbytes(table_rows(counts[c], deepest_threshold(counts[c], max_loss)), 16)
        return out

    needed = least(MAX_LOSS)
    budget = needed * 2 // 3
    model = BuilderModel(str(path))
    model.suggest(memory_budget=budget)
    choices = {c.column: c for c in model.vocab_choices}
    assert not model.vocab_fits
    short = model.vocab_shortfall
    assert short.needed == needed == sum(c.option.nbytes for c in model.vocab_choices)
    for c in COLUMNS:  # the nearest plan: no column crushed past its lookup budget
        assert lost(counts[c], choices[c].option.freq_threshold) <= MAX_LOSS, c
        assert choices[c].option.dim == (rule_dim(whole[c]) if c in small else 16), c
    # the loss that would fit: fits at it, not 0.01 percentage points below it
    assert short.fit_loss > MAX_LOSS and least(short.fit_loss) <= budget
    assert least(short.fit_loss - 0.0001) > budget
    over = dict(short.losses)
    assert over and max(over.values()) <= short.fit_loss
    text = short.text()
    assert f"need {needed / 2**30:,.2f} GiB" in text and f"OOV ≤ {short.fit_loss:.2%}" in text
    for c, loss in over.items():
        assert f"{c} would lose {loss:.2%}" in text
    from interactive_recsys.ui.builder.views import SuggestCard

    card = SuggestCard()  # said in red on the card, under the table of the nearest plan
    card.memory_gib.value = budget / 2**30
    card.show(model.vocab_choices, model.vocab_fits, short)
    assert f"error-color1, #b00)'>{html.escape(text)}</b>" in card.table.value
    # taking that advice fits, and no column loses more than it said
    model.suggest(max_loss=short.fit_loss, memory_budget=budget)
    assert model.vocab_fits
    for c in model.vocab_choices:
        assert lost(counts[c.column], c.option.freq_threshold) <= short.fit_loss + 1e-12
    # no threshold at all makes 1 KiB fit: said so, with the budget that would
    model.suggest(memory_budget=1024)
    assert not model.vocab_fits and model.vocab_shortfall.fit_loss is None
    assert "No threshold makes them fit" in model.vocab_shortfall.text()
    card.show(model.vocab_choices, model.vocab_fits, model.vocab_shortfall)
    assert "No threshold makes them fit" in card.table.value


def test_the_lowered_dims_reach_the_embeddings_tab():
    from interactive_recsys.ui.studio import Studio

    # 5,000 values seen twice or three times: no threshold keeps 99% of the lookups
    ids = [f"u{i}" for i in range(5_000)] * 2 + [f"u{i}" for i in range(2_500)]
    frame = pd.DataFrame({"user": ids, "day": [f"d{i % 7}" for i in range(len(ids))]})
    studio = Studio(frame)
    model = studio.builder.model
    model.suggest(memory_budget=2**20)
    rows = 5_000 + 3
    # the rule by hand: 189 -> 128 -> 64 -> 32, the first power of two that fits 1 MiB
    assert rule_dim(rows) == 189 and nbytes(rows, 64) > 2**20 >= nbytes(rows, 32) + 10 * 16 * 4
    assert model.vocab_fits and model.vocab_dims == {"user": 32}
    model.fitted_workflow = model.to_workflow().fit(frame)
    studio.show_embeddings()
    report = studio.embeddings.report
    assert report.dim("user") == 32 and report.recommended_dim("user") == 189
    assert report.dim("day") == report.recommended_dim("day") == 16
    model.update_step(0, 0, params={"freq_threshold": 2})  # edited: no longer Suggest's plan
    model.fitted_workflow = model.to_workflow().fit(frame)
    studio.show_embeddings()
    assert studio.embeddings.report.dim("user") == 189
