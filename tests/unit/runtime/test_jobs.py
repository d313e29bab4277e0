"""Background jobs on a real cluster: results, progress per phase, cancellation, errors."""

from __future__ import annotations

import os
import time

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.errors import SchemaError
from interactive_recsys.runtime.jobs import BOARD, Job, JobCancelledError
from tests.conftest import make_criteo_frame


def _dataset(tmp_path: object, rows: int = 2000, parts: int = 4) -> irs.Dataset:
    path = os.path.join(str(tmp_path), "in")
    dd.from_pandas(make_criteo_frame(rows), npartitions=parts).to_parquet(path)
    ds = irs.Dataset(path)
    assert ds.npartitions == parts
    return ds


def _two_phase_workflow(root: object) -> irs.Workflow:
    # Normalize reads Categorify's codes: its statistics need a second phase
    node = (["C1", "C2"] >> ops.Categorify() >> ops.Normalize()) + (
        ["I1"] >> ops.FillMissing(0) >> ops.Normalize())
    return irs.Workflow(node, artifacts_dir=os.path.join(str(root), "artifacts"))


def _slow_workflow(seconds: float) -> irs.Workflow:
    def slow(values: pd.Series) -> pd.Series:  # nested: pickled by value for the workers
        time.sleep(seconds)
        return values

    return irs.Workflow(["I1"] >> ops.LambdaOp(slow))


def test_background_fit_gives_the_same_statistics_with_progress_per_phase(
        client: object, tmp_path: object) -> None:
    ds = _dataset(tmp_path)
    expected = _two_phase_workflow(tmp_path / "a").fit(ds)  # type: ignore[operator]
    wf = _two_phase_workflow(tmp_path / "b")  # type: ignore[operator]
    assert len(wf.phases()) == 2
    job = wf.fit(ds, background=True)
    assert isinstance(job, Job)
    assert job.result(timeout=60) is wf
    assert job.status == "finished" and job.done() and job.exception() is None
    assert list(job.progress) == ["fit 1/2", "fit 2/2"]
    assert set(job.progress.values()) == {1.0}
    for phase in job.phases:  # every task of each phase was seen finishing in the task stream
        assert phase.total > ds.npartitions and phase.observed == phase.total
    pd.testing.assert_frame_equal(wf.transform(ds).compute(), expected.transform(ds).compute())
    assert "fit 2/2 100%" in repr(job)


def test_background_write_and_fit_transform(client: object, tmp_path: object) -> None:
    ds = _dataset(tmp_path)
    wf = _two_phase_workflow(tmp_path)
    job = wf.fit_transform(ds, background=True)
    out = job.result(timeout=60)
    write = out.to_parquet(tmp_path / "out", background=True)  # type: ignore[operator]
    summary = write.result(timeout=60)
    assert summary["num_rows"] == 2000
    assert list(write.progress) == ["write"] and write.progress["write"] == 1.0
    assert pd.read_parquet(tmp_path / "out").shape == (2000, 3)  # type: ignore[operator]


def test_a_failing_job_reraises_the_error(client: object, tmp_path: object) -> None:
    ds = _dataset(tmp_path)
    job = irs.Workflow(["missing"] >> ops.Normalize()).fit(ds, background=True)
    with pytest.raises(SchemaError, match="missing"):
        job.result(timeout=30)
    assert job.status == "error" and isinstance(job.exception(), SchemaError)


def test_job_without_a_cluster_runs_on_the_local_scheduler() -> None:
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    job = irs.Workflow(["a"] >> ops.Normalize()).fit_transform(frame, background=True)
    assert job.result(timeout=30)["a"].tolist() == pytest.approx([-1.224745, 0.0, 1.224745])


def test_cancel_stops_the_write_and_leaves_no_output(client: object, tmp_path: object) -> None:
    ds = _dataset(tmp_path, rows=800, parts=8)
    out = _slow_workflow(0.4).transform(ds)
    job = out.to_parquet(tmp_path / "out", background=True)  # type: ignore[operator]
    time.sleep(0.5)
    assert not job.done()
    assert job.cancel() is True
    with pytest.raises(JobCancelledError, match="job.cancel"):
        job.result(timeout=30)
    assert job.status == "cancelled" and job.phases[0].status == "cancelled"
    assert sorted(os.listdir(tmp_path)) == ["in"]  # no output, no temporary directory
    assert job.cancel() is False  # already over


