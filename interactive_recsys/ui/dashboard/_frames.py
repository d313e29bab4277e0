"""A monitor sample as the dashboard's figures draw it: a :class:`~._figures.Frame`.

Workers are named ``worker <name>`` and sorted; times are seconds on the monitor's clock
(since ``t0``); GPU devices come from the monitor's NVML reading, or from distributed's
metrics when NVML cannot be read.

>>> sample = {"time": 12.0, "workers": {"tcp://b": {"name": 1}, "tcp://a": {"name": 0}}}
>>> task = {"worker": "tcp://a", "start": 10.5, "stop": 11.0, "key": "k"}
>>> frame = make_frame(sample, [task], t0=10.0, has_gpu=False)
>>> frame.time, frame.names, frame.tasks[0]["worker"], frame.tasks[0]["start"]
(2.0, ['worker 0', 'worker 1'], 'worker 0', 0.5)
"""

from __future__ import annotations

from typing import Any

from interactive_recsys.ui.dashboard._figures import Frame


def make_frame(sample: dict[str, Any], tasks: list[dict[str, Any]], t0: float,
               has_gpu: bool) -> Frame:
    """``sample`` and its new task ``records`` as a :class:`Frame` (times since ``t0``)."""
    names = {a: f"worker {w['name']}" for a, w in sample["workers"].items()}
    order = sorted(sample["workers"], key=lambda a: names[a])
    records = [{**r, "worker": names.get(r["worker"], r["worker"]),
                "start": r["start"] - t0, "stop": r["stop"] - t0} for r in tasks]
    return Frame(time=sample["time"] - t0,
                 workers=[(names[a], sample["workers"][a]) for a in order],
                 tasks=records, gpus=sample_gpus(sample, names) if has_gpu else [])


def sample_gpus(sample: dict[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    """The GPU devices of ``sample``: used, total, limit and utilization per device."""
    nan = float("nan")
    gpus = [{"device": f"{names.get(address, address)}:gpu{g['device']}", "used": g["used"],
             "total": g["total"], "limit": g.get("limit") or nan,
             "utilization": g["utilization"]}
            for address, devices in sorted(sample.get("gpus", {}).items()) for g in devices]
    if gpus:
        return gpus
    for address, w in sample["workers"].items():  # NVML unreadable: distributed's metrics
        metric = w.get("gpu") or {}
        if "memory-used" in metric:
            gpus.append({"device": f"{names[address]}:gpu", "used": metric["memory-used"],
                         "total": nan, "limit": nan,
                         "utilization": metric.get("utilization", nan)})
    return gpus


__all__ = ["make_frame", "sample_gpus"]
