"""``irs clean``: the temporaries that killed writes left, removed once their writer is gone."""

from __future__ import annotations

import argparse

from interactive_recsys.cli._options import say, storage_options
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
