"""The ``irs`` command line: ``irs demo`` (the main job), ``irs fit`` (fit a saved workflow),
``irs run`` (apply a saved workflow), ``irs update`` (extend it with new data),
``irs predict`` (top-K lists with a saved model), ``irs report`` (HTML report of a notebook),
``irs clean`` (temporaries of killed writes), ``irs criteo`` (raw Criteo to TorchRec's files)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from concurrent.futures import CancelledError

from interactive_recsys.cli._cluster import one_line_dask_logs
from interactive_recsys.cli._parser import build_parser
from interactive_recsys.errors import IRSError
from interactive_recsys.lazy import lazy_exports
from interactive_recsys.redact import redact_text

# The workflow layer's names, importable from here as before, loaded on first use (PEP 562).
__getattr__ = lazy_exports(__name__, {
    "standard_criteo_workflow": "interactive_recsys.datasets._criteo_workflow",
    "Workflow": "interactive_recsys.workflow", "Dataset": "interactive_recsys.io"})


#: Exit status of an error in the input or the options (and of argparse's usage errors).
EXIT_ERROR = 2
#: Exit status when the Dask scheduler was lost mid-command: the input was fine, run it again.
EXIT_CLUSTER_LOST = 3


class _NeverRaised(Exception):
    """Stands for an error class whose module was never loaded (so nothing raised it)."""


def _loaded(module: str, name: str) -> type[BaseException]:
    """``module.name`` if ``module`` is loaded, else :class:`_NeverRaised`: a command that
    never imported Dask (``irs criteo --local``) cannot raise Dask's errors, and need not
    import Dask to catch them."""
    return getattr(sys.modules.get(module), name, None) or _NeverRaised


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status is 0, ``EXIT_ERROR`` (bad input, options) or
    ``EXIT_CLUSTER_LOST`` (the scheduler went away: run again), with one line on
    stderr for an error, never a traceback."""
    args = build_parser().parse_args(argv)
    try:
        with one_line_dask_logs():
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
