"""The Performance page's results, written at build start from ``benchmarks/results/``.

Each benchmark harness keeps one current result per scenario there: ``<label>.json`` (the
machine, the commit, the command, the settings, every run, medians and ratios) and
``<label>.md`` (the same as tables). For each label this writes a section with the command,
the data, the machine and the commit read from the JSON, and the tables of the ``.md``, into
``docs/performance.md`` as it is read, in place of its ``<!-- irs-performance-results -->``
line: nothing is written into ``docs/``. The page is read again when a result file changes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from benchmarks.headline import IN_MEMORY, OUT_OF_CORE, headline_table

HEADLINE_FILES = IN_MEMORY + OUT_OF_CORE

#: Result label prefix -> the section's title and what the benchmark measures, in page order.
GROUPS = {
    "criteo": ("The standard Criteo workflow",
               "Categorify of C1..C26 and FillMissing, Clip, LogOp, Normalize of I1..I13 on "
               "synthetic Criteo parquet files, against hand-written pandas, polars and Dask "
               "versions, NVTabular where installed, and the I/O floor (pyarrow reading and "
               "writing the same files). Wall: the whole process as a user pays it; ratios "
               "are wall time over the named contender's (above 1: slower)."),
    "criteo-torchrec": ("Raw Criteo day files to TorchRec's files",
                        "`irs criteo --to torchrec` against TorchRec's own preprocessing "
                        "functions, the same job in polars, and a floor (a pyarrow CSV read "
                        "and `np.save` of the same arrays), on the same raw TSV day files; "
                        "each output is checked against TorchRec's."),
    "criteo-day": ("One large Criteo day, out of core",
                   "`irs criteo --to torchrec` on a cluster, on one day file far larger than "
                   "the workers' memory, against a small day: rows/s and the largest "
                   "worker's peak memory, overall and in each phase."),
    "scaling": ("Scaling",
                "The same workflow at growing sizes, out of core (data several times the "
                "workers' memory limit), with wide vocabularies, and the fitted cost curve. "
                "Every run is checked against independent pyarrow/pandas value counts."),
    "refit": ("Refit after an edit",
              "The workflow fitted once, one continuous step (or only a Categorify's "
              "`freq_threshold`) edited, and fitted again reusing the first fit: the "
              "refit's time over the first fit's."),
    "loader": ("Training loader",
               "Samples per second over a shuffled epoch of processed data, against PyTorch "
               "DataLoader baselines."),
    "serving": ("Serving: `wf.to_torch()`",
                "The TorchScript module of the standard Criteo workflow's per-row steps "
                "against `wf.transform` on the same batch of held-out rows, and its numeric "
                "part scripted and exported; every output column checked against "
                "`wf.transform`'s."),
    "predict": ("Top-K prediction",
                "`irs.predict_topk` on 1 and 2 workers against a single-process NumPy loop."),
    "movielens": ("MovieLens example graph",
                  "The `movielens_workflow` graph (ids, genres, popularity, target encoding, "
                  "user histories) on MovieLens data."),
    "monitor-overhead": ("Dashboard monitor overhead",
                         "The standard workflow with and without the live dashboard's "
                         "monitor sampling the cluster."),
    "dashboard-cpu": ("What the dashboard costs the browser",
                      "Chromium's CPU with a live dashboard in JupyterLab: idle, paused, its "
                      "notebook tab hidden, and during a run against the workers' CPU."),
}


def group_of(label: str) -> str:
    """The group of a result label: the longest group name it starts with.

    >>> group_of("criteo-kaggle-8M"), group_of("criteo-torchrec"), group_of("x")
    ('criteo', 'criteo-torchrec', 'other')
    """
    found = [p for p in GROUPS if label == p or label.startswith(p + "-")]
    return max(found, key=len) if found else "other"


def commit_of(result: dict[str, Any]) -> str:
    """The commit the result was measured on (the harnesses record it in a few places)."""
    for value in (result.get("commit"), (result.get("code") or {}).get("git_commit"),
                  (result.get("git") or {}).get("git_commit")):
        if value:
            return str(value)[:12]
    found = re.search(r"commit ([0-9a-f]{7,40})", str(result.get("machine", "")))
    return found.group(1)[:12] if found else "not recorded"


def date_of(result: dict[str, Any], markdown: str = "") -> str:
    """The day of the run: from the JSON, else from the title of the ``.md`` report."""
    found = re.search(r"\d{4}-\d{2}-\d{2}", markdown.split("\n", 1)[0])
    return (str(result.get("started") or result.get("date") or "")[:10]
            or (found.group(0) if found else "not recorded"))


def machine_of(result: dict[str, Any]) -> str:
    machine = result.get("machine")
    if isinstance(machine, dict):
        versions = machine.get("versions") or {}
        libs = ", ".join(f"{k} {v}" for k, v in versions.items()
                         if v and k in ("pandas", "pyarrow", "dask", "polars", "numpy"))
        return (f"{machine.get('cpu')}, {machine.get('cpu_count')} CPUs, "
                f"{machine.get('memory_gb')} GB; Python {machine.get('python')}"
                + (f", {libs}" if libs else ""))
    return str(machine or "not recorded")


def data_of(label: str, result: dict[str, Any]) -> str:
    """The data a result was measured on, in words, from its recorded settings."""
    s = result.get("settings") or {}
    group = group_of(label)
    if group == "criteo":
        return (f"`synthetic_criteo(profile={s.get('profile', 'default')!r})`, "
                + ", ".join(f"{n:,}" for n in s.get("sizes", [])) + " rows in "
                f"{s.get('rows_per_file', 0):,}-row parquet files")
    if group == "criteo-torchrec":
        return (f"{result.get('days')} raw Criteo TSV day files of "
                f"{result.get('rows_per_day', 0):,} rows, written from "
                "`synthetic_criteo(profile='kaggle')`")
    if group == "criteo-day":
        return ("one raw Criteo TSV day file written from `synthetic_criteo(profile='kaggle')`, "
                "at the sizes in the table")
    if group == "scaling":
        return (f"`synthetic_criteo(profile={s.get('profile')!r})`; the table's `data` and "
                "`rows` columns give each run's")
    if group == "refit":
        return (f"{result.get('rows', 0):,} rows, `synthetic_criteo` {result.get('profile')} "
                f"profile, {result.get('files')} files; {result.get('mode', '')}")
    if group == "loader":
        return (f"{s.get('rows', 0):,} processed synthetic Criteo rows in {s.get('files')} "
                f"parquet files ({s.get('row_groups')} row groups)")
    if group == "serving":
        return (f"the standard workflow fitted on {s.get('fit_rows', 0):,} synthetic Criteo "
                f"rows (kaggle profile); batches of "
                + ", ".join(f"{n:,}" for n in s.get("batch_sizes", [])) + " held-out rows")
    if group == "predict":
        return (f"{result.get('users', 0):,} users x {result.get('items', 0):,} items, "
                f"{result.get('per_user')} interactions per user, top-{result.get('k')}")
    if group == "monitor-overhead":
        return (f"{s.get('rows', 0):,} synthetic Criteo rows on {s.get('workers')} workers of "
                f"{s.get('memory_limit')}")
    if group == "dashboard-cpu":
        return (f"{s.get('rows', 0):,} synthetic Criteo rows on {s.get('workers')} workers of "
                f"{s.get('memory_limit')}; idle windows of {s.get('window_s')} s")
    if group == "movielens":
        return "the MovieLens releases and synthetic ratings named in the table"
    return "see the table"


def key_figures(label: str, result: dict[str, Any]) -> list[str]:
    """Medians and ratios that a result's JSON holds outside its tables."""
    group, out = group_of(label), []
    if group == "refit" and "ratio" in result:
        out.append(f"refit / first fit, wall: {result['ratio']['wall']:.2f} through the API, "
                   f"{result['studio_ratio']['wall']:.2f} through the Studio (target "
                   f"{result['target']:.2f}: {'met' if result['meets_target'] else 'not met'})")
    if group == "refit" and "threshold_ratio" in result:
        out.append(f"refit after a freq_threshold-only edit / first fit, wall: "
                   f"{result['threshold_ratio']['wall']:.2f} (target "
                   f"{result['threshold_target']:.2f}: "
                   f"{'met' if result['threshold_meets_target'] else 'not met'})")
    if group == "predict" and "median_s" in result:
        medians = ", ".join(f"{k} {v:.1f} s" for k, v in result["median_s"].items())
        out.append(f"medians: {medians}; 2 workers vs 1: {result['speedup_2_vs_1']:.2f}x "
                   f"faster; 1 worker vs the loop: {result['irs_1_vs_loop']:.2f}")
    if group == "criteo-torchrec" and "ratios" in result:
        r = result["ratios"]
        out.append(", ".join(f"{k.replace('_', ' ')}: {v:.2f}" for k, v in r.items()
                             if k.startswith("irs-local_")))
    if group == "monitor-overhead" and "summary" in result:
        s = result["summary"]
        out.append(f"CPU overhead {s.get('cpu_overhead_pct', 0):+.1f}%, wall-time overhead "
                   f"{s.get('overhead_pct', 0):+.1f}% (target under "
                   f"{s.get('target_pct', 0):.0f}%)")
    return out


