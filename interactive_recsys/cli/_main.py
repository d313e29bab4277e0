"""The ``irs`` command line: ``irs demo`` (the main job), ``irs run`` (apply a saved workflow),
``irs predict`` (top-K lists with a saved model), ``irs report`` (HTML report of a notebook),
``irs clean`` (temporaries of killed writes), ``irs criteo`` (raw Criteo to TorchRec's files)."""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import CancelledError
from typing import Any

from interactive_recsys._version import __version__
from interactive_recsys.cli._progress import run_with_bars
from interactive_recsys.datasets import synthetic_criteo
from interactive_recsys.datasets._criteo_torchrec import (
    criteo_input_files,
    criteo_to_torchrec,
    parse_days,
)
from interactive_recsys.embedding import embedding_sizes
from interactive_recsys.errors import DatasetError, IRSError, ParameterError
from interactive_recsys.lazy import lazy_exports
from interactive_recsys.redact import redact_text, redact_value, remember
from interactive_recsys.report._notebook_report import notebook_report
from interactive_recsys.store import storage
from interactive_recsys.store._outputs import check_destination, check_not_inside_input, clean_stale
from interactive_recsys.store.commit import check_older_than, clean_staging
from interactive_recsys.store.storage import is_remote

# The workflow layer's names, importable from here as before, loaded on first use (PEP 562).
__getattr__ = lazy_exports(__name__, {
    "standard_criteo_workflow": "interactive_recsys.datasets._criteo_workflow",
    "Workflow": "interactive_recsys.workflow", "Dataset": "interactive_recsys.io"})


def _at_least(minimum: int) -> Any:
    """An argparse type: an integer >= ``minimum`` (else argparse's usage error, exit 2)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _check_cluster_args(args: argparse.Namespace) -> None:
    """Refuse an unreadable --part-size, or a --memory-limit too small for the partitions,
    before anything starts or is written."""
    from interactive_recsys.io._dataset import parse_part_size  # lazy: Dask
    from interactive_recsys.runtime.cluster import check_memory_limit  # lazy: as above

    part_size = parse_part_size(args.part_size) if args.part_size is not None else None
    if not args.local and not args.scheduler:
        check_memory_limit(args.memory_limit, part_size)


def _check_inputs(items: Sequence[str]) -> None:
    """Refuse an input path that is a FIFO, a socket or a device before anything starts or
    reads it (a named pipe would block the command until a writer comes)."""
    from interactive_recsys.io._dataset import refuse_special_file  # lazy: Dask

    for item in items:
        if not is_remote(item) and not glob.has_magic(item):
            refuse_special_file(item)


def _refuse_no_rows(ds: Any, command: str) -> None:
    """Refuse an input known to have no rows (parquet metadata), naming it."""
    from interactive_recsys.io._dataset import describe_input  # lazy: Dask

    if ds.known_num_rows == 0:
        raise DatasetError(f"irs {command}: {describe_input(ds)} has no rows, so there is "
                           "nothing to process and nothing was written. Check the --input "
                           "path (a failed export, an empty day?).")


@contextlib.contextmanager
def _client(scheduler: str | None, workers: int, memory_limit: str | None,
            local: bool) -> Iterator[Any]:
    if local:
        yield None
        return
    from interactive_recsys.runtime.cluster import connect, start_cluster  # lazy: Dask

    with _one_line_dask_logs():  # again: distributed's log handlers exist once it is imported
        client = connect(scheduler) if scheduler else start_cluster(
            n_workers=workers, memory_limit=memory_limit or "auto", dashboard=False)
        try:
            yield client
        finally:
            client.close()
            if not scheduler:
                client.cluster.close()


def _describe_client(client: Any) -> str:
    if client is None:
        return "in-process (no cluster)"
    info = client.scheduler_info(n_workers=-1)
    return f"{len(info['workers'])} workers at {info['address']}"


def demo(args: argparse.Namespace) -> dict[str, Any]:
    from interactive_recsys.datasets._criteo_workflow import standard_criteo_workflow  # lazy: Dask
    from interactive_recsys.io._dataset import Dataset  # lazy: as above

    out_dir = os.path.abspath(args.output)
    _check_cluster_args(args)
    data = args.data or os.path.join(out_dir, "input")

    def stage(text: str) -> None:
        if not args.quiet:
            print(f"irs demo: {text}", file=sys.stderr, flush=True)

    with _client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        stage(f"generating {args.rows:,} rows of Criteo-shaped data in {data}")
        try:
            data_dir = synthetic_criteo(rows=args.rows, seed=args.seed, path=data)
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
            "rows": ds.num_rows, "cluster": _describe_client(client),
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


def storage_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--storage-options JSON``: fsspec options for every URL of the command.

    The text usually holds credentials, so a malformed one is reported by position (line,
    column, character and the JSON error), never echoed; the secrets it holds are remembered
    so that no later message shows them (:mod:`.redact`).

    >>> ns = argparse.Namespace(storage_options='{"secret": "s3cr3t-value", }')
    >>> try:
    ...     storage_options(ns)
    ... except ParameterError as exc:
    ...     print(str(exc)[:36], "line 1, column 28" in str(exc), "s3cr3t" in str(exc))
    --storage-options is not valid JSON: True False
    """
    text = getattr(args, "storage_options", None)
    if not text:
        return None
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"--storage-options is not valid JSON: {exc.msg} at line "
                             f"{exc.lineno}, column {exc.colno} (offset {exc.pos} of {len(text)} "
                             "characters); the text is not shown, since it may hold "
                             "credentials. Write a JSON object with double quotes and no "
                             "trailing comma, e.g. '{\"anon\": false}'.") from None
    except (ValueError, RecursionError) as exc:
        raise ParameterError(f"--storage-options is not valid JSON ({type(exc).__name__}); "
                             "the text is not shown, since it may hold credentials. Write a "
                             "JSON object, e.g. '{\"anon\": false}'.") from None
    if not isinstance(options, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(options), "a number")
        raise ParameterError(f"--storage-options must be a JSON object; got {kind}. Write "
                             "e.g. '{\"anon\": false}'.")
    remember(options)
    return options


