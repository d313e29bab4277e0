"""NVTabular's ``JoinExternal``: ``on_ext``, ``drop_duplicates_ext`` and its ``ExtData``
formats mapped onto the core's side-table join."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from interactive_recsys.compat.nvtabular.operator import core_ops as _ops
from interactive_recsys.errors import ParameterError
from interactive_recsys.runtime import jobs

#: NVTabular's ``ExtData`` formats of a JoinExternal side table: the port infers the format
#: from the table itself, so ``kind_ext`` only has to agree with it.
EXT_KINDS = ("DATASET", "ARROW", "CUDF", "PANDAS", "DASK_CUDF", "DASK_PANDAS", "PARQUET",
             "CSV")


def JoinExternal(df_ext: Any, on: Any, how: str = "left", on_ext: Any = None,
                 columns_ext: Sequence[str] | None = None, drop_duplicates_ext: Any = None,
                 kind_ext: Any = None, cache: str = "host", **kwargs: Any) -> _ops.JoinExternal:
    """NVTabular's ``JoinExternal``:

    * ``on_ext`` (the side table's key names, when they differ from ``on``): the side table
      gets copies of those columns under the ``on`` names, and the join is on ``on``; the
      side table's own key columns are still added (as pandas' ``merge(left_on=,
      right_on=)`` gives them);
    * ``drop_duplicates_ext=True``: the side table's identical rows (equal in every column
      used: ``columns_ext`` and the keys) are dropped before the join, as NVTabular's
      ``drop_duplicates()`` does; a key left with several *different* rows is refused
      here, naming it (NVTabular's merge would repeat the data row once per match; the
      core's join keeps one output row per input row); without it a key twice is refused
      when the workflow is fitted;
    * ``kind_ext`` (``ExtData``) has no effect: the format is inferred from ``df_ext``
      (a csv file is read with pandas here, as NVTabular reads it); ``cache`` (where the
      table stays between partitions) has no effect: each worker reads it once.
    """
    if kwargs:
        raise ParameterError(f"JoinExternal got {sorted(kwargs)}, which NVTabular 23.08 stores "
                             "without using; remove them.")
    kind = getattr(kind_ext, "name", kind_ext)
    if kind is not None and str(kind).upper() not in EXT_KINDS:
        raise ParameterError(f"JoinExternal(kind_ext={kind_ext!r}) is not one of NVTabular's "
                             f"ExtData formats {EXT_KINDS}; leave it out (the format is "
                             "inferred here).")
    if cache not in ("host", "device", "disk"):
        raise ParameterError(f"JoinExternal(cache={cache!r}) must be 'host', 'device' or "
                             "'disk' (it has no effect here).")
    keys = [on] if isinstance(on, str) else list(on)
    ext_keys = keys if on_ext is None else ([on_ext] if isinstance(on_ext, str) else list(on_ext))
    if len(ext_keys) != len(keys):
        raise ParameterError(f"JoinExternal: on_ext={on_ext!r} must name as many columns as "
                             f"on={on!r}.")
    if ext_keys != keys or drop_duplicates_ext or _is_csv(df_ext, kind) \
            or hasattr(df_ext, "to_ddf"):
        table = _side_frame(df_ext, kind)
        if columns_ext is not None:
            table = table[list(dict.fromkeys([*ext_keys, *columns_ext]))]
        if drop_duplicates_ext:
            table = _drop_identical_rows(table)
            _check_unique_after_dropping(table, ext_keys, on_ext)
        if ext_keys != keys:
            clash = [k for k, e in zip(keys, ext_keys, strict=True) if k != e and k in table]
            if clash:
                raise ParameterError(f"JoinExternal: the side table has a column {clash[0]!r} "
                                     f"besides its key {ext_keys[keys.index(clash[0])]!r} "
                                     "(on_ext); rename one of them first.")
            table = table.assign(**{k: table[e] for k, e in zip(keys, ext_keys, strict=True)})
            if columns_ext is not None:
                columns_ext = list(dict.fromkeys([*keys, *columns_ext]))
        df_ext = table
    return _ops.JoinExternal(df_ext, on, how=how, columns_ext=None if columns_ext is None
                             else list(columns_ext))


def _drop_identical_rows(table: Any) -> Any:
    """``table.drop_duplicates()``, as NVTabular calls it; list columns (which pandas cannot
    hash) are compared by their values."""
    try:
        return table.drop_duplicates(ignore_index=True)
    except (TypeError, NotImplementedError):  # a list column: compare them as tuples
        frame = table.to_pandas() if hasattr(table, "to_pandas") else table
        hashable = frame.apply(lambda col: col.map(
            lambda v: tuple(v) if isinstance(v, list | tuple | np.ndarray) else v))
        return frame[~hashable.duplicated()].reset_index(drop=True)


def _check_unique_after_dropping(table: Any, keys: list[str], on_ext: Any) -> None:
    """Refuse a side table whose key still has several rows once its identical rows are
    dropped, naming up to three such keys and the ways to pick one row per key. Keys count as
    the core's join counts them: a null single key matches nothing (so it may repeat), a
    null part of a key of several columns is a value."""
    repeated = table[keys]
    repeated = repeated.to_pandas() if hasattr(repeated, "to_pandas") else repeated  # cuDF
    if len(keys) == 1:
        repeated = repeated[repeated[keys[0]].notna()]
    repeated = repeated[repeated.duplicated(keep=False)]
    if not len(repeated):
        return
    counts = repeated.value_counts(sort=False, dropna=False)
    plain = [tuple(v.item() if isinstance(v, np.generic) else v for v in key)
             for key in counts.index[:3]]
    shown = [f"{(key[0] if len(keys) == 1 else key)!r} ({n} rows)"
             for key, n in zip(plain, counts.to_numpy()[:3], strict=True)]
    name = "on_ext" if on_ext is not None else "on"
    raise ParameterError(
        f"JoinExternal(drop_duplicates_ext=True) dropped the side table's identical rows, but "
        f"{len(counts)} key(s) of {name}={keys} still have different rows, e.g. "
        f"{', '.join(shown)}. NVTabular would repeat each matching data row once per side "
        "row; this join keeps one output row per data row. Keep one row per key first, e.g. "
        f"df_ext.drop_duplicates(subset={keys}) (the first one) or a groupby of df_ext by "
        "its key, or leave out the columns that differ with columns_ext.")


def _is_csv(df_ext: Any, kind: Any) -> bool:
    """Whether a side table is a csv file (NVTabular's ``ExtData.CSV``)."""
    return isinstance(df_ext, str | os.PathLike) and (
        str(kind).upper() == "CSV" or os.fspath(df_ext).endswith((".csv", ".tsv")))


def _side_frame(df_ext: Any, kind: Any) -> Any:
    """A JoinExternal side table as a pandas (or cuDF) frame, to edit before the join."""
    if isinstance(df_ext, pa.Table):
        return df_ext.to_pandas()
    if hasattr(df_ext, "columns") and hasattr(df_ext, "iloc"):
        return df_ext
    if hasattr(df_ext, "to_ddf"):  # an nvt.Dataset
        frame, = jobs.compute(df_ext.to_ddf(), phase="JoinExternal: side table")
        return frame
    if isinstance(df_ext, str | os.PathLike):
        read = pd.read_csv if _is_csv(df_ext, kind) else pd.read_parquet
        return read(os.fspath(df_ext))
    raise ParameterError(f"JoinExternal's df_ext must be a DataFrame, an Arrow table, an "
                         f"nvt.Dataset or a parquet/csv path; got {type(df_ext).__name__}.")
