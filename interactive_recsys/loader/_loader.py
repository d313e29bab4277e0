"""``irs.Loader``: batches of processed data for training, read and collated ahead.

Examples
--------
>>> import tempfile, numpy as np, pandas as pd
>>> import interactive_recsys as irs
>>> df = pd.DataFrame({"C1": np.arange(10) % 3, "I1": np.linspace(0, 1, 10),
...                    "label": np.arange(10) % 2})
>>> path = tempfile.mkdtemp() + "/train"
>>> _ = irs.Dataset(df, tags={"C1": ["categorical"], "I1": ["continuous"],
...                           "label": ["target"]}).to_parquet(path)
>>> loader = irs.Loader(path, batch_size=4, shuffle=False, output="numpy")
>>> len(loader)
3
>>> batch = next(iter(loader))
>>> batch.dense.shape, batch.labels.tolist()
((4, 1), [0.0, 1.0, 0.0, 1.0])
>>> batch.sparse.keys, batch.sparse.values.tolist(), batch.sparse.length_per_key
(['C1'], [0, 1, 2, 0], [4])
"""

from __future__ import annotations

import importlib.util
import math
import os
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from interactive_recsys.errors import ParameterError
from interactive_recsys.loader._batch import Batch
from interactive_recsys.loader._block import Block, block_from_table
from interactive_recsys.loader._collate import Batcher
from interactive_recsys.loader._columns import Columns, resolve_columns
from interactive_recsys.loader._online import OnlineTransform
from interactive_recsys.loader._pipeline import BatchIterator, run_inline
from interactive_recsys.loader._reader import DatasetSource, ParquetSource, open_source
from interactive_recsys.loader._shuffle import (
    Piece,
    partition_order,
    row_rng,
    shard_pieces,
    shard_rows,
)
from interactive_recsys.loader._transfer import check_device, device_stages
from interactive_recsys.params import Param, param_error, validate_params
from interactive_recsys.workflow._workflow import Workflow

OUTPUTS = ("auto", "numpy", "torch")
TRANSFORM_AT = ("auto", "batch", "read")
#: Rows shuffled together by default (at least 4 batches).
DEFAULT_WINDOW = 2**18


