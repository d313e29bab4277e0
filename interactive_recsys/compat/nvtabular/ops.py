"""NVTabular 23.08's operator signatures and meanings on top of this project's operators.

``from interactive_recsys.compat.nvtabular import ops`` (or the package itself, as
``nvt.ops``) and NVTabular code keeps its results where the two projects mean different
things by the same words, and its keyword forms are mapped onto the core's:

==========================================  =================================================
NVTabular 23.08                             here
==========================================  =================================================
``Categorify(max_size=N)``                  N table *rows*: 2 reserved + OOV rows + N - 3
                                            values (the core's ``max_size`` counts values);
                                            ``max_size = num_buckets + 2``: hashing only
``Categorify(vocabs={col: values})``        looked up (:mod:`.vocabulary`), not fitted
``Categorify(out_path=...)``                NVTabular's category files (:mod:`.categories`)
``ListSlice(k)``, k > 0                     ``row[:k]`` (the core's one number is a start)
``TargetEncoding``                          ``kfold=3``; several targets: one step each;
                                            ``fold_seed=None``: a seed drawn once
``JoinGroupby()``                           ``stats=("count",)``
per-column dicts (``freq_threshold``,       one core step per value, side by side
``Bucketize``, ``DifferenceLag(shift=[..])``
``Rename(f=, name=)``, ``Filter(f=)``       functions of names / of the frame
``LambdaOp(f, dependency=, tags=,           ``f(col)`` or ``f(col, df)``; then ``AddTags``
properties=)``                              / ``AddProperties``
``AddMetadata``, ``TagAs*``                 ``AddTags`` + ``AddProperties``
``LogOp``                                   computed in float32, as NVTabular
``Normalize``                               the sample std (``ddof=1``), as NVTabular
``Normalize(out_dtype=)``,                  computed in float64, cast to ``out_dtype``, as
``NormalizeMinMax(out_dtype=)``             NVTabular (without it: float32 here, float64 there)
``ReduceDtypeSize(float_dtype=)``           ``np.float32``: as the core; others refused, with
                                            the equivalent (select the integer columns only)
``JoinExternal(on_ext=,                     the side table's keys copied under the ``on``
drop_duplicates_ext=)``                     names; its duplicate rows dropped first
``JoinExternal(kind_ext=, cache=)``         no effect (the format is inferred; each worker
                                            reads the table once); a csv path is read
``TagAs*(tags=)``                           ignored, as NVTabular ignores it
``HashBucket(n)``, ``HashedCross(n)``       ids ``hash % n`` from 0 (the core's: from 2)
``Groupby("col")``, ``DifferenceLag(keys)``  keys read from the input; unselected ``Groupby``
                                            keys are not output
``Groupby(ascending=False)``                lists reversed, ``first``/``last`` as NVTabular
                                            (:mod:`.groupby`)
==========================================  =================================================

Every other operator is this project's own (``ops.FillMissing`` ...). Every operator here
also has NVTabular's operator methods (``compute_output_schema``, ``transform(selector,
df)``, fitted statistics such as ``op.means``: :mod:`.operator`). The wrappers return
the core's operators (saved workflows load without this module) and accept, without effect,
NVTabular's tuning knobs that do not change results (``on_host``, ``cat_cache``,
``tree_width`` (which warns it is deprecated, as there) ...); the options that would change
them are refused naming the reason and the equivalent (:data:`REFUSED`: ``start_index``,
``na_sentinel``, ``single_table``, ``target_mean``, ``out_col``; ``drop_folds=False``,
``name_sep`` other than ``_``). What this module does *not*
copy are NVTabular's defects (docs/guide/nvtabular.md): statistics here skip nulls, a null
key is null, hashes depend on values only.

Examples
--------
>>> Categorify(max_size=10)        # 10 rows: pad, null, OOV + 7 values
Categorify(max_size=7)
>>> ListSlice(3)
ListSlice(start=0, end=3)
"""

