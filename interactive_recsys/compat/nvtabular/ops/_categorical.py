"""NVTabular's categorical encodings: ``Categorify``, ``HashBucket``, ``HashedCross``,
``TargetEncoding``, ``JoinGroupby`` and ``get_embedding_sizes``."""

from __future__ import annotations

import random
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from interactive_recsys.compat.nvtabular.categories import OUT_PATH
from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.compat.nvtabular.ops._steps import (
    _HASH_ONLY,
    RESERVED_ROWS,
    Steps,
    _per_column,
    _tuning,
)
from interactive_recsys.compat.nvtabular.ops._values import hash_ids
from interactive_recsys.compat.nvtabular.types import dtype_name_of
from interactive_recsys.compat.nvtabular.vocabulary import vocabulary_steps
from interactive_recsys.embedding import embedding_sizes
from interactive_recsys.errors import ParameterError
from interactive_recsys.schema import Schema
from interactive_recsys.workflow._graph import Node


def Categorify(freq_threshold: int | Mapping[str, int] = 0, max_size: Any = 0,
               num_buckets: Any = None, encode_type: str = "joint", dtype: Any = None,
               **kwargs: Any) -> Any:
    """NVTabular's ``Categorify``: ``max_size`` counts table rows (2 reserved rows, the
    out-of-vocabulary rows, then ``max_size - 2 - buckets`` values; NVTabular 23.08's
    ``nvtabular/ops/categorify.py``: "``[2 + num_buckets, max_size)``: Unique vocabulary");
    0 means no limit; ``max_size == num_buckets + 2`` hashes every value.
    ``freq_threshold={col: n}``: one step per column."""
    vocabs = kwargs.pop("vocabs", None)
    if vocabs is not None:  # given vocabularies: looked up, the other columns fitted
        return Steps(vocabulary_steps(vocabs, None if dtype is None else dtype_name_of(dtype),
                                      num_buckets),
                     "Categorify(vocabs=...)", rest=[Categorify(
                         freq_threshold, max_size, num_buckets, encode_type, dtype, **kwargs)])
    if isinstance(freq_threshold, Mapping):
        return _per_column("Categorify", freq_threshold, lambda n: Categorify(
            n, max_size, num_buckets, encode_type, dtype, **kwargs), 0)
    if isinstance(max_size, Mapping):
        return _per_column("Categorify", max_size, lambda n: Categorify(
            freq_threshold, n, num_buckets, encode_type, dtype, **kwargs), 0)
    if isinstance(num_buckets, Mapping):
        return _per_column("Categorify", num_buckets, lambda n: Categorify(
            freq_threshold, max_size, n, encode_type, dtype, **kwargs), None)
    if kwargs.get("tree_width") is not None:  # as NVTabular 23.08 warns
        warnings.warn("Categorify(tree_width=...) is deprecated and ignored.", FutureWarning,
                      stacklevel=2)
    out_path = kwargs.get("out_path")
    rest = _tuning("Categorify", kwargs)
    values = None
    if max_size:
        buckets = num_buckets or 1
        values = int(max_size) - RESERVED_ROWS - buckets
        if values == 0 and num_buckets:
            freq_threshold = _HASH_ONLY
            values = None
        elif values < 1:
            raise ParameterError(f"NVTabular's Categorify(max_size={max_size}) counts table rows, "
                                 f"of which {RESERVED_ROWS + buckets} are reserved (padding, null, "
                                 f"{buckets} out-of-vocabulary); max_size must be at least "
                                 f"{RESERVED_ROWS + buckets + 1}, or {RESERVED_ROWS + buckets} "
                                 "with num_buckets (hashing only).")
    params: dict[str, Any] = {"freq_threshold": freq_threshold, "max_size": values,
                              "num_buckets": num_buckets, "encode_type": encode_type}
    if dtype is not None:
        params["dtype"] = dtype_name_of(dtype)
    op = _ops.Categorify(**params, **rest)
    if out_path is not None:  # NVTabular's category files are written there (.categories)
        op.__dict__[OUT_PATH] = out_path
    return op


