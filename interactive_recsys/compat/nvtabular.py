"""NVTabular's meanings on top of this project's operators, for ported code.

``from interactive_recsys.compat import nvtabular as ops`` and an NVTabular 23.08 workflow
keeps its results where the two projects mean different things by the same words:

==========================  ===========================  ================================
NVTabular 23.08             ``interactive_recsys.ops``   this module
==========================  ===========================  ================================
``Categorify(max_size=N)``  N *values* in the table      N table *rows*: 2 reserved +
                                                         OOV rows + N - 3 values
``ListSlice(k)``, k > 0     ``row[k:]``                  ``row[:k]`` (``ListSlice(-k)``:
                                                         ``row[-k:]`` in both)
``TargetEncoding(kfold=1)`` kfold=1 means no folds too   no folds (NVTabular default
                                                         ``kfold=3``)
``JoinGroupby()``           every statistic              ``stats=("count",)``
``target=["label"]``        one target name              a one-name list is accepted
==========================  ===========================  ================================

Every other operator is this project's own (``ops.FillMissing`` ...). The wrappers return
ordinary operators (saved workflows load without this module) and accept, without effect or
warning, NVTabular's tuning knobs that do not change results (``out_path``, ``on_host``,
``cat_cache``, ``tree_width``, ...). What this module does *not* copy are NVTabular's defects
(README, "From NVTabular"): statistics here skip nulls, a null key is null, hashes depend on
values only.

Examples
--------
>>> from interactive_recsys.compat import nvtabular as nvt_ops
>>> nvt_ops.Categorify(max_size=10)        # 10 rows: pad, null, OOV + 7 values
Categorify(max_size=7)
>>> nvt_ops.ListSlice(3)
ListSlice(start=0, end=3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import ops as _ops
from ..errors import ParameterError

#: NVTabular keyword arguments about memory, caching and files: no effect on results.
TUNING = frozenset({"out_path", "on_host", "cat_cache", "tree_width", "split_every",
                    "cardinality_memory_limit", "search_sorted", "single_table", "name_sep",
                    "drop_folds"})
#: Rows before the vocabulary in NVTabular 23.08's (and this project's) Categorify tables.
RESERVED_ROWS = 2


def _tuning(op: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Drop NVTabular-only knobs that do not change results; refuse the ones that would."""
    for name in ("start_index", "vocabs", "target_mean", "out_col"):
        if kwargs.get(name) not in (None, 0):
            raise ParameterError(f"NVTabular's {op}({name}=...) changes the output, which this "
                                 f"port does not reproduce; got {name}={kwargs[name]!r}. Remove "
                                 "it (and adapt the model) or apply the equivalent step after.")
    if kwargs.get("name_sep", "_") != "_":
        raise ParameterError(f"{op}(name_sep=...) other than '_' is not supported; got "
                             f"{kwargs['name_sep']!r}.")
    return {k: v for k, v in kwargs.items() if k not in TUNING | {"start_index", "vocabs"}}


def Categorify(freq_threshold: int = 0, max_size: int = 0, num_buckets: int | None = None,
               encode_type: str = "joint", dtype: Any = None, **kwargs: Any) -> _ops.Categorify:
    """NVTabular's ``Categorify``: ``max_size`` counts table rows (2 reserved rows, the
    out-of-vocabulary rows, then ``max_size - 2 - buckets`` values; NVTabular 23.08's
    ``nvtabular/ops/categorify.py``: "``[2 + num_buckets, max_size)``: Unique vocabulary");
    0 means no limit."""
    if isinstance(freq_threshold, dict):
        raise ParameterError("A per-column freq_threshold dict is not supported; use one "
                             "Categorify per threshold.")
    rest = _tuning("Categorify", kwargs)
    values = None
    if max_size:
        buckets = num_buckets or 1
        values = int(max_size) - RESERVED_ROWS - buckets
        if values < 1:
            raise ParameterError(f"NVTabular's Categorify(max_size={max_size}) counts table rows, "
                                 f"of which {RESERVED_ROWS + buckets} are reserved (padding, null, "
                                 f"{buckets} out-of-vocabulary); max_size must be at least "
                                 f"{RESERVED_ROWS + buckets + 1}.")
    params: dict[str, Any] = {"freq_threshold": freq_threshold, "max_size": values,
                              "num_buckets": num_buckets, "encode_type": encode_type}
    if dtype is not None:
        params["dtype"] = getattr(dtype, "__name__", str(dtype))
    return _ops.Categorify(**params, **rest)


def ListSlice(start: int, end: int | None = None, pad: bool = False,
              pad_value: Any = 0) -> _ops.ListSlice:
    """NVTabular's ``ListSlice``: one positive number ``k`` keeps the first ``k`` items
    (``row[:k]``); otherwise ``row[start:end]``."""
    if end is None and start > 0:
        start, end = 0, start
    return _ops.ListSlice(start, end, pad=pad, pad_value=pad_value)


def TargetEncoding(target: str | Sequence[str], kfold: int | None = None, fold_seed: int = 42,
                   p_smooth: int | float = 20, out_dtype: Any = None, split_out: int | None = None,
                   **kwargs: Any) -> _ops.TargetEncoding:
    """NVTabular's ``TargetEncoding``: ``kfold`` defaults to 3 and ``kfold=1`` means no folds
    (the training rows are encoded with their own targets); ``target`` may be a one-name list.
    The target (like ``cont_cols``) is read from the workflow input without being selected."""
    if not isinstance(target, str):
        target = list(target)
        if len(target) != 1:
            raise ParameterError(f"TargetEncoding with several targets {target} is not "
                                 "supported; use one TargetEncoding per target.")
        target = target[0]
    rest = _tuning("TargetEncoding", kwargs)
    params: dict[str, Any] = {"kfold": 3 if kfold is None else kfold, "fold_seed": fold_seed,
                              "p_smooth": p_smooth, "split_out": split_out}
    if out_dtype is not None:
        params["out_dtype"] = getattr(out_dtype, "__name__", str(out_dtype))
    return _ops.TargetEncoding(target, **params, **rest)


def JoinGroupby(cont_cols: Sequence[str] | None = None, stats: Sequence[str] = ("count",),
                split_out: int | None = None, **kwargs: Any) -> _ops.JoinGroupby:
    """NVTabular's ``JoinGroupby``: ``stats`` defaults to ``("count",)``; ``cont_cols`` come
    from the workflow input when not selected."""
    rest = _tuning("JoinGroupby", kwargs)
    return _ops.JoinGroupby(cont_cols=list(cont_cols or ()), stats=list(stats),
                            split_out=split_out, **rest)


def __getattr__(name: str) -> Any:
    """Every other operator: this project's own."""
    try:
        return getattr(_ops, name)
    except AttributeError:
        raise AttributeError(f"{__name__} has no operator {name!r}") from None


__all__ = ["Categorify", "JoinGroupby", "ListSlice", "TargetEncoding"]
