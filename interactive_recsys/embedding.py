"""Embedding table sizes from a fitted workflow's output schema."""

from __future__ import annotations

from typing import Any

from .schema import Schema, Tags


def embedding_dim(cardinality: int, max_dim: int = 512, min_dim: int = 16) -> int:
    """NVTabular's rule of thumb: ``min(512, max(16, round(1.6 * n ** 0.56)))``.

    >>> embedding_dim(1000)
    77
    """
    return int(min(max_dim, max(min_dim, round(1.6 * cardinality ** 0.56))))


def embedding_sizes(workflow_or_schema: Any, max_dim: int = 512,
                    min_dim: int = 16) -> dict[str, tuple[int, int]]:
    """``{column: (cardinality, dim)}`` for every categorical output column with a known
    cardinality (columns of a joint group share one table and report the same size)."""
    schema = workflow_or_schema if isinstance(workflow_or_schema, Schema) \
        else workflow_or_schema.output_schema
    return {c.name: (c.cardinality, embedding_dim(c.cardinality, max_dim, min_dim))
            for c in schema.values() if Tags.CATEGORICAL.value in c.tags
            and c.cardinality is not None}
