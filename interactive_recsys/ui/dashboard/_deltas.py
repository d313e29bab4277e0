"""Send the browser what changed, and nothing when nothing did.

A Bokeh ``source.data = {...}`` sends every column whole and the browser rebuilds every
glyph on it; ``source.patch`` sends only the changed cells and ``source.stream`` only the new
rows. Two helpers choose the least for the dashboard's figures:

* :func:`settle_rows` keeps the rows that moved less than a tolerance as they were;
* :func:`sync_columns` brings a small table (one row per worker) to new values: nothing if
  equal, a patch of the changed cells if the rows are the same, the whole table otherwise;
* :class:`Series` streams the points of a time series that change its line: a run of equal
  values is sent as its first point, and its last point only when the value moves again
  (so the line stays flat, then steps), or when :meth:`Series.flush` is called.

"Equal" allows a ``tolerance`` per column: an idle worker's memory moves by a few KiB
between heartbeats, which no screen shows.

>>> from bokeh.models import ColumnDataSource
>>> source = ColumnDataSource({"worker": ["a", "b"], "mem": [1.0, 2.0]})
>>> sync_columns(source, {"worker": ["a", "b"], "mem": [1.0, 2.0]})
'none'
>>> sync_columns(source, {"worker": ["a", "b"], "mem": [1.0, 5.0]}), source.data["mem"]
('patch', [1.0, 5.0])
>>> sync_columns(source, {"worker": ["a"], "mem": [1.0]})
'replace'
>>> line = Series(ColumnDataSource({"time": [], "v": []}), rollover=100)
>>> for t, v in [(0, 0.0), (1, 0.0), (2, 0.0), (3, 4.0), (4, 4.0)]:
...     _ = line.extend([{"time": t, "v": v}])
>>> line.source.data["time"], line.source.data["v"]
([0, 2, 3], [0.0, 0.0, 4.0])
>>> line.flush(), line.source.data["time"]
(1, [0, 2, 3, 4])
"""

from __future__ import annotations

import math
from typing import Any


def same(a: Any, b: Any, tolerance: float = 0.0) -> bool:
    """Whether two cells are equal (NaN equals NaN; numbers within ``tolerance``).

    >>> same(float("nan"), float("nan")), same(1.0, 1.4, 0.5), same("a", "b")
    (True, True, False)
    """
    if a == b:
        return True
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= tolerance
    return False


def sync_columns(source: Any, data: dict[str, list], tolerance: dict[str, float] | None = None
                 ) -> str:
    """Bring ``source.data`` to ``data`` sending the least: ``"none"`` (every cell equal
    within its column's ``tolerance``), ``"patch"`` (same columns and rows: the changed cells
    only) or ``"replace"`` (the table whole)."""
    tolerance = tolerance or {}
    old = source.data
    n = len(next(iter(data.values()), []))
    if set(old) != set(data) or any(len(old[k]) != n or len(v) != n for k, v in data.items()):
        source.data = data
        return "replace"
    patches = {k: [(i, new) for i, (was, new) in enumerate(zip(old[k], v, strict=True))
                   if not same(was, new, tolerance.get(k, 0.0))] for k, v in data.items()}
    patches = {k: v for k, v in patches.items() if v}
    if not patches:
        return "none"
    source.patch(patches)
    return "patch"


def settle_rows(old: dict[str, list], new: dict[str, list], key: str,
                tolerance: dict[str, float]) -> dict[str, list]:
    """``new``, where each row whose ``key`` is in ``old`` and whose ``tolerance`` columns
    all moved by no more than their tolerance is ``old``'s row (its text columns too, so a
    label derived from the numbers does not flicker either).

    >>> old = {"w": ["a", "b"], "mem": [100, 200], "text": ["100 B", "200 B"]}
    >>> settle_rows(old, {"w": ["a", "b"], "mem": [104, 300], "text": ["104 B", "300 B"]},
    ...             "w", {"mem": 10})
    {'w': ['a', 'b'], 'mem': [100, 300], 'text': ['100 B', '300 B']}
    """
    where = {k: i for i, k in enumerate(old.get(key, []))}
    out = {k: list(v) for k, v in new.items()}
    if set(old) != set(new):
        return out
    for j, k in enumerate(new[key]):
        i = where.get(k)
        if i is not None and all(same(old[c][i], new[c][j], t) for c, t in tolerance.items()):
            for c in out:
                out[c][j] = old[c][i]
    return out


class Series:
    """A streamed time series (a ``time`` column and value columns) that sends only the
    points that change its line.

    Parameters
    ----------
    source : the ``ColumnDataSource`` (its columns: ``time`` and the values).
    rollover : points kept in the browser and the kernel.
    tolerance : per value column, a change no larger than this is no change.
    """

    def __init__(self, source: Any, rollover: int,
                 tolerance: dict[str, float] | None = None) -> None:
        self.source = source
        self.rollover = rollover
        self.tolerance = tolerance or {}
        self._sent: dict[str, Any] | None = None
        self._held: dict[str, Any] | None = None
        self._out: list[dict[str, Any]] = []
        self.streams = 0

    def _changed(self, point: dict[str, Any]) -> bool:
        sent = self._sent
        return sent is None or any(not same(sent[k], v, self.tolerance.get(k, 0.0))
                                   for k, v in point.items() if k != "time")

    def queue(self, points: list[dict[str, Any]]) -> int:
        """Add ``points`` (oldest first, one dict of scalars each) without sending; returns
        how many change the line (sent by the next :meth:`send` or :meth:`flush`)."""
        before = len(self._out)
        for point in points:
            if self._changed(point):
                if self._held is not None:  # the flat stretch ends here, then the step
                    self._out.append(self._held)
                self._out.append(point)
                self._sent, self._held = point, None
            else:
                self._held = point
        return len(self._out) - before

    def extend(self, points: list[dict[str, Any]]) -> int:
        """Add ``points`` and stream, in one message, those that change the line. Returns
        the number of points sent."""
        self.queue(points)
        return self.send()

    def send(self) -> int:
        """Stream the queued points (one message); returns how many."""
        out, self._out = self._out, []
        return self._stream(out)

    def flush(self) -> int:
        """Stream the queued points and the last point of a flat stretch (the line reaches
        now), in one message; returns how many."""
        held, self._held = self._held, None
        if held is not None:
            self._out.append(held)
            self._sent = held
        return self.send()

    def _stream(self, points: list[dict[str, Any]]) -> int:
        if points:
            self.source.stream({k: [p[k] for p in points] for k in points[0]},
                               rollover=self.rollover)
            self.streams += 1
        return len(points)


__all__ = ["Series", "same", "settle_rows", "sync_columns"]