from __future__ import annotations

import inspect
import os
import random
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from interactive_recsys.compat.nvtabular.categories import OUT_PATH
from interactive_recsys.compat.nvtabular.groupby import Groupby, from_input
from interactive_recsys.compat.nvtabular.operator import OperatorAPI
from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.compat.nvtabular.tags import TagSet
from interactive_recsys.compat.nvtabular.types import dtype_name_of
from interactive_recsys.compat.nvtabular.vocabulary import vocabulary_steps
from interactive_recsys.embedding import embedding_sizes
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.operands import OperatorOperand
from interactive_recsys.runtime import jobs
from interactive_recsys.schema import Schema
from interactive_recsys.workflow._graph import Node, SelectNode

#: NVTabular keyword arguments about memory, caching and files: no effect on results.
TUNING = frozenset({"out_path", "on_host", "cat_cache", "tree_width", "split_every",
                    "cardinality_memory_limit", "search_sorted", "name_sep", "drop_folds"})
#: Rows before the vocabulary in NVTabular 23.08's (and this project's) Categorify tables.
RESERVED_ROWS = 2
#: A frequency threshold no value reaches: every value goes to the hash buckets.
_HASH_ONLY = 2**62


#: NVTabular 23.08 options that change its output, which the port does not reproduce: the
#: reason and the equivalent here (``{option: (changes, fix)}``).
REFUSED = {
    "start_index": ("NVTabular 23.08 refuses it too (it was removed: ids are 0 padding, 1 "
                    "null, 2.. out-of-vocabulary, then the values, here as there)",
                    "Remove it; to shift ids, add a step after, e.g. >> ops.LambdaOp('x + 1')"),
    "na_sentinel": ("NVTabular 23.08 refuses it too (it was removed: a null is always id 1, "
                    "here as there)", "Remove it"),
    "single_table": ("it encodes several columns in one shared table with offsets, which the "
                     "port does not do", "Remove it; for one vocabulary shared by several "
                     "columns, select them as a group with encode_type='joint', e.g. "
                     "[['a', 'b']] >> Categorify(encode_type='joint')"),
    "target_mean": ("it replaces the prior mean of the smoothing, which is always the target's "
                    "mean over the fit data here (NVTabular's default too)",
                    "Remove it (the mean is computed during the fit)"),
    "out_col": ("it renames the output column, which the port names TE_<columns>_<target> "
                "as NVTabular does by default", "Remove it and rename after: "
                ">> Rename(name='my_name') (one output column) or Rename(f=...)"),
}


