"""NVTabular's ``Workflow`` on this project's Workflow.

>>> import pandas as pd
>>> from interactive_recsys.compat.nvtabular import ops
>>> wf = Workflow(["a"] >> ops.Categorify())
>>> out = wf.fit_transform(Dataset(pd.DataFrame({"a": ["x", "y", "x"]})))
>>> out.to_ddf().compute()["a"].tolist(), wf.output_schema.column_names
([3, 4, 3], ['a'])
"""

from __future__ import annotations

from typing import Any

from interactive_recsys import schema as _schema
from interactive_recsys.compat.nvtabular.categories import write_categories
from interactive_recsys.compat.nvtabular.dataset import Dataset
from interactive_recsys.compat.nvtabular.operator import bind_fitted
from interactive_recsys.compat.nvtabular.schema import ColumnSchema, Schema
from interactive_recsys.io._dataset import Dataset as _CoreDataset
from interactive_recsys.io._dataset import as_dataset
from interactive_recsys.workflow import _workflow
from interactive_recsys.workflow._graph import ConcatNode, Node


class Workflow(_workflow.Workflow):
    """``nvt.Workflow(output_node, client=None)``: this project's Workflow whose ``transform``
    gives NVTabular's ``Dataset`` (``to_parquet(output_path=..., shuffle=..., cats=...)``)."""

    def __init__(self, output_node: Any, client: Any = None, **kwargs: Any) -> None:
        super().__init__(output_node, **kwargs)

    @property
    def output_schema(self) -> Schema:
        return Schema.of(super().output_schema)

    @property
    def input_dtypes(self) -> dict[str, str]:
        self._check_fitted()
        assert self.input_schema is not None
        return self.input_schema.dtypes

    @property
    def output_dtypes(self) -> dict[str, str]:
        return self.output_schema.dtypes

    def fit(self, dataset: Any, **kwargs: Any) -> Any:
        """Fit; then, as in NVTabular, every operator holds its fitted statistics
        (``op.means`` ...), every step its ``node.output_schema`` (``bind_fitted``) and a
        ``Categorify(out_path=...)`` writes its category files (``categories``)."""
        self._first_name_wins(dataset)
        out = super().fit(dataset, **kwargs)
        if out is self:  # not a background job
            bind_fitted(self)
            write_categories(self)
        return out

    def fit_schema(self, input_schema: Any) -> Workflow:
        """NVTabular's ``fit_schema``: the schemas of every step for data of
        ``input_schema`` (a Schema, or column names), without data or statistics."""
        if not isinstance(input_schema, _schema.Schema):
            input_schema = Schema([ColumnSchema(n) if isinstance(n, str) else n
                                   for n in input_schema])
        self.input_schema = self._checked_input(input_schema)
        bind_fitted(self)
        return self

    @classmethod
    def load(cls, path: Any, *args: Any, **kwargs: Any) -> Any:
        wf = super().load(path, *args, **kwargs)
        bind_fitted(wf)
        return wf

    def _first_name_wins(self, data: Any) -> None:
        """Where two parts of the output (``a + b + ...``) compute columns of one name, the
        first part's column is kept, as NVTabular's schema merge does (its Advanced-workflow
        notebook outputs ``movieId`` once although two steps compute it); the core refuses
        this. Only the output's own parts are compared."""
        if not isinstance(self.output_node, ConcatNode) or self.fitted:
            return
        schema = as_dataset(data).schema
        seen: set[str] = set()
        parts, changed = [], False
        for part in _parts(self.output_node):
            names = part.output_schema(schema).names
            repeated = [n for n in names if n in seen]
            if repeated:
                changed = True
                if len(repeated) == len(names):
                    continue
                part = part - repeated
            seen.update(names)
            parts.append(part)
        if changed:
            out = parts[0]
            for part in parts[1:]:
                out = out + part
            self.__dict__.update(_workflow.Workflow(
                out, artifacts_dir=self.artifacts_dir,
                storage_options=self.storage_options).__dict__)

    def transform(self, dataset: Any, **kwargs: Any) -> Any:
        """A Dataset for a Dataset (NVTabular's, with its ``to_parquet``), a frame for a
        frame."""
        return _wrap(super().transform(dataset, **kwargs))

    def fit_transform(self, dataset: Any, **kwargs: Any) -> Any:
        return _wrap(super().fit_transform(dataset, **kwargs))

    def save(self, path: Any, modules_byvalue: Any = None, **kwargs: Any) -> Any:
        """Save as JSON + parquet (``modules_byvalue`` is about pickle: no effect here)."""
        return super().save(path, **kwargs)


def _parts(node: Node) -> list[Node]:
    """The parts of ``a + b + ...`` (nested sums flattened), in order."""
    if not isinstance(node, ConcatNode):
        return [node]
    return [p for parent in node.parents for p in _parts(parent)]


def _wrap(out: Any) -> Any:
    return Dataset.wrap(out) if isinstance(out, _CoreDataset) else out


__all__ = ["ColumnSchema", "Schema", "Workflow"]
