"""Frame-level operations written once against the DataFrame API that pandas and cuDF share
(column selection, assignment, renaming); each backend calls them with its own frames.

>>> import pandas as pd
>>> select(pd.DataFrame({"a": [1], "b": [2]}), ["b"]).columns.tolist()
['b']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from interactive_recsys.errors import SchemaError, names_text


def select(df: Any, names: Sequence[str]) -> Any:
    """The columns ``names`` of ``df``, or a :class:`SchemaError` naming the missing ones."""
    missing = [n for n in names if n not in df.columns]
    if missing:
        raise SchemaError(f"Columns {missing} are not in the data; available columns: "
                          f"{names_text(df.columns)}.")
    return df[list(names)]


def with_columns(df: Any, columns: Mapping[str, Any], series: Callable[[Any, Any], Any]) -> Any:
    """``df`` with columns replaced or appended; ``series(col, index)`` makes a native column."""
    out = df.copy(deep=False)
    for name, col in columns.items():
        out[name] = series(col, out.index)
    return out


def rename(df: Any, mapping: Mapping[str, str]) -> Any:
    return df.rename(columns=dict(mapping))
