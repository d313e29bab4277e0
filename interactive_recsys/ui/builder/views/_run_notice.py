"""The "run ended" event of the builder, for a user who is looking at another tab.

:class:`RunNotice` is an invisible widget (``widgets/run_notice.js``): when a Run ends, the
builder calls :meth:`RunNotice.run_ended`, which sets the synced ``ended`` trait; the
browser then, if the page is hidden, shows a desktop notification (permission is asked on
the first click of Run) or puts "✓ Run finished" in front of the page's title until the
page is visible again.

>>> notice = RunNotice()
>>> notice.run_ended("finished", "Run finished in 3.2 s.")
>>> notice.ended["n"], notice.ended["title"], notice.ended["body"]
(1, '✓ Run finished', 'Run finished in 3.2 s.')
>>> notice.run_ended("error", "Run error after 1.0 s: ValueError: bad")
>>> notice.ended["n"], notice.ended["title"]
(2, '✗ Run error')
"""

from __future__ import annotations

import threading

import anywidget
import traitlets

from interactive_recsys.ui._assets import widget_asset

#: The first words of the notification (and the page title) per job status.
TITLES = {"finished": "✓ Run finished", "error": "✗ Run error",
          "cancelled": "✗ Run cancelled"}


class RunNotice(anywidget.AnyWidget):
    """Tells the browser that a run ended; it notifies the user if the page is hidden.

    ``ended``: ``{"n": count of runs ended, "status", "title", "body"}`` (``n`` tells a new
    event from a view drawn again).
    """

    _esm = widget_asset("run_notice.js")
    ended = traitlets.Dict({}).tag(sync=True)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self._lock = threading.Lock()

    def run_ended(self, status: str, text: str) -> None:
        """Send the event: a run ended with ``status`` (finished, error, cancelled);
        ``text`` is its one-line summary (the notification's body)."""
        with self._lock:  # called from the run's helper thread
            n = int(self.ended.get("n", 0)) + 1
            self.ended = {"n": n, "status": status,
                          "title": TITLES.get(status, f"Run {status}"), "body": text}


__all__ = ["TITLES", "RunNotice"]
