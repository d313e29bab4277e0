"""``irs fit`` (fit a saved workflow), ``irs run`` (apply it) and ``irs update`` (extend it
with new data)."""

from __future__ import annotations

import argparse
import glob
import time
from typing import Any

from interactive_recsys.cli._cluster import (
    check_cluster_args,
    cluster_client,
    describe_client,
)
from interactive_recsys.cli._input import open_input
from interactive_recsys.cli._options import check_inputs, refuse_no_rows, say, storage_options
from interactive_recsys.cli._progress import run_with_bars
from interactive_recsys.errors import NotFittedError
from interactive_recsys.store._outputs import check_destination, check_not_inside_input
from interactive_recsys.store.storage import is_remote


def _check_paths(args: argparse.Namespace, *, workflow_is_input: bool) -> None:
    """Refuse an output over the input or the workflow folder (or, with
    ``workflow_is_input``, inside the workflow folder), a special input file, or bad cluster
    options, before anything starts or is written."""
    inputs = [p for item in args.input if not is_remote(item)
              for p in (glob.glob(item) if glob.has_magic(item) else [item])]
    if not is_remote(args.output):
        workflow = [] if is_remote(args.workflow) else [args.workflow]
        check_destination(args.output, {"the input": inputs, "the workflow folder": workflow})
        check_not_inside_input(args.output, [*inputs, *workflow] if workflow_is_input
                               else inputs)
    check_inputs(args.input)
    check_cluster_args(args)


def _labels(args: argparse.Namespace, wf: Any) -> list[str]:
    """``--label`` columns, else the targets the workflow was fitted with."""
    return args.label or ([c.name for c in wf.input_schema.values() if "target" in c.tags]
                          if wf.input_schema is not None else [])


def _refuse_unfitted(wf: Any, args: argparse.Namespace) -> None:
    """Refuse, before any cluster starts, a workflow folder saved before its fit."""
    try:
        wf._check_fitted()
    except NotFittedError as exc:
        raise NotFittedError(
            f"irs {args.command}: the workflow in {args.workflow} was saved before it was "
            f"fitted ({exc}). Fit it first: irs fit --workflow {args.workflow} --input DATA "
            f"--output FITTED_DIR, then pass --workflow FITTED_DIR.") from None


def fit(args: argparse.Namespace) -> dict[str, Any]:
    """``irs fit``: a saved workflow (fitted or not) fitted on the input, saved as a new
    folder that ``irs run`` applies."""
    from interactive_recsys.embedding import embedding_sizes  # lazy: Dask
    from interactive_recsys.workflow._workflow import Workflow  # lazy: as above

    options = storage_options(args)
    _check_paths(args, workflow_is_input=True)
    wf = Workflow.load(args.workflow, storage_options=options)
    with cluster_client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        ds = open_input(args, options, tags={c: ["target"] for c in _labels(args, wf)})
        refuse_no_rows(ds, "fit")
        t0 = time.perf_counter()
        run_with_bars(lambda: wf.fit(ds), name="irs fit", rows=ds.known_num_rows,
                      quiet=args.quiet, client=client)
        wf.save(args.output, overwrite=args.overwrite, storage_options=options)
        seconds = time.perf_counter() - t0
        rows = ds.known_num_rows
        what = f"{rows:,} rows" if rows is not None else ds.describe_input()
        say(f"Fitted {args.workflow} on {what} in {seconds:.2f} s on "
            f"{describe_client(client)} -> {args.output}")
        sizes = embedding_sizes(wf)
        for column, (cardinality, dim) in sizes.items():
            say(f"  {column}: {cardinality:,} embedding rows (dim {dim})")
    return {"workflow": args.output, "seconds": seconds, "embedding_sizes": sizes}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """``irs run``: a saved workflow applied to the input, written as parquet."""
    from interactive_recsys.io._hugectr import describe  # lazy: Dask
    from interactive_recsys.workflow._workflow import Workflow  # lazy: as above

    options = storage_options(args)
    _check_paths(args, workflow_is_input=False)
    wf = Workflow.load(args.workflow, storage_options=options)
    _refuse_unfitted(wf, args)
    with cluster_client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        ds = open_input(args, options, tags={c: ["target"] for c in _labels(args, wf)})
        refuse_no_rows(ds, "run")
        t0 = time.perf_counter()
        hugectr = {"one_key_space": True} if args.hugectr_one_key_space else args.hugectr
        written = run_with_bars(
            lambda: wf.transform(ds).to_parquet(args.output, shuffle=args.shuffle,
                                                overwrite=args.overwrite, hugectr=hugectr),
            name="irs run", rows=ds.known_num_rows, quiet=args.quiet, client=client)
        seconds = time.perf_counter() - t0
        say(f"Wrote {written['num_rows']:,} rows in {len(written['files'])} files to "
              f"{written['path']} in {seconds:.2f} s on {describe_client(client)}")
        if "hugectr" in written:
            say(describe(written["hugectr"]))
        if not args.hugectr_one_key_space:  # offset keys are not the workflow's ids
            written["lookup_loss"] = _report_lookup_loss(
                wf, written["path"], options, args.oov_budget,
                "Refit (irs update or irs fit) on data that holds them, or lower the "
                "freq_threshold")
    return written


