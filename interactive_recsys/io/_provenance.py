"""Where a Dataset's rows come from: the files a Dask DataFrame built by a Dataset reads,
found in its graph (for the output guards, so that an output never replaces its own input;
:meth:`~interactive_recsys.io.Dataset.input_files`).
"""

from __future__ import annotations

from typing import Any

import dask.dataframe as dd

from interactive_recsys.io._parquet_pieces import ParquetPiece

__all__ = ["source_files"]


def source_files(ddf: dd.DataFrame) -> list[str]:
    """The files a Dask DataFrame built by :class:`Dataset` reads (for output guards)."""
    files: list[str] = []

    def visit(value: Any, depth: int) -> None:
        try:
            files.extend(getattr(value, "irs_sources", ()))
            files.extend(getattr(value, "irs_folders", ()))
        except Exception:  # e.g. from_delayed's expression: no metadata to look into
            pass
        if isinstance(value, ParquetPiece):
            files.append(value.path)
        elif isinstance(value, list | tuple) and depth < 3:
            for item in value:
                visit(item, depth + 1)

    for expr in ddf.expr.walk():
        for operand in expr.operands:
            visit(operand, 0)
    return sorted(set(files))
