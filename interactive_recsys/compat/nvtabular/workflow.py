"""NVTabular's ``Workflow``, ``Schema`` and ``ColumnSchema`` names on this project's classes.

>>> import pandas as pd
>>> from interactive_recsys.compat.nvtabular import ops
>>> wf = Workflow(["a"] >> ops.Categorify())
>>> out = wf.fit_transform(Dataset(pd.DataFrame({"a": ["x", "y", "x"]})))
>>> out.to_ddf().compute()["a"].tolist(), wf.output_schema.column_names
([3, 4, 3], ['a'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ... import schema as _schema
from ... import workflow as _workflow
from ...dataset import Dataset as _CoreDataset
from .dataset import Dataset, dtype_name_of
from .tags import TagSet


class Schema(_schema.Schema):
    """A schema with Merlin's names: ``column_names``, ``column_schemas``, ``without``."""

    @classmethod
    def of(cls, schema: _schema.Schema) -> Schema:
        return schema if isinstance(schema, cls) else cls(schema.values())

    @property
    def column_names(self) -> list[str]:
        return self.names

    @property
    def column_schemas(self) -> dict[str, _schema.ColumnSchema]:
        return dict(self.items())

    def without(self, names: str | Iterable[str]) -> Schema:
        drop = {names} if isinstance(names, str) else set(names)
        return Schema(c for c in self.values() if c.name not in drop)

    def select_by_name(self, names: str | Iterable[str]) -> Schema:
        return Schema.of(self.select([names] if isinstance(names, str) else names))

    def select_by_tag(self, *tags: Any) -> Schema:
        wanted = TagSet([t for group in tags for t in
                         (group if isinstance(group, list | tuple | set) else [group])])
        return Schema(c for c in self.values() if wanted <= c.tags)


def ColumnSchema(name: str, tags: Iterable[Any] | None = None,
                 properties: Mapping[str, Any] | None = None, dtype: Any = None,
                 is_list: bool = False, is_ragged: bool | None = None) -> _schema.ColumnSchema:
    """Merlin's ``ColumnSchema(name, tags, properties, dtype, is_list, is_ragged)`` as this
    project's column: ``is_list=True`` makes the dtype ``list<dtype>``; ``is_ragged`` has no
    effect (lists here are ragged, padded only by ``ListSlice(pad=True)``).

    >>> ColumnSchema("a", dtype="int64", is_list=True).dtype
    'list<int64>'
    """
    name_ = "float64" if dtype is None else dtype_name_of(dtype)
    if is_list and not name_.startswith("list<"):
        name_ = f"list<{name_}>"
    return _schema.ColumnSchema(name, name_, TagSet(tags or ()), dict(properties or {}))


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

    def transform(self, dataset: Any, **kwargs: Any) -> Any:
        """A Dataset for a Dataset (NVTabular's, with its ``to_parquet``), a frame for a
        frame."""
        return _wrap(super().transform(dataset, **kwargs))

    def fit_transform(self, dataset: Any, **kwargs: Any) -> Any:
        return _wrap(super().fit_transform(dataset, **kwargs))

    def save(self, path: Any, modules_byvalue: Any = None, **kwargs: Any) -> Any:
        """Save as JSON + parquet (``modules_byvalue`` is about pickle: no effect here)."""
        return super().save(path, **kwargs)


def _wrap(out: Any) -> Any:
    return Dataset.wrap(out) if isinstance(out, _CoreDataset) else out


__all__ = ["ColumnSchema", "Schema", "Workflow"]
