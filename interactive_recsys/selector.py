"""Column selectors: names, groups of names and tags.

Examples
--------
>>> sel = ColumnSelector(["a", ("b", "c")], tags=["categorical"])
>>> sel.names, sel.groups
(['a'], [('b', 'c')])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from interactive_recsys.errors import SchemaError
from interactive_recsys.operands import SelectionOperand
from interactive_recsys.schema import Schema, Tags, normalize_tags


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
                                      f"the input data; available columns: {schema.names}. Fix "
                                      "the column name or add the column to the data.")
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
