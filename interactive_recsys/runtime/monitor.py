"""What a Dask cluster does while a workflow runs: memory, GPUs, spilling, tasks, progress.

:class:`Monitor` is a plain model (no widget code): a background thread samples the
cluster every ``interval_ms`` into bounded ring buffers, and calls its subscribers (the
Dashboard) after each sample. Per worker it records host memory as the scheduler sees it
(process = managed + unmanaged; spilled to disk), per GPU memory used/total and utilization
(NVML read on the workers, plus distributed's ``gpu`` metrics) and cuDF's spilled bytes,
then the task stream (key prefix, worker, start, stop, action) and the progress of the
workflow's phases (``interactive_recsys.runtime.jobs.BOARD``). Without a GPU it reports
"no GPU" and records no GPU series at all.

The final state is always recorded: while sampling, a monitor takes one more sample as soon
as a workflow phase ends (before the computation returns), and :meth:`Monitor.stop` takes a
last one, so subscribers never keep a view of a run that stops short of its end.

>>> import interactive_recsys as irs
>>> client = irs.start_cluster(1, memory_limit="1GB", dashboard=False, gpu=False)
>>> monitor = Monitor(client, interval_ms=200)
>>> sample = monitor.sample()
>>> list(sample["workers"].values())[0]["limit"]
1000000000
>>> monitor.gpu_status, "gpus" in sample
('no GPU', False)
>>> monitor.close(); client.cluster.close(); client.close()
"""

from __future__ import annotations

import os
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from interactive_recsys.errors import ParameterError
from interactive_recsys.params import param_error
from interactive_recsys.runtime.jobs import (
    BOARD,
    STREAM_OVERLAP_S,
    _compute_seconds,
    _norm,
    active_client,
    task_group,
)

#: The host-memory fields of each worker sample (bytes), as the scheduler computes them.
MEMORY_FIELDS = ("process", "managed", "unmanaged", "unmanaged_old", "unmanaged_recent",
                 "spilled")


def _scheduler_state(dask_scheduler: Any, since: float | None = None) -> dict[str, Any]:
    """Run on the scheduler: every worker's memory breakdown and GPU/cuDF metrics, and the
    task-stream records that stopped at or after ``since`` (one round trip per sample)."""
    tasks = []
    plugin = dask_scheduler.plugins.get("task-stream")
    if plugin is not None and since is not None:
        tasks = [{"key": r["key"], "worker": r["worker"], "startstops": r["startstops"]}
                 for r in plugin.collect(start=since)]
    workers = {}
    for address, ws in dask_scheduler.workers.items():
        mem = ws.memory
        metrics = ws.metrics
        workers[address] = {
            "name": str(ws.name), "limit": ws.memory_limit, "nthreads": ws.nthreads,
            **{f: int(getattr(mem, f)) for f in MEMORY_FIELDS},
            "cpu": metrics.get("cpu"),
            "gpu": metrics.get("gpu"), "rmm": metrics.get("rmm"), "cudf": metrics.get("cudf"),
        }
    return {"time": time.time(), "workers": workers, "tasks": tasks}


def worker_gpus(dask_worker: Any = None) -> list[dict[str, Any]]:
    """Run on a worker: its GPUs as NVML sees them (``[]`` without NVML or a GPU).

    A dask-cuda worker sees its own GPU first in ``CUDA_VISIBLE_DEVICES``; elsewhere every
    device is listed. ``limit`` is the worker's device memory limit when it has one.
    """
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return []
    try:
        count = pynvml.nvmlDeviceGetCount()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        picks = [visible.split(",")[0]] if visible and dask_worker is not None else \
            [str(i) for i in range(count)]
        limit = _device_limit(dask_worker)
        devices = []
        for pick in picks:
            handle = (pynvml.nvmlDeviceGetHandleByIndex(int(pick)) if pick.isdigit()
                      else pynvml.nvmlDeviceGetHandleByUUID(pick))
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            util = pynvml.nvmlDeviceGetUtilizationRates(handle)
            devices.append({"device": pick, "name": str(pynvml.nvmlDeviceGetName(handle)),
                            "used": int(memory.used), "total": int(memory.total),
                            "utilization": int(util.gpu), "limit": limit})
        return devices
    except Exception:
        return []
    finally:
        pynvml.nvmlShutdown()


