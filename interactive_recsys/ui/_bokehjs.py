"""BokehJS on the notebook page: once per kernel, inline (offline), in one copy.

``bokeh.io.output_notebook(resources=INLINE)`` puts every BokehJS component (about 3.9 MB,
1.8 MB of it MathJax) into the cell's output **twice**: as ``application/javascript`` (for
the classic notebook) and as ``application/vnd.bokehjs_load.v0+json`` (run by
jupyter_bokeh's JupyterLab extension). A notebook showing a Studio was 8.9 MB for that
reason alone. :func:`load_bokehjs` sets Bokeh's notebook output the same way but publishes
the JupyterLab copy only, without MathJax (the package's plots use none; a user's own
``Slider`` or ``DataTable`` still works): about 2.1 MB, once per kernel.

Outside a Jupyter kernel it does nothing:

>>> load_bokehjs()
False
>>> BOKEHJS.components
['bokeh', 'bokeh-gl', 'bokeh-widgets', 'bokeh-tables']
"""

from __future__ import annotations

from bokeh.resources import Resources

#: BokehJS for the notebook page: inline (works offline), every component but MathJax.
BOKEHJS = Resources(mode="inline", components=["bokeh", "bokeh-gl", "bokeh-widgets",
                                                "bokeh-tables"])
#: The output JupyterLab's jupyter_bokeh extension runs to load BokehJS.
LOAD_MIME_TYPE = "application/vnd.bokehjs_load.v0+json"


def bokehjs_bundle() -> dict[str, str]:
    """The display data that loads :data:`BOKEHJS` in JupyterLab (one copy of the code).

    >>> bundle = bokehjs_bundle()
    >>> list(bundle), 1_500_000 < len(bundle[LOAD_MIME_TYPE]) < 3_000_000
    (['application/vnd.bokehjs_load.v0+json'], True)
    """
    from bokeh.embed.bundle import bundle_for_objs_and_resources
    from bokeh.io.notebook import _loading_js

    bundle = bundle_for_objs_and_resources(None, BOKEHJS)
    return {LOAD_MIME_TYPE: _loading_js(bundle, None, 5000, register_mime=False)}


def load_bokehjs() -> bool:
    """Put BokehJS on the notebook page, once per kernel; returns whether it was loaded now.

    Does nothing outside a Jupyter kernel, or when Bokeh's notebook output is already on
    (by this function or by the user's ``output_notebook()``)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return False
    from bokeh.io import notebook
    from bokeh.io.state import curstate
    from IPython.display import publish_display_data

    if curstate().notebook:
        return False
    curstate().output_notebook("jupyter")  # bokeh.io.show now draws in the notebook
    notebook._NOTEBOOK_LOADED = BOKEHJS  # what output_notebook's loader records
    publish_display_data(bokehjs_bundle())
    return True
