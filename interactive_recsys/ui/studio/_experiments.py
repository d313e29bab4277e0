"""A record of every fit and evaluation, next to the notebook: compare runs at a glance.

Each :meth:`Experiments.evaluate` (or :meth:`Experiments.record`) appends one JSON line to
the file: model, parameters, data, times and metrics. :meth:`Experiments.table` shows the
runs side by side; :meth:`Experiments.curves` draws precision@K and recall@K against K, one
line per run, with Bokeh, so a user sees at once whether the last change helped.

Examples
--------
>>> import tempfile, pandas as pd
>>> from interactive_recsys.models import Popularity
>>> exp = Experiments(tempfile.mkdtemp() + "/runs.jsonl")
>>> train = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [7, 8, 7, 9]})
>>> test = pd.DataFrame({"user_id": [1, 2], "item_id": [9, 8]})
>>> run = exp.evaluate(Popularity().fit(train), train, test, ks=(1, 2), data="toy")
>>> run["model"], run["metrics"]["recall@1"], len(exp.runs())
('Popularity', 1.0, 1)
>>> exp.table()[["run", "name", "data", "precision@1"]].values.tolist()
[[0, 'Popularity()', 'toy', 1.0]]
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd

from interactive_recsys.errors import ParameterError
from interactive_recsys.eval import ranking_metrics
from interactive_recsys.models._predict import predict_topk
from interactive_recsys.redact import redact_text

DEFAULT_KS = (1, 5, 10, 20, 50, 100)


class Experiments:
    """Runs recorded in a JSON-lines file (created on the first record).

    Parameters
    ----------
    path : str or os.PathLike, default ``"experiments.jsonl"``
        The file; relative paths are relative to the notebook's working directory.
    """

    def __init__(self, path: str | os.PathLike = "experiments.jsonl") -> None:
        self.path = os.fspath(path)

    # ---- recording ------------------------------------------------------------------------
    def record(self, model: Any, metrics: dict[str, float] | None = None, *,
               data: str | None = None, name: str | None = None,
               times: dict[str, float] | None = None, **extra: Any) -> dict[str, Any]:
        """Append one run (a fitted model and, optionally, its metrics); return it."""
        if not getattr(model, "fitted", False):
            raise ParameterError(f"Experiments.record needs a fitted model; {model!r} is not "
                                 "fitted.")
        run = {"run": len(self.runs()),
               "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
               "name": name or _describe(model), "model": type(model).__name__,
               "params": model.get_params(), "data": redact_text(data),  # a URL's password
               "info": dict(model.info_),
               "times": {"fit_s": model.info_.get("fit_s"), **(times or {})},
               "metrics": dict(metrics or {}), **extra}
        line = json.dumps(run, default=_json_default)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with open(self.path, "a") as f:  # one write per line: runs never interleave
            f.write(line + "\n")
        return run

    def evaluate(self, model: Any, train: Any, test: Any, *, ks: Sequence[int] = DEFAULT_KS,
                 k: int | None = None, data: str | None = None,
                 name: str | None = None) -> dict[str, Any]:
        """Top-``k`` lists for the users of ``train`` on the cluster, their metrics against
        ``test``, recorded with the times of each step; returns the run."""
        k = k or max(ks)
        started = time.perf_counter()
        preds = predict_topk(model, train, k=k)
        metrics = ranking_metrics(preds, test, ks=ks, user_col=model.user_col,
                                  item_col=model.item_col, catalog=model)
        return self.record(model, metrics, data=data, name=name,
                           times={"predict_and_metrics_s": round(time.perf_counter() - started,
                                                                 3)})

    # ---- reading --------------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        """Every recorded run, oldest first (none when the file does not exist yet)."""
        if not os.path.exists(self.path):
            return []
        with open(self.path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def table(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per run: name, data, fit time and the metrics (default: all recorded)."""
        runs = self.runs()
        rows = []
        for run in runs:
            base = {"run": run["run"], "name": run["name"], "data": run["data"],
                    "fit_s": run["times"].get("fit_s")}
            names = metrics or [m for m in run["metrics"] if not m.startswith("users")]
            rows.append({**base, **{m: run["metrics"].get(m) for m in names if m not in base}})
        return pd.DataFrame(rows)

    def curves(self, metrics: Sequence[str] = ("precision", "recall"),
               runs: Sequence[int] | None = None, *, width: int = 420,
               height: int = 300) -> Any:
        """Bokeh figures (a row) of ``metric@K`` against K, one line per run.

        The legend sits outside the plot, below it, one entry per run labelled with what
        tells the runs apart first (``run_labels``: ``hidden=32 · AutoEncoder``);
        clicking an entry hides its run."""
        from bokeh.layouts import row
        from bokeh.models import ColumnDataSource, Legend, LegendItem
        from bokeh.palettes import Category10_10
        from bokeh.plotting import figure

        chosen = [r for r in self.runs() if runs is None or r["run"] in runs]
        labels = run_labels(chosen)
        figures = []
        for metric in metrics:
            fig = figure(title=f"{metric}@K", x_axis_label="K", y_axis_label=metric,
                         width=width, height=height + 22 * len(chosen), x_axis_type="log",
                         name=f"experiments-{metric}")
            items = []
            for i, run in enumerate(chosen):
                ks, values = _curve(run["metrics"], metric)
                if not ks:
                    continue
                source = ColumnDataSource({"k": ks, "value": values},
                                          name=f"experiments-{metric}-run{run['run']}")
                color = Category10_10[i % 10]
                line = fig.line("k", "value", source=source, color=color, line_width=2)
                dots = fig.scatter("k", "value", source=source, color=color, size=6)
                items.append(LegendItem(label=labels[i], renderers=[line, dots]))
            if items:
                legend = Legend(items=items, click_policy="hide", label_text_font_size="8pt",
                                spacing=0, padding=4, margin=4)
                fig.add_layout(legend, "below")
            figures.append(fig)
        return row(*figures)

    def __repr__(self) -> str:
        return f"Experiments({self.path!r}, runs={len(self.runs())})"