def TargetEncoding(target: Any, kfold: int | None = None, fold_seed: int | None = 42,
                   p_smooth: int | float = 20, out_dtype: Any = None, split_out: int | None = None,
                   **kwargs: Any) -> Any:
    """NVTabular's ``TargetEncoding``: ``kfold`` defaults to 3 and ``kfold=1`` means no folds
    (the training rows are encoded with their own targets); several targets give one step
    each (``TE_<key>_<target>``); ``fold_seed=None`` draws a seed once (NVTabular draws
    unseeded folds). The target (like ``cont_cols``) is read from the workflow input
    without being selected."""
    targets = [target] if isinstance(target, str | Node) else list(target)
    if kwargs.get("drop_folds", True) is False and (kfold is None or kfold > 1):
        raise ParameterError("NVTabular's TargetEncoding(drop_folds=False) adds its '__fold__' "
                             "column (which NVTabular documents as for its unit tests), which "
                             "the port does not output. Remove drop_folds=False: the folds "
                             "come from fold_seed, so the encoding is the same.")
    if fold_seed is None:
        fold_seed = random.SystemRandom().randrange(2**31)
    rest = _tuning("TargetEncoding", kwargs)
    params: dict[str, Any] = {"kfold": 3 if kfold is None else kfold, "fold_seed": fold_seed,
                              "p_smooth": p_smooth, "split_out": split_out}
    if out_dtype is not None:
        params["out_dtype"] = dtype_name_of(out_dtype)
    made = [_ops.TargetEncoding(t, **params, **rest) for t in targets]
    if len(made) == 1:
        return made[0]
    return Steps([(None, [op]) for op in made], f"TargetEncoding({targets!r})")


def JoinGroupby(cont_cols: Any = None, stats: Sequence[str] = ("count",),
                split_out: int | None = None, **kwargs: Any) -> _ops.JoinGroupby:
    """NVTabular's ``JoinGroupby``: ``stats`` defaults to ``("count",)``; ``cont_cols`` come
    from the workflow input when not selected."""
    rest = _tuning("JoinGroupby", kwargs)
    if isinstance(cont_cols, str):
        cont_cols = [cont_cols]
    return _ops.JoinGroupby(cont_cols=cont_cols if isinstance(cont_cols, Node)
                            else list(cont_cols or ()), stats=list(stats), split_out=split_out,
                            **rest)


def _from_zero(op: Any, buckets: int) -> Steps:
    """``op`` (ids ``2 + hash % n``) then ids from 0, as NVTabular's (``hash % n``)."""
    return Steps([(None, [op, _ops.LambdaOp(hash_ids, dtype=op.dtype),
                          _ops.AddProperties({"cardinality": buckets})])], repr(op))


def HashBucket(num_buckets: int | Mapping[str, int]) -> Any:
    """NVTabular's ``HashBucket``: ids ``hash % num_buckets`` in ``[0, num_buckets)`` (the
    core reserves 0 and 1: ``2 + hash % n``); a number of buckets or ``{column: buckets}``.
    A null stays null (NVTabular hashes it too)."""
    return _per_column("HashBucket", num_buckets,
                       lambda n: _from_zero(_ops.HashBucket(n), n), None)


def HashedCross(num_buckets: int, **kwargs: Any) -> Steps:
    """NVTabular's ``HashedCross``: ids ``hash % num_buckets`` in ``[0, num_buckets)``."""
    return _from_zero(_ops.HashedCross(num_buckets, **kwargs), num_buckets)


def get_embedding_sizes(source: Any, output_dtypes: Any = None) -> Any:
    """NVTabular's ``get_embedding_sizes``: ``{column: (cardinality, dim)}``, or the pair
    ``(single_hot, multi_hot)`` when list columns are categorical outputs."""
    schema = source if isinstance(source, Schema) else source.output_schema
    sizes = embedding_sizes(schema)
    multi = {n: s for n, s in sizes.items() if schema[n].is_list}
    if not multi:
        return sizes
    return {n: s for n, s in sizes.items() if n not in multi}, multi
