"""The Suggest card's "hashed instead" column: for each column too large to keep whole, the
``HashBucket`` table in the same memory and the share of its lookups that would share a row
(:mod:`..suggest._hash_size`), next to the lookups the threshold loses; and the note under
the table that says what it means. Nothing when no column is too large.

>>> p = HashProposal("C3", 2**20, 0.6321, 0.01)
>>> hash_cell({"C3": p}, "C3"), hash_cell({"C3": p}, "C1"), hash_cell({}, "C1")
('<td>1,048,576: 63.21%</td>', '<td>—</td>', '')
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from interactive_recsys.ui.builder.suggest._hash_size import HashProposal

#: The column's header (after "lookups lost").
HASH_HEADER = "<th>hashed instead<br>(buckets: collide)</th>"


def hash_cell(hashing: Mapping[str, HashProposal] | None, column: str) -> str:
    """The cell of ``column`` (``—`` when it is kept as Suggest chose), ``""`` when the card
    has no hashed column at all."""
    if not hashing:
        return ""
    proposal = hashing.get(column)
    if proposal is None:
        return "<td>—</td>"
    return f"<td>{proposal.num_buckets:,}: {proposal.collision_rate:.2%}</td>"


def hash_note(hashing: Mapping[str, HashProposal] | None) -> str:
    """The sentence under the table that explains the column (``""`` without one).

    >>> "share their row" in hash_note({"C3": HashProposal("C3", 1024, 0.7, 0.01)})
    True
    """
    if not hashing:
        return ""
    target = next(iter(hashing.values())).target
    return html.escape(
        f" Hashed instead: HashBucket with the fewest buckets (a power of two) whose lookups "
        f"collide at most {target:.2%} of the time, within the rows the threshold's table "
        "has (else the most that fit): no lookup goes out of vocabulary, but the collide % "
        "of them share their row with another value (irs.hash_collision_rate on every row).")
