"""The pipeline builder's model: plain Python, no widgets.

``BuilderModel`` holds the branches, the selection, undo and validation and tells its
observers each :class:`Change`; :class:`RunController` owns Preview, Run, the job and its
progress; :class:`SuggestController` the background Suggest and its progress. Suggest,
save / load / export and Run are functions over the model (``_suggest``, ``_suggest_job``,
``_store``, ``_run``) that its methods forward to.

>>> import pandas as pd
>>> model = BuilderModel(pd.DataFrame({"c": ["x", "y"]}))
>>> model.add_step(["c"], "Categorify")
(0, 0)
"""

from interactive_recsys.ui.builder._branches import Branch, Step
from interactive_recsys.ui.builder.model._controller import RunController, RunEnd
from interactive_recsys.ui.builder.model._events import Change
from interactive_recsys.ui.builder.model._model import BuilderModel
from interactive_recsys.ui.builder.model._run import PreviewResult, job_text
from interactive_recsys.ui.builder.model._suggest import counted_profile
from interactive_recsys.ui.builder.model._suggest_controller import SuggestController, SuggestEnd

__all__ = ["Branch", "BuilderModel", "Change", "PreviewResult", "RunController", "RunEnd",
           "Step", "SuggestController", "SuggestEnd", "counted_profile", "job_text"]
