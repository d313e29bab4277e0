"""RunWatch: the browser ends a Run's spinner with a message when the kernel stops.

A kernel that restarts or dies mid-run can no longer replace its "Running..." note. This
small widget (``widgets/run_watch.js``) sits in the builder's action bar: the builder sets
``RunWatch.running`` when a Run starts and clears it when the Run has ended; while it is
set, the browser watches the kernel and, when it stops, replaces the spinner with
:data:`STOPPED_MESSAGE`.

>>> watch = RunWatch()
>>> watch.running, watch.message == STOPPED_MESSAGE
(False, True)
"""

from __future__ import annotations

import anywidget
import traitlets

from interactive_recsys.ui._assets import widget_asset

#: What the browser shows when the kernel stops during a Run.
STOPPED_MESSAGE = ("The kernel stopped during the run: nothing was published; re-run the "
                   "notebook's cells and click Run again (the new builder offers to restore "
                   "the pipeline and to remove the run's temporary output).")

__all__ = ["STOPPED_MESSAGE", "RunWatch"]


class RunWatch(anywidget.AnyWidget):
    """Shows ``message`` in place of the builder's spinner when the kernel stops while
    ``running`` is true (see the module doc)."""

    _esm = widget_asset("run_watch.js")
    _css = widget_asset("run_watch.css")
    running = traitlets.Bool(False).tag(sync=True)
    message = traitlets.Unicode(STOPPED_MESSAGE).tag(sync=True)
