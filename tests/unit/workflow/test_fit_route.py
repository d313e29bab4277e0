"""The route of ``Workflow.fit``: which files of the package the call enters on the client.

``fit`` runs on a small in-process cluster (``processes=False``) while ``sys.setprofile``
records, on the client's main thread, every function call into the package. The workers'
threads are not recorded: what runs on a partition is the operators' work, not the route.

Counted: every package file entered except the operators' own code, which is what fit
computes, not how it gets there:

* ``ops/``: the operators (their schemas, their ``fit_graph`` and partial statistics);
* ``tables/``: the statistics tables and tree reductions the operators build;
* ``backend/``: the pandas/cuDF kernels the operators and fingerprints call.

Also measured (not asserted): how often the call sequence returns to a lower layer, the
layers being those of ``tests/unit/project/test_imports.py`` and, inside ``workflow/``, the order in which
its modules import each other (:data:`WORKFLOW_ORDER`).
"""

from __future__ import annotations

import collections
import gc
import itertools
import pathlib
import sys

import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from tests.unit.project.test_imports import LAYERS

ROOT = pathlib.Path(irs.__file__).parent
#: folders of the operators' own code: not the workflow's route (see the module docstring)
EXCLUDED = ("ops/", "tables/", "backend/")
#: the workflow's modules, lowest first: each imports only those before it
WORKFLOW_ORDER = ["_graph", "_chains", "_plan", "_keys", "_reuse", "_fitted", "_format",
                  "_incremental", "_workflow", "__init__"]
MAX_ROUTE_FILES = 9


def _rank(rel: str) -> tuple[int, int]:
    """A file's layer (``tests/unit/project/test_imports.py``), then its place inside ``workflow/``."""
    top = rel.split("/")[0].removesuffix(".py")
    layer = next((i for i, names in enumerate(LAYERS) if top in names), len(LAYERS))
    inner = pathlib.PurePosixPath(rel).stem
    return layer, WORKFLOW_ORDER.index(inner) if top == "workflow" else 0


def returns_to_lower_layer(sequence: list[str]) -> int:
    """Transitions of the call sequence from a file to one of a lower rank."""
    return sum(_rank(b) < _rank(a) for a, b in itertools.pairwise(sequence))


def fit_route() -> tuple[collections.Counter, list[str]]:
    """The package files one ``Workflow.fit`` enters on the client (with call counts), and
    the sequence of files entered (a file repeated in a row counted once)."""
    from distributed import Client, LocalCluster

    df = pd.DataFrame({"c": ["a", "b", "a", "c"] * 50, "x": [1.0, 2.0, 3.0, 4.0] * 50,
                       "label": [0, 1] * 100})
    ds = irs.Dataset(df)

    def graph():
        return irs.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize())
                            + ["label"])

    files: collections.Counter = collections.Counter()
    sequence: list[str] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        name = frame.f_code.co_filename
        if name.startswith(str(ROOT)):
            rel = pathlib.Path(name).relative_to(ROOT).as_posix()
            files[rel] += 1
            if not sequence or sequence[-1] != rel:
                sequence.append(rel)

    from interactive_recsys.runtime._phases import BOARD

    gc.collect()
    # phase-end listeners (a dashboard's monitor that an earlier test left open) are the
    # listeners' code, not fit's route: none while measuring
    listeners = list(BOARD._on_end)
    for listener in listeners:
        BOARD.remove_on_end(listener)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster):
        graph().fit(ds)  # warm: lazy imports and caches are not the route
        wf = graph()
        sys.setprofile(profile)
        try:
            wf.fit(ds)
        finally:
            sys.setprofile(None)
            for listener in listeners:
                BOARD.on_end(listener)
    assert wf.fitted
    return files, sequence


def test_the_ranks_follow_the_layers():
    """The measure's own check: a call from the workflow into ops and back into the
    workflow's graph returns to a lower layer twice (workflow -> ops, plan -> graph)."""
    seq = ["workflow/_workflow.py", "workflow/_plan.py", "ops/_base.py", "workflow/_graph.py"]
    assert returns_to_lower_layer(seq) == 2
    assert returns_to_lower_layer(["schema.py", "workflow/_graph.py"]) == 0


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_fit_enters_at_most_nine_files_of_the_workflow_route():
    files, sequence = fit_route()
    route = sorted(f for f in files if not f.startswith(EXCLUDED))
    print(f"all-in {len(files)} files, route {len(route)}: {route}; "
          f"returns to a lower layer: {returns_to_lower_layer(sequence)}")
    assert "workflow/_workflow.py" in route and "workflow/_plan.py" in route  # it measured
    assert len(route) <= MAX_ROUTE_FILES, route
    # a plain fit takes no detour into reuse (adoption) or the save format
    assert not {"workflow/_reuse.py", "workflow/_format.py"} & set(route)