def run(args: argparse.Namespace) -> dict[str, Any]:
    from interactive_recsys.io._dataset import Dataset  # lazy: as above
    from interactive_recsys.io._hugectr import describe  # lazy: Dask
    from interactive_recsys.workflow._workflow import Workflow  # lazy: as above

    options = storage_options(args)
    inputs = [p for item in args.input if not is_remote(item)
              for p in (glob.glob(item) if glob.has_magic(item) else [item])]
    if not is_remote(args.output):
        check_destination(args.output, {"the input": inputs, "the workflow folder":
                                        [] if is_remote(args.workflow) else [args.workflow]})
        check_not_inside_input(args.output, inputs)
    _check_inputs(args.input)
    _check_cluster_args(args)
    wf = Workflow.load(args.workflow, storage_options=options)
    with _client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        labels = args.label or ([c.name for c in wf.input_schema.values() if "target" in c.tags]
                                if wf.input_schema is not None else [])
        ds = Dataset(args.input if len(args.input) > 1 else args.input[0],
                     part_size=args.part_size, tags={c: ["target"] for c in labels},
                     storage_options=options)
        _refuse_no_rows(ds, "run")
        t0 = time.perf_counter()
        hugectr = {"one_key_space": True} if args.hugectr_one_key_space else args.hugectr
        written = run_with_bars(
            lambda: wf.transform(ds).to_parquet(args.output, shuffle=args.shuffle,
                                                overwrite=args.overwrite, hugectr=hugectr),
            name="irs run", rows=ds.known_num_rows, quiet=args.quiet, client=client)
        seconds = time.perf_counter() - t0
        say(f"Wrote {written['num_rows']:,} rows in {len(written['files'])} files to "
              f"{written['path']} in {seconds:.2f} s on {_describe_client(client)}")
        if "hugectr" in written:
            say(describe(written["hugectr"]))
    return written


def update(args: argparse.Namespace) -> dict[str, Any]:
    """``irs update``: a saved workflow extended with new data, saved as a new folder."""
    from interactive_recsys.io._dataset import Dataset  # lazy: Dask
    from interactive_recsys.workflow._workflow import Workflow  # lazy: as above

    options = storage_options(args)
    inputs = [p for item in args.input if not is_remote(item)
              for p in (glob.glob(item) if glob.has_magic(item) else [item])]
    if not is_remote(args.output):
        workflow = [] if is_remote(args.workflow) else [args.workflow]
        check_destination(args.output, {"the input": inputs, "the workflow folder": workflow})
        check_not_inside_input(args.output, [*inputs, *workflow])
    _check_inputs(args.input)
    _check_cluster_args(args)
    wf = Workflow.load(args.workflow, storage_options=options)
    with _client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        ds = Dataset(args.input if len(args.input) > 1 else args.input[0],
                     part_size=args.part_size, storage_options=options)
        _refuse_no_rows(ds, "update")
        t0 = time.perf_counter()
        new = run_with_bars(lambda: wf.update(ds), name="irs update", rows=ds.known_num_rows,
                            quiet=args.quiet, client=client)
        new.save(args.output, overwrite=args.overwrite, storage_options=options)
        summary = {"workflow": args.output, "rows": new.fit_stats["update"]["rows"],
                   "seconds": time.perf_counter() - t0,
                   "tables": {key: info for steps in new.fit_stats["update"]["steps"].values()
                              for key, info in steps.items()}}
        say(f"Updated {args.workflow} with {summary['rows']:,} rows in "
              f"{summary['seconds']:.2f} s on {_describe_client(client)} -> {args.output}")
        for key, info in summary["tables"].items():
            first, stop = info["new_rows"]
            refused = f", {info['refused']:,} refused (max_size)" if info["refused"] else ""
            say(f"  {key}: vocabulary version {info['version']}, {info['appended']:,} new "
                  f"rows (ids {first}..{stop - 1}){refused}")
    return summary


