"""SuggestStatus: Cancel next to the Suggest button, and Suggest's status line while it
counts in the background.

It draws what its :class:`~..model.SuggestController` tells (:meth:`SuggestStatus.update`):
a Suggest started (the button shows it is busy, the budgets are locked, Cancel appears),
its progress (rows counted of the total, rows/s, time left: the line a Run shows) and its
end (the card redrawn when it finished; the message next to Suggest either way).

>>> from interactive_recsys.ui.builder.model import SuggestController
>>> from interactive_recsys.ui.builder.views._feedback import Feedback
>>> from interactive_recsys.ui.builder.views._suggest_card import SuggestCard
>>> buttons, card = {}, SuggestCard()
>>> status = SuggestStatus(w.Button(description="Suggest"), card, Feedback(["suggest"]),
...                        SuggestController(), buttons)
>>> buttons["cancel-suggest"].click(); status.feedback.last[0]
'No Suggest is in progress.'
>>> status.cancel_button.layout.display
'none'
"""

from __future__ import annotations

import ipywidgets as w

from interactive_recsys.ui.builder.model import Change, SuggestController, SuggestEnd
from interactive_recsys.ui.builder.suggest._max_frequency import frequency_hints
from interactive_recsys.ui.builder.views._feedback import Feedback, make_button
from interactive_recsys.ui.builder.views._run import progress_html
from interactive_recsys.ui.builder.views._suggest_card import SuggestCard

#: The Suggest button's label while it counts.
BUSY_TEXT = "Suggesting..."


class SuggestStatus:
    """Cancel and the status line of the Suggest ``button``, which ``suggests`` runs; the
    end of a finished Suggest is drawn in ``card``. ``row`` holds the button and Cancel,
    ``status`` the progress line (placed by the steps panel)."""

    def __init__(
        self,
        button: w.Button,
        card: SuggestCard,
        feedback: Feedback,
        suggests: SuggestController,
        buttons: dict[str, w.Button],
    ) -> None:
        self.button, self.card, self.feedback, self.suggests = button, card, feedback, suggests
        self._label = button.description
        self.cancel_button = make_button(
            buttons,
            feedback,
            "Cancel",
            "cancel-suggest",
            self._cancel,
            "Stop counting: the steps and the Suggest card stay as they are",
            area="suggest",
        )
        self.cancel_button.layout.display = "none"
        self.status = w.HTML()
        self.status.add_class("irs-suggest-status")
        self.row = w.HBox(
            [button, self.cancel_button],
            layout=w.Layout(flex_flow="row wrap", align_items="center"),
        )
        suggests.observe(self.update)

    def update(self, change: Change) -> None:
        """Draw a Suggest started, its progress or its end."""
        if change.name == "started":
            self.set_busy(True)
            self.status.value = ""
            self.feedback.say(change.new, "busy", "suggest")
        elif change.name == "progress":
            self.status.value = progress_html(change.new, "Counting")
        elif change.name == "ended":
            self._show_end(change.new)

    def _show_end(self, end: SuggestEnd) -> None:
        if end.job is not self.suggests.job:  # an earlier dataset's: a newer one may count
            return
        self.set_busy(False)
        self.status.value = ""
        if end.model is not self.suggests.model:  # another dataset was opened meanwhile
            return
        model = end.model
        if end.job.status == "finished":
            self.card.show(model.vocab_choices, model.vocab_fits, model.vocab_shortfall,
                           model.hash_proposals)
            self.card.show_frequency(frequency_hints(model.measured))
        self.feedback.say(end.text, end.level, "suggest")

    def set_busy(self, busy: bool) -> None:
        """While a Suggest counts: the button disabled with a spinner, the budgets locked
        (the count uses those it started with), Cancel shown; all back at its end."""
        button = self.button
        button.disabled = busy
        button.description, button.icon = (BUSY_TEXT, "spinner") if busy else (self._label, "")
        if busy:
            button.add_class("irs-busy")
        else:
            button.remove_class("irs-busy")
        self.card.loss_percent.disabled = self.card.memory_gib.disabled = busy
        self.cancel_button.layout.display = None if busy else "none"

    def _cancel(self) -> None:
        self.feedback.say(self.suggests.cancel(), "info", "suggest")


__all__ = ["BUSY_TEXT", "SuggestStatus"]
