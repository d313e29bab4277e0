"""Bokeh plots that follow JupyterLab's light or dark theme.

The widgets' own HTML and CSS use JupyterLab's CSS variables (``--jp-layout-color0``,
``--jp-ui-font-color1``, ``--jp-border-color2``...), so they change with the theme by
themselves. A Bokeh plot draws on a canvas with colours held in the kernel's document, so
it needs to be told: a :func:`theme_watch` widget (invisible) reads
``document.body.dataset.jpThemeLight`` in the browser when it is drawn and whenever the
theme changes, and sends it to the kernel, which sets the documents of its plots to
:func:`dark_theme` (dark) or back to the default theme (light). The change reaches the page
as ordinary Bokeh property changes.

>>> from bokeh.plotting import figure
>>> plot = figure()
>>> _ = plot.line([1, 2], [3, 4])
>>> watch = theme_watch(plot)
>>> watch._on_msg(watch, {"event": "theme", "dark": True}, [])   # what the browser sends
>>> watch.dark, plot.background_fill_color
(True, '#20262B')
>>> watch._on_msg(watch, {"event": "theme", "dark": False}, [])
>>> watch.dark, plot.background_fill_color
(False, '#ffffff')
>>> watch.close()
"""

from __future__ import annotations

from typing import Any

#: Bokeh's built-in theme whose colours are used when JupyterLab's theme is dark.
DARK_THEME = "dark_minimal"

#: What the dark theme changes: colours and their opacity only, so that fonts, sizes and
#: spacing (hence the layout) are the same in both themes.
_COLOUR_KEYS = ("color", "alpha")


def dark_theme() -> Any:
    """Bokeh's ``dark_minimal`` colours without its fonts and spacing, and a dark veil over
    a hidden legend item (Bokeh's is white: a light box on the dark plot).

    >>> attrs = dark_theme()._json["attrs"]
    >>> attrs["Plot"]["background_fill_color"], "axis_label_text_font_size" in attrs["Axis"]
    ('#20262B', False)
    >>> attrs["Legend"]["inactive_fill_color"]
    '#20262B'
    """
    from bokeh.themes import Theme, built_in_themes  # lazy: bokeh, only with a plot

    attrs = {model: {key: value for key, value in props.items()
                     if key.endswith(_COLOUR_KEYS)}
             for model, props in built_in_themes[DARK_THEME]._json["attrs"].items()}
    attrs["Legend"]["inactive_fill_color"] = attrs["Plot"]["background_fill_color"]
    return Theme(json={"attrs": attrs})

#: Browser side: report the theme when drawn and each time JupyterLab switches it.
_THEME_WATCH_ESM = """
function isDark() {
  return document.body.dataset.jpThemeLight === "false";
}
export default {
  render({ model, el }) {
    el.style.display = "none";
    let last = null;
    const report = () => {
      const dark = isDark();
      if (dark !== last) {
        last = dark;
        model.send({ event: "theme", dark: dark });
      }
    };
    report();
    const observer = new MutationObserver(report);
    observer.observe(document.body, { attributes: true,
                                      attributeFilter: ["data-jp-theme-light"] });
    return () => observer.disconnect();
  }
};
"""


def apply_theme(models: list[Any], dark: bool) -> None:
    """Give the Bokeh documents of ``models`` the dark theme (``dark``) or the default one.

    A model not yet in a document gets one (what a ``BokehModel`` would do when shown).

    >>> from bokeh.plotting import figure
    >>> plot = figure()
    >>> apply_theme([plot], dark=True); plot.border_fill_color
    '#15191C'
    >>> apply_theme([plot], dark=False); plot.border_fill_color
    '#ffffff'
    """
    from bokeh.document import Document  # lazy: bokeh, only with a plot

    theme = dark_theme() if dark else None
    for model in models:
        document = model.document
        if document is None:
            document = Document()
            document.add_root(model)
        document.theme = theme


def _theme_watch_class() -> type:
    import anywidget  # lazy: only when a view with plots is built

    class ThemeWatch(anywidget.AnyWidget):
        """An invisible widget that applies JupyterLab's theme to Bokeh plots (see the
        module); ``dark`` is the last theme the browser reported (None before)."""

        _esm = _THEME_WATCH_ESM

        def __init__(self, models: list[Any]) -> None:
            super().__init__()
            self.models = list(models)
            self.dark: bool | None = None
            self.on_msg(self._on_msg)

        def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
            if not (isinstance(content, dict) and content.get("event") == "theme"):
                return
            dark = bool(content.get("dark"))
            if dark != self.dark:
                self.dark = dark
                apply_theme(self.models, dark)

    return ThemeWatch


def theme_watch(*models: Any) -> Any:
    """A new invisible ``ThemeWatch`` widget for the Bokeh ``models`` (figures or layouts);
    put it in the same box as their view so it is drawn with them.

    >>> from bokeh.plotting import figure
    >>> watch = theme_watch(figure())
    >>> watch.dark is None, watch.layout.display is None
    (True, True)
    >>> watch.close()
    """
    global _THEME_WATCH
    if _THEME_WATCH is None:
        _THEME_WATCH = _theme_watch_class()
    return _THEME_WATCH(list(models))


_THEME_WATCH: type | None = None
