"""The ``irs`` argument parser: one subcommand per command module of this package."""

from __future__ import annotations

import argparse
from typing import Any

from interactive_recsys._version import __version__
from interactive_recsys.cli._clean import clean
from interactive_recsys.cli._cluster import add_cluster_args, add_where_to_run_args
from interactive_recsys.cli._criteo import criteo
from interactive_recsys.cli._demo import demo
from interactive_recsys.cli._input import INPUT_FORMATS
from interactive_recsys.cli._options import at_least, share
from interactive_recsys.cli._predict import predict
from interactive_recsys.cli._report import report
from interactive_recsys.cli._usage import UsageParser
from interactive_recsys.cli._workflow_commands import fit, run, update


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``irs`` command (``irs --help``)."""
    parser = UsageParser(
        prog="irs", description="interactive-recsys: prepare RecSys data (categorify, "
        "normalize, ...) with Dask on CPU or GPU.")
    parser.add_argument("--version", action="version", version=f"irs {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_data_commands(sub)
    _add_file_commands(sub)
    return parser


def _add_data_commands(sub: Any) -> None:
    """``irs demo``, ``run``, ``update`` and ``predict``: data through a workflow or a model."""
    d = sub.add_parser("demo", help="the main job: generate Criteo-shaped data, fit and apply "
                       "the standard workflow on a local cluster, print a summary",
                       description="Generate Criteo-shaped data, start a local cluster, fit + "
                       "transform the standard Criteo workflow, write parquet, vocabularies and "
                       "a summary.")
    d.add_argument("--rows", type=at_least(1), default=1_000_000,
                   help="rows to generate (default 1M)")
    d.add_argument("--seed", type=at_least(0), default=0)
    d.add_argument("--output", default="irs-demo-output", help="output directory")
    d.add_argument("--data", default=None, help="where to generate the input data")
    d.add_argument("--freq-threshold", type=at_least(0), default=0)
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    add_cluster_args(d)
    d.set_defaults(func=demo)
    f = sub.add_parser("fit", help="fit a saved workflow on data, saved as a new folder",
                       description="Fit a workflow saved with Workflow.save (for example by "
                       "the Studio's Save before any Run) on parquet/csv input (or raw Criteo "
                       "day files, --input-format criteo): one pass over the data per "
                       "dependency phase. The fitted workflow is saved atomically as a NEW "
                       "folder, which `irs run --workflow` applies; the workflow folder is "
                       "only read.")
    _add_workflow_data_args(f, input_help="files, directory or glob",
                            output_help="new workflow directory (not --workflow)")
    f.add_argument("--label", action="append", default=[], metavar="COLUMN",
                   help="a label (target) column (default: the targets of the saved "
                   "workflow's input schema, if any)")
    f.set_defaults(func=fit)
    r = sub.add_parser("run", help="apply a saved workflow to data",
                       description="Apply a workflow saved with Workflow.save to parquet/csv "
                       "input (or raw Criteo day files, --input-format criteo) and write "
                       "parquet atomically.")
    _add_workflow_data_args(r, input_help="files, directory or glob",
                            output_help="output directory")
    r.add_argument("--label", action="append", default=[], metavar="COLUMN",
                   help="a label (target) column (default: the targets the workflow was fit "
                   "with)")
    r.add_argument("--hugectr", action="store_true",
                   help="also write HugeCTR's _file_list.txt, _metadata.json and keysets")
    r.add_argument("--hugectr-one-key-space", action="store_true",
                   help="with HugeCTR output, add the per-slot offsets to the keys")
    _add_oov_budget(r, "after the write, print each Categorify column whose non-null "
                    "lookups went out of vocabulary more often than this share (0.01 or 1%%, "
                    "the default; values unseen in the fit or below its freq_threshold)")
    r.set_defaults(func=run)
    u = sub.add_parser("update", help="extend a saved workflow with new data (stable ids)",
                       description="Extend a workflow saved with Workflow.save with new data "
                       "(e.g. the next day's logs): Categorify keeps every id and appends new "
                       "values, the other statistics are merged exactly. The result is saved "
                       "atomically as a NEW folder; the workflow folder is only read. Then "
                       "prints what changed per column (irs.vocabulary_diff): new and dropped "
                       "values, ids that moved (none), the share of lookups on new values, "
                       "and the shifts of fitted statistics.")
    _add_workflow_data_args(u, input_help="the new data: files, directory or glob",
                            output_help="new workflow directory (not --workflow)")
    _add_oov_budget(u, "after the update, print each Categorify column whose non-null "
                    "lookups in the new data still go out of vocabulary more often than this "
                    "share (0.01 or 1%%, the default; values below freq_threshold even with "
                    "the new counts, or refused by max_size)")
    u.set_defaults(func=update)
    pr = sub.add_parser("predict", help="top-K items per user with a saved model",
                        description="Top-K recommendations for every user of USERS (their "
                        "items there are the model's input and are not recommended again), "
                        "data-parallel on the cluster, written as parquet atomically: user, "
                        "rank, item, score.")
    pr.add_argument("--model", required=True, help="directory written by model.save")
    pr.add_argument("--users", required=True, nargs="+",
                    help="parquet/csv with the user column (and the item column: history)")
    pr.add_argument("--k", type=at_least(1), default=100, help="items per user (default 100)")
    pr.add_argument("--output", required=True, help="output directory")
    pr.add_argument("--keep-seen", action="store_true",
                    help="also recommend the items a user already has")
    pr.add_argument("--overwrite", action="store_true")
    add_cluster_args(pr)
    pr.set_defaults(func=predict)


def _add_workflow_data_args(p: argparse.ArgumentParser, *, input_help: str,
                            output_help: str) -> None:
    """What ``irs run`` and ``irs update`` share: the workflow, the input and how to read
    it, the output, --overwrite, --quiet and where to run."""
    p.add_argument("--workflow", required=True, help="directory written by Workflow.save")
    p.add_argument("--input", required=True, nargs="+", help=input_help)
    p.add_argument("--input-format", choices=INPUT_FORMATS, default="auto",
                   help="auto: parquet or csv from the file extensions (default); parquet, "
                   "csv: read as that; criteo: raw Criteo TSV (the day_0 ... day_23 files, "
                   "plain or .gz, a folder of them, or Kaggle's train.txt: label, I1..I13, "
                   "C1..C26, no header), read as irs.datasets.read_criteo reads it")
    p.add_argument("--output", required=True, help=output_help)
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_cluster_args(p)


def _add_file_commands(sub: Any) -> None:
    """``irs report``, ``criteo`` and ``clean``: notebooks, raw Criteo files, temporaries."""
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
    _add_storage_options(rep, "when NOTEBOOK or --output is an s3:// gs:// abfs:// URL")
    rep.set_defaults(func=report)
    cr = sub.add_parser("criteo", help="raw Criteo day files to the files TorchRec's DLRM "
                        "reads (or to the standard workflow's parquet)",
                        description="Convert raw Criteo TSV (the 1TB day_0 ... day_23 files, "
                        "plain or .gz, or Kaggle's train.txt) to what TorchRec's "
                        "npy_preproc_criteo.py + contiguous_preproc_criteo.py write: "
                        "day_N_dense.npy, day_N_sparse.npy, day_N_labels.npy and "
                        "day_N_sparse_contig_freq.npy, out of core, published atomically "
                        "with a _SUCCESS manifest. Resume: a --to torchrec run that is killed "
                        "(or stopped with Ctrl-C) keeps its finished work (parsed ranges of "
                        "each day with their id counts, joined days, dense parts, lookups, "
                        "mapped chunks) in its hidden folder .OUTPUT.tmp-* beside OUTPUT; the "
                        "same command again redoes only what was not finished, for the same "
                        "bytes. A day file changed since (size or modification time) or "
                        "other options keep only the parsed ranges of unchanged files. The "
                        "work is thrown away by --restart, by `irs clean OUTPUT` once the "
                        "killed run's process is gone, and by an error (not a kill). A run "
                        "refuses to start when the estimated disk (see --plan) exceeds the "
                        "free space. INPUT and OUTPUT may be s3:// gs:// abfs:// URLs (with "
                        "--to torchrec): the workers read their byte ranges from the store, "
                        "the client converts in a local folder (the output's mirror, under "
                        "the system's temporary folder, where a killed run's work is kept) "
                        "and uploads it with a _SUCCESS manifest.")
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
    cr.add_argument("--plan", action="store_true",
                    help="print the estimated rows (from the first 4 MiB of each file), disk "
                    "(output and staging, against the free space of OUTPUT's filesystem), "
                    "peak memory per worker and time, then exit, writing nothing")
    cr.add_argument("--restart", action="store_true",
                    help="start from zero: remove the work a killed run to OUTPUT kept, "
                    "instead of resuming it")
    cr.add_argument("--no-space-check", action="store_true",
                    help="start even when the estimated disk exceeds the free space")
    _add_storage_options(cr, "for s3:// gs:// abfs:// INPUT and OUTPUT")
    add_where_to_run_args(cr)
    cr.set_defaults(func=criteo)
    cl = sub.add_parser("clean", help="remove temporaries left by killed writes to PATH",
                        description="Remove the hidden .NAME.tmp-* / .NAME.old-* folders that a "
                        "killed write to PATH left next to it (and, for a folder PATH, inside "
                        "it), when the process that made them is gone, after putting back an "
                        "output that a writer killed between two renames left missing (and "
                        "the work a killed irs criteo kept to resume). For a "
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
    _add_storage_options(cl, "for URL paths")
    cl.set_defaults(func=clean)


def _add_storage_options(parser: argparse.ArgumentParser, where: str) -> None:
    parser.add_argument("--storage-options", default=None, metavar="JSON",
                        help=f"fsspec options {where}")


def _add_oov_budget(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--oov-budget``, which ``irs run`` and ``irs update`` share."""
    parser.add_argument("--oov-budget", type=share, default=0.01, metavar="SHARE",
                        help=help_text)
