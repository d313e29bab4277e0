"""Column schemas (names, backend-neutral dtypes, tags and properties) and the column
selectors that pick columns from them (names, groups of names, tags).

A dtype is a short string shared by every backend: ``"int64"``, ``"float32"``,
``"string"``, ``"bool"``, ``"list<int64>"``... so a schema predicted from a
pandas partition is equal to one predicted from a cuDF partition.

Examples
--------
>>> s = Schema([ColumnSchema("C1", "string", tags={Tags.CATEGORICAL})])
>>> s["C1"].dtype
'string'
>>> s.select_by_tag(Tags.CATEGORICAL).names
['C1']
>>> sel = ColumnSelector(["a", ("b", "c")], tags=["categorical"])
>>> sel.names, sel.groups
(['a'], [('b', 'c')])
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from interactive_recsys.errors import SchemaError, names_text
from interactive_recsys.operands import SelectionOperand


class Tags(enum.StrEnum):
    """Roles a column can play; a column may carry several.

    Every name of Merlin's ``merlin.schema.Tags`` (23.08), with its value, so that code
    written for Merlin runs with ``irs.Tags`` too, and ``HASHED``. Merlin's compound tags
    (``COMPOUND_TAGS``: ``USER_ID`` ...) stand for their parts: a column tagged
    ``Tags.USER_ID`` carries ``user`` and ``id``.
    """

    CATEGORICAL = "categorical"
    CONTINUOUS = "continuous"
    LIST = "list"
    SEQUENCE = "sequence"
    TEXT = "text"
    TOKENIZED = "tokenized"
    TIME = "time"
    EMBEDDING = "embedding"
    ID = "id"
    USER = "user"
    ITEM = "item"
    SESSION = "session"
    CONTEXT = "context"
    TARGET = "target"
    REGRESSION = "regression"
    CLASSIFICATION = "classification"
    BINARY = "binary"
    MULTI_CLASS = "multi_class"
    USER_ID = "user_id"
    ITEM_ID = "item_id"
    SESSION_ID = "session_id"
    TEXT_TOKENIZED = "text_tokenized"
    BINARY_CLASSIFICATION = "binary_classification"
    MULTI_CLASS_CLASSIFICATION = "multi_class_classification"
    HASHED = "hashed"


#: Merlin's compound tags and their parts (``merlin.schema.tags.COMPOUND_TAGS``).
COMPOUND_TAGS: dict[str, tuple[str, ...]] = {
    "user_id": ("user", "id"), "item_id": ("item", "id"), "session_id": ("session", "id"),
    "text_tokenized": ("text", "tokenized")}


def normalize_tags(tags: Iterable[str | Tags]) -> frozenset[str]:
    """Tags as a frozenset of plain strings (``Tags`` members become their value); one
    string is one tag. A compound tag becomes its parts.

    >>> sorted(normalize_tags([Tags.USER_ID, "target"]))
    ['id', 'target', 'user']
    """
    if isinstance(tags, str):
        tags = [tags]
    out: set[str] = set()
    for t in tags:
        name = t.value if isinstance(t, Tags) else str(t)
        out.update(COMPOUND_TAGS.get(name, (name,)))
    return frozenset(out)


#: Column names starting so are interactive-recsys's own (the shuffle key, the row order...):
#: refused in input data and workflows.
RESERVED_PREFIX = "__irs_"

_ARROW_NAMES = {
    "double": "float64",
    "float": "float32",
    "halffloat": "float16",
    "large_string": "string",
    "string_view": "string",
    "utf8": "string",
    "large_utf8": "string",
}


def dtype_name(arrow_type: pa.DataType) -> str:
    """The backend-neutral name of an Arrow type.

    >>> dtype_name(pa.large_list(pa.int32()))
    'list<int32>'
    """
    if pa.types.is_dictionary(arrow_type):
        return dtype_name(arrow_type.value_type)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"list<{dtype_name(arrow_type.value_type)}>"
    name = str(arrow_type)
    return _ARROW_NAMES.get(name, name)


_ZONED = re.compile(r"timestamp\[(s|ms|us|ns), tz=([^\]]+)\]")


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type of a backend-neutral dtype name (inverse of :func:`dtype_name`).

    >>> arrow_type("timestamp[us, tz=Europe/Paris]")
    TimestampType(timestamp[us, tz=Europe/Paris])
    """
    if name.startswith("list<") and name.endswith(">"):
        return pa.list_(arrow_type(name[5:-1]))
    if name == "string":
        return pa.large_string()
    if name.startswith("float"):
        return {"float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64()}[name]
    zoned = _ZONED.fullmatch(name)  # str(pa.timestamp("us", tz="UTC")), no alias reads it
    if zoned:
        return pa.timestamp(zoned[1], tz=zoned[2])
    try:
        return pa.type_for_alias(name)
    except ValueError as exc:
        raise SchemaError(f"Unknown dtype {name!r}; use names such as 'int64', 'float32', "
                          "'string', 'bool' or 'list<int64>'.") from exc


def is_list_dtype(name: str) -> bool:
    return name.startswith("list<")


def element_dtype(name: str) -> str:
    """The element dtype of a list dtype, or the dtype itself."""
    return name[5:-1] if is_list_dtype(name) else name


def is_numeric_dtype(name: str) -> bool:
    base = element_dtype(name)
    return base.startswith(("int", "uint", "float")) or base == "bool"


def is_float_dtype(name: str) -> bool:
    return element_dtype(name).startswith("float")


def is_integer_dtype(name: str) -> bool:
    return element_dtype(name).startswith(("int", "uint"))


@dataclass(frozen=True)
class ColumnSchema:
    """One column: its name, dtype, tags and free-form properties (e.g. cardinality)."""

    name: str
    dtype: str
    tags: frozenset[str] = field(default_factory=frozenset)
    properties: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", normalize_tags(self.tags))
        object.__setattr__(self, "properties", dict(self.properties))

    @property
    def is_list(self) -> bool:
        return is_list_dtype(self.dtype)

    @property
    def cardinality(self) -> int | None:
        return self.properties.get("cardinality")

    def with_(self, **changes: Any) -> ColumnSchema:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    def with_tags(self, add: Iterable[str] = (), remove: Iterable[str] = ()) -> ColumnSchema:
        tags = (self.tags - normalize_tags(remove)) | normalize_tags(add)
        return replace(self, tags=tags)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "tags": sorted(self.tags),
                "properties": dict(self.properties)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColumnSchema:
        return cls(d["name"], d["dtype"], frozenset(d.get("tags", ())), d.get("properties", {}))


class Schema(Mapping[str, ColumnSchema]):
    """An ordered collection of :class:`ColumnSchema`, indexed by name."""

    def __init__(self, columns: Iterable[ColumnSchema] = ()) -> None:
        self._cols: dict[str, ColumnSchema] = {}
        for c in columns:
            if c.name in self._cols:
                raise SchemaError(f"Column {c.name!r} appears twice in the output. Rename one of "
                                  "them (ops.Rename) or select it only once.")
            self._cols[c.name] = c

    def __getitem__(self, name: str) -> ColumnSchema:
        try:
            return self._cols[name]
        except KeyError:
            raise SchemaError(f"Column {name!r} is not in the schema. Available columns: "
                              f"{_short_list(self.names)}.") from None

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    def __len__(self) -> int:
        return len(self._cols)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and list(self._cols.values()) == list(other._cols.values())

    def __hash__(self) -> int:  # pragma: no cover - schemas are not used as keys
        return hash(tuple(self._cols))

    @property
    def names(self) -> list[str]:
        return list(self._cols)

    @property
    def dtypes(self) -> dict[str, str]:
        return {n: c.dtype for n, c in self._cols.items()}

    def select(self, names: Iterable[str]) -> Schema:
        return Schema(self[n] for n in names)

    def select_by_tag(self, *tags: str | Tags) -> Schema:
        """Columns carrying all of ``tags``."""
        wanted = normalize_tags(tags)
        return Schema(c for c in self._cols.values() if wanted <= c.tags)

    def __add__(self, other: Schema) -> Schema:
        return Schema([*self._cols.values(), *other._cols.values()])

    def to_dict(self) -> dict[str, Any]:
        return {"columns": [c.to_dict() for c in self._cols.values()]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schema:
        return cls(ColumnSchema.from_dict(c) for c in d["columns"])

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> Schema:
        """Infer a schema (dtypes and default tags) from an Arrow schema."""
        return cls(ColumnSchema(f.name, dtype_name(f.type), default_tags(dtype_name(f.type)))
                   for f in schema)

    def to_arrow(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, arrow_type(c.dtype)) for c in self._cols.values()])

    def __repr__(self) -> str:
        rows = [f"  {c.name}: {c.dtype} {sorted(c.tags)}"
                + (f" {dict(c.properties)}" if c.properties else "") for c in self._cols.values()]
        return "Schema(\n" + "\n".join(rows) + "\n)"

    def _repr_html_(self) -> str:
        head = "<tr><th>column</th><th>dtype</th><th>tags</th><th>properties</th></tr>"
        body = "".join(
            f"<tr><td>{c.name}</td><td>{c.dtype}</td><td>{', '.join(sorted(c.tags))}</td>"
            f"<td>{', '.join(f'{k}={v}' for k, v in c.properties.items())}</td></tr>"
            for c in self._cols.values())
        return f"<table>{head}{body}</table>"


