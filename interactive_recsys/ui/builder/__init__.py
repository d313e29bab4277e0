"""The visual pipeline builder: :class:`PipelineBuilder` (the widget, ``_builder``),
``BuilderModel`` (its plain-Python model, :mod:`.model`), the graph view
``DagView`` and the other panels (:mod:`.views`), Suggest (:mod:`.suggest`) and the code
export (``_codegen``).

Names are imported on first use, so the model can be used without loading any widget.
"""

from __future__ import annotations

from interactive_recsys.lazy import lazy_exports

#: public name -> module (relative to this package) that defines it
_EXPORTS = {
    "BuilderModel": ".model",
    "DagView": ".views",
    "PipelineBuilder": "._builder",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
