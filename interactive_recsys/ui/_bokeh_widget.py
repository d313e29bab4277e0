"""The ``jupyter_bokeh.BokehModel`` that every Bokeh view of the package is shown with.

jupyter_bokeh 4.1 sends each change the kernel makes to a shown document to the browser,
and the browser sends back ("jsevent") the changes it applies, including those. A
``ColumnDataSource.stream`` or ``patch`` made by the kernel therefore comes back as a
``ColumnsStreamed`` / ``ColumnsPatched`` event and was applied a second time in the kernel:
after 24 streamed samples the kernel held 47 points and the browser 23, and a snapshot
saved from the kernel (``Dashboard.save_html``) drew every point twice.
:class:`BokehWidget` ignores those two echoes. The package's views have no browser-side
code that streams or patches, so nothing from the browser is lost; property changes
(``ModelChanged``: ranges after a zoom...) and Bokeh UI events are synchronised as before.
Its ``close`` may also run twice (again from ``__del__``) or before the model was attached
to its document.

**A view replaced on the page is closed a few seconds later** (:meth:`BokehWidget.close_later`).
BokehJS keeps the document of a view that was taken off the page (jupyter_bokeh's view has no
``remove``), and that document still reports the layout it recomputes there (the figure's new
sizes, about 8 changes per figure) on the widget's comm. Closed at once, the kernel answered
each with a "No such comm" warning, which JupyterLab shows in its log and in cell outputs.

>>> from bokeh.models import ColumnDataSource
>>> from bokeh.plotting import figure
>>> source = ColumnDataSource({"x": [1], "y": [2]})
>>> plot = figure()
>>> _ = plot.line("x", "y", source=source)
>>> widget = BokehWidget(plot)
>>> source.stream({"x": [3], "y": [4]})
>>> echo = {"event": "jsevent", "kind": "ColumnsStreamed", "model": {"id": source.id},
...         "attr": "data", "rollover": None,
...         "data": {"type": "map", "entries": [["x", [3]], ["y", [4]]]}}
>>> widget._sync_model(widget, echo, [])    # the browser's echo of that stream
>>> source.data["x"]                          # applied once, not twice
[1, 3]
>>> widget.close()
"""

from __future__ import annotations

import threading
from typing import Any

from jupyter_bokeh import BokehModel

#: Seconds a Bokeh view taken off the page keeps its comm (:meth:`BokehWidget.close_later`).
CLOSE_DELAY_S = 5.0
#: Browser events that repeat a kernel-side ``stream`` / ``patch`` (never applied again).
ECHOED_KINDS = frozenset({"ColumnsStreamed", "ColumnsPatched"})


def is_echo(content: dict[str, Any]) -> bool:
    """Whether a message from the browser repeats a kernel-side stream or patch.

    >>> is_echo({"event": "jsevent", "kind": "ColumnsPatched"})
    True
    >>> is_echo({"event": "jsevent", "kind": "ModelChanged"})
    False
    """
    return content.get("event") == "jsevent" and content.get("kind") in ECHOED_KINDS


class BokehWidget(BokehModel):
    """``BokehModel`` that applies a kernel-side stream or patch once (see the module)."""

    def _sync_model(self, model: BokehModel, content: dict[str, Any],
                    buffers: list[Any]) -> None:
        if is_echo(content):
            return
        super()._sync_model(model, content, buffers)

    def close(self) -> None:
        try:
            super().close()
        except KeyError:  # was not (or no longer) receiving the document's changes
            pass

    def close_later(self, delay: float | None = None) -> threading.Timer:
        """Close in ``delay`` seconds (default ``CLOSE_DELAY_S``): for a view just taken
        off the page, whose last layout changes are still on their way (see the module).

        >>> from bokeh.plotting import figure
        >>> widget = BokehWidget(figure())
        >>> widget.close_later(0.01).join(); widget.comm is None
        True
        """
        timer = threading.Timer(CLOSE_DELAY_S if delay is None else delay, self.close)
        timer.daemon = True
        timer.start()
        return timer


#: Browser side of :class:`RenderSignal`: tell the kernel each time a view is drawn.
_RENDER_SIGNAL_ESM = """
export default {
  render({ model, el }) {
    el.style.display = "none";
    model.send({ event: "rendered" });
  }
};
"""


def _render_signal_class() -> type:
    import anywidget

    class RenderSignal(anywidget.AnyWidget):
        """An invisible widget whose browser view says "rendered" to the kernel when drawn.

        Put it next to a view that must know it is on screen (wherever it is displayed: a
        cell's output, a tab of the Studio, a reloaded page); ``on_render(callback)`` is
        called (from the kernel's message loop) for every view drawn."""

        _esm = _RENDER_SIGNAL_ESM

        def __init__(self) -> None:
            super().__init__()
            self._callbacks: list[Any] = []
            self.renders = 0
            self.on_msg(self._on_msg)

        def on_render(self, callback: Any) -> None:
            self._callbacks.append(callback)

        def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
            if isinstance(content, dict) and content.get("event") == "rendered":
                self.renders += 1
                for callback in list(self._callbacks):
                    callback()

    return RenderSignal


def render_signal() -> Any:
    """A new :class:`RenderSignal` widget (class made on first use: anywidget is imported
    only when a view needs it).

    >>> signal = render_signal(); seen = []
    >>> signal.on_render(lambda: seen.append(1))
    >>> signal._on_msg(signal, {"event": "rendered"}, [])   # what the browser sends
    >>> seen, signal.renders
    ([1], 1)
    >>> signal.close()
    """
    global _RENDER_SIGNAL
    if _RENDER_SIGNAL is None:
        _RENDER_SIGNAL = _render_signal_class()
    return _RENDER_SIGNAL()


_RENDER_SIGNAL: type | None = None