def test_a_cancelled_overwrite_keeps_the_earlier_output(client: object,
                                                         tmp_path: object) -> None:
    """What the cancel message promises: the earlier output at the path is unchanged."""
    ds = _dataset(tmp_path, rows=800, parts=8)
    earlier = pd.DataFrame({"I1": [7.0, 8.0]})
    irs.Dataset(earlier).to_parquet(tmp_path / "out")  # type: ignore[operator]
    before = pd.read_parquet(tmp_path / "out")  # type: ignore[operator]
    # 8 parts of 1 s on 2 workers: the write lasts 4 s, however busy the machine, and the
    # cancel comes at its first finished task
    job = _slow_workflow(1.0).transform(ds).to_parquet(
        tmp_path / "out", overwrite=True, background=True)  # type: ignore[operator]
    while not any(p.observed for p in job.phases) and not job.done():
        time.sleep(0.05)  # the write has started
    job.cancel()
    with pytest.raises(JobCancelledError, match="whatever its output path held before"):
        job.result(timeout=60)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out"), before)  # type: ignore
    assert sorted(os.listdir(tmp_path)) == ["in", "out"]  # no temporary left


@pytest.mark.parametrize("first", ["client", "cluster"])
def test_closing_the_cluster_cancels_a_running_job(tmp_path: object, first: str) -> None:
    # distributed may leave dask's "scheduler" setting on its closed client when the client
    # closes while another thread uses it: restore the setting for the tests that follow
    with dask.config.set(scheduler=dask.config.get("scheduler", None)):
        _close_cluster_while_a_job_runs(tmp_path, first)


def _close_cluster_while_a_job_runs(tmp_path: object, first: str) -> None:
    ds = _dataset(tmp_path, rows=800, parts=8)
    cluster_client = irs.start_cluster(2, memory_limit="500MB", dashboard=False, gpu=False)
    job = _slow_workflow(0.4).transform(ds).to_parquet(tmp_path / "out",  # type: ignore[operator]
                                                       background=True)
    time.sleep(1.0)
    assert not job.done()
    if first == "client":
        cluster_client.close()
        cluster_client.cluster.close()
    else:  # the scheduler and workers go away under a client that is still open
        cluster_client.cluster.close()
    with pytest.raises(JobCancelledError, match="closed"):
        job.result(timeout=30)
    assert job.status == "cancelled"
    time.sleep(0.5)
    assert sorted(os.listdir(tmp_path)) == ["in"]
    assert BOARD.phases()[-1].status == "cancelled"
    cluster_client.close()


