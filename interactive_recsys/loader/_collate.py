"""The collate stage: blocks in, fixed-size batches out, rows shuffled within a window.

Blocks arrive in read order. Without shuffling, batches are slices of the blocks (views;
a batch that straddles two blocks is concatenated). With shuffling, consecutive blocks are
held until they hold ``window`` rows; a permutation of the window's rows is drawn and cut
into batches, and each batch is gathered straight from the blocks into its final layout.
Inside a batch the drawn rows keep their window order: the gathers then read memory almost
sequentially (several times faster than a random gather), and the order of the rows inside
a batch does not change a gradient. The rows left over (fewer than a batch) go into the
next window, so every row of the epoch is produced exactly once; the last, shorter batch
of an epoch is kept or dropped (``drop_last``).

Examples
--------
>>> import numpy as np, pyarrow as pa
>>> from interactive_recsys.loader._block import block_from_table
>>> from interactive_recsys.loader._columns import Columns
>>> cols = Columns(("c",), (False,), (), (), ())
>>> blocks = [block_from_table(pa.table({"c": np.arange(i, i + 3)}), cols, None, "t")
...           for i in (0, 3, 6)]
>>> batcher = Batcher(batch_size=4, drop_last=False)
>>> sizes = [len(b) for blk in blocks for b in batcher.add(blk)]
>>> sizes += [len(b) for b in batcher.finish()]
>>> sizes
[4, 4, 1]
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from interactive_recsys.loader._batch import Batch
from interactive_recsys.loader._block import Block, concat_blocks, gather


class Batcher:
    """Cut the blocks of one epoch into batches of ``batch_size`` rows.

    Parameters
    ----------
    batch_size : rows per batch.
    drop_last : drop the epoch's last batch when it is shorter.
    window : rows shuffled together (0: no shuffling).
    rng : the generator of the window permutations (required when ``window > 0``).
    """

    def __init__(self, batch_size: int, drop_last: bool, window: int = 0,
                 rng: np.random.Generator | None = None) -> None:
        if window and rng is None:
            raise ValueError("a shuffling Batcher needs an rng")
        self.batch_size, self.drop_last, self.window, self.rng = batch_size, drop_last, window, rng
        self._pending: list[Block] = []  # blocks waiting to fill a shuffle window
        self._pending_rows = 0
        self._carry: list[Block] = []  # rows not yet in a batch (fewer than batch_size)
        self._carry_rows = 0

    def add(self, block: Block) -> Iterator[Batch]:
        """Batches completed by ``block``."""
        if not self.window:
            yield from self._emit(block)
            return
        self._pending.append(block)
        self._pending_rows += block.rows
        if self._pending_rows >= max(self.window, self.batch_size):
            yield from self._shuffled_window(last=False)

    def finish(self) -> Iterator[Batch]:
        """The batches still held at the end of the epoch."""
        if self._pending:
            yield from self._shuffled_window(last=True)
        if self._carry_rows and not self.drop_last:
            yield concat_blocks(self._carry).to_batch()
        self._carry, self._carry_rows = [], 0

    def _shuffled_window(self, last: bool) -> Iterator[Batch]:
        blocks, rows, size = self._pending, self._pending_rows, self.batch_size
        self._pending, self._pending_rows = [], 0
        full = rows // size
        sorted_batches = _sorted_chunks(self.rng.permutation(rows), size)
        for k in range(full):
            yield gather(blocks, sorted_batches[k * size:(k + 1) * size],
                         key_major=True).to_batch()
        if full * size == rows:
            return
        rest = gather(blocks, sorted_batches[full * size:])
        if not last:  # shuffled again with the next window
            self._pending, self._pending_rows = [rest], rest.rows
        elif not self.drop_last:
            yield rest.to_batch()

    def _emit(self, block: Block) -> Iterator[Batch]:
        size, start = self.batch_size, 0
        if self._carry_rows:
            need = size - self._carry_rows
            if block.rows < need:
                self._carry.append(block)
                self._carry_rows += block.rows
                return
            yield concat_blocks([*self._carry, block.slice(0, need)]).to_batch()
            self._carry, self._carry_rows, start = [], 0, need
        while start + size <= block.rows:
            yield block.to_batch(start, start + size)
            start += size
        if start < block.rows:
            self._carry, self._carry_rows = [block.slice(start, block.rows)], block.rows - start


def _sorted_chunks(order: np.ndarray, size: int) -> np.ndarray:
    """``order`` with each run of ``size`` entries sorted (``order`` is a permutation).

    One stable counting sort of the rows by their chunk number instead of one comparison
    sort per chunk.

    >>> _sorted_chunks(np.array([4, 0, 3, 1, 2]), 2).tolist()
    [0, 4, 1, 3, 2]
    """
    chunk = np.empty(len(order), np.uint16 if len(order) // size < 2**16 else np.int64)
    chunk[order] = np.arange(len(order)) // size
    return np.argsort(chunk, kind="stable")
