"""Categorify ids of the standard Criteo workflow checked whole, against pandas and between runs.

The harness checks sampled output rows; this checks every row. For each output directory
given (written by ``python -m benchmarks.contenders irs-local ...``, e.g. with the code of two
commits), every id of C1..C26 is compared with ids computed independently by pandas from the
input (value counts over the whole data, descending count then ascending value, first id 3;
null 1), and every output with the first one byte for byte (``pyarrow.ChunkedArray.equals``)::

    python -m benchmarks.categorify_ids DATA_DIR OUT_DIR [OUT_DIR ...] [--report FILE.md]

Exits with 1 when any column differs anywhere.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .contenders import CATS, encode, parquet_files, vocab_index


def read_column(directory: str, column: str) -> pa.ChunkedArray:
    """One column of every data file of ``directory``, in file order."""
    chunks = []
    for path in parquet_files(directory):
        chunks.extend(pq.read_table(path, columns=[column])[column].chunks)
    return pa.chunked_array(chunks)


def pandas_ids(data: str, column: str) -> np.ndarray:
    """The column's ids by pandas alone (:func:`.contenders.vocab_index`, :func:`encode`)."""
    values = read_column(data, column).to_pandas()
    return encode(values, vocab_index(values.value_counts(dropna=True)))


def check(data: str, outputs: list[str]) -> list[str]:
    """Lines of the report; every line after the header names one column's comparisons."""
    lines = [f"data: {data} ({len(parquet_files(data))} files)",
             "column | rows | distinct | equal to pandas | byte-identical to the first output"]
    for column in CATS:
        expected = pandas_ids(data, column)
        got = [read_column(out, column) for out in outputs]
        to_pandas = [np.array_equal(g.to_numpy(), expected) for g in got]
        identical = [g.equals(got[0]) for g in got[1:]]
        distinct = int(expected.max()) - 2 if len(expected) else 0
        lines.append(f"{column} | {len(expected):,} | {distinct:,} | "
                     f"{', '.join(map(str, to_pandas))} | {', '.join(map(str, identical)) or '-'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.categorify_ids",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("outputs", nargs="+")
    parser.add_argument("--report", help="also write the lines to this markdown file")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    lines = check(args.data, args.outputs)
    bad = [line for line in lines[2:] if "False" in line]
    lines.append(f"outputs: {', '.join(args.outputs)}")
    lines.append(f"columns differing: {[line.split(' ')[0] for line in bad]} "
                 f"({time.perf_counter() - started:.0f} s)")
    print("\n".join(lines))
    if args.report:
        with open(args.report, "w") as f:
            f.write("```\n" + "\n".join(lines) + "\n```\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
