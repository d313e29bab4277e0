"""Helpers shared by several test modules: folder digests, Categorify's ids by hand, a small
frame, an edit of a saved workflow.json, Dask workers whose clocks a busy machine skewed, and
how long a test's subprocess may take before it counts as hung."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import interactive_recsys as irs
from interactive_recsys import ops

#: Seconds a test's subprocess (a fresh interpreter that imports the package and does some
#: work: seconds on a quiet machine) may take before it counts as hung: a guard against a
#: hang, under pytest's 300 s per test, never a speed limit (a busy machine stretches it).
HANG_S = 270


def digest(folder, skip: str | None = None) -> dict[str, str]:
    """sha256 of every file under ``folder`` by relative path (``skip``: a subfolder left out)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        if skip is not None:
            dirs[:] = [d for d in dirs if os.path.join(root, d) != os.fspath(skip)]
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


def digest_tree(*folders: Path) -> dict[str, str]:
    """Content hash of every file (and the name of every folder) under ``folders``."""
    out = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for d in dirs:
                out[os.path.join(root, d) + "/"] = ""
            for f in files:
                p = os.path.join(root, f)
                out[p] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def expected_ids(values: list) -> list[int]:
    """Categorify's ids by hand: 1 null, then by descending count, ties by ascending value,
    starting at 3 (0 padding, 1 null, 2 out-of-vocabulary)."""
    counts: dict = {}
    for v in values:
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    order = sorted(counts, key=lambda v: (-counts[v], v))
    index = {v: 3 + i for i, v in enumerate(order)}
    return [1 if v is None else index[v] for v in values]


def tagged_frame(n: int = 60, tag: int = 0) -> pd.DataFrame:
    """``n`` rows: ``cat`` (7 strings), ``x`` (0.. plus ``tag``) and ``tag``."""
    return pd.DataFrame({"cat": [f"v{i % 7}" for i in range(n)], "x": np.arange(n) + tag,
                         "tag": np.full(n, tag)})


def saved_categorify(tmp_path):
    """A Categorify workflow fitted on three rows, saved under ``tmp_path / "saved"``."""
    df = pd.DataFrame({"c": ["a", "b", "a"]})
    return irs.Workflow(["c"] >> ops.Categorify()).fit(df).save(tmp_path / "saved"), df


def edit_workflow_json(saved, change):
    """Apply ``change`` to the dict of ``saved``'s workflow.json and write it back."""
    path = os.path.join(saved, "workflow.json")
    with open(path) as f:
        config = json.load(f)
    change(config)
    with open(path, "w") as f:
        json.dump(config, f)


@contextlib.contextmanager
def skewed_worker_clocks(client: Any, seconds: float) -> Iterator[None]:
    """The workers of ``client`` report their task times ``seconds`` off the scheduler's
    clock, as a busy machine makes them do.

    A Dask worker puts its task times on the scheduler's clock with its estimate of the
    offset between the two (``Worker.scheduler_delay``: the scheduler's time in a heartbeat's
    answer minus the middle of the round trip), wrong by up to half that round trip, which
    lasts seconds at a load of 10 on 2 cores. Here the estimate is set to ``seconds`` and the
    heartbeats that would correct it are paused; on exit one heartbeat sets it right and
    they go on."""

    def skew(dask_worker: Any, delay: float) -> None:
        dask_worker.periodic_callbacks["heartbeat"].stop()
        dask_worker.scheduler_delay = delay

    async def restore(dask_worker: Any) -> None:
        await dask_worker.heartbeat()
        dask_worker.periodic_callbacks["heartbeat"].start()

    client.run(skew, delay=seconds)
    try:
        yield
    finally:
        client.run(restore)
