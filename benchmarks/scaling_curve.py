"""The scaling curve: a cost model fitted to measured sizes, extrapolated to Criteo 1TB.

``python -m benchmarks scaling --scenarios curve [--rows 2000000 8000000 16000000 32000000]``
times the standard workflow at each size (in-process, and on the 2-worker cluster with
``--curve-modes local cluster``), then fits, per phase,

    time = a * rows + b * distinct + c        (a, b, c >= 0; least squares)

where ``distinct`` is the number of distinct values of the 26 categorical columns together.
The phases are *start-up* (interpreter, imports, cluster start; the whole process minus the
work), *fit* and *transform + write*, by wall time; the job's CPU seconds get the same model
(on a shared machine CPU time is the steadier measure) and extrapolate with every core busy.
The model's error on the measured points is printed next to its extrapolation to Criteo 1TB
(4,373,472,329 rows; the 26 cardinalities MLPerf's DLRM uses, ids capped at 40M: a lower
bound of the real ones) for 1, 8 and 64 workers of 2 cores like this machine's, under stated
assumptions: the row and distinct terms divide evenly over the workers (splits and
partitions parallelise; no network cost is modelled) and the start-up term does not.

>>> model = fit_phase([(1e6, 1e5, 12.0), (2e6, 2e5, 22.0), (4e6, 3e5, 42.0)])
>>> [round(x, 6) for x in model["coef"]], round(model["max_error"], 3)
([1e-05, 0.0, 2.0], 0.0)
"""

from __future__ import annotations

import itertools
import statistics

import numpy as np

#: Rows of Criteo 1TB (24 days) and the per-column cardinalities of MLPerf's DLRM run on it
#: (``--max-ind-range=40000000``: ids hashed into 40M, so the four widest are capped).
CRITEO_1TB_ROWS = 4_373_472_329
CRITEO_1TB_CARDINALITIES = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951,
                            2953546, 403346, 10, 2208, 11938, 155, 4, 976, 14, 39979771,
                            25641295, 39664984, 585935, 12972, 108, 36]
NVTABULAR_PUBLISHED = ("NVTabular (published): 13 min on 1x V100, about 3 min on 8x V100; "
                       "Spark on a CPU cluster: 3 h")
WORKERS = (1, 8, 64)
PHASES = ("start-up", "fit", "transform + write")
#: the job's CPU seconds (all processes), modelled like a phase: robust on a shared machine
CPU = "CPU, whole job"


def fit_phase(points: list[tuple[float, float, float]]) -> dict:
    """Non-negative least squares of ``time = a*rows + b*distinct + c`` over ``(rows,
    distinct, seconds)`` points: the best of every subset of the three terms whose solution
    is non-negative (rows and distinct grow together, so a plain fit can go negative)."""
    x = np.array([[r, d, 1.0] for r, d, _ in points])
    y = np.array([t for _, _, t in points])
    best = None
    for k in (3, 2, 1):
        for terms in itertools.combinations(range(3), k):
            coef, *_ = np.linalg.lstsq(x[:, terms], y, rcond=None)
            if (coef < -1e-12).any():
                continue
            full = np.zeros(3)
            full[list(terms)] = np.maximum(coef, 0)
            residual = float(np.square(x @ full - y).sum())
            if best is None or residual < best[0] - 1e-12:
                best = (residual, full)
    coef = best[1]
    predicted = x @ coef
    errors = np.abs(predicted - y) / np.maximum(y, 1e-9)
    return {"coef": coef.tolist(), "max_error": float(errors.max()),
            "errors": errors.tolist()}


def phase_points(configs: list[dict], mode: str) -> dict[str, list[tuple[float, float, float]]]:
    """Median seconds of each phase at each measured size of ``mode``."""
    out: dict[str, list] = {p: [] for p in PHASES}
    for c in configs:
        if c["scenario"] != "curve" or c["mode"] != mode or not c["runs"]:
            continue
        rows, distinct = c["rows"], c["distinct_total"]
        work = statistics.median(r["seconds"] for r in c["runs"])
        process = statistics.median(r["process_s"] for r in c["runs"])
        fit = statistics.median(r["extra"]["fit_s"] for r in c["runs"])
        out["start-up"].append((rows, distinct, max(process - work, 0.0)))
        out["fit"].append((rows, distinct, fit))
        out["transform + write"].append((rows, distinct, work - fit))
        out.setdefault(CPU, []).append(
            (rows, distinct, statistics.median(r["cpu_s"] for r in c["runs"])))
    return out


def extrapolate(models: dict[str, dict], workers: int) -> dict[str, float]:
    """Seconds of each phase at Criteo 1TB on ``workers`` workers (see the module text);
    ``CPU``: the wall seconds the CPU model gives with every core of every worker busy."""
    distinct = sum(CRITEO_1TB_CARDINALITIES)
    out = {}
    for phase, model in models.items():
        if phase == CPU:
            a, b, c = model["coef"]
            out[phase] = (a * CRITEO_1TB_ROWS + b * distinct) / (2 * workers) + c / 2
            continue
        a, b, c = model["coef"]
        out[phase] = (a * CRITEO_1TB_ROWS + b * distinct) / workers + c
    return out


def report(configs: list[dict]) -> str:
    """The measured curve, the fitted models with their errors, and the 1TB extrapolation."""
    lines = []
    for mode in ("local", "cluster"):
        points = phase_points(configs, mode)
        if len(points["fit"]) < 2:
            continue
        models = {p: fit_phase(v) for p, v in points.items()}
        where = "in-process (threaded scheduler, 2 threads)" if mode == "local" else \
            "2-worker cluster (1 thread each)"
        lines += ["", f"### Cost model, {where}", "",
                  "| phase | a: s per million rows | b: s per million distinct | c: s | "
                  "error on the measured points (each size) |", "|---|---:|---:|---:|---|"]
        for phase, m in models.items():
            a, b, c = m["coef"]
            errors = ", ".join(f"{100 * e:.0f}%" for e in m["errors"])
            lines.append(f"| {phase} | {a * 1e6:.2f} | {b * 1e6:.2f} | {c:.1f} | {errors} |")
        lines += ["", f"Criteo 1TB ({CRITEO_1TB_ROWS:,} rows, "
                  f"{sum(CRITEO_1TB_CARDINALITIES):,} distinct ids, MLPerf's cardinalities), "
                  "extrapolated:", "",
                  "| workers of 2 cores | start-up min | fit min | transform + write min | "
                  "total min (wall models) | total min (CPU model, every core busy) |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for w in WORKERS:
            t = extrapolate(models, w)
            lines.append(f"| {w} | " + " | ".join(f"{t[p] / 60:,.1f}" for p in PHASES)
                         + f" | {sum(t[p] for p in PHASES) / 60:,.1f} | "
                         f"{t[CPU] / 60:,.1f} |")
        worst = max(m["max_error"] for p, m in models.items() if p != CPU)
        lines += ["", f"Largest error of the wall models on a measured point: {100 * worst:.0f}%;"
                  f" of the CPU model: {100 * models[CPU]['max_error']:.0f}%. "
                  + NVTABULAR_PUBLISHED + "."]
    return "\n".join(lines)
