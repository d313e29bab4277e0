"""Start a local Dask cluster (GPU workers when GPUs work) or connect to an existing one.

Without a GPU, :func:`~interactive_recsys.start_cluster` starts a ``distributed.LocalCluster`` whose
workers spill to disk past their memory limit; with working GPUs a ``dask_cuda.LocalCUDACluster``
(one worker per GPU, cuDF native spilling with spill statistics). Everything binds to
127.0.0.1 unless told otherwise. :func:`~interactive_recsys.connect` joins a cluster started
elsewhere with ``dask scheduler`` and ``dask worker`` / ``dask cuda worker``.

>>> client = start_cluster(n_workers=1, memory_limit="1GB", dashboard=False)
>>> len(client.scheduler_info(n_workers=-1)["workers"])
1
>>> client.cluster.close(); client.close()
"""

from __future__ import annotations

import logging
from typing import Any

import dask

from interactive_recsys.backend import gpu_available, gpu_device_count
from interactive_recsys.errors import IRSError, ParameterError
from interactive_recsys.params import param_error
from interactive_recsys.runtime._memory_release import ReleaseFreedMemory

#: Environment of CPU worker processes, set before they start (Dask's
#: ``distributed.nanny.pre-spawn-environ``: glibc reads its variables at process start).
#: * Arrow's default allocator (mimalloc) keeps freed memory, which Dask counts as unmanaged
#:   and which pauses memory-limited workers; the system allocator gives it back. Standard
#:   Criteo fit, four 131k-row partitions in a row: peak RSS 406 MB with mimalloc, 260 MB
#:   with the system allocator (206 MB once freed).
#: * Allocations under 32 MB come from the heap instead of fresh ``mmap`` pages: 8M-row
#:   transform + write 19.4 s -> 13.4 s, worker page faults 7.2M -> 2.7M.
#: * Acero (Arrow's query engine) warns on stderr about every unaligned input buffer, which
#:   slices of Arrow columns often are; x86 and ARM64 read them fine, so it stays quiet.
WORKER_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_TRIM_THRESHOLD_": "65536",
              "MALLOC_MMAP_THRESHOLD_": str(2**25), "ACERO_ALIGNMENT_HANDLING": "ignore"}

#: Environment added for GPU worker processes: they report cuDF's spill statistics
#: (``metrics["cudf"]["cudf-spilled"]``, read by the Monitor). ``distributed.worker`` registers
#: that metric when it is imported in the new process, before the configuration inherited
#: from the client applies, so the switch must be in the process's environment from its start.
GPU_WORKER_ENV = {"DASK_DISTRIBUTED__DIAGNOSTICS__CUDF": "True"}


#: Routine P2P shuffle events that distributed logs at WARNING level in the scheduler (two
#: per shuffle: ``irs.eval.split`` and the metrics shuffle by user). In a notebook the
#: scheduler of a local cluster lives in the kernel, so each would print as red text under
#: the cell that started the cluster. Real shuffle problems (restarts, failed broadcasts)
#: still show.
ROUTINE_SHUFFLE_MESSAGES = ("Shuffle %s initialized by task", "Shuffle %s deactivated due to")


class _RoutineShuffleFilter(logging.Filter):
    """Drop :data:`ROUTINE_SHUFFLE_MESSAGES`; keep every other record.

    >>> record = logging.LogRecord("distributed.shuffle._scheduler_plugin", logging.WARNING,
    ...                            "", 0, "Shuffle %s initialized by task %r", ("a", "b"), None)
    >>> _RoutineShuffleFilter().filter(record)
    False
    >>> record.msg = "Shuffle %s restarted due to stimulus '%s"
    >>> _RoutineShuffleFilter().filter(record)
    True
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(ROUTINE_SHUFFLE_MESSAGES)


def quiet_routine_shuffle_logs() -> None:
    """Install the filter of routine shuffle messages on distributed's logger (once)."""
    logger = logging.getLogger("distributed.shuffle._scheduler_plugin")
    if not any(isinstance(f, _RoutineShuffleFilter) for f in logger.filters):
        logger.addFilter(_RoutineShuffleFilter())


