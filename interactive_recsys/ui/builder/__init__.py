"""The visual pipeline builder: :class:`PipelineBuilder` (the widget), :class:`BuilderModel`
(its plain-Python model), the graph view :class:`DagView`, Suggest and the code export."""

from interactive_recsys.ui.builder._builder import PipelineBuilder
from interactive_recsys.ui.builder._dag import DagView
from interactive_recsys.ui.builder._model import BuilderModel

__all__ = ["BuilderModel", "DagView", "PipelineBuilder"]
