"""BokehJS goes on the notebook page once per kernel, in one copy, without MathJax."""

from __future__ import annotations

import types

import IPython
import IPython.display
from bokeh.io import notebook, reset_output
from bokeh.io.state import curstate
from bokeh.resources import INLINE, Resources

from interactive_recsys.ui._bokehjs import LOAD_MIME_TYPE, load_bokehjs
from interactive_recsys.ui.embeddings import load_bokeh


def test_loaded_once_in_one_copy(monkeypatch) -> None:
    published: list[dict] = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=object()))
    monkeypatch.setattr(IPython.display, "publish_display_data",
                        lambda data, *a, **k: published.append(data))
    reset_output()
    try:
        assert load_bokeh() is True  # the Studio's and EmbeddingView's entry point
        assert load_bokehjs() is False and load_bokeh() is False  # once per kernel
        assert curstate().notebook  # bokeh.io.show draws in the notebook afterwards
        assert notebook._NOTEBOOK_LOADED is not None
    finally:
        reset_output()
        notebook._NOTEBOOK_LOADED = None
    [data] = published
    assert list(data) == [LOAD_MIME_TYPE]  # not also as application/javascript
    code = data[LOAD_MIME_TYPE]
    core = Resources(mode="inline", components=["bokeh"]).render_js()
    mathjax = Resources(mode="inline", components=["bokeh-mathjax"]).render_js()
    assert len(code) < len(INLINE.render_js()) - len(mathjax) + 100_000
    assert len(code) > len(core)  # BokehJS itself, widgets and tables included


def test_nothing_outside_a_kernel(monkeypatch) -> None:
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert load_bokehjs() is False
