"""``irs clean``: the temporaries that killed writes left, removed once their writer is gone."""

from __future__ import annotations

import argparse
from typing import Any

from interactive_recsys.cli._options import (
    say,
    storage_options,
)
from interactive_recsys.store._outputs import clean_stale
from interactive_recsys.store.commit import check_older_than, clean_staging
from interactive_recsys.store.storage import is_remote


def clean(args: argparse.Namespace) -> list[str]:
    check_older_than(args.older_than * 3600)  # before anything is touched
    options = storage_options(args)
    removed = [p for path in args.paths for p in (
        clean_staging(path, options, args.older_than * 3600) if is_remote(path)
        else clean_stale(path))]
    for p in removed:
        say(f"removed {p}")
    say(f"Removed {len(removed)} stale temporary folder(s) of killed writers.")
    return removed


def add_clean_parser(sub: Any) -> None:
    """``irs clean``'s arguments."""
    cl = sub.add_parser("clean", help="remove temporaries left by killed writes to PATH",
                        description="Remove the hidden .NAME.tmp-* / .NAME.old-* folders that a "
                        "killed write to PATH left next to it (and, for a folder PATH, inside "
                        "it), when the process that made them is gone, after putting back an "
                        "output that a writer killed between two renames left missing. For a "
                        "URL: finish a dead writer's committed publish, then remove staging "
                        "under PATH/_temporary/ whose writer's lease (renewed every 30 s, "
                        "fresh for 10 minutes) has expired. Temporaries of running writers "
                        "and of other machines are kept.")
    cl.add_argument("paths", nargs="+", metavar="PATH", help="output path(s) written by irs")
    cl.add_argument("--older-than", type=float, default=24, metavar="HOURS",
                    help="for URLs (s3://...): remove the PATH/_temporary/ staging folders of "
                    "writes started more than HOURS ago whose writer stopped renewing its "
                    "lease (default 24; at least the lease age, 10 minutes = 0.17 hours; the "
                    "staging of a writer that renews its lease is always kept)")
    cl.add_argument("--storage-options", default=None, metavar="JSON",
                    help="fsspec options for URL paths")
    cl.set_defaults(func=clean)