def worker_environment(gpu: bool) -> dict[str, str]:
    """Environment variables of worker processes (set before they start).

    >>> worker_environment(gpu=True)["DASK_DISTRIBUTED__DIAGNOSTICS__CUDF"]
    'True'
    >>> "DASK_DISTRIBUTED__DIAGNOSTICS__CUDF" in worker_environment(gpu=False)
    False
    """
    return {**WORKER_ENV, **(GPU_WORKER_ENV if gpu else {})}


def _pre_spawn(environ: dict[str, str]) -> Any:
    """Dask configuration under which new Nannies start their worker processes with
    ``environ`` (on top of any pre-spawn environment already configured)."""
    merged = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **environ}
    return dask.config.set({"distributed.nanny.pre-spawn-environ": merged})


class ClusterError(IRSError, RuntimeError):
    """A cluster cannot be started or reached."""


class ClusterTimeoutError(ClusterError, TimeoutError):
    """A scheduler did not answer in time."""


#: Bounds of the default partition size (``Dataset(part_size=None)``: a sixteenth of a
#: worker's memory, clamped), which the memory limit of a worker must leave room for.
MIN_PART_SIZE, MAX_PART_SIZE = 16 * 2**20, 1024 * 2**20
#: Memory a worker process needs for itself (interpreter, pandas, pyarrow, distributed):
#: a CPU worker measured 183 MiB RSS after a small workflow on the development machine.
WORKER_BASE_MEMORY = 192 * 2**20
#: Partitions a worker holds at once (a step's input, its output and intermediates).
PARTITIONS_IN_MEMORY = 4


def _check_count(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 1):
        raise param_error(name, "start_cluster", f"must be an integer >= 1 or None. Got "
                          f"{value!r} instead: a cluster without workers would wait for ever.")


def worker_memory_bytes(memory_limit: Any) -> int | None:
    """Bytes per worker that a ``memory_limit`` names (``None``: no limit, ``"auto"``, or
    a fraction of the machine's memory resolved by Dask); a clear error when unreadable.

    >>> worker_memory_bytes("2GB"), worker_memory_bytes("auto"), worker_memory_bytes(None)
    (2000000000, None, None)
    """
    from dask.utils import parse_bytes

    if memory_limit is None or memory_limit == "auto" or memory_limit == 0:
        return None
    try:
        if isinstance(memory_limit, bool):
            raise TypeError
        if isinstance(memory_limit, str):
            return parse_bytes(memory_limit)
        value = float(memory_limit)
        if not value > 0 or value != value:
            raise ValueError
        return None if value <= 1 else int(value)  # a fraction: Dask resolves it
    except (ValueError, TypeError):
        raise param_error(
            "memory_limit", None, "(--memory-limit) must be a size like '2GB', a number of "
            "bytes, a fraction of the machine's memory (0.5) or 'auto'. Got "
            f"{memory_limit!r} instead.") from None


def required_worker_memory(part_size: int) -> int:
    """The smallest memory limit of a worker that processes partitions of ``part_size``
    bytes: its own process plus ``PARTITIONS_IN_MEMORY`` partitions.

    >>> required_worker_memory(16 * 2**20) // 2**20
    256
    """
    return WORKER_BASE_MEMORY + PARTITIONS_IN_MEMORY * int(part_size)


