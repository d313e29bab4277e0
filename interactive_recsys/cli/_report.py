"""``irs report``: one offline HTML page of a notebook, local or at URLs."""

from __future__ import annotations

import argparse
import os
from typing import Any

from interactive_recsys.cli._options import (
    say,
    storage_options,
)
from interactive_recsys.report._notebook_report import notebook_report
from interactive_recsys.store import storage
from interactive_recsys.store.storage import is_remote


def report(args: argparse.Namespace) -> str:
    if is_remote(args.notebook) or (args.output and is_remote(args.output)):
        return _remote_report(args, storage_options(args))
    path = notebook_report(args.notebook, args.output, execute=args.execute,
                           timeout=args.timeout)
    say(f"Wrote {path}")
    return str(path)


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
        if storage.is_remote(output):
            fs = storage.filesystem(output, options)
            storage.guarded(fs.put_file, output, html, storage.strip(output))
    say(f"Wrote {output}")
    return output


def add_report_parser(sub: Any) -> None:
    """``irs report``'s arguments."""
    rep = sub.add_parser("report", help="HTML report of an executed notebook (widgets and "
                         "dashboards drawn statically, readable offline)",
                         description="Convert a notebook to one HTML file that opens offline: "
                         "outputs, dashboard and Bokeh figures (BokehJS inline), widgets "
                         "drawn from their saved state. Written atomically.")
    rep.add_argument("notebook", help="the .ipynb file")
    rep.add_argument("-o", "--output", default=None,
                     help="HTML file to write (default: NOTEBOOK with .html)")
    rep.add_argument("--execute", action="store_true",
                     help="run the notebook first in a new kernel (the .ipynb is not changed)")
    rep.add_argument("--timeout", type=int, default=600,
                     help="seconds allowed per cell with --execute (default 600)")
    rep.add_argument("--storage-options", default=None, metavar="JSON",
                     help="fsspec options when NOTEBOOK or --output is an s3:// gs:// abfs:// "
                     "URL")
    rep.set_defaults(func=report)