class Loader:
    """Iterate over training batches of a processed dataset.

    Each batch (:class:`~interactive_recsys.loader._batch.Batch`) has a dense float32 block
    ``[B, n_cont]`` of the continuous columns, the labels, and the categorical columns as a
    :class:`~interactive_recsys.loader._jagged.JaggedBatch` (single-hot columns are rows of
    length 1, ``list<int>`` columns are multi-hot) whose ``length_per_key`` /
    ``offset_per_key`` are computed on the CPU, so ``batch.sparse.to_torchrec()`` builds a
    TorchRec ``KeyedJaggedTensor`` without a device synchronization.

    Reading (parquet row groups), collating and the copy to the device run in background
    threads connected by bounded queues; see ``_pipeline``.

    Parameters
    ----------
    source : str, path, list of paths, dict or Dataset
        A directory written by ``to_parquet`` (its ``_schema.json`` tags give the default
        column roles), parquet files, the dict ``to_parquet`` returns, or an
        :class:`~interactive_recsys.io._dataset.Dataset` such as ``workflow.transform(ds)``.
    batch_size : int
        Rows per batch.
    shuffle : bool, default True
        Shuffle the partitions' order and the rows within windows of ``shuffle_window`` rows,
        differently every epoch, deterministically for ``seed``.
    seed : int, default 0
        Seed of the shuffles (use the same on every rank).
    drop_last : bool, default False
        Drop each epoch's last batch when it has fewer than ``batch_size`` rows.
    epochs : int or None, default 1
        Epochs per ``iter(loader)``; None repeats forever. Each new iteration continues with
        the next epoch numbers (new shuffles); see :meth:`set_epoch`.
    device : str or torch.device, optional
        Where tensors go (``"cuda:0"``: pinned memory and asynchronous copies on a side
        stream). Needs PyTorch.
    cat_cols, cont_cols, label_cols : list of str, optional
        Default: the columns tagged ``categorical``, ``continuous`` and ``target``.
    extra_cols : list of str, optional
        Numeric columns passed through unchanged in ``batch.extras`` (e.g. row ids).
    rank, world_size : int, default 0 and 1
        Data-parallel shard: every rank gets a disjoint, equally long share of each epoch
        (``rows // world_size`` rows; the remainder, fewer than ``world_size`` rows, is
        left out of that epoch).
    shuffle_window : int, optional
        Rows shuffled together (default ``max(262144, 4 * batch_size)``); memory grows with it.
    output : {"auto", "numpy", "torch"}, default "auto"
        Array type of the batches; ``"auto"`` is torch when PyTorch is installed.
    label_dtype : str or None, default "float32"
        dtype of the labels; None keeps the columns' own.
    readers : int, default 2
        Reader threads; 0 runs every stage in the consumer's thread, one after the other
        (no background threads: for debugging and profiling).
    prefetch : int, default 2
        Partitions read ahead, and batches held by each queue.
    cache : bool, default False
        Keep every partition in memory, decoded, after its first read (for data that fits
        in RAM): later epochs skip parquet reading and decoding. Cached arrays are
        read-only; batches never share writable memory with them.
    storage_options : dict, optional
        fsspec options when ``source`` is a URL (``s3://bucket/train``): row groups are then
        read from the store by the reader threads. An output folder whose ``_SUCCESS``
        manifest is incomplete is refused.
    workflow : Workflow, str or path, optional
        A fitted workflow, or the folder a fitted one was saved to (``wf.save(path)``, as
        ``irs run`` takes; a URL is opened with ``storage_options``): ``source`` is then the
        *raw* data, and the workflow's per-row steps
        (Categorify, HashBucket, FillMissing, FillMedian, Clip, LogOp, Normalize,
        NormalizeMinMax) are applied to every batch with PyTorch on ``device`` (the online
        transform, ``_online``): the same ids and values as ``workflow.transform(source)``
        read by a loader, without writing that copy. Column roles come from the workflow's
        output schema. Any other step is refused by name (run it offline). Needs PyTorch
        (the batches may still be NumPy arrays with ``transform_at="read"``).
    transform_at : {"auto", "batch", "read"}, default "auto"
        Where ``workflow`` runs: ``"batch"``, on each batch on ``device`` after the copy (on
        a GPU: on the copy stream, overlapping the training step); ``"read"``, on each row
        group in the reader threads on the CPU, before ``cache`` keeps it (later epochs then
        cost what pre-processed data costs). ``"auto"``: ``"batch"`` on an accelerator,
        ``"read"`` on the CPU. Both give the same batches.
    """

    @validate_params({
        "batch_size": Param(kind="int", low=1), "seed": Param(kind="int", low=0),
        "epochs": Param(kind="int", low=1, nullable=True, must="an integer >= 1"),
        "world_size": Param(kind="int", low=1), "rank": Param(kind="int", low=0),
        "shuffle_window": Param(kind="int", low=1, nullable=True, must="an integer >= 1"),
        "readers": Param(kind="int", low=0), "prefetch": Param(kind="int", low=1),
        "output": Param(choices=OUTPUTS, must=f"one of {OUTPUTS}"),
        "transform_at": Param(choices=TRANSFORM_AT, must=f"one of {TRANSFORM_AT}"),
    })
    def __init__(self, source: Any, batch_size: int, *, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False, epochs: int | None = 1, device: Any = None,
                 cat_cols: Sequence[str] | None = None, cont_cols: Sequence[str] | None = None,
                 label_cols: Sequence[str] | None = None,
                 extra_cols: Sequence[str] | None = None, rank: int = 0, world_size: int = 1,
                 shuffle_window: int | None = None, output: str = "auto",
                 label_dtype: str | None = "float32", readers: int = 2,
                 prefetch: int = 2, cache: bool = False,
                 storage_options: dict[str, Any] | None = None, workflow: Any = None,
                 transform_at: str = "auto") -> None:
        if rank >= world_size:
            raise param_error("rank", None, "must be in [0, world_size - 1] = "
                              f"[0, {world_size - 1}]. Got {rank!r} instead.")
        if label_dtype is not None:
            try:
                label_dtype = np.dtype(label_dtype).name
            except TypeError:
                raise param_error("label_dtype", None, "must be a NumPy dtype name such as "
                                  f"'float32' or None. Got {label_dtype!r} instead.") from None
        torch_found = torch_available()
        if output == "auto":
            output = "torch" if torch_found else "numpy"
        if output == "torch" and not torch_found:
            raise ParameterError("output='torch' needs PyTorch (pip install torch); use "
                                 "output='numpy' for NumPy batches.")
        if device is not None and output != "torch":
            raise ParameterError(f"device={device!r} needs torch tensors; pass output='torch' "
                                 "(and install PyTorch) or leave device=None.")
        if device is not None:
            check_device(device)
        if workflow is not None:
            check_workflow_type(workflow)
            if not torch_found:
                raise ParameterError("workflow=... applies the workflow with PyTorch; install "
                                     "PyTorch (pip install torch).")
            workflow = loaded_workflow(workflow, storage_options)
        self.source: ParquetSource | DatasetSource = open_source(source, storage_options)
        #: the online transform of ``workflow`` (None: the source is processed data)
        self.online: OnlineTransform | None = None
        if workflow is not None:
            self.online = OnlineTransform(workflow, self.source.schema, cat_cols, cont_cols,
                                          label_cols, extra_cols)
            self.columns: Columns = self.online.columns
            self.source.check_columns(self.online.input_columns)
            if transform_at == "auto":
                accelerator = device is not None and str(device).split(":")[0] != "cpu"
                transform_at = "batch" if accelerator else "read"
            if transform_at == "batch" and output != "torch":
                raise ParameterError("transform_at='batch' transforms torch batches; pass "
                                     "output='torch' or transform_at='read'.")
        else:
            self.columns = resolve_columns(self.source.schema, cat_cols, cont_cols,
                                           label_cols, extra_cols)
            self.source.check_columns(self.columns.names)
        self.batch_size, self.shuffle, self.seed = batch_size, bool(shuffle), seed
        self.drop_last, self.epochs, self.device = bool(drop_last), epochs, device
        self.rank, self.world_size = rank, world_size
        self.shuffle_window = (max(DEFAULT_WINDOW, 4 * batch_size) if shuffle_window is None
                               else shuffle_window)
        self.output, self.label_dtype = output, label_dtype
        self.readers, self.prefetch = readers, prefetch
        self.cache = bool(cache)
        #: where the online transform runs ("read" or "batch"; None without a workflow)
        self.transform_at = None if self.online is None else transform_at
        self._cache: dict[int, Block] = {}
        self._next_epoch = 0
        self._iterators: weakref.WeakSet[BatchIterator] = weakref.WeakSet()
        if world_size > 1:
            self.source.count_rows()

    # ---- sizes ---------------------------------------------------------------------------
    @property
    def schema(self) -> Any:
        """The schema of the batches' columns (names, dtypes, tags, cardinalities): the
        source's, or the workflow's output schema with ``workflow=``."""
        return self.source.schema if self.online is None else self.online.output_schema

    @property
    def rows_per_epoch(self) -> int:
        """Rows this rank gets per epoch."""
        return shard_rows(self.source.num_rows, self.world_size)

    @property
    def batches_per_epoch(self) -> int:
        """Batches this rank gets per epoch (the same on every rank)."""
        rows = self.rows_per_epoch
        return rows // self.batch_size if self.drop_last else math.ceil(rows / self.batch_size)

    def __len__(self) -> int:
        """Batches in one ``iter(loader)`` (``epochs`` epochs)."""
        if self.epochs is None:
            raise TypeError("A Loader with epochs=None repeats forever and has no length.")
        return self.epochs * self.batches_per_epoch

    @validate_params({"epoch": Param(kind="int", low=0)})
    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter(loader)`` start at epoch ``epoch`` (e.g. when resuming)."""
        self._next_epoch = epoch

    # ---- iteration -----------------------------------------------------------------------
    def __iter__(self) -> Iterator[Batch]:
        first = self._next_epoch
        if self.epochs is not None:
            self._next_epoch += self.epochs
        after = self.online.apply if self.transform_at == "batch" else None
        transfer, finish = (device_stages(self.device, after=after) if self.output == "torch"
                            else (None, None))
        if self.readers == 0:
            return run_inline(self._plan(first), self._read, self._collate_fn(transfer is None),
                              transfer, finish)
        it = BatchIterator(self._plan(first), self._read, self._collate_fn(transfer is None),
                           transfer, finish, readers=self.readers, prefetch=self.prefetch)
        self._iterators.add(it)
        return it

    def close(self) -> None:
        """Stop the background threads of every iterator of this loader still running."""
        for it in list(self._iterators):
            it.close()

    def _plan(self, first: int) -> Iterator[tuple[int, Piece]]:
        epoch = first
        while self.epochs is None or epoch < first + self.epochs:
            order = partition_order(self.source.units, self.seed, epoch, self.shuffle)
            for piece in shard_pieces(self.source.unit_rows, order, self.rank, self.world_size):
                yield epoch, piece
            yield epoch, None  # end of the epoch
            epoch += 1

    def _read(self, item: tuple[int, Piece | None]) -> Block | None:
        _, piece = item
        if piece is None:
            return None
        names = self.columns.names if self.online is None else self.online.input_columns
        if not self.cache:
            table = self.source.read(piece.unit, names, piece.start, piece.stop)
            return self._block(table, self.source.describe(piece.unit))
        block = self._cache.get(piece.unit)
        if block is None:  # the whole partition, whatever the piece
            block = self._block(self.source.read(piece.unit, names),
                                self.source.describe(piece.unit)).read_only()
            self._cache[piece.unit] = block
        stop = block.rows if piece.stop is None else piece.stop
        return block if (piece.start, stop) == (0, block.rows) else block.slice(piece.start, stop)

    def _block(self, table: Any, where: str) -> Block:
        if self.online is not None:  # raw columns, transformed here or per batch
            block = self.online.block(table, self.label_dtype, where)
            return self.online.apply_block(block) if self.transform_at == "read" else block
        return block_from_table(table, self.columns, self.label_dtype, where)

    def _collate_fn(self, to_torch_here: bool) -> Any:
        torch_cpu = self.output == "torch" and to_torch_here
        online = self.online if self.transform_at == "batch" else None

        def to_torch(batch: Batch) -> Batch:
            return batch.to_torch() if online is None else online.apply(batch.to_torch())

        def collate(blocks: Iterator[tuple[tuple[int, Piece | None], Block | None]]
                    ) -> Iterator[Batch]:
            batcher = None
            for (epoch, _), block in blocks:
                if batcher is None:
                    batcher = Batcher(self.batch_size, self.drop_last,
                                      self.shuffle_window if self.shuffle else 0,
                                      row_rng(self.seed, epoch, self.rank))
                produced = batcher.add(block) if block is not None else batcher.finish()
                for batch in produced:
                    yield to_torch(batch) if torch_cpu else batch
                if block is None:
                    batcher = None

        return collate

    def __repr__(self) -> str:
        c = self.columns
        return (f"Loader({self.source!r}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, epochs={self.epochs}, rank={self.rank}/"
                f"{self.world_size}, cat={len(c.cat)} ({sum(c.multi_hot)} multi-hot), "
                f"cont={len(c.cont)}, labels={list(c.label)}, output={self.output!r}"
                + (f", device={self.device!r}" if self.device is not None else "")
                + (f", online transform at {self.transform_at!r}" if self.online is not None
                   else "") + ")")


def check_workflow_type(workflow: Any) -> None:
    """Refuse (``TypeError``) a ``workflow`` that is neither a Workflow nor a path."""
    if isinstance(workflow, Workflow | str | os.PathLike):
        return
    hint = (" The data is the first argument, source." if hasattr(workflow, "columns")
            or type(workflow).__name__ == "Dataset" else "")
    raise param_error("workflow", "Loader", "must be a fitted irs.Workflow or the path of a "
                      "folder it was saved to (wf.save(path), as `irs run` takes). Got a value of "
                      f"type {type(workflow).__name__!r} instead.{hint}", error=TypeError)


def loaded_workflow(workflow: Workflow | str | os.PathLike,
                    storage_options: dict[str, Any] | None) -> Workflow:
    """``workflow``, or the workflow saved in the folder it names (as ``irs run`` loads it)."""
    if isinstance(workflow, Workflow):
        return workflow
    return Workflow.load(workflow, storage_options=storage_options)


def torch_available() -> bool:
    """Whether PyTorch can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # e.g. sys.modules["torch"] = None
        return False