def check_memory_limit(memory_limit: Any, part_size: int | None = None) -> None:
    """Refuse a worker memory limit too small to hold partitions of ``part_size`` bytes
    (default: the smallest default partition, 16 MiB), before any worker starts: such a
    worker is paused or restarted for ever instead of failing.

    >>> check_memory_limit("1KB")
    Traceback (most recent call last):
    ...
    interactive_recsys.errors.ParameterError: The memory limit per worker ...
    """
    from dask.utils import format_bytes

    limit = worker_memory_bytes(memory_limit)
    if limit is None:
        return
    if part_size is None:  # the Dataset default: a sixteenth of the limit, clamped
        part_size = int(min(MAX_PART_SIZE, max(MIN_PART_SIZE, limit // 16)))
    needed = required_worker_memory(part_size)
    if limit < needed:
        raise ParameterError(
            f"The memory limit per worker ({memory_limit!r}, {format_bytes(limit)}) cannot hold "
            f"the partitions: they are {format_bytes(part_size)} each (part_size / "
            f"--part-size), and a worker needs about {PARTITIONS_IN_MEMORY} of them in memory "
            f"plus {format_bytes(WORKER_BASE_MEMORY)} for its own process, i.e. at least "
            f"{format_bytes(needed)}. Pass a memory limit of {-(-needed // 10**6)}MB or more "
            "(--memory-limit), or smaller partitions.")


def gpu_count() -> int:
    """Number of GPUs NVML sees on this machine (0 when NVML or the driver is missing).

    >>> gpu_count() >= 0
    True
    """
    return gpu_device_count()


def start_cluster(n_workers: int | None = None, *, threads_per_worker: int = 1,
                  memory_limit: str | int | None = "auto", host: str = "127.0.0.1",
                  dashboard: bool = True, gpu: bool | None = None,
                  device_memory_limit: str | float | None = 0.8,
                  rmm_pool_size: str | int | None = None,
                  resources: dict[str, float] | list[dict[str, float]] | None = None,
                  **kwargs: Any) -> Any:
    """A ``distributed.Client`` on a new local cluster (also the default client).

    Parameters
    ----------
    n_workers : workers to start; default one per GPU (GPU) or 2 (CPU).
    threads_per_worker : threads of each worker.
    memory_limit : host memory per worker (``"2GB"``, bytes, ``"auto"``); past about 60%
        of it a CPU worker spills partitions to disk, and past half of it a worker gives the
        memory a task freed back to the system after the task
        (``_memory_release.ReleaseFreedMemory``).
    host : interface to bind scheduler, workers and dashboard to (loopback by default).
    dashboard : start Dask's own HTTP dashboard (on a free port).
    gpu : ``None`` (default) uses GPUs when cuDF is installed and NVML sees one; ``True``
        requires them and raises :class:`~.ClusterError` when none works; ``False`` never uses them.
    device_memory_limit : GPU memory per worker (bytes, ``"30GB"`` or a fraction of the
        device) past which cuDF spills device buffers to host memory.
    rmm_pool_size : size of each GPU worker's RMM memory pool (``None``: no pool).
    resources : Dask worker resources (labels tasks can ask for, e.g. ``{"GPU": 1}``): one
        dict for every worker, or a list with one dict per worker (``n_workers`` defaults to
        its length), e.g. ``[{}, {"GPU": 1}]`` labels only the second worker; this also works
        on CPU-only machines (for teaching and tests). GPU clusters label every worker
        ``{"GPU": 1}`` by default. Model training asks for ``GPU`` when a worker has it.
    **kwargs : passed to ``LocalCUDACluster`` / ``LocalCluster``.

    Examples
    --------
    >>> client = start_cluster(1, memory_limit="1GB", gpu=False, dashboard=False)
    >>> type(client.cluster).__name__
    'LocalCluster'
    >>> client.cluster.close(); client.close()
    >>> client = start_cluster(2, gpu=False, dashboard=False, resources=[{}, {"GPU": 1}])
    >>> sorted(str(w["resources"]) for w in client.scheduler_info(n_workers=-1)["workers"].values())
    ["{'GPU': 1}", '{}']
    >>> client.cluster.close(); client.close()
    """
    from distributed import Client

    quiet_routine_shuffle_logs()
    _check_count("n_workers", n_workers)
    _check_count("threads_per_worker", threads_per_worker)
    check_memory_limit(memory_limit)
    use_gpu = gpu_available() if gpu is None else bool(gpu)
    dashboard_address = f"{host}:0" if dashboard else None
    if not dashboard:  # the scheduler's HTTP server (health, metrics) still starts: any port
        kwargs["scheduler_kwargs"] = {"dashboard": False, "dashboard_address": f"{host}:0",
                                      **kwargs.get("scheduler_kwargs", {})}
    per_worker = _per_worker_resources(resources, n_workers)
    if per_worker is not None:
        n_workers = len(per_worker)
    elif resources is not None:
        kwargs["resources"] = dict(resources)
    elif use_gpu:
        kwargs["resources"] = {"GPU": 1}
    if use_gpu:
        cluster = _gpu_cluster(n_workers, threads_per_worker, memory_limit, host,
                               dashboard_address, device_memory_limit, rmm_pool_size, kwargs)
    else:
        from distributed import LocalCluster

        with _pre_spawn(worker_environment(gpu=False)):
            cluster = LocalCluster(n_workers=0 if per_worker else n_workers or 2,
                                   threads_per_worker=threads_per_worker,
                                   memory_limit=memory_limit, host=host, processes=True,
                                   dashboard_address=dashboard_address, **kwargs)
            if per_worker is not None:  # started here, so they get WORKER_ENV too
                _label_workers(cluster, per_worker)
    if per_worker is not None and use_gpu:
        _label_workers(cluster, per_worker)
    client = Client(cluster)
    client.register_plugin(ReleaseFreedMemory())
    if per_worker is not None:
        client.wait_for_workers(len(per_worker), timeout=120)
    return client


def _per_worker_resources(resources: Any, n_workers: int | None) -> list[dict] | None:
    """The list form of ``resources`` checked (``None`` for one dict or none)."""
    if resources is None or isinstance(resources, dict):
        if resources is not None and not all(isinstance(v, int | float) and v >= 0
                                             for v in resources.values()):
            raise param_error("resources", "start_cluster", "must map names to non-negative "
                              f"numbers, like {{'GPU': 1}}. Got {resources!r}.", error=ClusterError)
        return None
    per_worker = [dict(r) for r in resources]
    if n_workers is not None and n_workers != len(per_worker):
        raise ClusterError(f"start_cluster got n_workers={n_workers} but {len(per_worker)} "
                           "resource dicts (one per worker); pass as many dicts as workers, "
                           "or leave n_workers out.")
    for r in per_worker:
        _per_worker_resources(r, None)
    return per_worker


def _label_workers(cluster: Any, per_worker: list[dict[str, float]]) -> None:
    """Start (CPU: ``n_workers=0`` so far) or restart (GPU) each worker with its resources."""
    import copy

    names = sorted(cluster.worker_spec) or list(range(len(per_worker)))
    for name, labels in zip(names, per_worker, strict=True):
        spec = copy.deepcopy(cluster.worker_spec.get(name, cluster.new_spec))
        spec["options"]["resources"] = labels
        if name in cluster.worker_spec:  # a running worker: stop it, then start it labelled
            cluster.worker_spec.pop(name)
            cluster.sync(cluster._correct_state)
        cluster.worker_spec[name] = spec
    cluster.sync(cluster._correct_state)


def _gpu_cluster(n_workers: int | None, threads_per_worker: int, memory_limit: Any, host: str,
                 dashboard_address: str | None, device_memory_limit: Any, rmm_pool_size: Any,
                 kwargs: dict[str, Any]) -> Any:
    """A ``LocalCUDACluster`` with cuDF spilling and its statistics on, or a clear error."""
    fallback = ("Start a CPU cluster instead with start_cluster(gpu=False) (or omit gpu= to "
                "choose automatically).")
    if not gpu_available():
        raise ClusterError("start_cluster(gpu=True) needs a working NVIDIA GPU with cuDF, but "
                           f"none was found on this machine (NVML sees {gpu_count()} GPUs). "
                           f"{fallback} For GPU support install the 'gpu' extra on a CUDA "
                           "machine: pip install 'interactive-recsys[gpu]'.")
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError as err:
        raise ClusterError(f"start_cluster(gpu=True) needs dask-cuda, which does not import "
                           f"({err}). Install it with pip install 'dask-cuda[cu12]'. "
                           f"{fallback}") from err
    with _pre_spawn(worker_environment(gpu=True)):
        return LocalCUDACluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                                memory_limit=memory_limit, host=host,
                                dashboard_address=dashboard_address,
                                device_memory_limit=device_memory_limit,
                                rmm_pool_size=rmm_pool_size, enable_cudf_spill=True,
                                cudf_spill_stats=1, **kwargs)


def _probe_scheduler(address: Any, timeout: float | str) -> None:
    """Check that ``address`` is a Dask address and that a Dask server answers the comm
    handshake there within ``timeout``: ``distributed.Client`` waits for the handshake
    without a time limit, so a service that is not Dask (an HTTP server) would hang it.

    Runs in its own thread and event loop (a notebook's loop may already run here).
    """
    import asyncio
    import concurrent.futures

    from dask.utils import parse_timedelta
    from distributed.comm import connect as comm_connect
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    example = "e.g. 'tcp://10.0.0.5:8786' (the address `dask scheduler` prints on start)"
    try:
        seconds = parse_timedelta(timeout, default="seconds")
        if not seconds or seconds <= 0:
            raise ValueError
    except (ValueError, TypeError, KeyError):
        raise param_error("timeout", "connect", "must be a positive number of seconds. Got "
                          f"{timeout!r} instead.") from None
    try:
        if not isinstance(address, str):
            raise TypeError
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError):
        raise ClusterError(f"{address!r} is not a Dask scheduler address: pass "
                           f"scheme://host:port, {example}; http:// addresses (the dashboard) "
                           "do not take clients.") from None

    async def handshake() -> None:
        comm = await comm_connect(address, timeout=seconds)
        await comm.close()

    def run() -> None:
        asyncio.run(asyncio.wait_for(handshake(), seconds))

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="irs-connect")
    try:
        pool.submit(run).result()
    except (OSError, TimeoutError) as err:
        reason = str(err) or "the server accepted the connection but never answered the Dask " \
                             "handshake: it is not a Dask scheduler"
        raise ClusterTimeoutError(
            f"No Dask scheduler answered at {address!r} within {seconds} s ({reason}). Check "
            f"that `dask scheduler` runs there and that the address and port are right, "
            f"{example}, or pass a longer timeout=; to work on this machine instead, use "
            "irs.start_cluster().") from err
    finally:
        pool.shutdown(wait=False)


