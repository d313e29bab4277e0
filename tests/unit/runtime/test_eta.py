"""The whole Run's time left (``runtime._eta``), hand-computed: what each phase still to
come is expected to take, when nothing is estimated yet, and which phases are the latest
run's."""

from __future__ import annotations

import pytest

from interactive_recsys.runtime._eta import RunPlan, estimate, latest_run
from interactive_recsys.runtime._phases import Phase


def _phase(name, status, started, stopped=None, share=None, reads=()):
    """A phase whose partitions passed are ``share`` of 32 (its ``fit``/``write_part``
    group), or all of them once finished."""
    group = "write_part" if name == "write" else "fit"
    done = 32 if status == "finished" else round(32 * share)
    return {"name": name, "job": "j", "status": status, "done": done, "total": 64,
            "started": started, "stopped": stopped, "reads": list(reads),
            "operators": [{"group": group, "label": group, "done": done, "total": 32}]}


def test_nothing_is_estimated_before_a_pace_is_measured():
    # the first fit phase: 1 of 32 partitions (3%) after 0.4 s, then 0 of 32 after 5 s
    assert estimate([_phase("fit 1/2", "running", 0.0, share=1 / 32)], 0.4,
                    RunPlan(writes=True)).left is None
    assert estimate([_phase("fit 1/2", "running", 0.0, share=0.0)], 5.0,
                    RunPlan(writes=True)).left is None
    # a Run with an output before its first fit or write: how many phases is not known
    count = {"name": "count rows", "job": "j", "status": "running", "done": 3, "total": 4,
             "started": 0.0, "stopped": None, "operators": []}
    assert estimate([count], 9.0, RunPlan(writes=True)).left is None


def test_the_write_to_come_is_weighed_by_bytes_then_columns_then_a_fit():
    fit = _phase("fit 1/1", "finished", 0.0, stopped=10.0, reads=["n"])
    # bytes: fit 1/1 read 1,000 bytes in 10 s; the write reads 5,000 and writes as many
    # again (WRITE_FACTOR 2): 2 x 50 s
    bytes_plan = RunPlan(writes=True, write_reads=("n", "c"),
                         column_bytes={"n": 1000, "c": 4000})
    assert estimate([fit], 10.0, bytes_plan).left == 100.0
    # no sizes (csv): by columns, 1 read in 10 s, 2 to read: 2 x 20 s
    assert estimate([fit], 10.0, RunPlan(writes=True, write_reads=("n", "c"))).left == 40.0
    # nothing known of what either reads: as long as a fit phase
    assert estimate([fit], 10.0, RunPlan(writes=True)).left == 10.0
    # the previous Run's write on the same data: 3 µs a row, 1M rows
    paced = RunPlan(writes=True, write_reads=("n", "c"), column_bytes={"n": 1000, "c": 4000},
                    write_seconds_per_row=3e-6)
    assert abs(estimate([fit], 10.0, paced, rows=1_000_000).left - 3.0) < 1e-9


def test_a_write_slower_than_expected_is_estimated_from_its_own_pace():
    fit = _phase("fit 1/1", "finished", 0.0, stopped=10.0)
    # expected as long as the fit, 10 s: after 4 s, 6 s more while its own pace is not
    # measured; after 12 s (past what was expected, below 2% yet), no number: not "0 s"
    early = _phase("write", "running", 10.0, share=0.0)
    assert estimate([fit, early], 14.0, RunPlan(writes=True)).left == 6.0
    assert estimate([fit, early], 22.0, RunPlan(writes=True)).left is None
    # 4 of 32 partitions after 12 s: 84 s more, whatever was expected
    late = _phase("write", "running", 10.0, share=4 / 32)
    assert estimate([fit, late], 22.0, RunPlan(writes=True)).left == 84.0


def test_a_side_phase_under_way_adds_its_own_pace():
    fit = _phase("fit 1/1", "running", 0.0, share=0.5)  # 2 s more
    side = {"name": "JoinExternal: side table", "job": "j", "status": "running", "done": 1,
            "total": 4, "started": 1.0, "stopped": None, "operators": []}  # 3 s more
    est = estimate([fit, side], 2.0, RunPlan())
    assert est.left == 5.0 and est.current == "JoinExternal: side table"
    assert est.position is None


def test_the_latest_run_of_a_job_name_is_estimated_alone():
    old = [_phase("fit 1/1", "finished", 0.0, stopped=10.0),
           _phase("write", "finished", 10.0, stopped=30.0)]
    new = [_phase("fit 1/1", "running", 40.0, share=0.25)]
    assert latest_run(old + new) == new
    est = estimate(old + new, 44.0, RunPlan(writes=True))
    # fit 1/1: a quarter in 4 s, 12 s more (16 s in all); the write, as long: 16 s
    assert est.left == 28.0 and est.to_come == ("write",) and est.position == (1, 2)


def test_the_pace_is_taken_after_the_first_partition_passed_not_from_the_start():
    """A phase whose graph takes 3 s to reach the workers, then passes a partition every
    0.25 s: at 10 of 32 partitions its rest is 22 x 0.25 = 5.5 s. Counting the start-up in
    (5.25 s for 10 partitions) would say 11.55 s, twice as long."""
    from interactive_recsys.runtime._eta import own_left

    phase = Phase("fit 1/1", total=32, started=0.0,
                  keys=frozenset(f"fit-{i}" for i in range(32)))
    phase.observe([f"fit-{i}" for i in range(10)])
    phase._group_first["fit"] = 3.0  # the first partition passed at 3 s
    now = 3.0 + 0.25 * 9
    record = phase.to_dict()
    assert record["operators"][0]["first"] == 3.0
    assert own_left(record, now) == pytest.approx(5.5)
    assert now * (1 - 10 / 32) / (10 / 32) == pytest.approx(11.55)  # from the phase's start


def test_no_time_left_until_the_pace_after_the_first_partition_is_measured():
    """Two partitions passed (start-up included): no figure yet, rather than one several
    times too long; a phase without a per-partition pass still paces on its tasks."""
    from interactive_recsys.runtime._eta import own_left

    early = {"status": "running", "done": 5, "total": 40, "started": 0.0,
             "operators": [{"group": "fit", "done": 2, "total": 32, "first": 3.0}]}
    assert own_left(early, 3.2) is None
    assert own_left(dict(early, operators=[]), 4.0) == pytest.approx(28.0)