def _report_lookup_loss(wf: Any, data: Any, options: dict[str, Any] | None, budget: float,
                        fix: str, title: str = "Lookups out of vocabulary"
                        ) -> dict[str, float]:
    """Print each Categorify column of ``data`` (``wf``'s output: a path or a lazy
    Dataset) whose lookups went out of vocabulary more often than ``budget``, with
    ``fix``, or that none did, under ``title``; the shares by column."""
    from interactive_recsys.stats._lookup_loss import lookup_loss  # lazy: Dask

    losses = lookup_loss(wf, data, options)
    if not losses:
        return {}
    over = [loss for loss in losses.values() if loss.share > budget]
    if over:
        say(f"{title}: {len(over)} of {len(losses)} Categorify columns over "
            f"the {budget:.2%} budget (--oov-budget); the model has no row of its own for "
            f"these values. {fix}:")
        for loss in sorted(over, key=lambda loss: -loss.share):
            say(f"  {loss.text(budget)}")
    else:
        worst = max(losses.values(), key=lambda loss: loss.share)
        say(f"{title}: every one of the {len(losses)} Categorify columns "
            f"within the {budget:.2%} budget (most: {worst.column}, {worst.share:.2%} of its "
            "non-null lookups)")
    return {column: loss.share for column, loss in losses.items()}


def _report_diff(old: Any, new: Any, old_name: str, new_name: str) -> Any:
    """Print what changed per column from workflow ``old`` to ``new``
    (:func:`~interactive_recsys.vocabulary_diff`, as aligned text); return the table."""
    from interactive_recsys.stats._diff_text import diff_text  # lazy: pandas
    from interactive_recsys.stats._vocabulary_diff import vocabulary_diff  # lazy: pandas

    diff = vocabulary_diff(old, new)
    say(f"What changed from {old_name} to {new_name} (irs.vocabulary_diff):")
    say(diff_text(diff))
    return diff


def update(args: argparse.Namespace) -> dict[str, Any]:
    """``irs update``: a saved workflow extended with new data, saved as a new folder; prints
    what changed per column (:func:`~interactive_recsys.vocabulary_diff`)."""
    from interactive_recsys.workflow._workflow import Workflow  # lazy: Dask

    options = storage_options(args)
    _check_paths(args, workflow_is_input=True)
    wf = Workflow.load(args.workflow, storage_options=options)
    _refuse_unfitted(wf, args)
    with cluster_client(args.scheduler, args.workers, args.memory_limit, args.local) as client:
        ds = open_input(args, options)
        refuse_no_rows(ds, "update")
        t0 = time.perf_counter()
        new = run_with_bars(lambda: wf.update(ds), name="irs update", rows=ds.known_num_rows,
                            quiet=args.quiet, client=client)
        new.save(args.output, overwrite=args.overwrite, storage_options=options)
        summary = {"workflow": args.output, "rows": new.fit_stats["update"]["rows"],
                   "seconds": time.perf_counter() - t0,
                   "tables": {key: info for steps in new.fit_stats["update"]["steps"].values()
                              for key, info in steps.items()}}
        rows = summary["rows"]  # known from parquet metadata; csv rows are not counted
        what = f"{rows:,} rows" if rows is not None else ds.describe_input()
        say(f"Updated {args.workflow} with {what} in {summary['seconds']:.2f} s on "
            f"{describe_client(client)} -> {args.output}")
        for key, info in summary["tables"].items():
            first, stop = info["new_rows"]
            refused = f", {info['refused']:,} refused (max_size)" if info["refused"] else ""
            added = (f"{info['appended']:,} new rows (ids {first}..{stop - 1})"
                     if info["appended"] else "no new rows")
            say(f"  {key}: vocabulary version {info['version']}, {added}{refused}")
        summary["diff"] = _report_diff(wf, new, args.workflow, args.output)
        summary["lookup_loss"] = _report_lookup_loss(  # the new data under the new ids
            new, new.transform(ds), options, args.oov_budget,
            "Lower the freq_threshold (or raise max_size) and update again from the same "
            "workflow folder", title="Lookups of the new data still out of vocabulary")
    return summary