def _tuning(op: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Drop NVTabular-only knobs that do not change results; refuse the ones that would,
    naming the reason and the equivalent (:data:`REFUSED`)."""
    for name, (why, fix) in REFUSED.items():
        present = name in ("start_index", "na_sentinel") and name in kwargs
        if present or kwargs.get(name) not in (None, 0, False):
            raise ParameterError(f"NVTabular's {op}({name}={kwargs[name]!r}) is not supported: "
                                 f"{why}. {fix}.")
    if kwargs.get("name_sep", "_") != "_":
        raise ParameterError(f"{op}(name_sep=...) other than '_' is not supported; got "
                             f"{kwargs['name_sep']!r}. Remove it and rename the output "
                             "columns after, e.g. >> Rename(f=lambda n: n.replace('_', "
                             f"{kwargs['name_sep']!r})).")
    return {k: v for k, v in kwargs.items() if k not in TUNING | set(REFUSED)}


class Steps(OperatorAPI, OperatorOperand):
    """Several core steps standing for one NVTabular operator; ``node >> steps`` builds them
    (:meth:`expand_after`) side by side: each branch is ``(columns, chain)``, ``columns``
    ``None`` for the whole input; ``rest`` is the chain of the selected columns no branch
    names (after a selection of names; after another step only the named columns are
    output)."""

    def __init__(self, branches: Sequence[tuple[list[str] | None, list[Any]]],
                 description: str, rest: list[Any] | None = None) -> None:
        self.branches, self.rest, self.description = list(branches), rest, description

    def expand_after(self, node: Node) -> Node:
        named = [c for cols, _ in self.branches for c in cols or ()]
        # after another step the columns are known only with the data: the dict names them
        # all, as NVTabular requires ("all columns targeted must be included")
        parts = [(node if cols is None else node[cols], chain) for cols, chain in self.branches]
        if isinstance(node, SelectNode) and not node.selector.tags:  # plain names: select
            sel = node.selector                                       # them directly
            rest = [n for n in sel.names if n not in named]
            parts = [(node if cols is None else Node.as_node(cols), chain)
                     for cols, chain in self.branches]
            if self.rest and rest:
                parts.append((Node.as_node(rest), self.rest))
        out = None
        for part, chain in parts:
            for op in chain:
                part = part >> op
            out = part if out is None else out + part
        assert out is not None
        return out

    def __repr__(self) -> str:
        return self.description


def _per_column(name: str, value: Any, make: Callable[[Any], Any], default: Any) -> Any:
    """One operator, or :class:`Steps` with one per column for a ``{column: value}``."""
    if not isinstance(value, Mapping):
        return make(value)
    return Steps([([c], [make(v)]) for c, v in value.items()], f"{name}({value!r})",
                 rest=None if default is None else [make(default)])


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
        return Steps(vocabulary_steps(vocabs, None if dtype is None else dtype_name_of(dtype)),
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


def ListSlice(start: int, end: int | None = None, pad: bool = False,
              pad_value: Any = 0) -> _ops.ListSlice:
    """NVTabular's ``ListSlice``: one positive number ``k`` keeps the first ``k`` items
    (``row[:k]``); otherwise ``row[start:end]``."""
    if end is None and start > 0:
        start, end = 0, start
    return _ops.ListSlice(start, end, pad=pad, pad_value=pad_value)


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


def Bucketize(boundaries: Any) -> Any:
    """NVTabular's ``Bucketize``: a list of boundaries, or ``{column: boundaries}``."""
    return _per_column("Bucketize", boundaries, _ops.Bucketize, None)


def DifferenceLag(partition_cols: Any, shift: int | Sequence[int] = 1, **kwargs: Any) -> Any:
    """NVTabular's ``DifferenceLag``: several shifts give one step each
    (``<col>_difference_lag_<shift>``)."""
    keys = from_input(partition_cols)
    if isinstance(shift, int):
        return _ops.DifferenceLag(keys, shift, **kwargs)
    names = [partition_cols] if isinstance(partition_cols, str) else partition_cols
    return _Shifts([_ops.DifferenceLag(keys, s, **kwargs) for s in shift],
                   list(names) if isinstance(names, list | tuple) else [])


class _Shifts(OperatorAPI, OperatorOperand):
    """``DifferenceLag(shift=[1, -1])``: one step per shift, chained (each passes the
    others' columns through)."""

    def __init__(self, ops: list[_ops.DifferenceLag], keys: list[str]) -> None:
        self.ops, self.keys = ops, keys

    def expand_after(self, node: Node) -> Node:
        if not isinstance(node, SelectNode) or node.selector.tags or node.selector.groups:
            raise SchemaError(f"{self!r} after a step: select the columns by name, e.g. "
                              "['ts'] >> DifferenceLag(...), or use one DifferenceLag per "
                              "shift with Rename.")
        out = node >> self.ops[0]
        for op in self.ops[1:]:  # chained: each step regroups rows, side by side they
            cols = op.columns or [n for n in node.selector.names if n not in self.keys]
            params = {**op.get_params(), "partition_cols": self.keys, "columns": cols}
            out = out >> _ops.DifferenceLag(**params)  # would not line up
        return out

    def __repr__(self) -> str:
        return f"DifferenceLag(shift={[op.shift for op in self.ops]!r})"


class _RenameBy(_ops.Rename, register=False):
    """``Rename(f=function)``: new names from a function (not saved: a function)."""

    def __init__(self, f: Callable[[str], str]) -> None:
        super().__init__(postfix="")
        self.f = f

    def check_params(self) -> None:
        """A function replaces the mapping."""

    def new_name(self, name: str) -> str:
        return self.f(name)

    def __repr__(self) -> str:
        return f"Rename(f={self.f!r})"


def Rename(f: Callable[[str], str] | None = None, postfix: str | None = None,
           name: str | None = None) -> _ops.Rename:
    """NVTabular's ``Rename(f=, postfix=, name=)``: a function of the name, a postfix, or
    one new ``name`` for a single column."""
    if sum(x is not None for x in (f, postfix, name)) != 1:
        raise ParameterError("Rename takes exactly one of f=, postfix= or name=.")
    if postfix is not None:
        return _ops.Rename(postfix=postfix)
    if name is not None:
        return _RenameOne(name)
    assert f is not None
    return _RenameBy(f)


class _RenameOne(_RenameBy, register=False):
    """``Rename(name=...)``: the one selected column gets this name."""

    def __init__(self, name: str) -> None:
        super().__init__(lambda _: name)
        self.new = name

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        if len(input_schema) != 1:
            raise SchemaError(f"Rename(name={self.new!r}) renames one column; it got "
                              f"{input_schema.names}. Use Rename(f=...) or Rename(postfix=...).")
        return super().output_schema(input_schema, groups, state)

    def __repr__(self) -> str:
        return f"Rename(name={self.new!r})"


class _FilterBy(_ops.RowFilter, register=False):
    """``Filter(f=function)``: ``f(frame)`` gives the rows kept (a boolean column)."""

    def __init__(self, f: Callable[[Any], Any]) -> None:
        super().__init__()
        self.f = f

    def row_mask(self, df: Any, state: dict[str, Any] | None, ctx: _ops.OpContext) -> Any:
        b = ctx.backend
        frame = b.to_pandas(df) if b.name == "cpu" else df
        mask = self.f(frame)
        if hasattr(mask, "columns"):  # the kept rows themselves, as NVTabular allows
            mask = frame.index.isin(mask.index)
        if not hasattr(mask, "__len__") or isinstance(mask, str) or len(mask) != len(frame):
            raise SchemaError(f"Filter(f={self.f!r}) must return a boolean column or the kept "
                              f"rows (e.g. df['x'] > 0 or df[df['x'] > 0]); got {mask!r:.80}.")
        return b.from_series(pd.Series(np.asarray(mask, dtype=bool)) if b.name == "cpu"
                             else mask)

    def __repr__(self) -> str:
        return f"Filter(f={self.f!r})"


def Filter(f: Any) -> _ops.RowFilter:
    """NVTabular's ``Filter(f)``: ``f(frame) -> boolean column``; an expression string is the
    core's saved form (``Filter("x > 0")``)."""
    return _ops.Filter(f) if isinstance(f, str) else _FilterBy(f)


class _FrameLambda(_ops.LambdaOp, register=False):
    """``LambdaOp(f)`` with ``f(col, df)``: ``df`` holds the selected columns and the
    ``dependency`` columns, which are read, not output."""

    def __init__(self, f: Callable[..., Any], dependency: Sequence[str], **kwargs: Any) -> None:
        super().__init__(f, **kwargs)
        self.needs = list(dependency)

    def dependencies(self) -> list[str]:
        return self.needs

    def _outputs(self, names: Sequence[str]) -> list[str]:
        return [n for n in names if n not in self.needs] or list(names)

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        return Schema(input_schema[n].with_(dtype=self.dtype or input_schema[n].dtype)
                      .with_tags(add=self.add_tags) for n in self._outputs(input_schema.names))

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: _ops.OpContext) -> Any:
        b = ctx.backend
        frame = b.to_pandas(df) if b.name == "cpu" else df
        out = {}
        for n in self._outputs(list(df.columns)):
            result = self.f(frame[n], frame)
            if b.name == "cpu" and not isinstance(result, pd.Series):
                result = pd.Series(result, index=frame.index)
            col = b.from_series(result)
            out[n] = b.cast(col, self.dtype) if self.dtype and b.dtype(col) != self.dtype else col
        return b.select(b.with_columns(df, out), list(out))


