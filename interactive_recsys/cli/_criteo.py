"""``irs criteo``: raw Criteo day files to TorchRec's files (or the standard workflow's
parquet)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from interactive_recsys.cli._cluster import (
    add_where_to_run_args,
    cluster_client,
)
from interactive_recsys.cli._options import (
    at_least,
)
from interactive_recsys.datasets._criteo_torchrec import (
    criteo_input_files,
    criteo_to_torchrec,
    parse_days,
)
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


def add_criteo_parser(sub: Any) -> None:
    """``irs criteo``'s arguments."""
    cr = sub.add_parser("criteo", help="raw Criteo day files to the files TorchRec's DLRM "
                        "reads (or to the standard workflow's parquet)",
                        description="Convert raw Criteo TSV (the 1TB day_0 ... day_23 files, "
                        "plain or .gz, or Kaggle's train.txt) to what TorchRec's "
                        "npy_preproc_criteo.py + contiguous_preproc_criteo.py write: "
                        "day_N_dense.npy, day_N_sparse.npy, day_N_labels.npy and "
                        "day_N_sparse_contig_freq.npy, out of core, published atomically "
                        "with a _SUCCESS manifest.")
    cr.add_argument("input", help="folder of day_N files (or of train.txt), or one file")
    cr.add_argument("output", help="output folder")
    cr.add_argument("--to", choices=["torchrec", "parquet"], default="torchrec",
                    help="torchrec: TorchRec's npy files (default); parquet: the standard "
                    "Criteo workflow's parquet and the fitted workflow")
    cr.add_argument("--frequency-threshold", type=at_least(0), default=0,
                    help="ids seen fewer times than this over all days become 1 "
                    "(default 0: none), as TorchRec's --frequency_threshold")
    cr.add_argument("--days", default=None, help="day files to take, e.g. 0-23 or 0,1,5-7 "
                    "(default: every day_N found)")
    cr.add_argument("--overwrite", action="store_true")
    cr.add_argument("--quiet", action="store_true", help="no progress bars")
    add_where_to_run_args(cr)
    cr.set_defaults(func=criteo)
