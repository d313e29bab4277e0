"""What an operator may know about where it runs: :class:`OpContext`, and ``RunFacts``,
the facts of the run's data that every step of a fit, an update or a transform shares.

The workflow fills both (one binding step for a fit and an update,
``workflow._plan.Plan.bind``); operators and the statistics tables only read them.

>>> from interactive_recsys.backend import get_backend
>>> ctx = OpContext(get_backend("cpu"), [("c",)], "categorify-1",
...                 run=RunFacts(num_rows=1_000, npartitions=4))
>>> ctx.run.num_rows, ctx.run.npartitions, ctx.run.training
(1000, 4, False)
>>> OpContext(get_backend("cpu"), []).run.row_filters_of("categorify-1")
()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from interactive_recsys.backend import Backend

__all__ = ["OpContext", "RunFacts"]


@dataclass(frozen=True)
class RunFacts:
    """The facts of one run's data, the same for every step.

    Parameters
    ----------
    num_rows : the input's rows, when known without reading it (sizes split counts).
    npartitions : the input's partitions (sizes split counts when the rows are unknown).
    previous_artifacts : the artifacts folder of the fitted state a refit or an update
        starts from (a side table found there is not read again), or None.
    row_filters : each statistics step's upstream row filters, as text, by step id (for
        "saw no rows" errors).
    training : whether a transform runs on the training data (out-of-fold encodings).

    Examples
    --------
    >>> facts = RunFacts(row_filters={"normalize-2": ["FilterRows(...) (filterrows-1)"]})
    >>> facts.row_filters_of("normalize-2"), facts.row_filters_of("other")
    (('FilterRows(...) (filterrows-1)',), ())
    """

    num_rows: int | None = None
    npartitions: int = 1
    previous_artifacts: str | None = None
    row_filters: Mapping[str, Sequence[str]] = field(default_factory=dict)
    training: bool = False

    def row_filters_of(self, node_id: str) -> tuple[str, ...]:
        """The row filters before the step ``node_id`` (none when it has none)."""
        return tuple(self.row_filters.get(node_id, ()))


@dataclass
class OpContext:
    """What an operator may know about where it runs.

    Parameters
    ----------
    backend : the kernels of the partitions' library (pandas or cuDF).
    groups : the operator's input columns, in groups (one per output).
    node_id : the step's id in the workflow (names its files and its Dask tasks).
    artifacts_dir : the folder (or URL) that fitted states write their files into.
    run : the facts of the run's data (``RunFacts``).
    storage_options : fsspec options of ``artifacts_dir`` when it is a URL (``s3://...``).

    Examples
    --------
    >>> from interactive_recsys.backend import get_backend
    >>> OpContext(get_backend("cpu"), [("a",)], "clip-1").run == RunFacts()
    True
    """

    backend: Backend
    groups: list[tuple[str, ...]]
    node_id: str = ""
    artifacts_dir: str | None = None
    run: RunFacts = field(default_factory=RunFacts)
    storage_options: dict[str, Any] | None = None
