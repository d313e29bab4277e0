"""One timed job of the scaling benchmarks, in its own process (the harness polls its RSS).

``python -m benchmarks.jobs SPEC_JSON`` reads a job spec written by :mod:`.scaling`:

* ``kind``: ``"criteo"`` (the standard workflow of :mod:`.contenders`) or ``"categorify"``
  (Categorify of ``columns``, the other columns kept);
* ``src``, ``out``, ``result``: input directory, output directory, result JSON path;
* ``n_workers``, ``memory_limit``: an ``irs.cluster.start_cluster`` of that many 1-thread
  workers (``n_workers`` 0: no cluster, Dask's threaded scheduler);
* ``part_size`` (optional): the Dataset's partition size;
* ``report`` (optional): path of a Dask performance report (cluster runs only);
* ``py_spy`` (optional): path prefix of py-spy's collapsed stacks, one file per worker
  (``-worker0.txt``...; ``-process.txt`` in-process), sampled from the workflow's start.

The result JSON holds ``seconds`` (first read to last write, cluster start-up excluded),
``fit_s``, ``npartitions``, the vocabulary folder of each Categorify column (relative to the
artifacts folder), the workers' memory limits, the peak RSS of this process
(client and scheduler) and of each worker (at the end, and after the fit:
``fit_worker_peak_mb``), what each process's table cache did (``table_cache``: loads,
hits, evictions, peak bytes against its budget; loads beyond the tables are re-reads),
each worker's freed-memory trims (``memory_trims``: checks, trims, seconds), and where the
package was imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time


def workflow(spec: dict, artifacts: str):
    import interactive_recsys as irs
    from interactive_recsys import ops

    from .contenders import irs_workflow

    if spec["kind"] == "criteo":
        return irs_workflow(artifacts)
    cats = spec["columns"] >> ops.Categorify()
    return irs.Workflow(cats + spec.get("keep", []), artifacts_dir=artifacts)


def vocabulary_paths(wf) -> dict[str, str]:
    """Column -> its vocabulary's folder, relative to the artifacts folder (from the fitted
    state, so the check does not guess the artifact layout)."""
    from interactive_recsys import ops

    return {column: vocab["path"] for step in wf.fitted_steps(ops.Categorify)
            for column, vocab in step.state["vocabs"].items()}


def peak_rss_mb() -> float:
    """Peak RSS of this process (MB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def table_cache_stats(dask_worker=None) -> dict:
    """This process's :class:`~interactive_recsys.tables._cache.TableCache` counters (on a
    worker, ``client.run`` passes it as ``dask_worker``: its budget is a share of its limit)."""
    from interactive_recsys.tables._cache import TABLES

    return TABLES.stats(dask_worker.memory_manager.memory_limit if dask_worker else None)


def memory_trims(dask_worker=None) -> dict | None:
    """The worker's :class:`~interactive_recsys.runtime._memory_release.ReleaseFreedMemory`
    counters (``None`` where the plugin is not registered)."""
    from interactive_recsys.runtime._memory_release import ReleaseFreedMemory

    plugin = dask_worker.plugins.get(ReleaseFreedMemory.name) if dask_worker else None
    return dict(plugin.stats) if plugin is not None else None


@contextlib.contextmanager
def sampled(prefix: str | None, pids: dict[str, int]):
    """py-spy recording each of ``pids`` (name -> pid) into ``{prefix}-{name}.txt`` while the
    block runs (nothing without a prefix); stopped with SIGINT, which makes it write."""
    if not prefix:
        yield
        return
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")  # the venv's
    spy_bin = here if os.path.exists(here) else "py-spy"
    spies = [subprocess.Popen([spy_bin, "record", "--pid", str(pid), "--rate", "50",
                               "--format", "raw", "--output", f"{prefix}-{name}.txt"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for name, pid in pids.items()]
    time.sleep(1.0)  # attached before the work starts
    try:
        yield
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)
        for spy in spies:
            spy.wait(timeout=120)


def run(spec: dict) -> dict:
    import interactive_recsys as irs

    from .contenders import package_dirs

    out = spec["out"]
    artifacts = out.rstrip("/") + "-artifacts"
    info: dict = {}
    first_pids: list[int] = []
    cluster = contextlib.nullcontext()
    if spec.get("n_workers"):
        cluster = irs.cluster.start_cluster(
            n_workers=spec["n_workers"], memory_limit=spec.get("memory_limit") or "auto",
            dashboard=False, local_directory=out.rstrip("/") + "-dask-scratch")
    with cluster as client:
        report = contextlib.nullcontext()
        if client is not None:
            info["worker_memory_limits"] = sorted(
                w["memory_limit"] for w in client.scheduler_info(n_workers=-1)["workers"].values())
            first_pids = sorted(client.run(os.getpid).values())
            if spec.get("report"):
                from distributed import performance_report

                report = performance_report(filename=spec["report"])
        pids = ({"process": os.getpid()} if client is None else
                {f"worker{i}": pid for i, pid in enumerate(first_pids)})
        with report, sampled(spec.get("py_spy"), pids):
            started = time.perf_counter()
            wf = workflow(spec, artifacts)
            ds = irs.Dataset(spec["src"], backend="cpu", part_size=spec.get("part_size"))
            wf.fit(ds)
            fit_s = time.perf_counter() - started
            if client is not None:  # the peaks so far: the fit's (ru_maxrss only grows)
                info["fit_worker_peak_mb"] = sorted(client.run(peak_rss_mb).values())
            summary = wf.transform(ds).to_parquet(out)
            seconds = time.perf_counter() - started
        info.update(vocabularies=vocabulary_paths(wf), package=package_dirs(),
                    npartitions=ds.npartitions,
                    num_rows=summary["num_rows"], client_peak_mb=peak_rss_mb())
        info["table_cache"] = ([table_cache_stats()] if client is None
                               else list(client.run(table_cache_stats).values()))
        if client is not None:
            info["worker_peak_mb"] = sorted(client.run(peak_rss_mb).values())
            info["memory_trims"] = list(client.run(memory_trims).values())
            # a worker the nanny restarted (memory limit) has a new pid; its peak is lost
            info["workers_restarted"] = len(set(client.run(os.getpid).values()) - set(first_pids))
            client.close()
            client.cluster.close()
    return {"seconds": seconds, "fit_s": fit_s, **info}


def main(argv: list[str]) -> None:
    with open(argv[0]) as f:
        spec = json.load(f)
    result = run(spec)
    result["loadavg_end"] = os.getloadavg()
    with open(spec["result"], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1:])