def predict(args: argparse.Namespace) -> dict[str, Any]:
    from interactive_recsys.io._dataset import Dataset  # lazy: Dask
    from interactive_recsys.models import load  # lazy: as above
    from interactive_recsys.models._predict import predict_topk  # lazy: as above

    options = storage_options(args)
    _check_inputs(args.users)
    model = load(args.model, storage_options=options)
    _check_cluster_args(args)
    with _client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        users = Dataset(args.users if len(args.users) > 1 else args.users[0],
                        part_size=args.part_size, storage_options=options)
        t0 = time.perf_counter()
        written = predict_topk(model, users, k=args.k, exclude_seen=not args.keep_seen,
                               output=args.output, overwrite=args.overwrite,
                               storage_options=options)
        say(f"Wrote top-{args.k} lists of {type(model).__name__} ({written['num_rows']:,} "
              f"rows) to {written['path']} in {time.perf_counter() - t0:.2f} s on "
              f"{_describe_client(client)}")
    return written


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
    with _client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
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


def _add_where_to_run_args(p: argparse.ArgumentParser) -> None:
    """--scheduler, --workers, --memory-limit and --local: where a command runs."""
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="use an existing Dask scheduler, e.g. tcp://10.0.0.5:8786")
    p.add_argument("--workers", type=_at_least(1), default=2,
                   help="local workers to start (default 2)")
    p.add_argument("--memory-limit", default=None,
                   help="memory limit per local worker, e.g. 2GB (default: share of RAM)")
    p.add_argument("--local", action="store_true",
                   help="run in this process, without a cluster")


def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    _add_where_to_run_args(p)
    p.add_argument("--part-size", default=None, help="bytes per partition, e.g. 128MB")
    p.add_argument("--shuffle", choices=["partition", "worker", "full"], default=None,
                   help="shuffle the output rows (default: keep input order)")
    p.add_argument("--storage-options", default=None, metavar="JSON",
                   help="fsspec options for s3:// gs:// abfs:// paths, e.g. "
                   "'{\"client_kwargs\": {\"endpoint_url\": \"http://minio:9000\"}}' "
                   "(credentials: better from the environment)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irs", description="interactive-recsys: prepare RecSys data (categorify, "
        "normalize, ...) with Dask on CPU or GPU.")
    parser.add_argument("--version", action="version", version=f"irs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="the main job: generate Criteo-shaped data, fit and apply "
                       "the standard workflow on a local cluster, print a summary",
                       description="Generate Criteo-shaped data, start a local cluster, fit + "
                       "transform the standard Criteo workflow, write parquet, vocabularies and "
                       "a summary.")
    d.add_argument("--rows", type=_at_least(1), default=1_000_000,
                   help="rows to generate (default 1M)")
    d.add_argument("--seed", type=_at_least(0), default=0)
    d.add_argument("--output", default="irs-demo-output", help="output directory")
    d.add_argument("--data", default=None, help="where to generate the input data")
    d.add_argument("--freq-threshold", type=_at_least(0), default=0)
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_cluster_args(d)
    d.set_defaults(func=demo)
    r = sub.add_parser("run", help="apply a saved workflow to data",
                       description="Apply a workflow saved with Workflow.save to parquet/csv "
                       "input and write parquet atomically.")
    r.add_argument("--workflow", required=True, help="directory written by Workflow.save")
    r.add_argument("--input", required=True, nargs="+", help="files, directory or glob")
    r.add_argument("--output", required=True, help="output directory")
    r.add_argument("--overwrite", action="store_true")
    r.add_argument("--label", action="append", default=[], metavar="COLUMN",
                   help="a label (target) column (default: the targets the workflow was fit "
                   "with)")
    r.add_argument("--hugectr", action="store_true",
                   help="also write HugeCTR's _file_list.txt, _metadata.json and keysets")
    r.add_argument("--hugectr-one-key-space", action="store_true",
                   help="with HugeCTR output, add the per-slot offsets to the keys")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_cluster_args(r)
    r.set_defaults(func=run)
    u = sub.add_parser("update", help="extend a saved workflow with new data (stable ids)",
                       description="Extend a workflow saved with Workflow.save with new data "
                       "(e.g. the next day's logs): Categorify keeps every id and appends new "
                       "values, the other statistics are merged exactly. The result is saved "
                       "atomically as a NEW folder; the workflow folder is only read.")
    u.add_argument("--workflow", required=True, help="directory written by Workflow.save")
    u.add_argument("--input", required=True, nargs="+", help="the new data: files, directory "
                   "or glob")
    u.add_argument("--output", required=True, help="new workflow directory (not --workflow)")
    u.add_argument("--overwrite", action="store_true")
    u.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_cluster_args(u)
    u.set_defaults(func=update)
    pr = sub.add_parser("predict", help="top-K items per user with a saved model",
                        description="Top-K recommendations for every user of USERS (their "
                        "items there are the model's input and are not recommended again), "
                        "data-parallel on the cluster, written as parquet atomically: user, "
                        "rank, item, score.")
    pr.add_argument("--model", required=True, help="directory written by model.save")
    pr.add_argument("--users", required=True, nargs="+",
                    help="parquet/csv with the user column (and the item column: history)")
    pr.add_argument("--k", type=_at_least(1), default=100, help="items per user (default 100)")
    pr.add_argument("--output", required=True, help="output directory")
    pr.add_argument("--keep-seen", action="store_true",
                    help="also recommend the items a user already has")
    pr.add_argument("--overwrite", action="store_true")
    _add_cluster_args(pr)
    pr.set_defaults(func=predict)
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
    cr.add_argument("--frequency-threshold", type=_at_least(0), default=0,
                    help="ids seen fewer times than this over all days become 1 "
                    "(default 0: none), as TorchRec's --frequency_threshold")
    cr.add_argument("--days", default=None, help="day files to take, e.g. 0-23 or 0,1,5-7 "
                    "(default: every day_N found)")
    cr.add_argument("--overwrite", action="store_true")
    cr.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_where_to_run_args(cr)
    cr.set_defaults(func=criteo)
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
    return parser