def LambdaOp(f: Any, dependency: Any = None, label: str | None = None, dtype: Any = None,
             tags: Any = None, properties: Mapping[str, Any] | None = None) -> Any:
    """NVTabular's ``LambdaOp``: ``f(col)``, or ``f(col, df)`` with ``df`` holding the
    ``dependency`` columns; ``tags`` and ``properties`` are set on the outputs; ``label`` only
    named the step there (no effect)."""
    params: dict[str, Any] = {"dtype": None if dtype is None else dtype_name_of(dtype),
                              "add_tags": sorted(TagSet(tags or ()))}
    two = callable(f) and len(inspect.signature(f).parameters) >= 2
    if dependency is not None or two:
        if not two:
            raise ParameterError("LambdaOp(dependency=...) needs f(col, df).")
        deps = [dependency] if isinstance(dependency, str) else list(dependency or ())
        if any(not isinstance(d, str) for d in deps):
            raise ParameterError("LambdaOp(dependency=...) takes column names.")
        op: Any = _FrameLambda(f, deps, **params)
    else:
        op = _ops.LambdaOp(f, **params)
    if not properties:
        return op
    return Steps([(None, [op, _ops.AddProperties(dict(properties))])], f"LambdaOp({f!r})")


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


def _elementwise(col: Any, fn: Callable[[np.ndarray], np.ndarray]) -> Any:
    """``fn`` on the values of a pandas column, list columns element by element (nulls
    as NaN go in, Arrow nulls stay null)."""
    arr = pa.chunked_array(pa.array(col, from_pandas=True))
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        chunks = [type(c).from_arrays(c.offsets, pa.array(fn(c.flatten().to_numpy(
            zero_copy_only=False)), from_pandas=True), mask=c.is_null()) for c in arr.chunks]
        return pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks)),
                         index=col.index)
    return pd.Series(fn(col.to_numpy(dtype=np.float64 if arr.null_count else None,
                                      na_value=np.nan)), index=col.index)


