"""Embedding table sizes from a fitted workflow's output schema."""

from __future__ import annotations

from typing import Any

from interactive_recsys.schema import Schema, Tags


def embedding_dim(cardinality: int, max_dim: int = 512, min_dim: int = 16) -> int:
    """NVTabular's rule of thumb: ``min(512, max(16, round(1.6 * n ** 0.56)))``.

    >>> embedding_dim(1000)
    77
    """
    return int(min(max_dim, max(min_dim, round(1.6 * cardinality ** 0.56))))


Sizes = dict[str, tuple[int, int]]


def embedding_sizes(workflow_or_schema: Any, max_dim: int = 512, min_dim: int = 16, *,
                    split: bool = False) -> Sizes | tuple[Sizes, Sizes]:
    """``{column: (cardinality, dim)}`` for every categorical output column with a known
    cardinality (columns of a joint group share one table and report the same size).

    With ``split=True``: ``(single_hot, multi_hot)``, the plain columns and the list
    (multi-hot) columns apart, as two such dicts (NVTabular's ``get_embedding_sizes``
    returns that pair when list columns exist).

    >>> from interactive_recsys.schema import ColumnSchema
    >>> schema = Schema([ColumnSchema("c", "int64", {"categorical"}, {"cardinality": 1000}),
    ...                  ColumnSchema("tags", "list<int64>", {"categorical"},
    ...                               {"cardinality": 20})])
    >>> embedding_sizes(schema)
    {'c': (1000, 77), 'tags': (20, 16)}
    >>> embedding_sizes(schema, split=True)
    ({'c': (1000, 77)}, {'tags': (20, 16)})
    """
    schema = workflow_or_schema if isinstance(workflow_or_schema, Schema) \
        else workflow_or_schema.output_schema
    columns = [c for c in schema.values() if Tags.CATEGORICAL.value in c.tags
               and c.cardinality is not None]
    sizes = {c.name: (c.cardinality, embedding_dim(c.cardinality, max_dim, min_dim))
             for c in columns}
    if not split:
        return sizes
    multi = {c.name for c in columns if c.is_list}
    return ({n: v for n, v in sizes.items() if n not in multi},
            {n: v for n, v in sizes.items() if n in multi})
