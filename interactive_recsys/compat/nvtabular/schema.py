"""Merlin's ``Schema`` and ``ColumnSchema`` names (``merlin.schema``) on this project's schema.

>>> Schema([ColumnSchema("a", dtype="int64", is_list=True)]).column_names
['a']
>>> Schema(["a", "b"])["b"].dtype
'float64'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

from interactive_recsys import schema as _schema
from interactive_recsys.compat.nvtabular.tags import TagSet
from interactive_recsys.compat.nvtabular.types import dtype_name_of
from interactive_recsys.embedding import embedding_dim
from interactive_recsys.errors import ParameterError, SchemaError


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
    def column_schemas(self) -> MutableMapping[str, _schema.ColumnSchema]:
        """The columns by name, a live view as Merlin's: ``column_schemas[c] = col``
        replaces (or adds) a column of this schema."""
        return _ColumnSchemas(self)

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
    col = ColumnSchema.of(col)
    props, card = dict(col.properties), col.cardinality
    if card is None or isinstance(props.get("domain"), dict):
        return col
    props["domain"] = {"min": 0, "max": card - 1, "name": props.get("domain", col.name)}
    props.setdefault("embedding_sizes", {"cardinality": card, "dimension": embedding_dim(card)})
    return col.with_(properties=props)


class _ColumnSchemas(MutableMapping):
    """A schema's columns as a mapping that edits it (Merlin's ``Schema.column_schemas``)."""

    def __init__(self, schema: Schema) -> None:
        self._cols = schema._cols

    def __getitem__(self, name: str) -> _schema.ColumnSchema:
        return self._cols[name]

    def __setitem__(self, name: str, col: _schema.ColumnSchema) -> None:
        if col.name != name:
            raise SchemaError(f"column_schemas[{name!r}] = a column named {col.name!r}: the "
                              f"names must match (col.with_name({name!r})).")
        self._cols[name] = col

    def __delitem__(self, name: str) -> None:
        del self._cols[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    def __len__(self) -> int:
        return len(self._cols)

    def __repr__(self) -> str:
        return repr(dict(self._cols))


def _dtype_name(dtype: Any) -> str:
    """A NumPy/Python dtype's name here, or one of this project's names (``timestamp[us]``)."""
    try:
        return dtype_name_of(dtype)
    except ParameterError:
        if not isinstance(dtype, str):
            raise
        _schema.arrow_type(dtype)  # a name of this project's, or the SchemaError naming it
        return dtype


class ColumnSchema(_schema.ColumnSchema):
    """Merlin's ``ColumnSchema(name, tags, properties, dtype, is_list, is_ragged)`` as this
    project's column (equal to the core's column of the same fields): ``is_list=True`` makes
    the dtype ``list<dtype>``; ``is_ragged`` implies ``is_list`` (lists here are ragged unless
    padded by ``ListSlice(pad=True)``); a list column carries the ``list`` tag, as every list
    column here. Merlin's ``with_name`` and ``is_ragged`` are there too.

    >>> col = ColumnSchema("a", dtype="int64", is_list=True)
    >>> col.dtype, col.with_name("b").name
    ('list<int64>', 'b')
    """

    def __init__(self, name: str, tags: Iterable[Any] | None = None,
                 properties: Mapping[str, Any] | None = None, dtype: Any = None,
                 is_list: bool = False, is_ragged: bool | None = None) -> None:
        name_ = "float64" if dtype is None else _dtype_name(dtype)
        if (is_list or is_ragged) and not name_.startswith("list<"):
            name_ = f"list<{name_}>"
        super().__init__(name, name_, TagSet(tags or ()) | _schema.default_tags(name_),
                         dict(properties or {}))

    @classmethod
    def of(cls, col: _schema.ColumnSchema) -> ColumnSchema:
        return col if isinstance(col, cls) else cls(col.name, col.tags, col.properties,
                                                    col.dtype)

    @property
    def is_ragged(self) -> bool:
        return self.is_list

    def with_name(self, name: str) -> ColumnSchema:
        return self.with_(name=name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _schema.ColumnSchema):
            return NotImplemented
        return (self.name, self.dtype, self.tags, self.properties) == (
            other.name, other.dtype, other.tags, other.properties)

    __hash__ = _schema.ColumnSchema.__hash__


__all__ = ["ColumnSchema", "Schema"]
