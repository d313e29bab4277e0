"""``irs criteo``: raw Criteo day files to TorchRec's files (or the standard workflow's
parquet)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from interactive_recsys.cli._cluster import cluster_client
from interactive_recsys.datasets._criteo_input import criteo_input_files, parse_days
from interactive_recsys.datasets._criteo_torchrec import criteo_to_torchrec
from interactive_recsys.errors import ParameterError
from interactive_recsys.store._outputs import check_destination


def criteo(args: argparse.Namespace) -> dict[str, Any]:
    """``irs criteo INPUT OUTPUT --to torchrec``: raw Criteo day files to TorchRec's files."""
    files = criteo_input_files(args.input, parse_days(args.days))  # errors before a cluster
    check_destination(args.output, {"the input": [f for f, _ in files]})
    if os.path.isdir(args.output) and os.listdir(args.output) and not args.overwrite:
        raise ParameterError(f"Output {os.path.abspath(args.output)!r} already exists; pass "
                             "--overwrite or choose another folder.")
    if not args.local and not args.scheduler:
        from interactive_recsys.runtime.cluster import check_memory_limit  # lazy: Dask

        check_memory_limit(args.memory_limit)
    with cluster_client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        summary = criteo_to_torchrec(args.input, args.output, to=args.to, days=args.days,
                                     frequency_threshold=args.frequency_threshold,
                                     client=client, overwrite=args.overwrite,
                                     progress=not args.quiet)
    seconds = sum(summary["seconds"].values())
    print(f"Wrote {summary['rows']:,} rows of {len(summary['files'])} file(s) to "
          f"{summary['output']} ({args.to}) in {seconds:.2f} s on {summary['cluster']}"
          + (f" -> {summary['rows'] / seconds:,.0f} rows/s" if seconds else ""))
    print("  phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in summary["seconds"].items()))
    print("  ids per column (num_embeddings): " + ", ".join(
        f"{k} {v:,}" for k, v in summary["num_embeddings"].items()))
    return summary