def connect(address: str, *, timeout: float | str = 10, **kwargs: Any) -> Any:
    """A ``distributed.Client`` on an existing scheduler, e.g. ``tcp://host:8786``.

    Start that scheduler and its workers with ``dask scheduler`` and ``dask worker
    tcp://host:8786`` (CPU) or ``dask cuda worker tcp://host:8786`` (one worker per GPU).

    Raises
    ------
    ClusterTimeoutError
        The scheduler did not answer within ``timeout`` seconds.

    Examples
    --------
    >>> connect("tcp://127.0.0.1:9", timeout=0.5)
    Traceback (most recent call last):
    ...
    interactive_recsys.runtime.cluster.ClusterTimeoutError: No Dask scheduler answered at ...
    """
    from distributed import Client

    _probe_scheduler(address, timeout)
    try:
        return Client(address, timeout=timeout, **kwargs)
    except (OSError, TimeoutError) as err:
        raise ClusterTimeoutError(
            f"No Dask scheduler answered at {address!r} within {timeout} s ({err}). Check that "
            f"`dask scheduler` runs there and that the address and port are right (the "
            f"scheduler prints its address on start), or pass a longer timeout=; to work on "
            f"this machine instead, use irs.start_cluster().") from err


def stop_cluster(client: Any, timeout: float = 30) -> None:
    """Close ``client`` and the cluster it started, quietly.

    A worker still finishing a task when asked to close is killed by its nanny after a few
    seconds, which distributed logs as a WARNING ("Worker process still alive after 4.0
    seconds, killing") that lands in a notebook cell's output. Here that is the requested
    outcome, so distributed's warnings are held back while the cluster closes (errors still
    show); other loggers are untouched.

    >>> client = start_cluster(n_workers=1, memory_limit="1GB", dashboard=False, gpu=False)
    >>> stop_cluster(client); client.status
    'closed'
    """
    import logging

    loggers = [logging.getLogger(name) for name in
               ("distributed.nanny", "distributed.worker", "distributed.scheduler",
                "distributed.core", "distributed.batched")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        cluster = getattr(client, "cluster", None)
        client.close()
        if cluster is not None:
            cluster.close(timeout=timeout)
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
