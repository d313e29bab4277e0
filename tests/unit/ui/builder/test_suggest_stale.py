"""The Suggest card says when its numbers are for an earlier pipeline: after an edit of the
steps it marks them stale, an Undo back to the suggested steps or a new Suggest makes them
current, and another dataset clears them (the builder's widgets, ipywidgets' dummy comm)."""

from __future__ import annotations

from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder.views._suggest_card import STALE_TEXT
from interactive_recsys.ui.studio._studio import find_button
from tests.conftest import make_criteo_frame


def shown(b: PipelineBuilder) -> bool:
    """Whether the card shows its table and its stale note (as a browser would see them)."""
    return b.suggest_card.stale_note.layout.display != "none"


def categorify_step(b: PipelineBuilder) -> tuple[int, int]:
    return next(item for _, item in b.model.items()
                if item[1] >= 0 and b.model.branches[item[0]].steps[item[1]].op == "Categorify")


def test_an_edit_after_suggest_marks_the_card_stale(tmp_path):
    path = tmp_path / "clicks.parquet"
    make_criteo_frame(300).to_parquet(path)
    b = PipelineBuilder(str(path))
    card = b.suggest_card
    assert card.table.value == "" and not card.stale and not shown(b)  # nothing yet
    find_button(b, "irs-btn-suggest").click()
    b.model.wait_suggest(60)  # Suggest counts in the background
    table = card.table.value
    assert "irs-suggest-vocab" in table and "C1" in table
    assert not card.stale and not shown(b)  # drawn for the steps as they are
    k, j = categorify_step(b)
    b.model.update_step(k, j, params={"freq_threshold": 7})  # an edit of a suggested step
    assert card.stale and shown(b) and "irs-suggest-stale" in card._dom_classes
    assert "earlier pipeline" in STALE_TEXT and STALE_TEXT in card.stale_note.value
    assert card.table.value == table  # still there to compare with, but marked
    b.model.undo()  # back to the suggested steps: the numbers describe them again
    assert not card.stale and not shown(b)
    b.model.remove_branch(len(b.model.branches) - 1)  # any change, not only a parameter
    assert card.stale
    find_button(b, "irs-btn-suggest").click()  # a new Suggest: current again
    b.model.wait_suggest(60)
    assert not card.stale and not shown(b) and "irs-suggest-vocab" in card.table.value
    other = tmp_path / "other.parquet"
    make_criteo_frame(100, seed=5).to_parquet(other)
    b.open_dataset(str(other))  # another dataset: the old suggestion is not its own
    assert card.table.value == "" and not card.stale and not shown(b)
