"""Threads and bounded queues: read -> collate -> (transfer) -> the consumer.

* reader threads (a pool of ``readers``) read and convert partitions, at most ``prefetch``
  ahead of the collate stage, and hand them over in order;
* the collate thread cuts them into batches and puts them on a queue of ``prefetch``
  batches;
* an optional transfer thread copies each batch to the device (its own CUDA stream) and
  puts it on a second queue of the same size;
* the consumer (the training loop) takes batches from the last queue.

Every stage waits on bounded queues with a stop flag, so :meth:`BatchIterator.close` (also
called when the iterator is exhausted, raises, or is garbage-collected) ends all threads.
An exception in any thread is passed down the queues and raised again in the consumer.

Examples
--------
>>> it = BatchIterator(range(5), read=lambda x: x * 10,
...                    collate=lambda blocks: (b + 1 for _, b in blocks))
>>> list(it)
[1, 11, 21, 31, 41]
"""

from __future__ import annotations

import collections
import itertools
import queue
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

THREAD_PREFIX = "irs-loader"
_POLL_S = 0.05
_counter = itertools.count()


class _End:
    """Put on a queue after the last batch."""


_END = _End()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class _State:
    """What the threads share; never the iterator itself, so that it can be collected."""

    def __init__(self, prefetch: int, transfer: bool) -> None:
        self.stop = threading.Event()
        self.collated: queue.Queue = queue.Queue(maxsize=prefetch)
        self.out: queue.Queue = (queue.Queue(maxsize=prefetch) if transfer else self.collated)
        self.threads: list[threading.Thread] = []

    def put(self, q: queue.Queue, item: Any) -> bool:
        while not self.stop.is_set():
            try:
                q.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def shutdown(self) -> None:
        self.stop.set()
        for q in {id(self.collated): self.collated, id(self.out): self.out}.values():
            _drain(q)
        current = threading.current_thread()
        for t in self.threads:
            if t is not current:
                t.join()


def _drain(q: queue.Queue) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def _ordered_reads(items: Iterable[Any], read: Callable[[Any], Any], pool: ThreadPoolExecutor,
                   depth: int, stop: threading.Event) -> Iterator[tuple[Any, Any]]:
    """``(item, read(item))`` in order, with up to ``depth`` reads running ahead."""
    pending: collections.deque[tuple[Any, Future]] = collections.deque()
    source = iter(items)
    exhausted = False
    while True:
        while not exhausted and len(pending) < depth:
            item = next(source, _END)
            if item is _END:
                exhausted = True
            else:
                pending.append((item, pool.submit(read, item)))
        if not pending:
            return
        item, future = pending.popleft()
        while True:
            if stop.is_set():
                return
            try:
                result = future.result(timeout=_POLL_S)
                break
            except TimeoutError:
                continue
        yield item, result


def _collate_main(state: _State, items: Iterable[Any], read: Callable[[Any], Any],
                  collate: Callable[[Iterator[tuple[Any, Any]]], Iterable[Any]],
                  readers: int, prefetch: int, name: str) -> None:
    pool = ThreadPoolExecutor(max_workers=readers, thread_name_prefix=f"{name}-read")
    try:
        for batch in collate(_ordered_reads(items, read, pool, prefetch, state.stop)):
            if not state.put(state.collated, batch):
                return
        state.put(state.collated, _END)
    except BaseException as exc:  # passed on to the consumer
        state.put(state.collated, _Failure(exc))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _transfer_main(state: _State, transfer: Callable[[Any], Any]) -> None:
    while not state.stop.is_set():
        try:
            item = state.collated.get(timeout=_POLL_S)
        except queue.Empty:
            continue
        if not isinstance(item, _End | _Failure):
            try:
                item = transfer(item)
            except BaseException as exc:
                item = _Failure(exc)
        if not state.put(state.out, item) or isinstance(item, _End | _Failure):
            return


def run_inline(items: Iterable[Any], read: Callable[[Any], Any],
               collate: Callable[[Iterator[tuple[Any, Any]]], Iterable[Any]],
               transfer: Callable[[Any], Any] | None = None,
               finish: Callable[[Any], Any] | None = None) -> Iterator[Any]:
    """The same stages, one after the other in the calling thread (debugging, profiling).

    >>> list(run_inline(range(3), read=lambda x: x * 10,
    ...                 collate=lambda blocks: (b + 1 for _, b in blocks)))
    [1, 11, 21]
    """
    for batch in collate((item, read(item)) for item in items):
        if transfer is not None:
            batch = transfer(batch)
        yield batch if finish is None else finish(batch)


class BatchIterator:
    """Iterate over batches produced by background threads.

    Parameters
    ----------
    items : what to read, in order (e.g. ``(epoch, piece)`` pairs).
    read : ``read(item) -> block``, run in the reader threads.
    collate : ``collate(iterator of (item, block)) -> iterable of batches``, run in the
        collate thread.
    transfer : ``transfer(batch) -> batch`` run in a transfer thread (None: no such stage).
    finish : ``finish(batch) -> batch`` run in the consumer before a batch is returned
        (e.g. make the current CUDA stream wait for the copy).
    readers, prefetch : reader threads, and how many reads / batches each queue holds.
    """

    def __init__(self, items: Iterable[Any], read: Callable[[Any], Any],
                 collate: Callable[[Iterator[tuple[Any, Any]]], Iterable[Any]],
                 transfer: Callable[[Any], Any] | None = None,
                 finish: Callable[[Any], Any] | None = None, *, readers: int = 2,
                 prefetch: int = 2) -> None:
        name = f"{THREAD_PREFIX}-{next(_counter)}"
        state = self._state = _State(prefetch, transfer is not None)
        self._finish = finish
        self._done = False
        state.threads.append(threading.Thread(
            target=_collate_main, name=f"{name}-collate", daemon=True,
            args=(state, items, read, collate, readers, prefetch, name)))
        if transfer is not None:
            state.threads.append(threading.Thread(target=_transfer_main, daemon=True,
                                                  name=f"{name}-transfer",
                                                  args=(state, transfer)))
        self._finalizer = weakref.finalize(self, state.shutdown)
        for t in state.threads:
            t.start()

    def __iter__(self) -> BatchIterator:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        state = self._state
        while True:
            try:
                item = state.out.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not any(t.is_alive() for t in state.threads) and state.out.empty():
                    self.close()
                    raise RuntimeError("the loader's threads stopped without a result") from None
        if isinstance(item, _End):
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.exc
        return item if self._finish is None else self._finish(item)

    def close(self) -> None:
        """Stop the background threads and wait for them (idempotent)."""
        self._done = True
        self._finalizer()

    def __enter__(self) -> BatchIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
