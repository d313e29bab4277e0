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


class Tags(enum.StrEnum):
    """Merlin 23.08's standard tags (``merlin.schema.Tags``), exactly: the same names and
    values. :class:`interactive_recsys.Tags` has them all too, and ``HASHED``."""

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
