"""The online transform: a fitted workflow's per-row steps applied to each batch, on its device.

``irs.Loader(raw_data, batch_size, workflow=wf, device="cuda")`` reads the *raw* columns,
cuts them into batches as the loader always does, and applies the fitted workflow's steps
to every batch with PyTorch on the batch's device (on a GPU: on the loader's copy stream,
after the copy, with no host synchronization). The offline copy that
``wf.transform(ds).to_parquet(path)`` writes is then optional.

What runs where:

* **CPU, in the reader threads** (once per row group; with ``cache=True`` once in all):
  numeric columns are read as they are (continuous ones as int32 when they are all integer
  columns whose values fit, nulls as ``NULL_INT32``, else as float64, nulls as NaN; the
  device widens either to the same float64 values; categorical ones as int64, or a float's
  float64 bits) and every null of a categorical column is one bit of a per-row int64 word.
  String columns cannot go to a GPU tensor: they are hashed here with the value-defined hash
  of :mod:`~interactive_recsys.hashing` (the offline lookup's hash) and travel as int64
  hashes. A vocabulary of strings of one common length of at most 8 bytes (Criteo's ids) is
  then looked up by hash alone, on the device, and a value of another length is flagged out
  of the vocabulary here (one more bit); a vocabulary whose hashes do not identify its
  strings (mixed lengths, longer strings) is looked up here, exactly as offline, and its ids
  travel instead.
* **The batch's device**: Categorify (hash, ``searchsorted`` in the vocabulary's sorted
  hashes, out-of-vocabulary buckets, null id), HashBucket, FillMissing, FillMedian, Clip,
  LogOp, Normalize and NormalizeMinMax, column by column (:mod:`.kernels`).

Exactness against the offline output, batch for batch (the property tests compare them):

* ids (Categorify, HashBucket): identical, OOV and null ids included (integer arithmetic);
* FillMissing, FillMedian, Clip: identical (the same comparisons and values);
* Normalize, NormalizeMinMax: identical: ``(x - shift) / scale`` in float64 rounds the same
  under IEEE 754 on every device (the scale is a tensor, so no reciprocal is substituted),
  then float32;
* LogOp: within 1 ulp of float32: ``log1p`` is computed in float64 by the device's math
  library, not NumPy's, then rounded to float32 (nearly always the same float32).

Continuous integer columns are carried as int32 or float64: values beyond ``2**53`` are
refused when read. Steps that need more than the row (shuffles and groupbys, joins, row
filters, target encoding, user functions) have no ``online`` flag
(:attr:`~..ops.base.Operator.online`) and are refused by name: run them offline.

Examples
--------
>>> import tempfile, numpy as np, pandas as pd
>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> raw = pd.DataFrame({"c": ["a", "b", "a", None], "x": [1.0, None, 3.0, 4.0],
...                     "label": [0, 1, 0, 1]})
>>> path = tempfile.mkdtemp() + "/raw"
>>> _ = irs.Dataset(raw).to_parquet(path)
>>> cats = ["c"] >> ops.Categorify()
>>> conts = ["x"] >> ops.FillMissing(0) >> ops.Normalize()
>>> wf = irs.Workflow(cats + conts + ["label"])
>>> _ = wf.fit(irs.Dataset(path, tags={"label": ["target"]}))
>>> batch = next(iter(irs.Loader(path, 4, workflow=wf, shuffle=False)))
>>> batch.sparse.values.tolist(), batch.labels.tolist()
([3, 4, 3, 1], [0.0, 1.0, 0.0, 1.0])
>>> [round(v, 4) for v in batch.dense[:, 0].tolist()]
[-0.6325, -1.2649, 0.6325, 1.2649]
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.errors import DatasetError, SchemaError
from interactive_recsys.hashing import hash_array
from interactive_recsys.loader import _groups as groups
from interactive_recsys.loader._batch import Batch
from interactive_recsys.loader._block import (
    NULL_INT32,
    Block,
    _common_dtype,
    _fill_column,
    _no_nulls,
    _numbers,
)
from interactive_recsys.loader._columns import Columns, resolve_columns
from interactive_recsys.loader._jagged import JaggedBatch
from interactive_recsys.schema import Schema, is_float_dtype, is_integer_dtype, is_list_dtype
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._context import RunFacts
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX
from interactive_recsys.workflow._per_row import (
    Chain,
    _device_table,
    _traces,
    _why,
    _widths,
    compiled_steps,
    refusal,
)
from interactive_recsys.workflow._per_row import online_operators as online_operators
from interactive_recsys.workflow._plan import OpStep, Plan

#: Name of the extras that carry the null (and out-of-vocabulary) bits: word ``w`` holds
#: bits ``64 w`` to ``64 w + 63``.
WORD = "\0online-bits-"
#: Largest integer that a float64 holds exactly (continuous integer columns travel so).
EXACT_INT = 2**53
INT32_MAX = 2**31 - 1


class OnlineTransform:
    """A fitted workflow compiled for the loader: what to read, and what to run per batch.

    Parameters
    ----------
    workflow : a fitted :class:`~interactive_recsys.workflow._workflow.Workflow`.
    schema : the raw data's schema.
    cat_cols, cont_cols, label_cols, extra_cols : the loader's column roles among the
        workflow's output columns (default: from the output schema's tags).
    """

    def __init__(self, workflow: Any, schema: Schema, cat_cols: Sequence[str] | None = None,
                 cont_cols: Sequence[str] | None = None,
                 label_cols: Sequence[str] | None = None,
                 extra_cols: Sequence[str] | None = None) -> None:
        workflow._check_fitted()
        workflow._check_types_since_fit(schema)
        fitted = workflow.input_schema  # its tags (e.g. the target) where the raw files have none
        schema = Schema(c.with_tags(add=fitted[c.name].tags) if c.name in fitted else c
                        for c in schema.values())
        plan = workflow._plan(workflow._checked_input(schema), "cpu", RunFacts(training=False))
        for step in plan.steps:  # refused before anything else: a row-changing step too
            if isinstance(step, OpStep) and not (type(step.op).online
                                                 or type(step.op).schema_only):
                raise refusal(step.op, step.node_id, _why(step.op))
        self.output_schema: Schema = plan.steps[-1].schema
        self.columns: Columns = resolve_columns(self.output_schema, cat_cols, cont_cols,
                                                label_cols, extra_cols)
        traces = _traces(plan)
        self.raw_schema = schema
        bits = 0
        self.cat: list[Chain] = []
        self.cont: list[Chain] = []
        for name, multi in zip(self.columns.cat, self.columns.multi_hot, strict=True):
            if multi:
                raise SchemaError(f"The online transform reads single-hot categorical columns; "
                                  f"{name!r} is a list column. Run this workflow offline.")
            chain, bits = self._chain(plan, name, traces[name], bits, categorical=True)
            self.cat.append(chain)
        for name in self.columns.cont:
            chain, bits = self._chain(plan, name, traces[name], bits, categorical=False)
            self.cont.append(chain)
        self.words = max(1, -(-bits // 64)) if bits else 0
        self.cat_groups = groups.build_groups(self.cat, categorical=True)
        self.cont_groups = groups.build_groups(self.cont, categorical=False)
        self.passed: dict[str, str] = {}  # labels and extras: raw column, unchanged
        for name in (*self.columns.label, *self.columns.extra):
            source, ops = traces[name]
            if ops:
                op, step, _ = ops[0]
                raise refusal(op, step.node_id, f"it computes {name!r}, a label or extra "
                              "column, which the online transform passes through unchanged")
            self.passed[name] = source
        self.input_columns: list[str] = list(dict.fromkeys(
            [c.source for c in (*self.cat, *self.cont)] + list(self.passed.values())))
        self._device_state: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _chain(self, plan: Plan, name: str, trace: tuple[str, list], bits: int,
               categorical: bool) -> tuple[Chain, int]:
        source, ops = trace
        dtype = self.raw_schema[source].dtype
        if is_list_dtype(dtype):
            raise SchemaError(f"The online transform reads single-value columns; {source!r} "
                              f"is {dtype}. Run this workflow offline.")
        chain = Chain(name, source, dtype)
        steps = compiled_steps(plan, ops, dtype, name)
        for compiled, (op, _, _) in zip(steps, ops, strict=True):
            if not categorical and compiled[0] in ("categorify", "hash_bucket"):
                raise SchemaError(f"Column {name!r} is encoded as ids ({op!r}) but listed as "
                                  "continuous; pass it in cat_cols.")
        string = not (is_integer_dtype(dtype) or is_float_dtype(dtype) or dtype == "bool")
        if string and (not steps or steps[0][0] not in ("categorify", "hash_bucket")):
            raise SchemaError(f"The online transform cannot bring column {source!r} "
                              f"({dtype}) to a device: encode it first (Categorify or "
                              "HashBucket).")
        if string and steps[0][0] == "categorify":
            tables, buckets = steps[0][1], steps[0][2]
            table, widths = _device_table(tables), _widths(tables)
            if table is None or len(widths) > 1:
                chain.cpu_lookup = (tables, buckets)  # exact lookup by value, on the CPU
                steps = steps[1:]
            else:
                chain.width = widths.pop() if widths else None
                steps[0] = ("categorify", table, buckets)
        steps = [("categorify", self._numeric_table(s[1], name), s[2])
                 if s[0] == "categorify" else s for s in steps]
        chain.clears_nulls = chain.cpu_lookup is not None or any(
            s[0] in ("fill", "categorify", "hash_bucket") for s in steps)
        if categorical and chain.cpu_lookup is None and (string or is_integer_dtype(dtype)
                                                         or dtype == "bool"):
            chain.null_bit, bits = bits, bits + 1
        if chain.width is not None:
            chain.absent_bit, bits = bits, bits + 1
        chain.steps = steps
        return chain, bits

    @staticmethod
    def _numeric_table(tables: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(tables, tuple):
            return tables
        table = _device_table(tables)
        if table is None:
            raise SchemaError(f"The vocabulary of column {name!r} cannot be looked up by hash "
                              "alone; run this workflow offline.")
        return table

    # ---- CPU: raw rows into a block ---------------------------------------------------------
    def block(self, table: pa.Table, label_dtype: Any, where: str) -> Block:
        """The raw rows of ``table`` in the loader's layout: continuous sources as int32 or
        float64 (:meth:`_dense`), categorical ones as int64 (hashes for strings), null bits
        in the extras."""
        n = table.num_rows
        dense = self._dense(table, where)
        single = np.empty((n, len(self.cat)), np.int64)
        words = np.zeros((self.words, n), np.int64)
        for j, chain in enumerate(self.cat):
            col = table.column(chain.source)
            single[:, j] = self._keys(chain, col, where)
            if chain.null_bit is not None and col.null_count:
                _set_bit(words, chain.null_bit, pc.is_null(col).to_numpy(zero_copy_only=False))
            if chain.absent_bit is not None:
                lengths = pc.fill_null(pc.binary_length(col), chain.width)
                other = lengths.to_numpy(zero_copy_only=False) != chain.width
                if other.any():
                    _set_bit(words, chain.absent_bit, other)
        labels = np.empty((n, len(self.columns.label)),
                          label_dtype or _common_dtype(table, self.columns.label))
        for j, name in enumerate(self.columns.label):
            col = table.column(self.passed[name])
            _no_nulls(col, name, "Label", where, "Drop those rows first (ops.Dropna()).")
            labels[:, j] = _numbers(col, labels.dtype)
        extras = {name: np.array(table.column(self.passed[name]).to_numpy(zero_copy_only=False),
                                 copy=True) for name in self.columns.extra}
        extras.update({f"{WORD}{w}": words[w] for w in range(self.words)})
        return Block(self.columns, n, dense, labels, single, (), (), extras)

    def _dense(self, table: pa.Table, where: str) -> np.ndarray:
        """The continuous sources side by side: int32 (nulls as ``NULL_INT32``) when they
        are all integer columns whose values fit, else float64 (nulls as NaN); both give
        the same float64 values on the device."""
        narrow = all(is_integer_dtype(c.dtype) for c in self.cont)
        ranges = []
        for chain in self.cont:
            col = table.column(chain.source)
            lo = hi = 0
            if is_integer_dtype(chain.dtype) and col.null_count < len(col):
                lo, hi = (v.as_py() for v in pc.min_max(col).values())
                if max(abs(lo), abs(hi)) > EXACT_INT:
                    raise DatasetError(f"Column {chain.source!r} holds integers beyond 2**53 "
                                       f"in {where}, which the online transform cannot carry "
                                       "exactly as float64. Run this workflow offline.")
            narrow = narrow and NULL_INT32 < lo and hi <= INT32_MAX
            ranges.append(col)
        dense = np.empty((table.num_rows, len(self.cont)), np.int32 if narrow else np.float64)
        for j, col in enumerate(ranges):
            if narrow:
                if col.null_count:
                    col = pc.fill_null(col, NULL_INT32)
                _fill_column(dense, j, _numbers(col, np.int32))
            else:
                _fill_column(dense, j, _numbers(col, np.float64))
        return dense

    def _keys(self, chain: Chain, col: pa.ChunkedArray, where: str) -> np.ndarray:
        """The int64 a categorical source travels as."""
        dtype = chain.dtype
        if chain.cpu_lookup is not None:
            return _cpu_categorify(col, *chain.cpu_lookup)
        if not chain.clears_nulls and col.null_count:
            _no_nulls(col, chain.output, "Categorical", where, "Encode nulls as ids first "
                      "(ops.Categorify() maps them to 1, or ops.FillMissing()).")
        if is_float_dtype(dtype):
            return _numbers(col, np.float64).view(np.int64)
        if is_integer_dtype(dtype) or dtype == "bool":
            if col.null_count:
                col = pc.fill_null(col, 0)
            return _numbers(col, np.int64)
        return hash_array(col).view(np.int64)

    # ---- the device: one batch --------------------------------------------------------------
    def _state(self, device: Any) -> dict[str, Any]:
        """Each group's constants and vocabularies as tensors on ``device`` (copied once)."""
        import torch

        key = str(device)
        with self._lock:
            state = self._device_state.get(key)
            if state is None:
                cuda = torch.device(device).type == "cuda"
                pinned: list[Any] = []

                def put(t: Any) -> Any:
                    if not cuda:
                        return t.clone()
                    t = t.pin_memory()
                    pinned.append(t)  # alive until copied
                    return t.to(device, non_blocking=True)

                state = {"cat": [g.tensors(device, False, put) for g in self.cat_groups],
                         "cont": [g.tensors(device, True, put) for g in self.cont_groups],
                         "pinned": pinned}
                if cuda:  # later batches may run on other streams: they wait for the copies
                    state["ready"] = torch.cuda.Event()
                    state["ready"].record(torch.cuda.current_stream(device))
                self._device_state[key] = state
        return state

    def _transform(self, cat: Any, dense: Any, words: list[Any], n: int) -> tuple[Any, Any]:
        """``[n, cats]`` ids and ``[n, conts]`` float32 values of the raw ``cat`` (a
        ``[cats, n]`` int64 view) and ``dense`` (``[n, conts]`` float64, or int32)."""
        import torch

        device = dense.device
        state = self._state(device)
        if "ready" in state:
            torch.cuda.current_stream(device).wait_event(state["ready"])
        w = None if not words else words[0].unsqueeze(0) if len(words) == 1 else torch.stack(words)
        if dense.dtype == torch.int32:  # integer counters (OnlineTransform._dense): exact
            dense = torch.where(dense == NULL_INT32, math.nan, dense.to(torch.float64))
        if len(self.cat_groups) == 1:  # one group of every column in order: no gather
            ids = groups.run(self.cat_groups[0], cat, w, state["cat"][0])
        else:
            ids = torch.empty((len(self.cat), n), dtype=torch.int64, device=device)
            for group, t in zip(self.cat_groups, state["cat"], strict=True):
                x = cat.index_select(0, t["index"])
                ids.index_copy_(0, t["index"], groups.run(group, x, w, t))
        if len(self.cont_groups) == 1:
            values = groups.run(self.cont_groups[0], dense, w, state["cont"][0])
            values = values.to(torch.float32)
        else:
            values = torch.empty((n, len(self.cont)), dtype=torch.float32, device=device)
            for group, t in zip(self.cont_groups, state["cont"], strict=True):
                x = dense.index_select(1, t["index"])
                values.index_copy_(1, t["index"], groups.run(group, x, w, t).to(torch.float32))
        return ids, values

    def apply(self, batch: Batch) -> Batch:
        """The transformed batch: ``batch`` holds raw tensors (:meth:`block`) on its device
        (no value is read back to the host: on a GPU this only queues kernels)."""
        sparse, n = batch.sparse, len(batch)
        words = [batch.extras[f"{WORD}{w}"] for w in range(self.words)]
        ids, values = self._transform(sparse.values.view(len(self.cat), n), batch.dense, words, n)
        jagged = JaggedBatch(list(sparse.keys), ids.view(-1), sparse.lengths, sparse.offsets,
                             list(sparse.length_per_key), list(sparse.offset_per_key),
                             sparse.batch_size)
        extras = {k: v for k, v in batch.extras.items() if not k.startswith(WORD)}
        return Batch(values, batch.labels, jagged, extras, list(batch.dense_names),
                     list(batch.label_names))

    def apply_block(self, block: Block) -> Block:
        """The transformed rows of a raw block (:meth:`block`), with PyTorch on the CPU: the
        loader's ``transform_at="read"`` (in the reader threads, before the cache)."""
        import torch

        words = [torch.from_numpy(block.extras[f"{WORD}{w}"]) for w in range(self.words)]
        ids, values = self._transform(torch.from_numpy(block.single).T,
                                      torch.from_numpy(block.dense), words, block.rows)
        extras = {k: v for k, v in block.extras.items() if not k.startswith(WORD)}
        return Block(block.cols, block.rows, values.numpy(), block.labels,
                     np.ascontiguousarray(ids.numpy().T), (), (), extras)

    def __repr__(self) -> str:
        on_cpu = [c.output for c in self.cat if c.cpu_lookup is not None]
        return (f"OnlineTransform(cat={len(self.cat)}, cont={len(self.cont)}, "
                f"reads={len(self.input_columns)} columns"
                + (f", looked up on the CPU: {on_cpu}" if on_cpu else "") + ")")



def _set_bit(words: np.ndarray, bit: int, mask: np.ndarray) -> None:
    words[bit // 64] |= mask.astype(np.int64) << np.int64(bit % 64)


def _cpu_categorify(col: pa.ChunkedArray, tables: Sequence[vocab.VocabTable],
                    buckets: int | None) -> np.ndarray:
    """Categorify's offline lookup of one column (values checked, not only hashes)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    hashes = hash_array(arr)
    if buckets:
        result = (FIRST_FREE_INDEX + hashes % np.uint64(buckets)).astype(np.int64)
    else:
        result = np.full(len(arr), FIRST_FREE_INDEX, dtype=np.int64)
    result = vocab.split_ids(tables, arr, hashes, result)
    result[pc.is_null(arr, nan_is_null=True).to_numpy(zero_copy_only=False)] = NULL_INDEX
    return result