def _device_limit(dask_worker: Any) -> int | None:
    """The worker's device memory limit, or None when it has none.

    With ``device_memory_limit`` dask-cuda gives each worker a ``DeviceHostFile`` whose
    ``device_buffer`` (a ``zict.Buffer``) holds device objects up to ``device_buffer.n``
    bytes and moves the rest to host memory. With cuDF spilling on (``start_cluster``'s
    GPU clusters), ``DeviceHostFile`` keeps cuDF frames aside unspilled and cuDF itself
    spills device buffers to host memory once its spill manager goes past
    ``cudf.get_option("spill_device_limit")`` (when set), or when an allocation fails.
    """
    data = getattr(dask_worker, "data", None)
    limit = getattr(getattr(data, "device_buffer", None), "n", None)
    if isinstance(limit, int | float) and limit > 0:
        return int(limit)
    try:
        import cudf

        value = cudf.get_option("spill_device_limit")
        return int(value) if value else None
    except Exception:
        return None


def _phase_end_listener(monitor: Monitor) -> Callable[[Any], None]:
    """A :data:`BOARD` phase-end callback that does not keep ``monitor`` alive."""
    ref = weakref.ref(monitor)

    def on_end(phase: Any) -> None:
        target = ref()
        if target is None:  # a monitor dropped without close(): its listener goes too
            BOARD.remove_on_end(on_end)
        else:
            target._on_phase_end(phase)

    return on_end


