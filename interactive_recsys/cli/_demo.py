"""``irs demo``: generate Criteo-shaped data, fit and apply the standard workflow, print a
summary."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from interactive_recsys.cli._cluster import (
    check_cluster_args,
    cluster_client,
    describe_client,
)
from interactive_recsys.cli._options import say
from interactive_recsys.cli._progress import run_with_bars
from interactive_recsys.datasets import synthetic_criteo
from interactive_recsys.embedding import embedding_sizes
from interactive_recsys.errors import DatasetError
from interactive_recsys.redact import redact_value


def demo(args: argparse.Namespace) -> dict[str, Any]:
    from interactive_recsys.datasets._criteo_workflow import standard_criteo_workflow  # lazy: Dask
    from interactive_recsys.io._dataset import Dataset  # lazy: as above

    out_dir = os.path.abspath(args.output)
    check_cluster_args(args)
    data = args.data or os.path.join(out_dir, "input")

    def stage(text: str) -> None:
        if not args.quiet:
            print(f"irs demo: {text}", file=sys.stderr, flush=True)

    with cluster_client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        stage(f"generating {args.rows:,} rows of Criteo-shaped data in {data}")
        try:
            data_dir = synthetic_criteo(rows=args.rows, seed=args.seed, path=data,
                                        progress=False if args.quiet else None)
        except FileExistsError:
            raise DatasetError(
                f"{data} holds other data (another demo's --rows or --seed, or files of your "
                "own); the demo does not replace it. Delete it, pass --data with a new folder, "
                "or use another --output.") from None
        ds = Dataset(str(data_dir), part_size=args.part_size)
        wf = standard_criteo_workflow(args.freq_threshold)
        stage("fitting the standard Criteo workflow")
        t0 = time.perf_counter()
        run_with_bars(lambda: wf.fit(ds), name="irs demo", rows=ds.known_num_rows,
                      quiet=args.quiet, client=client)
        fit_s = time.perf_counter() - t0
        stage("transforming and writing parquet")
        t1 = time.perf_counter()
        written = run_with_bars(
            lambda: wf.transform(ds).to_parquet(os.path.join(out_dir, "processed"),
                                                overwrite=True, shuffle=args.shuffle),
            name="irs demo", rows=ds.known_num_rows, quiet=args.quiet, client=client)
        transform_s = time.perf_counter() - t1
        stage("saving the workflow")
        wf.save(os.path.join(out_dir, "workflow"), overwrite=True)
        total = fit_s + transform_s
        summary = {
            "rows": ds.num_rows, "cluster": describe_client(client),
            "fit_seconds": round(fit_s, 3), "transform_write_seconds": round(transform_s, 3),
            "rows_per_second": round(ds.num_rows / total) if total else None,
            "output": written["path"], "files": len(written["files"]),
            "workflow": os.path.join(out_dir, "workflow"),
            "embedding_sizes": {k: list(v) for k, v in embedding_sizes(wf).items()},
        }
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(redact_value(summary), f, indent=2)
    _print_summary(summary)
    return summary


def _print_summary(summary: dict[str, Any]) -> None:
    say(f"Processed {summary['rows']:,} rows on {summary['cluster']}")
    say(f"  fit {summary['fit_seconds']:.2f} s, transform + write "
          f"{summary['transform_write_seconds']:.2f} s -> {summary['rows_per_second']:,} rows/s")
    say(f"  output: {summary['output']} ({summary['files']} parquet files)")
    say(f"  workflow (JSON + vocabularies): {summary['workflow']}")
    say("  embedding tables (cardinality, dim):")
    for col, (card, dim) in summary["embedding_sizes"].items():
        say(f"    {col:>4}: {card:>10,} x {dim}")