def test_export_and_counting_phases_run_as_phases_of_the_job(client: object,
                                                              tmp_path: object) -> None:
    """The list-length pass of the Merlin schema, HugeCTR's file statistics and value counting
    go through ``jobs.compute``: they are phases of the job that runs them."""
    import pyarrow as pa

    from interactive_recsys.stats._counting import column_counts

    frame = pd.DataFrame({"C1": [1, 2, 3, 1] * 50, "label": [0, 1] * 100,
                          "tags": pd.Series([[1, 2], [3], [], [4, 5, 6]] * 50,
                                            dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    ds = irs.Dataset(dd.from_pandas(frame, npartitions=2), tags={"C1": ["categorical"],
                                                                  "label": ["target"]})
    job = ds.to_parquet(tmp_path / "out", hugectr=True, background=True)  # type: ignore[operator]
    summary = job.result(timeout=60)
    assert list(job.progress) == ["write", "write: list lengths", "HugeCTR: file stats",
                                  "HugeCTR: keysets"]  # cardinalities unknown: two passes
    assert summary["num_rows"] == 200
    before = len(BOARD.phases())
    counts = column_counts(irs.Dataset(str(tmp_path / "out")), ["C1"])
    assert [p.name for p in BOARD.phases()[before:]] == ["count values"]
    assert counts["C1"]["nulls"] == 0 and counts["C1"]["lookups"] == 200


def test_dataset_compute_of_a_shuffle_is_a_complete_phase_of_the_job(client: object) -> None:
    """``Dataset.compute`` goes through ``jobs.compute``; a shuffled frame's abstract Shuffle
    is lowered before its tasks are counted (it has none of its own until then)."""
    frame = pd.DataFrame({"k": [3, 1, 2, 1, 3] * 40, "v": range(200)})
    shuffled = dd.from_pandas(frame, npartitions=4).shuffle(on="k")
    ds = irs.Dataset(shuffled)
    job = irs.jobs.submit(ds.compute, name="shuffled")
    out = job.result(timeout=60)
    pd.testing.assert_frame_equal(out.sort_values("v").reset_index(drop=True), frame)
    [phase] = job.phases
    assert phase.name == "compute" and phase.total > 0 and phase.done == phase.total


def test_a_long_phase_does_not_pile_up_tasks_on_the_clients_loop(client: object) -> None:
    """Waiting polls the futures: a wait with a timeout left one asyncio task per unfinished
    future on the client's loop at every poll (10 a second), so the process hosting the
    scheduler grew with phase length x futures (10 GB in a 100M-row write)."""
    import asyncio
    import threading

    from interactive_recsys.runtime import jobs

    loop = client.loop.asyncio_loop  # type: ignore[attr-defined]

    async def count() -> int:
        return len(asyncio.all_tasks())

    def tasks_now() -> int:
        return asyncio.run_coroutine_threadsafe(count(), loop).result(timeout=10)

    before, seen, done = tasks_now(), [], threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            seen.append(tasks_now())

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        parts = [dask.delayed(time.sleep, pure=False)(0.15) for _ in range(24)]
        jobs.submit(lambda: jobs.compute(*parts, phase="sleep"), name="long").result(60)
    finally:
        done.set()
        sampler.join()
    assert len(seen) >= 5  # the phase lasted a while: about 1.8 s on 2 workers
    assert max(seen) - before < 24  # at most about one task per future, not one per poll


def test_a_job_without_a_cluster_uses_as_many_threads_as_the_main_thread() -> None:
    """Off the main thread Dask's threaded scheduler would start ThreadPoolExecutor's
    default pool (CPU count + 4 threads): a background job asks for ``num_workers``."""
    import threading

    from interactive_recsys.runtime import jobs

    def thread_name() -> str:
        time.sleep(0.03)
        return threading.current_thread().name

    from dask.system import CPU_COUNT

    parts = [dask.delayed(thread_name, pure=False)() for _ in range(8 * (CPU_COUNT + 4))]
    with dask.config.set(scheduler="threads"):
        names = jobs.submit(lambda: jobs.compute(*parts, phase="threads"), name="t").result(60)
        assert len(set(names)) <= CPU_COUNT
        with dask.config.set(scheduler="synchronous"):  # other schedulers: as they are
            assert len(set(jobs.submit(lambda: jobs.compute(*parts, phase="sync"),
                                       name="s").result(60))) == 1


def test_cancel_stops_a_job_on_the_local_scheduler_before_its_next_task() -> None:
    """Without a cluster (a job that counts the local scheduler's tasks, as the Studio's
    Suggest before any Run), ``job.cancel()`` stops the phase: no task starts after it."""
    import threading

    from interactive_recsys.runtime import jobs

    started, gate = [], threading.Event()

    def held(i: int) -> int:
        started.append(i)
        assert gate.wait(60)
        return i

    parts = [dask.delayed(held, pure=False)(i) for i in range(6)]
    with dask.config.set(scheduler="threads", num_workers=1):  # one task at a time
        job = Job(lambda: jobs.compute(*parts, phase="held"), name="held",
                  track_local=True).start()
        deadline = time.monotonic() + 60
        while not started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(started) == 1 and job.cancel()
        gate.set()
        with pytest.raises(JobCancelledError, match="cancelled by job.cancel"):
            job.result(timeout=60)
    assert job.status == "cancelled" and len(started) == 1  # the other 5 never started
    (phase,) = job.phases
    assert phase.name == "held" and phase.status == "cancelled"
