"""The Suggest card: the out-of-vocabulary and memory budgets, and what Suggest chose per column.

Before anything runs, the user sees for every categorical column the distinct count, the
``freq_threshold`` chosen, the ids it keeps, the share of lookups it loses, the embedding
dimension (NVTabular's rule, or lower to fit the memory budget:
:mod:`..suggest._vocab_choose`) and the table's MiB; then the total against the memory
budget, or what it would take to fit; and can change the two budgets and suggest again.

>>> card = SuggestCard()
>>> card.max_loss, card.memory_budget
(0.01, 17179869184)
>>> card.loss_percent.value = 0.5
>>> card.max_loss
0.005
>>> card.set_stale(True); card.stale, card.stale_note.layout.display   # nothing shown: no note
(False, 'none')
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import ipywidgets as w

from interactive_recsys.ui.builder.suggest._max_frequency import FrequencyCut
from interactive_recsys.ui.builder.suggest._vocab_budget import (
    MAX_LOSS,
    MEMORY_BUDGET,
    SMALL_TABLE,
    VocabChoice,
)
from interactive_recsys.ui.builder.suggest._vocab_choose import DIM_FLOOR, Shortfall
from interactive_recsys.ui.builder.views._hash_cells import (
    HASH_HEADER,
    HashProposal,
    hash_cell,
    hash_note,
)

GIB = 2**30
#: Said above the table once the steps change after the Suggest that drew it.
STALE_TEXT = ("These numbers were computed by Suggest for an earlier pipeline: the steps have "
              "changed since. Click Suggest again for the current steps (Undo returns to the "
              "suggested ones).")
#: Compact rows (the widget's 28 px line height would show 5 of Criteo's 26 columns): about
#: 16 rows in view, a header that stays on top while the rest scroll.
TABLE_STYLE = """<style>
.irs-suggest-scroll { max-height: 330px; overflow: auto; max-width: 100%; }
.irs-suggest-vocab { border-collapse: collapse; line-height: 18px; font-size: 12px; }
.irs-suggest-vocab th, .irs-suggest-vocab td { padding: 0 8px 0 0; white-space: nowrap;
  text-align: right; }
