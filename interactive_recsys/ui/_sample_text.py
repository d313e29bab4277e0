"""Words about a sample: what a preview was computed on (plain Python, no widgets)."""

from __future__ import annotations


def computed_on(sample_rows: int, total_rows: int | None) -> str:
    """What a preview was computed on: the sample size and the dataset's row count.

    ``total_rows`` is the count known without reading the data
    (:attr:`~interactive_recsys.io.Dataset.known_num_rows`), or ``None``.

    Examples
    --------
    >>> computed_on(1000, 8_000_000)
    'computed on 1,000 of 8,000,000 rows'
    >>> computed_on(1000, None)
    'computed on 1,000 of an unknown number of rows'
    >>> computed_on(40, 40)
    'computed on all 40 rows'
    """
    if total_rows is None:
        return f"computed on {sample_rows:,} of an unknown number of rows"
    if sample_rows >= total_rows:
        return f"computed on all {total_rows:,} rows"
    return f"computed on {sample_rows:,} of {total_rows:,} rows"


__all__ = ["computed_on"]
