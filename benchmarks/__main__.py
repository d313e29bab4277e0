"""Command line: ``python -m benchmarks criteo [--rows N ...] [--repeats R] [--quick]``.

Other benchmarks are modules of this package listed in :data:`SUBCOMMANDS`; each defines
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args)``.
"""

from __future__ import annotations

import argparse
import importlib

from .contenders import CONTENDERS

#: subcommand -> module of this package (besides ``criteo``, defined here)
SUBCOMMANDS: dict[str, str] = {"monitor-overhead": "monitor_overhead"}
SUBCOMMANDS["movielens"] = "movielens"
SUBCOMMANDS["scaling"] = "scaling"
SUBCOMMANDS.update(loader="loader", dlrm="dlrm")
SUBCOMMANDS["predict"] = "predict"
SUBCOMMANDS["refit"] = "refit"
SUBCOMMANDS["criteo-torchrec"] = "criteo_torchrec"
SUBCOMMANDS["criteo-day"] = "criteo_day"
SUBCOMMANDS["headline"] = "headline"
SUBCOMMANDS["dashboard-cpu"] = "dashboard_cpu"
SUBCOMMANDS["serving"] = "serving"

DEFAULT_CONTENDERS = [name for name, c in CONTENDERS.items() if c.default]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="interactive_recsys benchmarks")
    sub = parser.add_subparsers(dest="benchmark", required=True)
    criteo = sub.add_parser("criteo", help="the standard Criteo workflow on synthetic data")
    criteo.add_argument("--rows", type=int, nargs="+", default=[2_000_000, 8_000_000],
                        help="data sizes (default: 2000000 8000000)")
    criteo.add_argument("--repeats", type=int, default=3, help="timed runs per contender")
    criteo.add_argument("--quick", action="store_true",
                        help="smoke run: 200k rows in 4 files, 1 repeat (under a minute)")
    criteo.add_argument("--contenders", nargs="+", choices=list(CONTENDERS),
                        default=DEFAULT_CONTENDERS, help="default: all but polars-join "
                        "(nvtabular only if its venv exists)")
    criteo.add_argument("--rows-per-file", type=int, default=500_000)
    criteo.add_argument("--layout", choices=["generator", "pyarrow"], default="generator",
                        help="pyarrow: 1M-row files written with pq.write_table's defaults "
                        "(one row group each) instead of the generator's 128Ki-row groups")
    criteo.add_argument("--profile", choices=["kaggle", "default"], default="kaggle",
                        help="synthetic_criteo profile: kaggle (real Criteo Kaggle widths, "
                        "the default) or default (narrower columns)")
    criteo.add_argument("--sample", type=int, default=20_000,
                        help="rows compared with the reference output")
    criteo.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    criteo.add_argument("--quiet-wait", type=float, default=30,
                        help="before each run, wait up to this many seconds for other "
                        "processes to use under 15%% of the machine (0: do not wait)")
    criteo.add_argument("--code", choices=["head", "worktree"], default="head",
                        help="benchmark the package as committed (default) or the working tree")
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(f".{module_name}", __package__)
        module.add_arguments(sub.add_parser(name, help=module.HELP))
    args = parser.parse_args(argv)
    if args.benchmark != "criteo":
        return args
    if args.quick:
        args.rows, args.repeats, args.rows_per_file, args.sample = [200_000], 1, 50_000, 5_000
        args.quiet_wait = min(args.quiet_wait, 5)
    return args


def criteo_label(args: argparse.Namespace) -> str:
    """The result file name of a criteo run: ``criteo[-quick]-<profile>[-<layout>]-<rows>``,
    e.g. ``criteo-kaggle-8M``: one current file per scenario."""
    from .report import rows_label

    return "-".join(["criteo-quick" if args.quick else "criteo", args.profile,
                     *([] if args.layout == "generator" else [args.layout]),
                     rows_label(args.rows)])


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.benchmark != "criteo":
        importlib.import_module(f".{SUBCOMMANDS[args.benchmark]}", __package__).run(args)
        return
    from .harness import run_benchmark

    label = criteo_label(args)
    run_benchmark(args.rows, args.contenders, args.repeats, args.rows_per_file, args.sample,
                  args.timeout, args.quiet_wait, label, args.code, args.profile, args.layout)


if __name__ == "__main__":
    main()
