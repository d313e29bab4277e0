"""Where a Dataset's rows come from: the files it reads (for the output guards, so that an
output never replaces its own input) and how errors name its input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dask.dataframe as dd

from interactive_recsys.io._parquet_pieces import ParquetPiece

if TYPE_CHECKING:
    from interactive_recsys.io._dataset import Dataset

__all__ = ["describe_input", "input_files", "source_files"]


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


def input_files(ds: Dataset) -> list[str]:
    """The files ``ds`` reads: its own, those it was derived from, or found in its graph;
    with the folders named as input (for :func:`~interactive_recsys.store._outputs.
    check_not_inside_input`)."""
    own = {*ds.files, *getattr(ds, "sources", ()), *getattr(ds, "folders", ())}
    return sorted(own) or source_files(ds.arrow_ddf())


def describe_input(ds: Dataset) -> str:
    """The input of ``ds`` as errors name it: its folder, its file, or its first files.

    >>> import pandas as pd
    >>> from interactive_recsys.io._dataset import Dataset
    >>> describe_input(Dataset(pd.DataFrame({"a": [1]})))
    'the in-memory frame'
    """
    files = list(ds.files or getattr(ds, "sources", ()))
    if len(ds.folders) == 1:
        return f"the folder {ds.folders[0]!r}"
    if len(files) == 1:
        return f"the file {files[0]!r}"
    if files:
        return f"the {len(files)} files {files[:3]}" + (" ..." if len(files) > 3 else "")
    return "the in-memory frame"