class Monitor:
    """Samples a Dask cluster every ``interval_ms`` milliseconds in a background thread.

    Parameters
    ----------
    client : a ``distributed.Client`` (default: the active one), local or remote.
    interval_ms : sampling period; workers heartbeat about every 500 ms, so faster
        sampling repeats values.
    maxlen : samples kept (ring buffer); ``task_maxlen``: task-stream records kept.
    start : start the sampling thread at once.
    since : a ``time.time()`` from which to report (default: now): a monitor made after a
        job started (a dashboard opened late) shows that job's phases and task records
        from this time on, on one clock that starts there.

    Attributes
    ----------
    samples : deque of ``{"time", "workers": {address: {...}}, "gpus"?: {...}}``;
        ``"gpus"`` only exists when the cluster has GPUs.
    tasks : deque of ``{"key", "group", "worker", "action", "start", "stop"}``.
    errors : deque of error texts (sampling or subscriber failures).
    """

    def __init__(self, client: Any = None, *, interval_ms: int = 500, maxlen: int = 2000,
                 task_maxlen: int = 20000, start: bool = True,
                 since: float | None = None) -> None:
        if interval_ms <= 0:
            raise param_error("interval_ms", "Monitor", f"must be > 0. Got "
                              f"{interval_ms!r} instead.")
        self.client = client if client is not None else active_client()
        if self.client is None:
            raise ParameterError("Monitor needs a distributed Client: pass one, or start a "
                                 "cluster first with irs.start_cluster() / irs.connect(address).")
        self.interval_ms = interval_ms
        self.samples: deque[dict[str, Any]] = deque(maxlen=maxlen)
        self.tasks: deque[dict[str, Any]] = deque(maxlen=task_maxlen)
        self.errors: deque[str] = deque(maxlen=100)
        self._subscribers: list[Callable[[Monitor, dict[str, Any], list[dict]], Any]] = []
        self._closed_callbacks: list[Callable[[Monitor], Any]] = []
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread: threading.Thread | None = None
        self._sample_seconds: deque[float] = deque(maxlen=10000)
        self._sample_cpu = 0.0
        self._watching = False
        self.started = time.time() if since is None else min(float(since), time.time())
        self._end_listener = _phase_end_listener(self)
        self._watch()  # workflow phases now record their task keys for progress
        self.client.get_task_stream(count=1)  # installs the scheduler's task-stream plugin
        state = self.client.run_on_scheduler(_scheduler_state)
        # scheduler clock: time origin of plots (earlier when reporting from ``since``)
        self._stream_from = self.t0 = state["time"] - (time.time() - self.started)
        if since is not None:
            # a job's first tasks can be reported before ``since``: workers put their task
            # times on the scheduler's clock with an estimate of the offset (Dask's
            # ``scheduler_delay``, from heartbeats) that a busy machine gets wrong by up to
            # half a heartbeat's round trip. Records read before the clock's start are
            # drawn left of the time axes, whose start is never below 0.
            self._stream_from -= STREAM_OVERLAP_S
        # task records already read (the stream is re-read from the last stop time, and
        # workers' stop times interleave): a bounded memory of their identities
        self._seen: set[tuple[str, float, str]] = set()
        self._seen_order: deque[tuple[str, float, str]] = deque()
        gpus = self._read_gpus()
        self.has_gpu = bool(any(gpus.values()) or any(
            w.get("gpu") for w in state["workers"].values()))
        if start:
            self.start()

    # ---- state ----------------------------------------------------------------------------
    @property
    def gpu_status(self) -> str:
        """``"no GPU"`` or ``"N GPUs"`` (devices seen by the workers)."""
        if not self.has_gpu:
            return "no GPU"
        last = self.samples[-1] if self.samples else None
        count = sum(len(v) for v in last.get("gpus", {}).values()) if last else 0
        return f"{count} GPUs" if count else "GPUs"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def progress(self) -> list[dict[str, Any]]:
        """Phases of workflow computations since the monitor started, oldest first."""
        return [p.to_dict() for p in BOARD.phases(since=self.started - 1)]

    def overhead(self) -> dict[str, float]:
        """Cost of sampling so far: per-sample wall time, and the sampling thread's CPU time
        as a fraction of the time the monitor has run."""
        with self._lock:
            times = list(self._sample_seconds)
        elapsed = max(time.time() - self.started, 1e-9)
        return {"samples": len(times),
                "mean_ms": 1000 * sum(times) / len(times) if times else 0.0,
                "max_ms": 1000 * max(times, default=0.0),
                "busy_fraction": sum(times) / elapsed,
                "cpu_seconds": self._sample_cpu,
                "cpu_fraction": self._sample_cpu / elapsed}

    # ---- sampling -------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Monitor, dict[str, Any], list[dict]], Any]) -> None:
        """Call ``callback(monitor, sample, new_tasks)`` after each sample (from the sampling
        thread); its exceptions are recorded in ``errors``, never raised."""
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable) -> None:
        if callback in self._subscribers:
            self._subscribers.remove(callback)

    def on_closed(self, callback: Callable[[Monitor], Any]) -> None:
        """Call ``callback(monitor)`` (from the sampling thread) when sampling stops because
        the Dask client closed; its exceptions are recorded in ``errors``."""
        self._closed_callbacks.append(callback)

    def remove_on_closed(self, callback: Callable) -> None:
        if callback in self._closed_callbacks:
            self._closed_callbacks.remove(callback)

    @property
    def client_closed(self) -> bool:
        """Whether the Dask client is closing or closed (the monitor then cannot sample)."""
        return self.client.status in ("closing", "closed")

    def _tell_closed(self) -> None:
        for callback in list(self._closed_callbacks):
            try:
                callback(self)
            except Exception:
                self.errors.append(f"on_closed callback failed:\n{traceback.format_exc()}")

    def sample(self) -> dict[str, Any]:
        """Take one sample now (also what the thread does every ``interval_ms``)."""
        t0, c0 = time.perf_counter(), time.thread_time()
        with self._lock:
            state = self.client.run_on_scheduler(_scheduler_state, since=self._stream_from)
            sample: dict[str, Any] = {"time": state["time"], "workers": state["workers"]}
            if self.has_gpu:
                sample["gpus"] = self._read_gpus()
            new_tasks = self._read_tasks(state["tasks"])
            self.samples.append(sample)
            self.tasks.extend(new_tasks)
            self._sample_seconds.append(time.perf_counter() - t0)
            self._sample_cpu += time.thread_time() - c0
            # still under the lock: subscribers get samples in order, whichever thread took them
            for callback in list(self._subscribers):
                try:
                    callback(self, sample, new_tasks)
                except Exception:
                    self.errors.append(f"subscriber {getattr(callback, '__qualname__', callback)}"
                                       f" failed:\n{traceback.format_exc()}")
        return sample

    def _read_gpus(self) -> dict[str, list[dict[str, Any]]]:
        return self.client.run(worker_gpus)

    def _read_tasks(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out, fresh, latest = [], [], self._stream_from
        for r in records:
            new = False
            for ss in r["startstops"]:
                ident = (str(_norm(r["key"])), ss["start"], ss["action"])
                latest = max(latest, ss["stop"])
                if ident in self._seen:
                    continue
                new = True
                self._seen.add(ident)
                self._seen_order.append(ident)
                out.append({"key": ident[0], "group": task_group(r["key"]),
                            "worker": ss.get("worker", r["worker"]), "action": ss["action"],
                            "start": ss["start"], "stop": ss["stop"]})
            if new:
                fresh.append(r)
        running = [p for p in BOARD.phases(self.started - 1) if p.status == "running" and p.keys]
        for phase in running:  # each record counted once: its compute time too
            phase.observe([r["key"] for r in fresh], [_compute_seconds(r) for r in fresh])
        while len(self._seen_order) > 2 * (self.tasks.maxlen or 10000):
            self._seen.discard(self._seen_order.popleft())
        # read again from a little before the last stop: a late report is not missed (the
        # records already seen are skipped above)
        self._stream_from = max(latest - STREAM_OVERLAP_S, self._stream_from)
        return out

    # ---- thread ---------------------------------------------------------------------------
    def start(self) -> Monitor:
        """Start the sampling thread (no-op when running)."""
        if self.running:
            return self
        self._stop.clear()
        self._watch()
        self._thread = threading.Thread(target=self._loop, name="irs-monitor", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        period = self.interval_ms / 1000
        while not self._stop.is_set():
            t0 = time.perf_counter()
            if self.client_closed:  # checked while paused too: listeners must know
                self.errors.append("The Dask client closed; the monitor stopped sampling.")
                self._tell_closed()
                break
            if not self._paused.is_set():
                try:
                    self.sample()
                except Exception as err:
                    if self.client.status in ("closing", "closed"):
                        continue
                    self.errors.append(f"sampling failed: {type(err).__name__}: {err}")
            self._stop.wait(max(0.0, period - (time.perf_counter() - t0)))

    def _watch(self) -> None:
        if not self._watching:
            BOARD.watch()
            BOARD.on_end(self._end_listener)
            self._watching = True

    def _unwatch(self) -> None:
        if self._watching:
            BOARD.remove_on_end(self._end_listener)
            BOARD.unwatch()
            self._watching = False

    def _can_sample(self) -> bool:
        return not self.paused and self.client.status == "running"

    def _final_sample(self, why: str) -> None:
        """One more sample now, for the final state (errors recorded, never raised)."""
        try:
            self.sample()
        except Exception as err:
            if self.client.status == "running":
                self.errors.append(f"sampling {why} failed: {type(err).__name__}: {err}")

    def _on_phase_end(self, phase: Any) -> None:
        """A workflow phase ended: sample at once (in the thread that ran the phase), so
        that subscribers draw its final progress before the computation returns."""
        if self.running and phase.started >= self.started - 1 and self._can_sample():
            self._final_sample(f"after phase {phase.name!r} ended")

    def pause(self) -> None:
        """Stop sampling until ``resume`` (the thread stays)."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the sampling thread, wait for it to end, then take a last sample (unless
        paused or the client closed) so that subscribers draw the final state."""
        was_running = self.running
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._unwatch()
        if was_running and self._can_sample():
            self._final_sample("on stop")

    close = stop

    def __repr__(self) -> str:
        workers = len(self.samples[-1]["workers"]) if self.samples else "?"
        state = "paused" if self.paused else "sampling" if self.running else "stopped"
        return (f"Monitor({state} every {self.interval_ms} ms, {workers} workers, "
                f"{self.gpu_status}, {len(self.samples)} samples, {len(self.tasks)} tasks)")

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
