"""``jobs.compute_partition``: one partition of a collection, through the job layer, also
after a shuffle; and the wait of a phase, which ends when its last future does."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.runtime import jobs


def _events(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"user": rng.integers(0, 17, n), "item": rng.integers(0, 90, n)})


def test_partitions_of_a_shuffled_dataset_on_a_cluster(client) -> None:
    """A groupby shuffles rows by key: read partition by partition, the outputs are the
    groups pandas computes on the whole frame, each user once, and each read is a phase."""
    events = _events()
    ds = irs.Dataset(events, part_size="1kB")
    assert ds.npartitions > 3
    wf = irs.Workflow(["user", "item"] >> ops.Groupby(["user"], aggs={"item": ["count"]}))
    ddf = wf.fit_transform(ds).arrow_ddf()
    since = time.time()
    parts = [jobs.compute_partition(ddf, i, phase="test: read", columns=["user", "item_count"])
             for i in range(ddf.npartitions)]
    got = pd.concat(parts).astype("int64").sort_values("user").reset_index(drop=True)
    want = events.groupby("user").size().rename("item_count").reset_index()
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert list(parts[0].columns) == ["user", "item_count"]
    phases = [p for p in jobs.BOARD.phases(since) if p.name == "test: read"]
    assert len(phases) == ddf.npartitions and {p.status for p in phases} == {"finished"}


def test_dataset_to_iter_reads_each_partition_through_the_job_layer() -> None:
    """Each partition ``to_iter`` yields is a phase of the job that reads (here a job on
    the local scheduler that counts its tasks, as the command line runs one)."""
    frame = pd.DataFrame({"a": range(50)})
    ds = irs.Dataset(frame, part_size="100B")
    job = jobs.Job(lambda: list(ds.to_iter(dtype_backend="numpy_nullable")), name="iter",
                   track_local=True).start()
    parts = job.result(timeout=60)
    assert len(parts) == ds.npartitions > 1
    assert pd.concat(parts)["a"].tolist() == list(range(50))
    assert [p.name for p in job.phases] == ["read partition"] * ds.npartitions
    assert all(p.status == "finished" and p.total > 0 for p in job.phases)


def test_the_wait_ends_when_the_last_future_does(client) -> None:
    """The event of a phase's futures is set once all of them are done, failed ones too."""
    import dask

    slow = client.compute(dask.delayed(time.sleep, pure=False)(0.5))
    failing = client.compute(dask.delayed(lambda: 1 / 0, pure=False)())
    event = jobs._all_done_event(client, [failing, slow])
    assert not event.wait(0.1)  # the slow one still runs
    assert event.wait(10) and slow.done() and failing.status == "error"
    assert jobs._all_done_event(client, []).wait(5)


def test_a_short_phase_on_a_cluster_returns_before_a_poll_interval(client,
                                                                   monkeypatch) -> None:
    """The wait returns when the futures end, not at the next poll (a wait that sleeps
    first takes at least one interval). The interval is made a minute long here, so that
    the difference does not depend on the machine's speed: a tiny phase takes well under a
    second even on a busy machine."""
    ddf = irs.Dataset(pd.DataFrame({"a": range(10)})).arrow_ddf()
    jobs.compute(ddf, phase="warm up")
    monkeypatch.setattr(jobs, "POLL_SECONDS", 60.0)
    seconds = []
    for _ in range(3):
        started = time.perf_counter()
        jobs.compute(ddf, phase="short")
        seconds.append(time.perf_counter() - started)
    assert max(seconds) < jobs.POLL_SECONDS, seconds
