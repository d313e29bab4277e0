"""TorchRec embedding tables from a schema: one line from processed data to a model.

:func:`embedding_configs` turns the categorical columns of an output schema into TorchRec
``EmbeddingBagConfig`` objects: one table per vocabulary (columns that share one, as
``Categorify(encode_type="joint")`` makes them, share a table and list every column in
``feature_names``), ``num_embeddings`` = the cardinality ``Categorify`` recorded, and
``embedding_dim`` from an :class:`~interactive_recsys.stats.EmbeddingReport` (its
dimensions, overrides included), a dict, one number, or NVTabular's rule.

Examples
--------
>>> from interactive_recsys.schema import ColumnSchema, Schema
>>> s = Schema([ColumnSchema("C1", "int64", {"categorical"}, {"cardinality": 1000}),
...             ColumnSchema("I1", "float32", {"continuous"})])
>>> table_specs(s)
[{'name': 'C1', 'num_embeddings': 1000, 'embedding_dim': 77, 'feature_names': ['C1']}]
>>> table_specs(s, dims={"C1": 8})[0]["embedding_dim"]
8
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from interactive_recsys.embedding import embedding_dim
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.params import param_error
from interactive_recsys.schema import Schema, Tags


def as_schema(source: Any) -> Schema:
    """A schema from a Schema, a fitted Workflow, a Dataset, or an output directory
    (its ``_schema.json``)."""
    if isinstance(source, Schema):
        return source
    if isinstance(source, str | os.PathLike):
        path = os.path.join(os.fspath(source), "_schema.json")
        if not os.path.exists(path):
            raise SchemaError(f"{os.fspath(source)!r} holds no _schema.json; pass a directory "
                              "written by Dataset.to_parquet, a Schema or a fitted Workflow.")
        with open(path) as f:
            return Schema.from_dict(json.load(f)["schema"])
    schema = getattr(source, "output_schema", None) or getattr(source, "schema", None)
    if not isinstance(schema, Schema):
        raise SchemaError(f"Cannot find a schema in {source!r}; pass a Schema, a fitted "
                          "Workflow, a Dataset or an output directory.")
    return schema


def _dim(dims: Any, table: str, columns: list[str], cardinality: int) -> int:
    if dims is None:
        return embedding_dim(cardinality)
    if isinstance(dims, int) and not isinstance(dims, bool):
        return dims
    if hasattr(dims, "tables") and hasattr(dims, "dim"):  # an EmbeddingReport
        for name, stats in dims.tables.items():
            if name == table or set(columns) & set(stats.columns) or name in columns:
                return int(dims.dim(name))
        return embedding_dim(cardinality)
    if isinstance(dims, Mapping):
        for key in (table, *columns):
            if key in dims:
                return int(dims[key])
        return embedding_dim(cardinality)
    raise param_error("dims", None, f"must be an EmbeddingReport, a dict "
                      f"{{table or column: dim}}, an int or None. Got {dims!r} instead.")


def table_specs(schema: Any, dims: Any = None) -> list[dict[str, Any]]:
    """The embedding tables as plain dicts (``name``, ``num_embeddings``, ``embedding_dim``,
    ``feature_names``), in schema order; see :func:`embedding_configs`."""
    schema = as_schema(schema)
    tables: dict[str, dict[str, Any]] = {}
    for col in schema.values():
        if Tags.CATEGORICAL.value not in col.tags:
            continue
        if col.cardinality is None:
            raise SchemaError(f"Column {col.name!r} is categorical but has no cardinality in "
                              "the schema; fit the workflow (Categorify/HashBucket record it) "
                              "or drop the 'categorical' tag.")
        domain = col.properties.get("domain")
        name = domain if isinstance(domain, str) and domain else col.name
        spec = tables.setdefault(name, {"name": name, "num_embeddings": int(col.cardinality),
                                        "feature_names": []})
        if spec["num_embeddings"] != int(col.cardinality):
            raise SchemaError(f"Columns {spec['feature_names'] + [col.name]} share vocabulary "
                              f"{name!r} but report cardinalities {spec['num_embeddings']} and "
                              f"{col.cardinality}.")
        spec["feature_names"].append(col.name)
    out = []
    for spec in tables.values():
        dim = _dim(dims, spec["name"], spec["feature_names"], spec["num_embeddings"])
        if dim < 1:
            raise ParameterError(f"The embedding dimension of table {spec['name']!r} must be "
                                 f">= 1. Got {dim} instead.")
        out.append({"name": spec["name"], "num_embeddings": spec["num_embeddings"],
                    "embedding_dim": dim, "feature_names": spec["feature_names"]})
    return out


def new_rows(schema: Any) -> dict[str, tuple[int, int]]:
    """``{table: (start, stop)}``: the rows each embedding table gained in the last
    ``Workflow.update`` (``start == stop``: it did not grow), keyed like
    :func:`embedding_configs`' tables. Append rows ``start .. stop - 1`` to a trained table,
    keeping the others (:func:`grow_weights`). Empty before any update.

    >>> from interactive_recsys.schema import ColumnSchema, Schema
    >>> new_rows(Schema([ColumnSchema("C1", "int64", {"categorical"}, {
    ...     "cardinality": 12, "vocabulary_version": 2, "new_rows": [10, 12]})]))
    {'C1': (10, 12)}
    """
    out: dict[str, tuple[int, int]] = {}
    for col in as_schema(schema).values():
        if Tags.CATEGORICAL.value in col.tags and "new_rows" in col.properties:
            domain = col.properties.get("domain")
            first, stop = col.properties["new_rows"]
            out[domain if isinstance(domain, str) and domain else col.name] = (int(first),
                                                                               int(stop))
    return out


def grow_weights(weights: Any, num_embeddings: int, init: Any = None) -> Any:
    """A ``torch`` tensor of ``num_embeddings`` rows: the rows of ``weights`` unchanged, then
    new rows from ``init(rows, dim)`` (default: uniform in +-1/sqrt(rows), as
    ``torchrec``'s tables start). Refuses to shrink: ids never move in an update.

    >>> import torch
    >>> grown = grow_weights(torch.ones(3, 2), 5, init=torch.zeros)
    >>> grown.tolist()
    [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    """
    import torch

    rows, dim = weights.shape
    if num_embeddings < rows:
        raise ParameterError(f"grow_weights: the table has {rows} rows, more than "
                             f"num_embeddings={num_embeddings}; an update only appends rows. "
                             "Pass the new cardinality (schema[col].cardinality).")
    extra = num_embeddings - rows
    if init is None:
        bound = 1.0 / num_embeddings ** 0.5
        fresh = torch.empty(extra, dim, dtype=weights.dtype).uniform_(-bound, bound)
    else:
        fresh = init(extra, dim).to(weights.dtype)
    return torch.cat([weights.detach(), fresh.to(weights.device)])


def embedding_configs(schema: Any, dims: Any = None, *, pooling: str = "SUM") -> list[Any]:
    """TorchRec ``EmbeddingBagConfig`` objects for the categorical columns of ``schema``.

    Parameters
    ----------
    schema : a Schema, a fitted Workflow, a Dataset or a directory written by ``to_parquet``.
    dims : an :class:`~interactive_recsys.stats.EmbeddingReport` (its dimensions), a dict
        ``{table or column: dim}``, one int for every table, or None (NVTabular's rule
        ``min(512, max(16, round(1.6 * n ** 0.56)))``).
    pooling : TorchRec's ``PoolingType`` name: ``"SUM"``, ``"MEAN"`` or ``"NONE"``.

    Returns
    -------
    list of ``torchrec.EmbeddingBagConfig``, one per vocabulary, ready for
    ``torchrec.EmbeddingBagCollection(tables=...)``; the loader's ``KeyedJaggedTensor`` keys
    are the column names, which are the configs' ``feature_names``.
    """
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType

    try:
        pool = PoolingType[pooling]
    except KeyError:
        raise param_error("pooling", None, f"must be one of "
                          f"{[p.name for p in PoolingType]}. Got {pooling!r} instead.") from None
    return [EmbeddingBagConfig(pooling=pool, **spec) for spec in table_specs(schema, dims)]


__all__ = ["as_schema", "embedding_configs", "table_specs"]