def run_labels(runs: Sequence[dict[str, Any]], width: int = 48) -> list[str]:
    """One legend label per run: among runs of the same model, the parameters that differ
    between them first (``hidden=32 · AutoEncoder``); a model run once is named as
    recorded, cut to ``width`` characters.

    >>> runs = [{"run": 2, "model": "AutoEncoder", "name": "AutoEncoder(hidden=128, epochs=10)",
    ...          "params": {"hidden": 128, "epochs": 10}},
    ...         {"run": 3, "model": "AutoEncoder", "name": "AutoEncoder(hidden=32, epochs=10)",
    ...          "params": {"hidden": 32, "epochs": 10}},
    ...         {"run": 0, "model": "Popularity", "name": "Popularity()", "params": {}}]
    >>> run_labels(runs)
    ['2: hidden=128 · AutoEncoder', '3: hidden=32 · AutoEncoder', '0: Popularity()']
    """
    labels = []
    for r in runs:
        same = [o for o in runs if o.get("model") == r.get("model")]
        params = r.get("params", {})
        differing = [k for k in sorted(params)
                     if len({repr(o.get("params", {}).get(k)) for o in same}) > 1]
        if len(same) > 1 and differing:
            shown = ", ".join(f"{k}={params[k]}" for k in differing)
            custom = r["name"] != _describe_params(r.get("model", ""), params)
            label = f"{shown} · {r['name'] if custom else r.get('model', '')}"
        else:
            label = r["name"]
        if len(label) > width:
            label = label[:width - 1] + "…"
        labels.append(f"{r['run']}: {label}")
    return labels


def _describe_params(model: str, params: dict[str, Any]) -> str:
    return f"{model}({', '.join(f'{k}={v}' for k, v in params.items())})"


def _curve(metrics: dict[str, float], metric: str) -> tuple[list[int], list[float]]:
    points = sorted((int(key.split("@")[1]), value) for key, value in metrics.items()
                    if key.startswith(f"{metric}@"))
    return [k for k, _ in points], [v for _, v in points]


def _describe(model: Any) -> str:
    params = ", ".join(f"{k}={v}" for k, v in model.get_params().items())
    return f"{type(model).__name__}({params})"


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
