"""``irs clean``: the temporaries that killed writes left, removed once their writer is gone."""

from __future__ import annotations

import argparse

from interactive_recsys.cli._options import say, storage_options
from interactive_recsys.datasets._criteo_resume import resumable
from interactive_recsys.store._outputs import clean_stale, stale_temporaries
from interactive_recsys.store.commit import check_older_than, clean_staging
from interactive_recsys.store.storage import is_remote


def clean(args: argparse.Namespace) -> list[str]:
    check_older_than(args.older_than * 3600)  # before anything is touched
    options = storage_options(args)
    kept_work = {e for path in args.paths if not is_remote(path)
                 for e in stale_temporaries(path) if resumable(e)}
    removed = [p for path in args.paths for p in (
        clean_staging(path, options, args.older_than * 3600) if is_remote(path)
        else clean_stale(path))]
    for p in removed:
        say(f"removed {p}" + (" (the work a killed irs criteo kept to resume: its next run "
                              "starts from zero)" if p in kept_work else ""))
    say(f"Removed {len(removed)} stale temporary folder(s) of killed writers.")
    return removed