def default_tags(dtype: str) -> frozenset[str]:
    """Tags inferred from a dtype alone: lists are ``list``; nothing else is assumed."""
    return frozenset({Tags.LIST.value}) if is_list_dtype(dtype) else frozenset()


def _short_list(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


class ColumnSelector(SelectionOperand):
    """Select input columns by name, by group (for joint/combo encodings) or by tag.

    Parameters
    ----------
    names : column names; a tuple or list inside the list is a *group* of columns that
        an operator treats together (e.g. ``Categorify(encode_type="joint")``).
    tags : select every input column carrying all of these tags.
    """

    def __init__(self, names: Iterable[Any] = (), tags: Iterable[str | Tags] = (),
                 optional: Iterable[str] = ()) -> None:
        if isinstance(names, str):
            names = [names]
        self.names: list[str] = []
        self.groups: list[tuple[str, ...]] = []
        for item in names:
            if isinstance(item, str):
                self.names.append(item)
            elif isinstance(item, list | tuple) and all(isinstance(n, str) for n in item):
                self.groups.append(tuple(item))
            else:
                raise SchemaError(f"A column selection holds {item!r}; use column names (str), "
                                  "lists of names for column groups, or ColumnSelector(tags=...).")
        self.tags = normalize_tags(tags)
        #: names selected only if the data has them (an operator's dependencies, which the
        #: operator then reports by itself when missing)
        self.optional: list[str] = [n for n in optional if n not in self.names]

    def resolve(self, schema: Schema) -> list[tuple[str, ...]]:
        """The selected column groups (singletons for plain names), checked against ``schema``."""
        groups: list[tuple[str, ...]] = [(n,) for n in self.names] + list(self.groups)
        if self.tags:
            groups += [(n,) for n in schema.select_by_tag(*self.tags).names
                       if (n,) not in groups]
        taken = {n for g in groups for n in g}
        groups += [(n,) for n in self.optional if n in schema and n not in taken]
        for group in groups:
            for name in group:
                if name not in schema:
                    raise SchemaError(f"Column {name!r} is selected in the workflow but is not in "
                                      "the input data; available columns: "
                                      f"{names_text(schema.names)}. Fix the column name or add "
                                      "the column to the data.")
        return groups

    def to_config(self) -> dict[str, Any]:
        config = {"names": [*self.names, *[list(g) for g in self.groups]],
                  "tags": sorted(self.tags)}
        if self.optional:
            config["optional"] = list(self.optional)
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ColumnSelector:
        return cls(config.get("names", ()), config.get("tags", ()), config.get("optional", ()))

    def __repr__(self) -> str:
        parts = [repr(n) for n in self.names] + [repr(list(g)) for g in self.groups]
        if len(parts) > 6:  # long selections: first, second, ..., last (count)
            parts = [*parts[:2], "...", f"{parts[-1]} ({len(parts)} columns)"]
        if self.tags:
            parts.append(f"tags={sorted(self.tags)}")
        if self.optional:
            parts.append(f"from input: {self.optional}")
        return "[" + ", ".join(parts) + "]"


def flatten(groups: Sequence[tuple[str, ...]]) -> list[str]:
    """Column names of a list of groups, in order, without repeats."""
    seen: dict[str, None] = {}
    for g in groups:
        for n in g:
            seen.setdefault(n)
    return list(seen)