def log_float32(col: Any) -> Any:
    """``log(float32(x) + 1)`` in float32, as NVTabular's ``LogOp`` (nulls give NaN); a list
    column element by element."""
    if isinstance(col, pd.Series):
        return _elementwise(col, lambda v: np.log(v.astype(np.float32) + np.float32(1)))
    return np.log(col.astype("float32") + 1)  # cuDF: the same ufunc on the device


def hash_ids(col: Any) -> Any:
    """The core's hash ids ``2 + hash % n`` as NVTabular's ``hash % n`` (nulls stay null)."""
    if isinstance(col, pd.Series):
        return _elementwise(col, lambda v: v - 2)
    return col - 2  # cuDF


def LogOp() -> _ops.LambdaOp:
    """NVTabular's ``LogOp``: computed in float32 (the core's ``LogOp`` computes in float64
    and rounds once, up to 1.6e-5 closer to the exact value)."""
    return _ops.LambdaOp(log_float32, add_tags=["continuous"])


def _out_dtype(out_dtype: Any) -> dict[str, str]:
    return {} if out_dtype is None else {"out_dtype": dtype_name_of(out_dtype)}


def Normalize(out_dtype: Any = None, **kwargs: Any) -> _ops.Normalize:
    """NVTabular's ``Normalize``: divides by the sample std (``ddof=1``, Dask's ``std()``);
    the core's default is the population one. ``out_dtype`` (``np.float32`` or
    ``np.float64``): the values computed in float64, cast to it, as NVTabular; without it
    float32 here (NVTabular: float64)."""
    return _ops.Normalize(**{"ddof": 1, **kwargs, **_out_dtype(out_dtype)})


