"""``irs criteo``: raw Criteo day files to TorchRec's files (or the standard workflow's
parquet); ``--plan`` says what a run needs before it starts, and a killed run resumes."""

from __future__ import annotations

import argparse
import os
from typing import Any

from interactive_recsys.cli._cluster import cluster_client
from interactive_recsys.cli._options import storage_options
from interactive_recsys.datasets._criteo_input import criteo_input_files, parse_days
from interactive_recsys.datasets._criteo_plan import check_space, criteo_plan, describe_plan
from interactive_recsys.datasets._criteo_remote import check_remote_output
from interactive_recsys.datasets._criteo_torchrec import criteo_to_torchrec
from interactive_recsys.errors import ParameterError
from interactive_recsys.store._outputs import check_destination
from interactive_recsys.store._urls import is_remote


def criteo(args: argparse.Namespace) -> dict[str, Any]:
    """``irs criteo INPUT OUTPUT --to torchrec``: raw Criteo day files to TorchRec's files."""
    options = storage_options(args)
    files = criteo_input_files(args.input, parse_days(args.days), options)  # before a cluster
    remote = is_remote(args.input) or is_remote(args.output)
    if is_remote(args.output):
        check_remote_output(args.output.rstrip("/"), options, args.overwrite,
                            {"the input": [f for f, _ in files]})
    else:
        check_destination(args.output, {"the input": [f for f, _ in files]})
    if os.path.isdir(args.output) and os.listdir(args.output) and not args.overwrite:
        raise ParameterError(f"Output {os.path.abspath(args.output)!r} already exists; pass "
                             "--overwrite or choose another folder.")
    plan = None
    if remote and args.plan:
        raise ParameterError("--plan reads local day files; with s3:// gs:// abfs:// INPUT "
                             "or OUTPUT run without --plan (the disk a run needs is the "
                             "client's: --plan on a local copy of one day estimates it).")
    if not remote and (args.plan or (args.to == "torchrec" and not args.no_space_check)):
        # workers: a local cluster's; in-process or an existing scheduler's: this machine's
        workers = None if args.local or args.scheduler else args.workers
        plan = criteo_plan(files, args.output, workers=workers, resume=not args.restart,
                           to=args.to)
    if args.plan:
        print(describe_plan(plan))
        return plan
    if plan is not None:
        check_space(plan)  # before a cluster starts or anything is written
    if not args.local and not args.scheduler:
        from interactive_recsys.runtime.cluster import check_memory_limit  # lazy: Dask

        check_memory_limit(args.memory_limit)
    with cluster_client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        summary = criteo_to_torchrec(args.input, args.output, to=args.to, days=args.days,
                                     frequency_threshold=args.frequency_threshold,
                                     client=client, overwrite=args.overwrite,
                                     progress=not args.quiet, resume=not args.restart,
                                     space_check=False, storage_options=options)
    seconds = sum(summary["seconds"].values())
    print(f"Wrote {summary['rows']:,} rows of {len(summary['files'])} file(s) to "
          f"{summary['output']} ({args.to}) in {seconds:.2f} s on {summary['cluster']}"
          + (f" -> {summary['rows'] / seconds:,.0f} rows/s" if seconds else ""))
    print("  phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in summary["seconds"].items()))
    print("  ids per column (num_embeddings): " + ", ".join(
        f"{k} {v:,}" for k, v in summary["num_embeddings"].items()))
    _print_resumed(summary)
    return summary


def _print_resumed(summary: dict[str, Any]) -> None:
    """The units of work taken over from a killed run, per phase, and what changed since."""
    units = summary.get("units", {})
    if any(u["kept"] for u in units.values()):
        print("  resumed a killed run: kept " + ", ".join(
            f"{phase} {u['kept']}/{u['kept'] + u['done']}" for phase, u in units.items())
            + " units of work")
    if summary.get("changed"):
        print("  the killed run's inputs or options differ (" + "; ".join(summary["changed"])
              + "): only its parsed ranges of unchanged files were kept")
