"""Lookups that a transformed dataset sent out of vocabulary, counted in its ids.

A fitted ``Categorify`` maps each value to an id: 0 is padding, 1 the null slot, the ids from 2
below ``first_vocab_index`` the out-of-vocabulary slots (values below ``freq_threshold`` in the
fit, or never seen in it), the rest the vocabulary. Counting those ids in the output tells how
many lookups of the data the workflow was *applied* to found no row of their own: the loss a
model sees on tomorrow's data, which the fit's own counts cannot tell. The share is of the
non-null lookups (neither null nor padding), the same share the Studio shows.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["a", "b"]}))
>>> out = wf.transform(pd.DataFrame({"c": ["a", "z", "z", None]}))
>>> loss = lookup_loss(wf, out)["c"]
>>> loss.lost, loss.lookups, f"{loss.share:.1%}"
(2, 3, '66.7%')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.io._dataset import Dataset
from interactive_recsys.ops._categorify import Categorify
from interactive_recsys.runtime.jobs import compute
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, NULL_INDEX

#: Task key prefix of the counting graph (the task stream shows it).
PREFIX = "lookup-loss"


@dataclass(frozen=True)
class LookupLoss:
    """One column's out-of-vocabulary lookups (``lost``) among its non-null lookups
    (``lookups``).

    :attr:`share` is the one computation of "lookups lost" that every view shows: the
    Build tab (Run's status and its over-budget alert), the Embeddings tab (the report's
    ``OOV % of non-null lookups``), ``irs run --oov-budget``.
    """

    column: str
    lost: int
    lookups: int

    @classmethod
    def of_counts(cls, column: str, oov_count: int, value_count: int, null_count: int
                  ) -> LookupLoss:
        """From the counts a fitted ``Categorify`` keeps per vocabulary: values looked up
        (``value_count``, nulls included), nulls and out-of-vocabulary lookups.

        >>> f"{LookupLoss.of_counts('c', 2, 10, 2).share:.2%}"  # 2 of the 8 non-null
        '25.00%'
        """
        return cls(column, int(oov_count), int(value_count) - int(null_count))

    @property
    def share(self) -> float:
        """``lost / lookups``: the share of the non-null lookups (0 without lookups)."""
        return self.lost / self.lookups if self.lookups else 0.0

    def text(self, budget: float) -> str:
        return (f"{self.column}: {self.share:.2%} of its {self.lookups:,} non-null lookups "
                f"({self.lost:,}) went out of vocabulary, over the {budget:.2%} budget")


def oov_ids(workflow: Any) -> dict[str, tuple[int, int]]:
    """Per output column of every fitted ``Categorify``: its out-of-vocabulary ids
    ``[first, stop)``."""
    return {column: (FIRST_FREE_INDEX, step.op.first_vocab_index)
            for step in workflow.fitted_steps(Categorify)
            for column in step.op.output_names(list(step.groups))}


def fitted_lookup_loss(workflow: Any) -> dict[str, LookupLoss]:
    """Per output column of every fitted ``Categorify``: the lookups of the fit data its
    vocabulary sent out of vocabulary, from the counts its fitted state keeps (no pass over
    the data; columns whose state has no such counts are left out).

    >>> import pandas as pd, interactive_recsys as irs
    >>> from interactive_recsys import ops
    >>> frame = pd.DataFrame({"c": ["a", "a", "a", "b", None]})
    >>> wf = irs.Workflow(["c"] >> ops.Categorify(freq_threshold=2)).fit(frame)
    >>> fitted_lookup_loss(wf)["c"]  # b: 1 of the 4 non-null lookups
    LookupLoss(column='c', lost=1, lookups=4)
    """
    out: dict[str, LookupLoss] = {}
    for step in workflow.fitted_steps(Categorify):
        infos = step.state.get("vocabs", {})
        for column, key in step.op.output_names(list(step.groups)).items():
            info = infos.get(key)
            if info and {"oov_count", "value_count", "null_count"} <= set(info):
                out[column] = LookupLoss.of_counts(column, info["oov_count"],
                                                   info["value_count"], info["null_count"])
    return out


def _count(table: pa.Table, ranges: dict[str, tuple[int, int]]) -> np.ndarray:
    """``[[lost, lookups], ...]`` per column of ``ranges``, in its order, for one partition."""
    out = np.zeros((len(ranges), 2), dtype=np.int64)
    for i, (column, (first, stop)) in enumerate(ranges.items()):
        ids = table.column(column)
        if pa.types.is_list(ids.type) or pa.types.is_large_list(ids.type):
            ids = pc.list_flatten(ids)
        looked_up = pc.and_(pc.not_equal(ids, NULL_INDEX), pc.not_equal(ids, 0))
        lost = pc.and_(pc.greater_equal(ids, first), pc.less(ids, stop))
        out[i] = [pc.sum(lost).as_py() or 0, pc.sum(looked_up).as_py() or 0]
    return out


def _count_partition(part: Any, backend: Any, ranges: dict[str, tuple[int, int]]
                     ) -> np.ndarray:
    return _count(backend.to_arrow(part), ranges)


def lookup_loss(workflow: Any, data: Any, storage_options: dict | None = None
                ) -> dict[str, LookupLoss]:
    """Per ``Categorify`` output column found in ``data`` (the workflow's output: a
    :class:`~interactive_recsys.Dataset`, a path or a frame), its lookups sent out of
    vocabulary, counted by one Dask pass over those id columns only."""
    ds = data if isinstance(data, Dataset) else Dataset(data, storage_options=storage_options)
    ranges = {c: r for c, r in oov_ids(workflow).items() if c in ds.schema}
    if not ranges:
        return {}
    parts = ds.arrow_ddf(list(ranges)).to_delayed()
    backend = ds.backend
    counts = [dask.delayed(_count_partition)(part, backend, ranges,
                                              dask_key_name=f"{PREFIX}-{i}")
              for i, part in enumerate(parts)]
    (totals,) = compute(dask.delayed(sum)(counts, dask_key_name=f"{PREFIX}-total"),
                        phase="lookups")
    return {column: LookupLoss(column, int(lost), int(lookups))
            for column, (lost, lookups) in zip(ranges, np.asarray(totals).reshape(-1, 2),
                                               strict=True)}