def tables_of(markdown: str) -> list[str]:
    """The Markdown tables of a harness's ``.md`` report, in order."""
    tables, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append("\n".join(current))
            current = []
    if current:
        tables.append("\n".join(current))
    return tables


def section(label: str, result: dict[str, Any], markdown: str) -> str:
    lines = [f"### `{label}`", "",
             f"- **Command:** `{result.get('command', 'not recorded')}`",
             f"- **Data:** {data_of(label, result)}",
             f"- **Machine:** {machine_of(result)}",
             f"- **Code:** commit `{commit_of(result)}`, measured {date_of(result, markdown)}"]
    lines += [f"- **Result:** {figure}" for figure in key_figures(label, result)]
    lines.append("")
    for table in tables_of(markdown):
        lines += [table, ""]
    lines.append(f"Every run, with its settings: `benchmarks/results/{label}.json`.")
    return "\n".join(lines) + "\n"


def results_page(folder: Path) -> str:
    """The Markdown of every current result in ``folder``, grouped by benchmark."""
    labels = sorted(p.stem for p in folder.glob("*.json"))
    if not labels:
        return "No benchmark results are in `benchmarks/results/`.\n"
    out = []
    if all((folder / f"{label}.json").exists() for _, label in HEADLINE_FILES):
        out += ["## Headline", "", "The table README.md shows, made by the same code "
                "(`benchmarks/headline.py`) from the results below.", "",
                headline_table(folder), "", "## Every result", ""]
    out += ["| Result | Measured | Commit | Machine |", "|---|---|---|---|"]
    results = {label: json.loads((folder / f"{label}.json").read_text()) for label in labels}
    reports = {label: (folder / f"{label}.md").read_text()
               if (folder / f"{label}.md").exists() else "" for label in labels}
    order = [*GROUPS, "other"]
    labels.sort(key=lambda label: (order.index(group_of(label)), label))
    for label in labels:
        day = date_of(results[label], reports[label])
        machine = machine_of(results[label]).split(";")[0]
        out.append(f"| [`{label}`](#{anchor(label)}) | {day} | `{commit_of(results[label])}` "
                   f"| {machine} |")
    out.append("")
    shown = None
    for label in labels:
        group = group_of(label)
        if group != shown:
            title, about = GROUPS.get(group, ("Other results", ""))
            out += [f"## {title}", "", about, ""]
            shown = group
        out.append(section(label, results[label], reports[label]))
    return "\n".join(out)


def anchor(label: str) -> str:
    """The id MyST gives the heading ``### `label```."""
    return re.sub(r"[^\w\- ]", "", label.lower()).replace(" ", "-")


#: The line of ``performance.md`` that the results replace.
MARKER = "<!-- irs-performance-results -->"


def insert_results(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname != "performance":
        return
    folder = Path(app.srcdir).parent / "benchmarks" / "results"
    source[0] = source[0].replace(MARKER, results_page(folder), 1)
    for path in sorted(folder.iterdir()):  # an incremental build reads the page again
        app.env.note_dependency(str(path))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", insert_results)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
