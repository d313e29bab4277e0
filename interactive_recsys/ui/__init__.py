"""Widgets for JupyterLab: thin views over plain-Python models.

Names are imported on first use, so ``import interactive_recsys`` stays light.
"""

from __future__ import annotations

from interactive_recsys.lazy import lazy_exports

#: public name -> module (relative to this package) that defines it
_EXPORTS = {
    "Dashboard": ".dashboard",
    "PipelineBuilder": ".builder",
    "BuilderModel": ".builder",
    "DagView": ".builder",
    "Preview": ".preview",
    "EmbeddingView": ".embeddings",
    "Studio": ".studio",
    "Experiments": ".studio",
    "BokehWidget": "._bokeh_widget",
    "load_bokeh": ".embeddings",
    "BOKEHJS": ".dashboard",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
