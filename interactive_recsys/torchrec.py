"""TorchRec embedding tables from a schema: one line from processed data to a model.

:func:`embedding_configs` turns the categorical columns of an output schema into TorchRec
``EmbeddingBagConfig`` objects: one table per vocabulary (columns that share one, as
``Categorify(encode_type="joint")`` makes them, share a table and list every column in
``feature_names``), ``num_embeddings`` = the cardinality ``Categorify`` recorded, and
``embedding_dim`` from an :class:`~interactive_recsys.stats.EmbeddingReport` (its
dimensions, overrides included), a dict, one number, or NVTabular's rule.

:func:`managed_collision_collection` builds TorchRec's zero-collision hashing instead of a
fixed vocabulary: a ``ManagedCollisionCollection`` of one ``MCHManagedCollisionModule`` per
Categorify vocabulary, sized from the cardinality the fit measured, which maps the ids of
:func:`hashed_ids` (raw values hashed into ``[0, HASH_SPACE)``) to table rows, keeping each
fitted value on its Categorify id. :func:`hashed_features` makes its input from raw data.

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
import math
import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import backend_of
from interactive_recsys.embedding import embedding_dim
from interactive_recsys.errors import NotFittedError, ParameterError, SchemaError
from interactive_recsys.hashing import hash_array
from interactive_recsys.ops import Categorify
from interactive_recsys.params import param_error
from interactive_recsys.schema import Schema, Tags, dtype_name, element_dtype, is_list_dtype
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.tables._layout import NULL_INDEX
from interactive_recsys.tables._vocabulary import read_vocabulary


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


# ---- TorchRec's managed-collision hashing ---------------------------------------------------
#: The id space of :func:`hashed_ids`, ``[0, HASH_SPACE)``: the ``input_hash_size`` of the
#: managed-collision modules. It is TorchRec's own default: ``2**63 - 1``, int64's maximum,
#: marks an empty slot in ``MCHManagedCollisionModule``, so no id may take that value.
HASH_SPACE = 2**63 - 1

#: The default ``headroom`` of :func:`managed_collision_collection` (see there for why).
DEFAULT_HEADROOM = 2.0

#: ``eviction_policy`` names and the TorchRec classes they make.
EVICTION_POLICIES = {"distance_lfu": "DistanceLFU_EvictionPolicy", "lfu": "LFU_EvictionPolicy",
                     "lru": "LRU_EvictionPolicy"}

_INSTALL = ('pip install -e ".[torchrec]" && pip install --no-deps torchrec==1.8.0 '
            "(README's install command)")


def _torchrec_modules() -> Any:
    """``torchrec.modules.mc_modules``, or an error that says how to install TorchRec."""
    try:
        from torchrec.modules import mc_modules
    except ImportError as exc:
        raise ModuleNotFoundError(f"TorchRec's managed-collision modules need torchrec, which "
                                  f"does not import here ({exc}). Install it with {_INSTALL}."
                                  ) from None
    return mc_modules


def hashed_ids(values: Any) -> np.ndarray:
    """The id of every value for the managed-collision modules: int64 in ``[0, HASH_SPACE)``.

    ``id = hash64(value) mod (2**63 - 1)``, where ``hash64`` is the package's value-defined
    hash (:func:`~interactive_recsys.hashing.hash_array`, the one Categorify and HashBucket
    use): integers and booleans hash as int64 whatever their width, floats as float64,
    strings by their UTF-8 bytes, and null to one fixed id. So a value gets the same id on
    any machine and backend, in training and at serving, and ``3`` and ``"3"`` (or ``3`` and
    ``3.0``) are different values, as they are for Categorify.

    ``values``: anything ``pyarrow.array`` takes (a list, a NumPy array, a pandas Series,
    an Arrow array), one value per element (flatten list columns first).

    >>> ids = hashed_ids(pa.array(["a", None, "a"]))
    >>> ids.dtype, bool(ids[0] == ids[2]), bool(ids[0] != ids[1])
    (dtype('int64'), True, True)
    >>> bool(((ids >= 0) & (ids < HASH_SPACE)).all())
    True
    """
    arr = values if isinstance(values, pa.Array | pa.ChunkedArray) else pa.array(
        values, from_pandas=True)
    return (hash_array(arr) % np.uint64(HASH_SPACE)).astype(np.int64)


def _check_headroom(headroom: Any, owner: str) -> None:
    if isinstance(headroom, bool) or not isinstance(headroom, int | float) \
            or not math.isfinite(headroom) or headroom <= 0:
        raise param_error("headroom", owner, f"must be a finite number > 0. Got {headroom!r} "
                          "instead.")


def zch_size(cardinality: int, headroom: float = DEFAULT_HEADROOM) -> int:
    """The rows of a managed-collision table for a vocabulary of ``cardinality`` rows:
    ``ceil(headroom * cardinality) + 1``.

    ``cardinality`` is what the fit measured (the schema's, Categorify's rows: padding,
    null, out-of-vocabulary and every value kept); ``headroom`` is read as written (1.1
    times 100 is 110, not 110.00000000000001); the ``+ 1`` is the row that
    ``MCHManagedCollisionModule`` keeps, its last, for every id it does not hold.

    >>> zch_size(100, 2.0), zch_size(100, 1.1), zch_size(7, 1)
    (201, 111, 8)
    """
    _check_headroom(headroom, "zch_size")
    return math.ceil(Fraction(str(headroom)) * int(cardinality)) + 1


def _categorify_tables(workflow: Any, columns: Sequence[str] | None) -> list[dict[str, Any]]:
    """The Categorify vocabularies behind ``columns`` (default: every Categorify output
    column), in output-schema order: ``name`` (the vocabulary, TorchRec's table),
    ``feature_names``, ``cardinality``, ``info`` (its fitted state), ``op``."""
    if not getattr(workflow, "fitted", False) or workflow.input_schema is None:
        raise NotFittedError("managed_collision_collection needs a fitted workflow (its "
                             "Categorify vocabularies give the table sizes and the ids): call "
                             "wf.fit(dataset) first.")
    vocabs: dict[str, tuple[Any, dict[str, Any], tuple[str, ...]]] = {}
    for step in workflow.fitted_steps(Categorify):
        groups = step.op.vocab_keys(list(step.groups))
        for key, info in step.state["vocabs"].items():
            vocabs[key] = (step.op, info, groups.get(key, ()))
    schema = workflow.output_schema
    chosen = [c.name for c in schema.values() if c.properties.get("domain") in vocabs]
    if not chosen:
        raise SchemaError("The workflow has no Categorify column in its output: managed-"
                          "collision tables are sized from Categorify's vocabularies.")
    if columns is not None:
        wanted = [columns] if isinstance(columns, str) else list(columns)
        for name in wanted:
            if name not in schema:
                raise SchemaError(f"Column {name!r} is not an output of the workflow; its "
                                  f"Categorify columns are {chosen}.")
            if name not in chosen:
                raise SchemaError(f"Column {name!r} is not encoded by Categorify (it has no "
                                  "vocabulary to size a managed-collision table from); "
                                  f"choose among {chosen}.")
        chosen = [name for name in chosen if name in wanted]
    tables: dict[str, dict[str, Any]] = {}
    for name in chosen:
        key = schema[name].properties["domain"]
        op, info, group = vocabs[key]
        if len(group) > 1 and op.encode_type == "combo":
            raise SchemaError(f"Column {name!r} is Categorify(encode_type='combo') of {list(group)}"
                              ": its values join several columns, which hashed_ids does not "
                              "make from raw data. Categorify those columns one by one, or "
                              "leave it out (columns=[...]).")
        table = tables.setdefault(key, {"name": key, "feature_names": [], "op": op,
                                        "info": info, "cardinality": int(info["cardinality"])})
        table["feature_names"].append(name)
    return list(tables.values())


def _eviction_policy(policy: Any, mc_modules: Any) -> Any:
    """A new TorchRec eviction policy from its name, or the instance given."""
    if isinstance(policy, mc_modules.MCHEvictionPolicy):
        return policy
    if policy not in EVICTION_POLICIES:
        raise param_error("eviction_policy", "managed_collision_collection", f"must be one of "
                          f"{sorted(EVICTION_POLICIES)} or a torchrec MCHEvictionPolicy. Got "
                          f"{policy!r} instead.")
    return getattr(mc_modules, EVICTION_POLICIES[policy])()


def _keep_ids(module: Any, table: dict[str, Any], workflow: Any) -> None:
    """Load the fitted vocabulary into a new ``MCHManagedCollisionModule``: each value's
    :func:`hashed_ids` id maps to its Categorify id (null to the null row), with its fitted
    count as the eviction policy's history; the other rows are free, the last stays
    TorchRec's row for ids it does not hold. Written into the module's state buffers, as
    TorchRec's own tests write them (``_mch_sorted_raw_ids``, ``_mch_remapped_ids_mapping``,
    ``_mch_counts``): sorted raw ids first, free slots after."""
    import torch

    info = table["info"]
    vocabulary = read_vocabulary(resolve(workflow.artifacts_dir, info["path"],
                                         "vocabulary path"), info["splits"],
                                 workflow.storage_options or None)
    raw = np.append(hashed_ids(vocabulary["value"]), hashed_ids(pa.nulls(1)))
    rows = np.append(vocabulary["index"].to_numpy().astype(np.int64), NULL_INDEX)
    counts = np.append(vocabulary["count"].to_numpy().astype(np.int64),
                       int(info.get("null_count", 0)))
    order = np.argsort(raw, kind="stable")
    raw, rows, counts = raw[order], rows[order], counts[order]
    if len(raw) > 1 and (raw[1:] == raw[:-1]).any():
        clash = int(np.flatnonzero(raw[1:] == raw[:-1])[0])
        raise SchemaError(f"Two values of vocabulary {table['name']!r} (rows {rows[clash]} and "
                          f"{rows[clash + 1]}) have the same 63-bit hash, so one managed-"
                          "collision id cannot keep both rows; pass keep_ids=False.")
    size = module.output_size()
    free = np.setdiff1d(np.arange(size - 1, dtype=np.int64), rows)
    mapping = np.concatenate([rows, free, [size - 1]])
    with torch.no_grad():
        module._mch_sorted_raw_ids[:len(raw)] = torch.from_numpy(raw)
        module._mch_remapped_ids_mapping.copy_(torch.from_numpy(mapping))
        if hasattr(module, "_mch_counts"):
            module._mch_counts[:len(counts)] = torch.from_numpy(counts)


def _table_config(table: dict[str, Any], size: int, dims: Any, pooling: str | None) -> Any:
    """The TorchRec config of a managed-collision table: ``size`` rows, the dimension of the
    fixed table (:func:`_dim` on its cardinality)."""
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig, PoolingType

    spec = {"name": table["name"], "num_embeddings": size,
            "embedding_dim": _dim(dims, table["name"], table["feature_names"],
                                  table["cardinality"]),
            "feature_names": list(table["feature_names"])}
    if pooling is None:
        return EmbeddingConfig(**spec)
    return EmbeddingBagConfig(pooling=PoolingType[pooling], **spec)


def _checked_mcc_params(headroom: Any, eviction_interval: Any, keep_ids: bool,
                        pooling: Any) -> None:
    from torchrec.modules.embedding_configs import PoolingType

    pooling_names = list(PoolingType.__members__)
    owner = "managed_collision_collection"
    _check_headroom(headroom, owner)
    if keep_ids and headroom < 1:
        raise param_error("headroom", owner, f"must be >= 1 with keep_ids=True (each fitted "
                          f"id keeps its row). Got {headroom!r} instead; pass keep_ids=False "
                          "for a table smaller than the vocabulary.")
    if isinstance(eviction_interval, bool) or not isinstance(eviction_interval, int) \
            or eviction_interval < 1:
        raise param_error("eviction_interval", owner, f"must be an int >= 1. Got "
                          f"{eviction_interval!r} instead.")
    if pooling is not None and pooling not in pooling_names:
        raise param_error("pooling", owner, f"must be one of {list(pooling_names)} or None. "
                          f"Got {pooling!r} instead.")


def managed_collision_collection(
        workflow: Any, columns: Sequence[str] | None = None, *,
        headroom: float = DEFAULT_HEADROOM, eviction_policy: Any = "distance_lfu",
        eviction_interval: int = 1, keep_ids: bool = True, dims: Any = None,
        pooling: str | None = "SUM", device: Any = None) -> Any:
    """TorchRec's ``ManagedCollisionCollection`` for the Categorify columns of a fitted
    workflow: zero-collision hashing in place of the fixed vocabulary.

    One ``MCHManagedCollisionModule`` per vocabulary (joint columns share one), fed the ids
    of :func:`hashed_ids` (:func:`hashed_features` makes its ``KeyedJaggedTensor`` from raw
    data), each with ``input_hash_size`` :data:`HASH_SPACE`. The guide's *Exports* page
    says what each choice means.

    Parameters
    ----------
    workflow : a fitted Workflow.
    columns : output columns encoded by Categorify (default: all of them).
    headroom : ``zch_size = ceil(headroom * cardinality) + 1`` rows (:func:`zch_size`). The
        default, 2, fills half the table with the fitted vocabulary: new values take the
        free rows first, and no fitted value is evicted before they are used up, for twice
        the fixed table's memory.
    eviction_policy : ``"distance_lfu"`` (default: count over batches since last seen, so
        frequent ids stay and ids that stop coming fade), ``"lfu"`` (never forgets),
        ``"lru"`` (forgets frequency), or a TorchRec ``MCHEvictionPolicy``.
    eviction_interval : training batches between two updates of the tables (each sorts
        them); until its update a new id goes to the last row, the one for ids not held.
    keep_ids : each fitted value starts on its Categorify id as its row (null on the null
        row) with its fitted count as history, so a table trained on those ids carries
        over (:func:`grow_weights`). Needs ``headroom >= 1``; False starts empty.
    dims, pooling : as :func:`embedding_configs` (dimensions from the fixed cardinality);
        ``pooling=None`` gives ``EmbeddingConfig`` objects for an ``EmbeddingCollection``.
    device : the modules' ``torch.device`` (default: CPU).

    Returns
    -------
    ``torchrec.modules.mc_modules.ManagedCollisionCollection``; its ``embedding_configs()``
    (``num_embeddings`` is ``zch_size``) make the embedding module it goes with.

    Examples
    --------
    >>> import pytest; _ = pytest.importorskip("torchrec")  # skipped where TorchRec is absent
    >>> import pandas as pd, interactive_recsys as irs
    >>> from torchrec import EmbeddingBagCollection
    >>> from torchrec.modules.mc_embedding_modules import ManagedCollisionEmbeddingBagCollection
    >>> wf = irs.Workflow(["item"] >> irs.ops.Categorify())
    >>> wf.fit_transform(pd.DataFrame({"item": ["a", "b", "a", "c"]}))["item"].tolist()
    [3, 4, 3, 5]
    >>> mcc = managed_collision_collection(wf, dims=8)  # cardinality 6: ceil(2 * 6) + 1 rows
    >>> [(c.name, c.num_embeddings) for c in mcc.embedding_configs()]
    [('item', 13)]
    >>> batch = hashed_features(wf, pd.DataFrame({"item": ["a", "c", "new", "new"]}))
    >>> mcc.eval()(batch)["item"].values().tolist()  # fitted values keep their ids
    [3, 5, 12, 12]
    >>> mcc.train()(batch)["item"].values().tolist()  # training: "new" takes a free row
    [3, 5, 11, 11]
    >>> model = ManagedCollisionEmbeddingBagCollection(
    ...     EmbeddingBagCollection(tables=mcc.embedding_configs()), mcc)
    >>> pooled, _ = model(batch)
    >>> tuple(pooled["item"].shape)
    (4, 8)
    """
    mc_modules = _torchrec_modules()
    import torch

    tables = _categorify_tables(workflow, columns)
    _checked_mcc_params(headroom, eviction_interval, keep_ids, pooling)
    device = torch.device("cpu") if device is None else torch.device(device)
    configs, modules = [], {}
    for table in tables:
        size = zch_size(table["cardinality"], headroom)
        configs.append(_table_config(table, size, dims, pooling))
        modules[table["name"]] = mc_modules.MCHManagedCollisionModule(
            zch_size=size, device=device, eviction_interval=eviction_interval,
            eviction_policy=_eviction_policy(eviction_policy, mc_modules),
            input_hash_size=HASH_SPACE, name=table["name"])
        if keep_ids:
            _keep_ids(modules[table["name"]], table, workflow)
    return mc_modules.ManagedCollisionCollection(managed_collision_modules=modules,
                                                 embedding_configs=configs)


def _hash_class(dtype: str) -> str:
    """How :func:`hashed_ids` reads a dtype: ``int`` (and bool), ``float``, ``bytes`` or
    itself."""
    base = element_dtype(dtype)
    if base.startswith(("int", "uint")) or base == "bool":
        return "int"
    if base.startswith(("float", "double", "halffloat")):
        return "float"
    if base in ("string", "large_string", "binary", "large_binary", "string_view"):
        return "bytes"
    return base


def _as_fitted(arr: pa.ChunkedArray, name: str, fitted: str | None) -> pa.ChunkedArray:
    """``arr`` hashed as the workflow read column ``name`` (dtype ``fitted``): an int column
    that pandas made float (by a null) is cast back; other mismatches are refused."""
    if fitted is None:
        return arr
    have, want = _hash_class(str(arr.type)), _hash_class(fitted)
    if have == want or pa.types.is_null(arr.type):
        return arr
    if {have, want} <= {"int", "float"}:
        target = pa.int64() if want == "int" else pa.float64()
        try:
            return arr.cast(target)
        except pa.ArrowInvalid:
            pass
    raise SchemaError(f"Column {name!r} holds {dtype_name(arr.type)} values, but the workflow "
                      f"was fitted on {fitted}: their hashes differ, so every id would be new. "
                      f"Cast the column to {fitted} first.")


def hashed_features(workflow: Any, data: Any, columns: Sequence[str] | None = None) -> Any:
    """The ``KeyedJaggedTensor`` of :func:`hashed_ids` that
    ``managed_collision_collection(workflow, columns)`` takes, from raw data.

    ``data`` (a pandas or cuDF DataFrame) holds each feature's raw values under its name:
    one value per row, or a list per row (a multi-hot column; a null list is empty). Keys
    are in the collection's order. A column read as float where the workflow read ints
    (pandas does that to an int column with a null) is cast back to int64, so its values
    hash as at the fit; other dtypes that differ from the fit's are refused. The tensors are
    on the CPU: ``.to(device)`` moves them to the modules' device.
    """
    _torchrec_modules()
    import torch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    keys = [f for table in _categorify_tables(workflow, columns) for f in table["feature_names"]]
    backend = backend_of(data)
    fitted = workflow.input_schema
    values, lengths = [], []
    for name in keys:
        arr = backend.to_arrow_array(backend.column(data, name))
        dtype = fitted[name].dtype if name in fitted else None
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            arr = arr.combine_chunks()
            lengths.append(pc.fill_null(pc.list_value_length(arr), 0).to_numpy())
            arr = _as_fitted(pa.chunked_array([arr.flatten()]), name,
                             element_dtype(dtype) if dtype and is_list_dtype(dtype) else dtype)
        else:
            lengths.append(np.ones(len(arr), dtype=np.int64))
            arr = _as_fitted(arr, name, dtype)
        values.append(hashed_ids(arr))
    return KeyedJaggedTensor(keys=keys, values=torch.from_numpy(np.concatenate(values)),
                             lengths=torch.from_numpy(np.concatenate(lengths).astype(np.int64)))


__all__ = ["DEFAULT_HEADROOM", "EVICTION_POLICIES", "HASH_SPACE", "as_schema",
           "embedding_configs", "grow_weights", "hashed_features", "hashed_ids",
           "managed_collision_collection", "new_rows", "table_specs", "zch_size"]
