"""The builder's widgets: the panels (:class:`ColumnsPanel`, :class:`StepsPanel`,
:class:`RunPanel`, :class:`RecoveryPanel`), each built from the model and the feedback
areas, owning its widgets (``root``) and redrawing in ``update(change)``; and the leaf
widgets they are made of (column list, parameter form, graph, masked text, run notice,
Suggest's card and its status line with Cancel, feedback areas, the exported code's Copy and
Insert buttons)."""

from interactive_recsys.ui.builder.views._code_export import CodeExport
from interactive_recsys.ui.builder.views._column_list import ColumnChoice, ColumnList
from interactive_recsys.ui.builder.views._columns import ColumnsPanel
from interactive_recsys.ui.builder.views._dag import DagView
from interactive_recsys.ui.builder.views._feedback import Feedback
from interactive_recsys.ui.builder.views._masked_text import MaskedText
from interactive_recsys.ui.builder.views._param_form import ParamForm
from interactive_recsys.ui.builder.views._recovery import RecoveryPanel
from interactive_recsys.ui.builder.views._run import RunPanel
from interactive_recsys.ui.builder.views._run_notice import RunNotice
from interactive_recsys.ui.builder.views._run_watch import RunWatch
from interactive_recsys.ui.builder.views._steps import StepsPanel
from interactive_recsys.ui.builder.views._suggest_card import SuggestCard
from interactive_recsys.ui.builder.views._suggest_status import SuggestStatus

__all__ = ["CodeExport", "ColumnChoice", "ColumnList", "ColumnsPanel", "DagView", "Feedback",
           "MaskedText", "ParamForm", "RecoveryPanel", "RunNotice", "RunPanel", "RunWatch",
           "StepsPanel", "SuggestCard", "SuggestStatus"]
