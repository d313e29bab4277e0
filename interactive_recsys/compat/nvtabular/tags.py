"""Merlin's ``Tags`` and ``TagSet`` (``merlin.schema.tags``) as this project's tag strings.

Merlin's compound tags become their parts, as ``TagSet`` does there: ``Tags.USER_ID`` is
``{"user", "id"}``. A tag set here is a ``frozenset`` of strings, the type of
:attr:`interactive_recsys.ColumnSchema.tags`, so ``schema["c"].tags == TagSet([Tags.TARGET])``.

>>> sorted(TagSet([Tags.USER_ID, Tags.CATEGORICAL]))
['categorical', 'id', 'user']
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from interactive_recsys.schema import COMPOUND_TAGS
from interactive_recsys.schema import Tags as CoreTags

Tags = enum.StrEnum("Tags", [(tag.name, tag.value) for tag in CoreTags
                             if tag is not CoreTags.HASHED], module=__name__)
Tags.__doc__ = """Merlin 23.08's standard tags (``merlin.schema.Tags``), exactly: the same names and
values, those of :class:`interactive_recsys.Tags` without its ``HASHED``."""


def TagSet(tags: Iterable[Any] | Any = ()) -> frozenset[str]:
    """Tags as this project's tag strings, compound tags split into their parts."""
    if tags is None:
        return frozenset()
    if isinstance(tags, str | enum.Enum):
        tags = [tags]
    out: set[str] = set()
    for tag in tags:
        name = str(tag.value if isinstance(tag, enum.Enum) else tag).lower()
        out.update(COMPOUND_TAGS.get(name, (name,)))
    return frozenset(out)


__all__ = ["COMPOUND_TAGS", "TagSet", "Tags"]
