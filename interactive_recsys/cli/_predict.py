"""``irs predict``: top-K lists of every user with a saved model, on the cluster."""

from __future__ import annotations

import argparse
import time
from typing import Any

from interactive_recsys.cli._cluster import (
    check_cluster_args,
    cluster_client,
    describe_client,
)
from interactive_recsys.cli._options import check_inputs, say, storage_options


def predict(args: argparse.Namespace) -> dict[str, Any]:
    from interactive_recsys.io._dataset import Dataset  # lazy: Dask
    from interactive_recsys.models import load  # lazy: as above
    from interactive_recsys.models._predict import predict_topk  # lazy: as above

    options = storage_options(args)
    check_inputs(args.users)
    model = load(args.model, storage_options=options)
    check_cluster_args(args)
    with cluster_client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        users = Dataset(args.users if len(args.users) > 1 else args.users[0],
                        part_size=args.part_size, storage_options=options)
        t0 = time.perf_counter()
        written = predict_topk(model, users, k=args.k, exclude_seen=not args.keep_seen,
                               output=args.output, overwrite=args.overwrite,
                               storage_options=options)
        say(f"Wrote top-{args.k} lists of {type(model).__name__} ({written['num_rows']:,} "
              f"rows) to {written['path']} in {time.perf_counter() - t0:.2f} s on "
              f"{describe_client(client)}")
    return written