def NormalizeMinMax(out_dtype: Any = None) -> _ops.NormalizeMinMax:
    """NVTabular's ``NormalizeMinMax``: ``out_dtype`` as :func:`Normalize`'s."""
    return _ops.NormalizeMinMax(**_out_dtype(out_dtype))


def ReduceDtypeSize(float_dtype: Any = np.float32) -> _ops.ReduceDtypeSize:
    """NVTabular's ``ReduceDtypeSize``: integers to the smallest type holding their range,
    floats to float32 (``float_dtype``'s default, the only one here; a float column beyond
    float32's range stays float64 where NVTabular makes it inf)."""
    if dtype_name_of(float_dtype) != "float32":
        raise ParameterError(
            f"NVTabular's ReduceDtypeSize(float_dtype={float_dtype!r}) is not supported: "
            "floats become float32 here. To keep float columns as they are, select only the "
            "integer columns for it, e.g. ['a', 'b'] >> ReduceDtypeSize() + ['x']; for "
            "float16, add >> LambdaOp('x', dtype='float16') after it.")
    return _ops.ReduceDtypeSize()


#: NVTabular's ``ExtData`` formats of a JoinExternal side table: the port infers the format
#: from the table itself, so ``kind_ext`` only has to agree with it.
EXT_KINDS = ("DATASET", "ARROW", "CUDF", "PANDAS", "DASK_CUDF", "DASK_PANDAS", "PARQUET",
             "CSV")


def JoinExternal(df_ext: Any, on: Any, how: str = "left", on_ext: Any = None,
                 columns_ext: Sequence[str] | None = None, drop_duplicates_ext: Any = None,
                 kind_ext: Any = None, cache: str = "host", **kwargs: Any) -> _ops.JoinExternal:
    """NVTabular's ``JoinExternal``:

    * ``on_ext`` (the side table's key names, when they differ from ``on``): the side table
      gets copies of those columns under the ``on`` names, and the join is on ``on``; the
      side table's own key columns are still added (as pandas' ``merge(left_on=,
      right_on=)`` gives them);
    * ``drop_duplicates_ext=True``: the side table's duplicate rows (of the columns used)
      are dropped before the join, as there; without it a key twice is refused by name;
    * ``kind_ext`` (``ExtData``) has no effect: the format is inferred from ``df_ext``
      (a csv file is read with pandas here, as NVTabular reads it); ``cache`` (where the
      table stays between partitions) has no effect: each worker reads it once.
    """
    if kwargs:
        raise ParameterError(f"JoinExternal got {sorted(kwargs)}, which NVTabular 23.08 stores "
                             "without using; remove them.")
    kind = getattr(kind_ext, "name", kind_ext)
    if kind is not None and str(kind).upper() not in EXT_KINDS:
        raise ParameterError(f"JoinExternal(kind_ext={kind_ext!r}) is not one of NVTabular's "
                             f"ExtData formats {EXT_KINDS}; leave it out (the format is "
                             "inferred here).")
    if cache not in ("host", "device", "disk"):
        raise ParameterError(f"JoinExternal(cache={cache!r}) must be 'host', 'device' or "
                             "'disk' (it has no effect here).")
    keys = [on] if isinstance(on, str) else list(on)
    ext_keys = keys if on_ext is None else ([on_ext] if isinstance(on_ext, str) else list(on_ext))
    if len(ext_keys) != len(keys):
        raise ParameterError(f"JoinExternal: on_ext={on_ext!r} must name as many columns as "
                             f"on={on!r}.")
    if ext_keys != keys or drop_duplicates_ext or _is_csv(df_ext, kind) \
            or hasattr(df_ext, "to_ddf"):
        table = _side_frame(df_ext, kind)
        if columns_ext is not None:
            table = table[list(dict.fromkeys([*ext_keys, *columns_ext]))]
        if drop_duplicates_ext:
            table = table.drop_duplicates(ignore_index=True)
        if ext_keys != keys:
            clash = [k for k, e in zip(keys, ext_keys, strict=True) if k != e and k in table]
            if clash:
                raise ParameterError(f"JoinExternal: the side table has a column {clash[0]!r} "
                                     f"besides its key {ext_keys[keys.index(clash[0])]!r} "
                                     "(on_ext); rename one of them first.")
            table = table.assign(**{k: table[e] for k, e in zip(keys, ext_keys, strict=True)})
            if columns_ext is not None:
                columns_ext = list(dict.fromkeys([*keys, *columns_ext]))
        df_ext = table
    return _ops.JoinExternal(df_ext, on, how=how, columns_ext=None if columns_ext is None
                             else list(columns_ext))


