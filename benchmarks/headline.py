"""README's performance table, made from the result files that the Performance page shows.

README.md holds the table between two markers; ``python -m benchmarks headline`` rewrites it
from ``benchmarks/results/``, and the docs' Performance page renders the same table with the
same function, so the two cannot disagree. A test compares README's block with
:func:`headline_table`.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

HELP = "rewrite README.md's performance table from benchmarks/results/"

RESULTS = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = "<!-- headline table: made by `python -m benchmarks headline` from benchmarks/results -->"
END = "<!-- end of headline table -->"

#: The in-memory rows: (rows label, result file), each a ``python -m benchmarks criteo`` result.
IN_MEMORY = [("8M", "criteo-kaggle-8M"), ("32M", "criteo-kaggle-32M")]
#: The out-of-core row: ``python -m benchmarks scaling --scenarios out-of-core`` results.
OUT_OF_CORE = [("32M", "scaling-out-of-core-32M-3GB-kaggle"),
               ("100M", "scaling-out-of-core-100M-3GB-kaggle")]
CONTENDERS = ["irs-local", "irs-cluster", "polars", "pyarrow-floor"]


def _load(folder: Path, label: str) -> dict[str, Any]:
    path = folder / f"{label}.json"
    if not path.exists():
        raise FileNotFoundError(f"the headline table reads {path}, which does not exist: run "
                                "its benchmark (the command is in benchmarks/README.md)")
    return json.loads(path.read_text())


def _walls(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each contender's median whole-process wall time and peak memory of a criteo result."""
    return {o["contender"]: {"wall": o["wall_s"], "rss": o.get("peak_rss_mb") or 0.0}
            for o in result["outcomes"] if o.get("wall_s") is not None}


def _out_of_core_wall(result: dict[str, Any]) -> float:
    """The median whole-process wall time of a scaling result's out-of-core run."""
    (config,) = [c for c in result["configs"] if c["scenario"] == "out-of-core"]
    runs = config["runs"] if isinstance(config["runs"], list) else [config["runs"]]
    return statistics.median(run["process_s"] for run in runs)


def _cell(seconds: float | None, bold: bool = False) -> str:
    if seconds is None:
        return ""
    text = f"{seconds:.1f} s"
    return f"**{text}**" if bold else text


def headline_table(folder: Path = RESULTS) -> str:
    """The Markdown table README.md shows, with the result file of every number under it.

    >>> headline_table().splitlines()[0].split(" | ")[:3]
    ['| rows', 'irs, in-process', 'irs, 2-worker cluster']
    """
    lines = ["| rows | irs, in-process | irs, 2-worker cluster | polars "
             "| pyarrow read + write (floor) | in-process / floor |",
             "|---|---:|---:|---:|---:|---:|"]
    for rows, label in IN_MEMORY:
        walls = _walls(_load(folder, label))
        local, floor = walls.get("irs-local"), walls.get("pyarrow-floor")
        cells = [_cell(walls[c]["wall"], c == "irs-local") if c in walls else ""
                 for c in CONTENDERS]
        ratio = f"{local['wall'] / floor['wall']:.2f}" if local and floor else ""
        lines.append(f"| {rows} | " + " | ".join(cells) + f" | {ratio} |")
    walls = [f"{rows}: {_cell(_out_of_core_wall(_load(folder, label)))}"
             for rows, label in OUT_OF_CORE]
    lines.append("| out of core, 2 workers of 3 GB | | " + " / ".join(walls) + " | | | |")
    files = [label for _, label in IN_MEMORY + OUT_OF_CORE]
    lines += ["", "Each number is the median in `benchmarks/results/` of: "
              + ", ".join(f"`{f}.json`" for f in files) + "."]
    return "\n".join(lines)


def readme_block(text: str) -> str:
    """The table between README's markers (without the markers)."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"README.md lacks the markers {BEGIN!r} and {END!r}")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def with_table(text: str, table: str) -> str:
    """``text`` (README's) with the block between the markers replaced by ``table``."""
    readme_block(text)
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="only check that README.md's table is current (exit 1 if not)")


def run(args: argparse.Namespace) -> None:
    text, table = README.read_text(encoding="utf-8"), headline_table()
    if args.check:
        if readme_block(text) != table:
            raise SystemExit("README.md's performance table differs from benchmarks/results: "
                             "run `python -m benchmarks headline`")
        return
    README.write_text(with_table(text, table), encoding="utf-8")
    print(f"README.md's performance table rewritten from {RESULTS}")
