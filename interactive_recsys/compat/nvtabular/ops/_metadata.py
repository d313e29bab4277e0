"""NVTabular's tag and property operators: ``AddTags``, ``AddProperties``, ``AddMetadata``,
``TagAs*``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.compat.nvtabular.ops._steps import Steps
from interactive_recsys.compat.nvtabular.tags import TagSet
from interactive_recsys.errors import ParameterError


def AddTags(tags: Any = None) -> _ops.AddTags:
    """Merlin's tags (``Tags.USER_ID`` is ``user`` + ``id``) on every selected column."""
    return _ops.AddTags(sorted(TagSet(tags or ())))


def AddProperties(properties: Mapping[str, Any] | None = None) -> _ops.AddProperties:
    return _ops.AddProperties(dict(properties or {}))


def AddMetadata(tags: Any = None, properties: Mapping[str, Any] | None = None) -> Any:
    """NVTabular's ``AddMetadata(tags=, properties=)``: ``AddTags`` then ``AddProperties``."""
    chain: list[Any] = []
    if tags:
        chain.append(AddTags(tags))
    if properties:
        chain.append(AddProperties(properties))
    if not chain:
        raise ParameterError("AddMetadata needs tags= or properties=.")
    return chain[0] if len(chain) == 1 else Steps([(None, chain)], "AddMetadata(...)")


def TagAsUserID(tags: Any = None) -> _ops.AddTags:
    """Merlin's ``user_id`` tags; ``tags`` is ignored, as NVTabular 23.08 ignores it."""
    return AddTags(["user_id"])


def TagAsItemID(tags: Any = None) -> _ops.AddTags:
    """Merlin's ``item_id`` tags; ``tags`` is ignored, as NVTabular 23.08 ignores it."""
    return AddTags(["item_id"])


def TagAsUserFeatures(tags: Any = None) -> _ops.AddTags:
    """Merlin's ``user`` tag; ``tags`` is ignored, as NVTabular 23.08 ignores it."""
    return AddTags(["user"])


def TagAsItemFeatures(tags: Any = None) -> _ops.AddTags:
    """Merlin's ``item`` tag; ``tags`` is ignored, as NVTabular 23.08 ignores it."""
    return AddTags(["item"])
