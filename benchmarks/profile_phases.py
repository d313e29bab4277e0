"""Shares of a py-spy profile by phase of the standard workflow (read, vocabulary, write...).

``python -m benchmarks.profile_phases PROFILE [PROFILE ...]`` reads py-spy's collapsed stacks
(``py-spy record -f raw``; ``.gz`` too) and prints a markdown table: per phase, its share of
the busy samples and the sample count, one column per profile. A stack belongs to the phase
of its innermost frame that matches one of :data:`RULES` (checked in order, from the leaf to
the root); the rules name functions by module and name, and also match the modules' older
paths (``backend.py`` for ``backend/``, ``ops/vocabulary.py`` for ``tables/``), so profiles
of earlier commits, kept in git history, still read.
"""

from __future__ import annotations

import collections
import gzip
import re
import sys
from pathlib import Path

#: (phase, regular expression on a frame's function name), most specific first
RULES: tuple[tuple[str, str], ...] = (
    ("fit: vocabulary write", r"write_split$"),
    ("fit: vocabulary sort/rank", r"(sort_order|_lexsort_order|_?local_rank|_rank_in_block|_gather"
     r"|rank_keys|count_before(_keys)?|sort_range|finish_range|gather_ranks|bases)$"),
    ("fit: merge of counts (Acero group_by or keyed)",
     r"(sum_counts|merge_sums|_sum_split|merge|encode_parts|_sum_runs)$"),
    ("fit: per-partition value counts",
     r"(CpuBackend\.value_counts|value_counts|_?dictionary_counts)$"),
    ("transform: dictionary codes (unify the row groups' dictionaries)",
     r"CpuBackend\.dictionary_codes$"),
    ("transform: vocabulary tables loaded (read, hashed; once a process)",
     r"(load_split|TableCache\.get|VocabTable\.load)$"),
    ("transform: vocabulary lookup (hash, get_indexer, split_ids)",
     r"(VocabTable\.positions|CpuBackend\.lookup|VocabTable\.by_hash|split_ids"
     r"|VocabTable\._find_sorted)$"),
    ("transform: Categorify, other (ids gathered by code, null mask)",
     r"Categorify\.(_encode|transform)$"),
    ("output writer", r"(CpuBackend\.write_parquet|_write_part)$"),
    ("read input", r"(read_parquet_table|_PieceReader\.__call__|ParquetFile\.read_row_groups)$"),
    ("continuous: FillMissing, Clip, log1p, Normalize (fit and transform)",
     r"((FillMissing|Clip|LogOp|Normalize|_Moments)\.\w+|(CpuBackend\.)?moments)$"),
    ("imports", r"_find_and_load$"),
    ("fit: other", r"Plan\.fit_partition$"),
    ("transform: other", r"Plan\.transform_partition$"),
)
OTHER = "other (Dask's scheduler or worker event loop, communication, waits)"


def phase(stack: list[str]) -> str:
    """The phase of one stack (frames root first, as py-spy writes them).

    >>> phase(["main (x.py:1)", "CpuBackend.write_parquet (b.py:2)", "write_table (p.py:3)"])
    'output writer'
    >>> phase(["main (x.py:1)"])
    "other (Dask's scheduler or worker event loop, communication, waits)"
    """
    for frame in reversed(stack):
        name = frame.split(" (", 1)[0]
        for label, pattern in RULES:
            if re.fullmatch(pattern, name):
                return label
    return OTHER


def shares(path: Path) -> tuple[collections.Counter, int]:
    """Samples per phase and the total of one collapsed-stack profile."""
    opener = gzip.open if path.suffix == ".gz" else open
    counts: collections.Counter = collections.Counter()
    with opener(path, "rt") as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            counts[phase(stack.split(";"))] += int(n)
    return counts, sum(counts.values())


def table(paths: list[Path]) -> str:
    """Markdown table: phase, then ``share % (samples)`` per profile."""
    results = [shares(p) for p in paths]
    lines = ["| phase | " + " | ".join(f"{p.name}: % ({total:,} samples)"
                                       for p, (_, total) in zip(paths, results, strict=True))
             + " |", "|---|" + "---:|" * len(paths)]
    for label in [*(r[0] for r in RULES), OTHER]:
        if any(counts[label] for counts, _ in results):
            lines.append(f"| {label} | " + " | ".join(
                f"{100 * counts[label] / total:.1f} ({counts[label]:,})"
                for counts, total in results) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([Path(p) for p in sys.argv[1:]]))
