"""``Categorify(max_frequency=N)``: values seen more than ``N`` times are cut from the vocabulary.

A cut value is **out of vocabulary**: it gets the out-of-vocabulary id (with
``num_buckets``, its hash bucket), exactly as a value too rare for ``freq_threshold``. Why
not an id of its own:

* what the cut is for (bots, spam, a placeholder such as ``"unknown"`` or ``-1`` holding a
  large share of the rows) is that the model learns nothing from *which* value it is: an
  embedding row of its own would learn exactly that identity, from the most rows of all;
* an out-of-vocabulary value is the one other case the model already knows, and every
  path that encodes values (``Workflow.transform``, the online transform of
  ``irs.Loader(workflow=...)``, served models) already treats it the same way: the cut
  value is simply not in the lookup table, so no path can encode it differently;
* the cut rows count as out-of-vocabulary lookups (``oov_count``, the Embeddings tab's
  lookups lost), so what the cut costs is shown where the other cuts are.

The price: those rows train the out-of-vocabulary row, which unseen values also use. Where
a value means "missing" (a placeholder), turn it into null before ``Categorify`` instead;
with ``num_buckets``, each cut value lands in its hash bucket, among rare values.

The cut is exact under ``Workflow.update``: each cut value is kept with its count next to
the vocabulary (``cut.NNNNN.parquet``, ``value, count``), so an update adds the new counts
and cuts the values whose *cumulative* count exceeds ``N``; a value of the vocabulary that
crosses ``N`` is cut then and its id is *retired* (no value has it any more; the others keep
theirs). The state counts the values cut (``cut_values``), their rows (``cut_count``) and the
ids retired (``retired``): ``cardinality = first id + size + retired``.

>>> import pandas as pd, interactive_recsys as irs
>>> from interactive_recsys import ops
>>> df = pd.DataFrame({"user": ["bot"] * 5 + ["ann", "bob", "ann"]})
>>> wf = irs.Workflow(["user"] >> ops.Categorify(max_frequency=4))
>>> wf.fit_transform(df)["user"].tolist()   # bot (5 rows) -> 2, out of vocabulary
[2, 2, 2, 2, 2, 3, 4, 3]
>>> info = next(wf.fitted_steps()).state["vocabs"]["user"]
>>> info["cut_values"], info["cut_count"], info["oov_count"]
(1, 5, 5)
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend import _keyed_counts as kc
from interactive_recsys.errors import ParameterError  # noqa: F401  (the doctest)
from interactive_recsys.params import param_error
from interactive_recsys.tables._vocabulary import write_table_file
from interactive_recsys.tables._vocabulary_update import cut_path


def check_bounds(freq_threshold: int, max_frequency: int | None) -> None:
    """Refuse a ``max_frequency`` below ``freq_threshold``: no value could be kept.

    >>> check_bounds(5, 10), check_bounds(0, 1)
    (None, None)
    >>> try:
    ...     check_bounds(5, 3)
    ... except ParameterError as exc:
    ...     print(str(exc)[:72])
    The 'max_frequency' parameter of Categorify must be at least freq_thresh
    """
    if max_frequency is not None and freq_threshold and max_frequency < freq_threshold:
        raise param_error("max_frequency", "Categorify", f"must be at least freq_threshold "
                          f"({freq_threshold}), as values are kept when seen from "
                          f"freq_threshold to max_frequency times. Got {max_frequency} "
                          "instead: raise it or lower freq_threshold.")


def write_cut(counts: kc.Counts, max_frequency: int, directory: str, split: int,
              storage_options: Any = None) -> dict[str, int]:
    """Write one split's values counted more than ``max_frequency`` times (``value, count``)
    as its cut file; their number and rows."""
    table = kc.decode(counts)
    cut = table.filter(pc.greater(table["count"], max_frequency))
    write_table_file(cut, cut_path(directory, split), storage_options)
    return {"size": cut.num_rows, "count": int(pc.sum(cut["count"]).as_py() or 0)}


def cut_info(cut: pa.Table | None, retired: int) -> dict[str, Any]:
    """The state entries of an updated vocabulary's cut (none without ``max_frequency``).

    >>> cut_info(pa.table({"value": ["x"], "count": [9]}), 1)
    {'cut': True, 'cut_values': 1, 'cut_count': 9, 'retired': 1}
    >>> cut_info(None, 0)
    {}
    """
    if cut is None:
        return {}
    return {"cut": True, "cut_values": cut.num_rows,
            "cut_count": int(pc.sum(cut["count"]).as_py() or 0), "retired": int(retired)}
