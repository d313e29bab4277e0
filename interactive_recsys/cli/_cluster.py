"""Where an ``irs`` command runs: a local cluster, an existing scheduler or in this process
(``--scheduler``, ``--workers``, ``--memory-limit``, ``--local``), with Dask's log lines kept
to one line each."""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from interactive_recsys.cli._options import at_least


def check_cluster_args(args: argparse.Namespace) -> None:
    """Refuse an unreadable --part-size, or a --memory-limit too small for the partitions,
    before anything starts or is written."""
    from interactive_recsys.io._part_size import parse_part_size  # lazy: distributed
    from interactive_recsys.runtime.cluster import check_memory_limit  # lazy: as above

    part_size = parse_part_size(args.part_size) if args.part_size is not None else None
    if not args.local and not args.scheduler:
        check_memory_limit(args.memory_limit, part_size)


@contextlib.contextmanager
def cluster_client(scheduler: str | None, workers: int, memory_limit: str | None,
                   local: bool) -> Iterator[Any]:
    if local:
        yield None
        return
    from interactive_recsys.runtime.cluster import connect, start_cluster  # lazy: Dask

    with one_line_dask_logs():  # again: distributed's log handlers exist once it is imported
        client = connect(scheduler) if scheduler else start_cluster(
            n_workers=workers, memory_limit=memory_limit or "auto", dashboard=False)
        try:
            yield client
        finally:
            client.close()
            if not scheduler:
                client.cluster.close()


def describe_client(client: Any) -> str:
    if client is None:
        return "in-process (no cluster)"
    info = client.scheduler_info(n_workers=-1)
    return f"{len(info['workers'])} workers at {info['address']}"


def add_where_to_run_args(p: argparse.ArgumentParser) -> None:
    """--scheduler, --workers, --memory-limit and --local: where a command runs."""
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="use an existing Dask scheduler, e.g. tcp://10.0.0.5:8786")
    p.add_argument("--workers", type=at_least(1), default=2,
                   help="local workers to start (default 2)")
    p.add_argument("--memory-limit", default=None,
                   help="memory limit per local worker, e.g. 2GB (default: share of RAM)")
    p.add_argument("--local", action="store_true",
                   help="run in this process, without a cluster")


def add_cluster_args(p: argparse.ArgumentParser) -> None:
    add_where_to_run_args(p)
    p.add_argument("--part-size", default=None, help="bytes per partition, e.g. 128MB")
    p.add_argument("--shuffle", choices=["partition", "worker", "full"], default=None,
                   help="shuffle the output rows (default: keep input order)")
    p.add_argument("--storage-options", default=None, metavar="JSON",
                   help="fsspec options for s3:// gs:// abfs:// paths, e.g. "
                   "'{\"client_kwargs\": {\"endpoint_url\": \"http://minio:9000\"}}' "
                   "(credentials: better from the environment)")


class _OneLineLogs(logging.Filter):
    """Dask's own log lines without their tracebacks: a lost scheduler makes the client log
    each failed reconnect with a traceback, which the command's one-line error explains."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not (record.exc_info or record.exc_text):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        if not record.getMessage().strip():  # the traceback was the message: its last line
            if exc is None or not str(exc):
                return False
            record.msg, record.args = f"{type(exc).__name__}: {exc}", ()
        return True


@contextlib.contextmanager
def one_line_dask_logs() -> Iterator[None]:
    handlers = logging.getLogger("distributed").handlers or logging.getLogger().handlers
    quiet = _OneLineLogs()
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)
