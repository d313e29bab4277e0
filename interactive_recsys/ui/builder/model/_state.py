"""What the model's function modules (``_run``, ``_store``, ``_suggest``, ``_validate``,
``_handoff``) use of a ``BuilderModel``: its state and the few methods they call, as a
``typing.Protocol``. They are typed with it, so none of them imports the class whose methods
forward to them (no import circle, type hints counted); ``BuilderModel`` is one
(``tests/unit/ui/builder/test_builder_model.py`` checks it).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from interactive_recsys.io._dataset import Dataset
    from interactive_recsys.schema import Schema
    from interactive_recsys.ui.builder._branches import Branch
    from interactive_recsys.ui.builder._column_profile import ColumnProfile
    from interactive_recsys.ui.builder.suggest import MeasuredColumn, OOVWarning
    from interactive_recsys.workflow._workflow import Workflow


@runtime_checkable
class ModelState(Protocol):
    """A builder model's data, steps, runs and Suggest results (see ``BuilderModel``)."""

    dataset: Dataset
    source: str | None
    source_reader: str
    branches: list[Branch]
    current: int
    fitted_workflow: Workflow | None
    reuse_run: Workflow | None
    reuse_preview: Workflow | None
    last_job: Any
    run_ended: threading.Event | None
    vocab_choices: list[Any]
    vocab_fits: bool
    vocab_shortfall: Any
    vocab_max_loss: float
    suggested_branches: list[Branch] | None
    measured: dict[str, MeasuredColumn] | None
    suggest_job: Any
    suggest_ended: threading.Event | None
    oov_warnings: list[OOVWarning]
    run_diff: Any
    vocab_budget: int | str
    hash_proposals: Mapping[str, Any]
    run_output: tuple[str, str] | None
    export_places: tuple[str, str | None]

    @property
    def schema(self) -> Schema: ...

    @property
    def profile(self) -> list[ColumnProfile]: ...

    def head(self, n_rows: int, columns: list[str]) -> Any: ...

    def columns_by_role(self, role: str) -> list[str]: ...

    def commit(self, branches: list[Branch], current: int,
               selected: tuple[int, int] | None) -> None: ...

    def validate(self, branches: list[Branch]) -> None: ...

    def to_workflow(self, **kwargs: Any) -> Workflow: ...

    def output_schema(self) -> Schema: ...


__all__ = ["ModelState"]
