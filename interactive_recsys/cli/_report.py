"""``irs report``: one offline HTML page of a notebook, local or at URLs."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from interactive_recsys.cli._options import say, storage_options
from interactive_recsys.report._notebook_report import notebook_report
from interactive_recsys.report._widget_state import MISSING_STATE_HINT, widgets_without_state
from interactive_recsys.store import storage
from interactive_recsys.store.storage import is_remote


def report(args: argparse.Namespace) -> str:
    if is_remote(args.notebook) or (args.output and is_remote(args.output)):
        return _remote_report(args, storage_options(args))
    path = notebook_report(args.notebook, args.output, execute=args.execute,
                           timeout=args.timeout)
    say(f"Wrote {path}")
    _hint_missing_state(args.notebook, args.execute)
    return str(path)


def _hint_missing_state(notebook: str, executed: bool) -> None:
    """One line on stderr when the notebook's widget outputs have no saved state (an
    executed notebook has it: the run stores it)."""
    import nbformat

    if executed:
        return
    if widgets_without_state(nbformat.read(notebook, as_version=4)):
        print(f"irs report: {MISSING_STATE_HINT}", file=sys.stderr)


def _remote_report(args: argparse.Namespace, options: dict[str, Any] | None) -> str:
    """``irs report`` with URLs: the notebook is copied here, the HTML uploaded in one PUT
    (whole or not at all on an object store)."""
    import tempfile

    output = args.output or os.path.splitext(args.notebook)[0] + ".html"
    with tempfile.TemporaryDirectory(prefix="irs-report-") as local:
        notebook = args.notebook
        if storage.is_remote(notebook):
            notebook = os.path.join(local, os.path.basename(storage.strip(args.notebook)))
            fs = storage.filesystem(args.notebook, options)
            if not storage.guarded(fs.isfile, args.notebook, storage.strip(args.notebook)):
                raise storage.StorageError(2, f"notebook {args.notebook!r} does not exist: "
                                              "check the URL")
            storage.guarded(fs.get_file, args.notebook, storage.strip(args.notebook), notebook)
        html = os.path.join(local, "report.html")
        notebook_report(notebook, html if storage.is_remote(output) else output,
                        execute=args.execute, timeout=args.timeout)
        _hint_missing_state(notebook, args.execute)
        if storage.is_remote(output):
            fs = storage.filesystem(output, options)
            storage.guarded(fs.put_file, output, html, storage.strip(output))
    say(f"Wrote {output}")
    return output