.irs-suggest-vocab th:first-child, .irs-suggest-vocab td:first-child { text-align: left; }
.irs-suggest-vocab thead th { position: sticky; top: 0; background: var(--jp-layout-color0,
  white); border-bottom: 1px solid var(--jp-border-color2, #ccc); white-space: normal;
  vertical-align: bottom; line-height: 14px; }
.irs-suggest-stale .irs-suggest-table { opacity: 0.45; }
.irs-suggest-vocab tbody tr:nth-child(even) { background: var(--jp-layout-color2,
  rgba(0, 0, 0, 0.03)); }
</style>"""


class SuggestCard(w.VBox):
    """Two budget fields and the per-column table of the last suggestion."""

    def __init__(self) -> None:
        self.loss_percent = w.BoundedFloatText(
            value=MAX_LOSS * 100, min=0.0, max=50.0, step=0.5, description="OOV ≤ (%)",
            tooltip="Share of a categorical column's non-null lookups that Suggest may send "
            "out of vocabulary (rare values dropped to make the table smaller)",
            style={"description_width": "auto"}, layout=w.Layout(width="150px"))
        self.loss_percent.add_class("irs-suggest-loss")
        self.memory_gib = w.BoundedFloatText(
            value=MEMORY_BUDGET / GIB, min=0.001, max=1e6, step=1.0,
            description="embeddings ≤ (GiB)", style={"description_width": "auto"},
            tooltip="Memory of all embedding tables together (fp32 weights); past it Suggest "
            "raises thresholds within the OOV budget, then lowers the dimension of the "
            "largest tables",
            layout=w.Layout(width="200px"))
        self.memory_gib.add_class("irs-suggest-memory")
        self.table = w.HTML()
        self.table.add_class("irs-suggest-table")
        self.stale_note = w.HTML(f"<span style='color:var(--jp-warn-color1, #a65e00)'>"
                                 f"{html.escape(STALE_TEXT)}</span>",
                                 layout=w.Layout(display="none"))
        self.stale_note.add_class("irs-suggest-stale-note")
        #: above a table restored from the autosave: measured before the restart
        self.restored_note = w.HTML(layout=w.Layout(display="none"))
        self.restored_note.add_class("irs-suggest-restored-note")
        #: under the table: the max_frequency cuts Suggest proposes (``show_frequency``)
        self.frequency_note = w.HTML(layout=w.Layout(display="none"))
        self.frequency_note.add_class("irs-suggest-frequency-note")
        super().__init__([w.HBox([self.loss_percent, self.memory_gib],
                                 layout=w.Layout(flex_flow="row wrap")), self.stale_note,
                          self.restored_note, self.table, self.frequency_note])

    @property
    def stale(self) -> bool:
        """Whether the table shown was computed for steps that have changed since."""
        return "irs-suggest-stale" in self._dom_classes

    def set_stale(self, stale: bool) -> None:
        """Mark the table as computed for an earlier pipeline (a note above it, the numbers
        dimmed), or as current. Without a table there is nothing to mark."""
        stale = bool(stale) and bool(self.table.value)
        if stale:
            self.add_class("irs-suggest-stale")
        else:
            self.remove_class("irs-suggest-stale")
        self.stale_note.layout.display = "" if stale else "none"

    @property
    def max_loss(self) -> float:
        return round(self.loss_percent.value / 100, 6)

    @property
    def memory_budget(self) -> int:
        return int(self.memory_gib.value * GIB)

    def show(self, choices: Sequence[VocabChoice], fits: bool,
             shortfall: Shortfall | None = None,
             hashing: Mapping[str, HashProposal] | None = None) -> None:
        """Draw the table of ``choices`` (empty: nothing categorical, no table), as current;
        ``shortfall``: what it would take to fit, when they do not; ``hashing``: the hashed
        table in the same memory of each column too large to keep whole
        (``suggest._hash_size``), next to the lookups it loses."""
        self.set_stale(False)
        self.restored_note.layout.display = "none"
        self.show_frequency(())  # an earlier Suggest's: its caller shows the new ones
        if not choices:
            self.table.value = ""
            return
        hashing = hashing or {}
        rows = "".join(self._row(c, hashing) for c in choices)
        total = sum(c.option.nbytes for c in choices)
        budget = f"{self.memory_budget / GIB:g} GiB"
        if fits:
            verdict = f"all tables {total / GIB:,.2f} GiB, within {budget}"
        elif shortfall is not None:
            verdict = (f"<b style='color:var(--jp-error-color1, #b00)'>"
                       f"{html.escape(shortfall.text())}</b>")
        else:
            verdict = (f"<b style='color:var(--jp-error-color1, #b00)'>the tables need "
                       f"{total / GIB:,.2f} GiB, over the {budget} budget</b>")
        lowered = any(c.option.dim != c.option.rule_dim for c in choices)
        dims = (f" Dimensions marked ↓ were lowered from NVTabular's rule (in brackets) to fit "
                f"the memory budget, largest tables first, to powers of two, never under "
                f"{DIM_FLOOR}." if lowered else "")
        self.table.value = (
            f"{TABLE_STYLE}<div class='irs-suggest-scroll'><table class='irs-suggest-vocab'>"
            "<thead><tr><th>column</th><th>distinct</th><th>freq_<br>threshold</th>"
            "<th>ids kept</th><th>lookups lost<br>(of non-null)</th>"
            f"{HASH_HEADER if hashing else ''}<th>dim</th><th>MiB</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>"
            f"<small>{basis(choices)}; {verdict}. Columns whose whole table is under "
            f"{SMALL_TABLE / 2**20:g} MiB (small) keep every value.{dims}"
            f"{hash_note(hashing)}</small>")

    def show_frequency(self, cuts: Sequence[FrequencyCut]) -> None:
        """Under the table, the ``max_frequency`` cut proposed for each column where a value
        holds an outsized share of the rows (``suggest._max_frequency``); nothing
        when there is none.

        >>> from interactive_recsys.ui.builder.suggest._max_frequency import FrequencyCut
        >>> card = SuggestCard()
        >>> card.show_frequency([FrequencyCut("user", 40, 1, 0.3)])
        >>> "user: max_frequency=40 would cut 1 value" in card.frequency_note.value
        True
        """
        self.frequency_note.value = "" if not cuts else (
            "<small>Values seen far more often than the others (placeholders, bots?): "
            + "; ".join(html.escape(c.text()) for c in cuts)
            + ". A cut sends them out of vocabulary; set it on the step to use it.</small>")
        self.frequency_note.layout.display = None if cuts else "none"

    def show_restored(self, choices: Sequence[VocabChoice], fits: bool,
                      shortfall: Shortfall | None, budgets: tuple[float, int],
                      changed: bool) -> None:
        """Draw a Suggest restored from the autosave with its ``budgets`` (``max_loss``,
        memory bytes), marked as measured before the restart; ``changed``: the data may
        have changed since (its files differ, or it has no file identity)."""
        self.loss_percent.value = budgets[0] * 100
        self.memory_gib.value = budgets[1] / GIB
        self.show(choices, fits, shortfall)
        self.restored_note.value = html.escape(restored_text(changed))
        self.restored_note.layout.display = None

    def _row(self, c: VocabChoice,
             hashing: Mapping[str, HashProposal] | None = None) -> str:
        o = c.option
        over = o.lost > self.max_loss
        style = " style='color:var(--jp-error-color1, #b00)'" if over else ""
        mark = "" if c.exact else "~"
        rule = o.freq_threshold or ("— (small)" if c.small else "—")
        dim = f"{o.dim}" if o.dim == o.rule_dim else f"{o.dim} ↓ ({o.rule_dim})"
        return (f"<tr><td>{html.escape(c.column)}</td><td>{mark}{c.distinct:,}</td>"
                f"<td>{rule}</td><td>{mark}{c.kept_ids:,}</td>"
                f"<td{style}>{html.escape(c.lost_text)}</td>"
                f"{hash_cell(hashing, c.column)}<td>{dim}</td>"
                f"<td>{mib_text(o.nbytes)}</td></tr>")


def restored_text(changed: bool) -> str:
    """The note above a Suggest card restored from the autosave."""
    text = "Counted by Suggest before the kernel restart (restored from the autosave)"
    if changed:
        return (text + "; the data may have changed since (its files, sizes or modification "
                "times differ, or it is not read from local files): click Suggest to count "
                "again.")
    return text + "; the data's files are unchanged since."


def mib_text(nbytes: int) -> str:
    """A table's MiB, never rounded up past a limit the card names (a 0.98 MiB table under
    the 1 MiB "small" line reads 0.98, not 1.0).

    >>> [mib_text(n) for n in (1_027_700, 2**20, 5_500_000, 1_609_000_000)]
    ['0.98', '1.00', '5.24', '1,534.4']
    """
    mib = nbytes / 2**20
    if mib < 10:
        return f"{int(mib * 100) / 100:.2f}"
    return f"{int(mib * 10) / 10:,.1f}"


def basis(choices: Sequence[VocabChoice]) -> str:
    """Where the numbers come from, with their uncertainty.

    >>> from interactive_recsys.ui.builder.suggest._vocab_budget import VocabOption
    >>> o = VocabOption(0, 10, 0.0)
    >>> basis([VocabChoice("a", 7, o, counted_rows=1000)])
    'Exact: every value counted over all 1,000 rows'
    >>> basis([VocabChoice("a", 7, o)]).split(" (")[0]
    'Estimated from a sample'
    """
    rows = {c.counted_rows for c in choices}
    if None not in rows:
        return f"Exact: every value counted over all {max(rows):,} rows"
    return ("Estimated from a sample (~: extrapolated distinct counts and ids, ≤: lookups lost "
            "at two standard errors)")
