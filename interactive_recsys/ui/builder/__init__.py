"""The visual pipeline builder: :class:`PipelineBuilder` (the widget), :class:`BuilderModel`
(its plain-Python model), the graph view :class:`DagView`, Suggest and the code export."""

from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.views._dag import DagView

__all__ = ["BuilderModel", "DagView", "PipelineBuilder"]