def say(text: str) -> None:
    """Print a line of the command's output, secrets masked (:mod:`.redact`)."""
    print(redact_text(text))


#: Exit status of an error in the input or the options (and of argparse's usage errors).
EXIT_ERROR = 2
#: Exit status when the Dask scheduler was lost mid-command: the input was fine, run it again.
EXIT_CLUSTER_LOST = 3


class _OneLineLogs(logging.Filter):
    """Dask's own log lines without their tracebacks: a lost scheduler makes the client log
    each failed reconnect with a traceback, which the command's one-line error explains."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not (record.exc_info or record.exc_text):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        if not record.getMessage().strip():  # the traceback was the message: its last line
            if exc is None or not str(exc):
                return False
            record.msg, record.args = f"{type(exc).__name__}: {exc}", ()
        return True


@contextlib.contextmanager
def _one_line_dask_logs() -> Iterator[None]:
    handlers = logging.getLogger("distributed").handlers or logging.getLogger().handlers
    quiet = _OneLineLogs()
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


class _NeverRaised(Exception):
    """Stands for an error class whose module was never loaded (so nothing raised it)."""


def _loaded(module: str, name: str) -> type[BaseException]:
    """``module.name`` if ``module`` is loaded, else :class:`_NeverRaised`: a command that
    never imported Dask (``irs criteo --local``) cannot raise Dask's errors, and need not
    import Dask to catch them."""
    return getattr(sys.modules.get(module), name, None) or _NeverRaised


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status is 0, :data:`EXIT_ERROR` (bad input, options) or
    :data:`EXIT_CLUSTER_LOST` (the scheduler went away: run again), with one line on
    stderr for an error, never a traceback."""
    args = build_parser().parse_args(argv)
    try:
        with _one_line_dask_logs():
            args.func(args)
    except _loaded("interactive_recsys.runtime.jobs", "ClusterLostError") as exc:
        print(f"irs: error: {exc}", file=sys.stderr)
        return EXIT_CLUSTER_LOST
    except IRSError as exc:
        print(f"irs: error: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except (CancelledError, _loaded("distributed.comm", "CommClosedError")) as exc:  # lost
        # outside a computation
        print(redact_text(
            f"irs: error: the Dask cluster was lost ({type(exc).__name__}: {exc}): its "
            "scheduler was stopped, crashed or cannot be reached. Check it, start it or a "
            "new cluster, and run the command again."), file=sys.stderr)
        return EXIT_CLUSTER_LOST
    except Exception as exc:  # unexpected: the traceback, with every secret in it masked
        import traceback

        if args.command == "demo":  # the demo's errors are one line too
            print(redact_text(f"irs: error: {type(exc).__name__}: {exc}"), file=sys.stderr)
            return 1

        print(redact_text(traceback.format_exc()).rstrip(), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
