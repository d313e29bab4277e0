"""Whether any browser view of the dashboard is on screen, told by the browser.

:func:`visibility_signal` makes a tiny invisible anywidget put in the dashboard's header.
Its browser side says "rendered" when a view is drawn, and then, per view, whether the
dashboard can be seen: the browser tab is shown (the Page Visibility API,
``document.visibilityState``) and the dashboard's element intersects the window (an
``IntersectionObserver``: false when JupyterLab hides the notebook's tab or panel, when the
Studio shows another tab, or when the output is scrolled away). A view taken off the page
says so. The kernel side keeps one flag per view in a :class:`Views`: the dashboard is
visible while any view is; before any view reported, it counts as visible (a notebook run
without a browser still draws, so its saved state has the figures).

>>> views = Views()
>>> views.visible, views.set("a", False), views.visible
(True, False, False)
>>> views.set("b", True), views.visible, views.remove("b"), views.remove("a")
(True, True, False, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Browser side: "rendered" once per view; then "visibility" on every change (page shown
#: and the dashboard in the window); "removed" when the view goes.
VISIBILITY_ESM = """
export default {
  render({ model, el }) {
    el.style.cssText = "width:1px;height:1px;flex:none;visibility:hidden;overflow:hidden";
    const view = Math.random().toString(36).slice(2);
    let shown = null, pageShown = document.visibilityState !== "hidden", inView = true;
    let observer = null, gone = false, tries = 0;
    const send = () => {
      const now = pageShown && inView;
      if (gone || now === shown) return;
      shown = now;
      model.send({ event: "visibility", view, visible: now });
    };
    const onPage = () => { pageShown = document.visibilityState !== "hidden"; send(); };
    document.addEventListener("visibilitychange", onPage);
    const observe = () => {
      if (gone || typeof IntersectionObserver === "undefined") return;
      const target = el.closest(".irs-dashboard");
      if (target == null && tries++ < 50) { setTimeout(observe, 100); return; }
      observer = new IntersectionObserver((entries) => {
        inView = entries[entries.length - 1].isIntersecting;
        send();
      });
      observer.observe(target || el);
    };
    observe();
    model.send({ event: "rendered" });
    return () => {
      gone = true;
      document.removeEventListener("visibilitychange", onPage);
      if (observer) observer.disconnect();
      try { model.send({ event: "removed", view }); } catch (e) { /* comm closed */ }
    };
  }
};
"""


class Views:
    """The visibility of each browser view, by the id its browser side chose."""

    def __init__(self) -> None:
        self._views: dict[str, bool] = {}
        self._reported = False

    @property
    def visible(self) -> bool:
        """Any view visible, or none reported yet."""
        return not self._reported or any(self._views.values())

    def set(self, view: str, visible: bool) -> bool:
        """Record a view's visibility; returns :attr:`visible` after it."""
        self._views[view] = bool(visible)
        self._reported = True
        return self.visible

    def remove(self, view: str) -> bool:
        """Forget a view taken off the page; returns :attr:`visible` after it (with no view
        left, the dashboard counts as hidden: nothing shows it)."""
        self._views.pop(view, None)
        return self.visible


def _signal_class() -> type:
    import anywidget

    class VisibilitySignal(anywidget.AnyWidget):
        """Invisible widget: ``on_render(cb)`` for each view drawn, ``on_change(cb)`` with
        the new visibility (``cb(visible)``) when it changes. Callbacks run in the kernel's
        message loop."""

        _esm = VISIBILITY_ESM

        def __init__(self) -> None:
            super().__init__()
            self.views = Views()
            self.renders = 0
            self._render: list[Callable[[], Any]] = []
            self._change: list[Callable[[bool], Any]] = []
            self.on_msg(self._on_msg)

        @property
        def visible(self) -> bool:
            return self.views.visible

        def on_render(self, callback: Callable[[], Any]) -> None:
            self._render.append(callback)

        def on_change(self, callback: Callable[[bool], Any]) -> None:
            self._change.append(callback)

        def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
            if not isinstance(content, dict):
                return
            event = content.get("event")
            if event == "rendered":
                self.renders += 1
                for callback in list(self._render):
                    callback()
                return
            if event not in ("visibility", "removed"):
                return
            before = self.views.visible
            view = str(content.get("view"))
            after = (self.views.set(view, bool(content.get("visible"))) if event == "visibility"
                     else self.views.remove(view))
            if after != before:
                for callback in list(self._change):
                    callback(after)

    return VisibilitySignal


_SIGNAL: type | None = None


def visibility_signal() -> Any:
    """A new ``VisibilitySignal`` widget (anywidget is imported on first use).

    >>> signal = visibility_signal(); seen = []
    >>> signal.on_change(seen.append)
    >>> signal._on_msg(signal, {"event": "visibility", "view": "v1", "visible": False}, [])
    >>> signal._on_msg(signal, {"event": "visibility", "view": "v1", "visible": True}, [])
    >>> seen, signal.visible
    ([False, True], True)
    >>> signal.close()
    """
    global _SIGNAL
    if _SIGNAL is None:
        _SIGNAL = _signal_class()
    return _SIGNAL()


__all__ = ["VISIBILITY_ESM", "Views", "visibility_signal"]