def _is_csv(df_ext: Any, kind: Any) -> bool:
    """Whether a side table is a csv file (NVTabular's ``ExtData.CSV``)."""
    return isinstance(df_ext, str | os.PathLike) and (
        str(kind).upper() == "CSV" or os.fspath(df_ext).endswith((".csv", ".tsv")))


def _side_frame(df_ext: Any, kind: Any) -> Any:
    """A JoinExternal side table as a pandas (or cuDF) frame, to edit before the join."""
    if isinstance(df_ext, pa.Table):
        return df_ext.to_pandas()
    if hasattr(df_ext, "columns") and hasattr(df_ext, "iloc"):
        return df_ext
    if hasattr(df_ext, "to_ddf"):  # an nvt.Dataset
        frame, = jobs.compute(df_ext.to_ddf(), phase="JoinExternal: side table")
        return frame
    if isinstance(df_ext, str | os.PathLike):
        read = pd.read_csv if _is_csv(df_ext, kind) else pd.read_parquet
        return read(os.fspath(df_ext))
    raise ParameterError(f"JoinExternal's df_ext must be a DataFrame, an Arrow table, an "
                         f"nvt.Dataset or a parquet/csv path; got {type(df_ext).__name__}.")


def get_embedding_sizes(source: Any, output_dtypes: Any = None) -> Any:
    """NVTabular's ``get_embedding_sizes``: ``{column: (cardinality, dim)}``, or the pair
    ``(single_hot, multi_hot)`` when list columns are categorical outputs."""
    schema = source if isinstance(source, Schema) else source.output_schema
    sizes = embedding_sizes(schema)
    multi = {n: s for n, s in sizes.items() if schema[n].is_list}
    if not multi:
        return sizes
    return {n: s for n, s in sizes.items() if n not in multi}, multi


def __getattr__(name: str) -> Any:
    """Every other operator: this project's own."""
    if name == "ColumnSimilarity":  # scipy is imported only by who asks for it
        from interactive_recsys.compat.nvtabular.column_similarity import (  # lazy: scipy
            ColumnSimilarity,
        )

        return ColumnSimilarity
    try:
        return getattr(_ops, name)
    except AttributeError:
        raise AttributeError(f"{__name__} has no operator {name!r}") from None


__all__ = [
    "AddMetadata",
    "AddProperties",
    "AddTags",
    "Bucketize",
    "Categorify",
    "DifferenceLag",
    "Filter",
    "Groupby",
    "HashBucket",
    "HashedCross",
    "JoinExternal",
    "JoinGroupby",
    "LambdaOp",
    "ListSlice",
    "LogOp",
    "Normalize",
    "NormalizeMinMax",
    "ReduceDtypeSize",
    "Rename",
    "Steps",
    "TagAsItemFeatures",
    "TagAsItemID",
    "TagAsUserFeatures",
    "TagAsUserID",
    "TargetEncoding",
    "get_embedding_sizes",
]
