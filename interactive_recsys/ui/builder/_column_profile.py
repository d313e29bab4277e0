"""Column profile of a dataset sample: dtype, null share, approximate distinct count and the
column's role (categorical / continuous / list / label), as the pipeline builder lists them.

>>> import pyarrow as pa
>>> [(p.name, p.role) for p in profile_table(pa.table({"c": ["x", "y"], "label": [0, 1]}))]
[('c', 'categorical'), ('label', 'label')]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from interactive_recsys.backend._arrow import element_values, is_list
from interactive_recsys.schema import Schema, Tags, is_float_dtype, is_list_dtype

ROLES = ("categorical", "continuous", "list", "label")
#: Column names taken for the training label when no tag says otherwise.
LABEL_NAMES = frozenset({"label", "labels", "target", "click", "clicked", "is_click", "y"})


# ---- column profile ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnProfile:
    """One input column as seen in a sample.

    ``distinct`` estimates the number of distinct values of the whole column from the
    sample's growth curve (:func:`estimate_distinct`); it is exact (``exact=True``) when the
    sample holds every row. ``histogram`` maps a count ``k`` to the number of values seen
    ``k`` times in the sample (non-null; categorical and list columns), from which
    ``suggest._vocab_budget`` measures what a frequency threshold would cost.
    """

    name: str
    dtype: str
    role: str
    null_fraction: float
    distinct: int
    distinct_in_sample: int
    sample_rows: int
    exact: bool
    total_rows: int | None = None
    #: values seen exactly once in the sample (the tail of a categorical column)
    singletons: int = 0
    #: numeric columns only (else None): smallest value, share of negative values among the
    #: non-null ones, how many distinct negative values, and the skewness of the values
    minimum: float | None = None
    negative_fraction: float | None = None
    negative_distinct: int | None = None
    skew: float | None = None
    histogram: tuple[tuple[int, int], ...] = ()

    @property
    def distinct_text(self) -> str:
        """The count and what it is: ``"12,517 exact"``, or an estimate from the sample,
        ``"~84,255 (sample estimate)"`` (``">=500 (sample estimate)"`` when the row count is
        unknown: the sample's own count is all that is known)."""
        if self.exact:
            return f"{self.distinct:,} exact"
        mark = "~" if self.total_rows is not None else ">="
        return f"{mark}{self.distinct:,} (sample estimate)"

    @property
    def distinct_short(self) -> str:
        """:attr:`distinct_text` for a narrow cell: ``"12,517 exact"``, ``"~84,255 est."``."""
        return self.distinct_text.replace(" (sample estimate)", " est.")

    def counted(self, distinct: int) -> ColumnProfile:
        """This profile with ``distinct`` counted over every row (exact) in place of the
        sample's estimate."""
        return replace(self, distinct=distinct, exact=True)

    def describe(self) -> str:
        """One line: name, dtype, role, null share of the sample and the distinct count."""
        return (f"{self.name}: {self.dtype}, {self.role}, {self.null_fraction:.1%} null, "
                f"distinct {self.distinct_text}")


def infer_role(name: str, dtype: str, tags: Iterable[str] = ()) -> str:
    """``label`` / ``list`` / ``categorical`` / ``continuous`` from tags, dtype and name.

    >>> infer_role("userId", "int64"), infer_role("I1", "int64"), infer_role("C1", "string")
    ('categorical', 'continuous', 'categorical')
    """
    tags = set(tags)
    if Tags.TARGET.value in tags or name.lower() in LABEL_NAMES:
        return "label"
    if is_list_dtype(dtype) or Tags.LIST.value in tags:
        return "list"
    if Tags.CATEGORICAL.value in tags:
        return "categorical"
    if Tags.CONTINUOUS.value in tags or is_float_dtype(dtype):
        return "continuous"
    if dtype.startswith(("int", "uint")):
        return "categorical" if name.lower().endswith("id") else "continuous"
    return "categorical"  # strings, booleans, dates used as keys


def rarefied_distinct(histogram: dict[int, int], rows: int, subsample: int) -> float:
    """Expected distinct values in ``subsample`` of the ``rows`` sampled rows, drawn without
    replacement, from the sample's count histogram (``k -> values seen k times``):
    ``sum f_k * (1 - C(rows - k, subsample) / C(rows, subsample))``.

    >>> round(rarefied_distinct({1: 4}, rows=4, subsample=2), 6)   # 4 values, half the rows
    2.0
    """
    total = 0.0
    for k, f in histogram.items():
        if rows - k < subsample:
            total += f
            continue
        log_missed = (math.lgamma(rows - k + 1) - math.lgamma(rows - k - subsample + 1)
                      - math.lgamma(rows + 1) + math.lgamma(rows - subsample + 1))
        total += f * (1.0 - math.exp(log_missed))
    return total


def estimate_distinct(counts: Sequence[int], total_rows: int | None,
                      sample_rows: int | None = None) -> int:
    """Distinct values of ``total_rows`` rows, extrapolated from the value counts of
    ``sample_rows`` sampled rows (default: the sum of the counts).

    The sample's own growth curve is measured (expected distinct values in a half and a
    quarter of it, :func:`rarefied_distinct`) and continued doubling by doubling up to
    ``total_rows``, each doubling's log-log slope shrinking by the ratio the sample shows
    between its last two: a long tail (Heaps' law, slope near 1) keeps growing, a saturated
    vocabulary stops. On Criteo-like power laws (2M rows from 10,000) it lands within about
    20% for the widest columns, where the sample-only GEE estimate is 8x too low, and
    over-estimates mid-size vocabularies that stop growing beyond the sample (up to ~4x).

    >>> estimate_distinct([1, 1, 2], total_rows=4)   # the whole data: exact
    3
    >>> estimate_distinct([1] * 500, total_rows=4000)  # every sampled value new: 8x the rows
    4000
    >>> estimate_distinct([100] * 7, total_rows=7000)  # 7 values, all seen often: saturated
    7
    """
    n = sample_rows if sample_rows is not None else sum(counts)
    seen = len(counts)
    if not n or total_rows is None or total_rows <= n or seen == 0:
        return seen
    histogram: dict[int, int] = {}
    for c in counts:
        histogram[c] = histogram.get(c, 0) + 1
    rows = sum(counts)  # non-null sampled rows
    half, quarter = (rarefied_distinct(histogram, rows, rows // d) for d in (2, 4))
    if half <= 0 or quarter <= 0:
        return seen
    slope = math.log(seen / half) / math.log(2)
    decay = min(1.0, slope / (math.log(half / quarter) / math.log(2))) if half > quarter else 0.0
    estimate, doublings = float(seen), math.log2(total_rows / n)
    while doublings > 0 and slope > 1e-6:
        step = min(1.0, doublings)
        slope *= decay
        estimate *= 2 ** (slope * step)
        doublings -= step
    return int(min(total_rows, max(seen, round(estimate))))


def numeric_stats(values: pa.ChunkedArray | pa.Array) -> dict[str, float | int | None]:
    """Minimum, negative share, distinct negatives and skewness of the non-null numbers.

    The skewness is the population one, ``mean((x - m) ** 3) / std ** 3`` (0 when all
    values are equal).

    >>> numeric_stats(pa.array([-1, 0, 0, 1, None]))
    {'minimum': -1.0, 'negative_fraction': 0.25, 'negative_distinct': 1, 'skew': 0.0}
    """
    import numpy as np

    x = np.asarray(pc.drop_null(values).to_numpy(zero_copy_only=False), dtype="float64")
    x = x[np.isfinite(x)]
    if not len(x):
        return {"minimum": None, "negative_fraction": None, "negative_distinct": None,
                "skew": None}
    negative = x[x < 0]
    std = x.std()
    skew = float(((x - x.mean()) ** 3).mean() / std ** 3) if std > 0 else 0.0
    return {"minimum": float(x.min()), "negative_fraction": len(negative) / len(x),
            "negative_distinct": len(np.unique(negative)), "skew": skew}


def profile_table(table: pa.Table, schema: Schema | None = None,
                  total_rows: int | None = None) -> list[ColumnProfile]:
    """Profile every column of a sample ``table`` (``total_rows``: rows of the whole data)."""
    schema = schema or Schema.from_arrow(table.schema)
    n = table.num_rows
    out = []
    for name in table.column_names:
        col = table[name]
        values = element_values(col)
        counts = pc.value_counts(values.drop_null()).field("counts").to_pylist() \
            if len(values) else []
        dtype = schema[name].dtype if name in schema else str(col.type)
        tags = schema[name].tags if name in schema else ()
        exact = total_rows is not None and total_rows <= n
        kind = values.type
        numeric = (pa.types.is_integer(kind) or pa.types.is_floating(kind)) \
            and not is_list(col.type)
        stats = numeric_stats(values) if numeric else {}
        histogram: dict[int, int] = {}
        for c in counts:
            histogram[c] = histogram.get(c, 0) + 1
        out.append(ColumnProfile(
            name=name, dtype=dtype, role=infer_role(name, dtype, tags),
            null_fraction=(col.null_count / n) if n else 0.0,
            distinct=estimate_distinct(counts, total_rows, n), distinct_in_sample=len(counts),
            sample_rows=n, exact=exact, total_rows=total_rows,
            singletons=histogram.get(1, 0), histogram=tuple(sorted(histogram.items())),
            **stats))
    return out
