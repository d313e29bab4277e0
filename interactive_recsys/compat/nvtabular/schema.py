"""Merlin's ``Schema`` and ``ColumnSchema`` names (``merlin.schema``) on this project's schema.

>>> Schema([ColumnSchema("a", dtype="int64", is_list=True)]).column_names
['a']
>>> Schema(["a", "b"])["b"].dtype
'float64'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ... import schema as _schema
from ...embedding import embedding_dim
from .tags import TagSet
from .types import dtype_name_of


class Schema(_schema.Schema):
    """A schema with Merlin's names: ``column_names``, ``column_schemas``, ``without``; as
    Merlin's, it may be built from column names (``Schema(["a", "b"])``: columns of unknown
    dtype, taken as float64 here)."""

    def __init__(self, columns: Iterable[_schema.ColumnSchema | str] = ()) -> None:
        super().__init__(ColumnSchema(c) if isinstance(c, str) else c for c in columns)

    @classmethod
    def of(cls, schema: _schema.Schema) -> Schema:
        """``schema`` with Merlin's names; a categorical column's ``domain`` is Merlin's
        ``{"min": 0, "max": cardinality - 1, "name": ...}`` with its ``embedding_sizes``."""
        if isinstance(schema, cls):
            return schema
        return cls(_merlin_properties(c) for c in schema.values())

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


def _merlin_properties(col: _schema.ColumnSchema) -> _schema.ColumnSchema:
    props, card = dict(col.properties), col.cardinality
    if card is None or isinstance(props.get("domain"), dict):
        return col
    props["domain"] = {"min": 0, "max": card - 1, "name": props.get("domain", col.name)}
    props.setdefault("embedding_sizes", {"cardinality": card, "dimension": embedding_dim(card)})
    return col.with_(properties=props)


def ColumnSchema(name: str, tags: Iterable[Any] | None = None,
                 properties: Mapping[str, Any] | None = None, dtype: Any = None,
                 is_list: bool = False, is_ragged: bool | None = None) -> _schema.ColumnSchema:
    """Merlin's ``ColumnSchema(name, tags, properties, dtype, is_list, is_ragged)`` as this
    project's column: ``is_list=True`` makes the dtype ``list<dtype>``; ``is_ragged`` has no
    implies ``is_list`` (lists here are ragged unless padded by ``ListSlice(pad=True)``); a
    list column carries the ``list`` tag, as every list column here.

    >>> ColumnSchema("a", dtype="int64", is_list=True).dtype
    'list<int64>'
    """
    name_ = "float64" if dtype is None else dtype_name_of(dtype)
    if (is_list or is_ragged) and not name_.startswith("list<"):
        name_ = f"list<{name_}>"
    return _schema.ColumnSchema(name, name_, TagSet(tags or ()) | _schema.default_tags(name_),
                                dict(properties or {}))


__all__ = ["ColumnSchema", "Schema"]
