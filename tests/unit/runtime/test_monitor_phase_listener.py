"""A monitor's phase-end listener does not keep the monitor alive, and once the monitor is
gone (dropped without ``close()``) the listener leaves the board at the next phase end."""

from __future__ import annotations

import gc

from interactive_recsys.runtime._phases import BOARD, Phase
from interactive_recsys.runtime.monitor import _phase_end_listener


class _Target:
    def __init__(self) -> None:
        self.ended: list[str] = []

    def _on_phase_end(self, phase: Phase) -> None:
        self.ended.append(phase.name)


def test_a_dropped_monitors_listener_leaves_the_board() -> None:
    target = _Target()
    listener = _phase_end_listener(target)
    BOARD.on_end(listener)
    try:
        BOARD.end(BOARD.begin(Phase("listener-test-1", total=1)), "finished")
        assert target.ended == ["listener-test-1"]
        del target
        gc.collect()
        assert listener in BOARD._on_end
        BOARD.end(BOARD.begin(Phase("listener-test-2", total=1)), "finished")
        assert listener not in BOARD._on_end
    finally:
        BOARD.remove_on_end(listener)
