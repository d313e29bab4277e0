"""JoinExternal: join a side table (item metadata, user features) to every row by key.

The side table is small enough for every worker to hold (a broadcast join): a pandas or
cuDF DataFrame, an Arrow table, or the path of a parquet file (read when the operator is
built). Its keys (``on``, one column or several) must be unique, and each key column must
have the same kind of dtype (integer, float, string, bool) in the data and in the side
table. The rows of the data keep their order; ``how="left"`` gives nulls where a key is not
in the side table and ``how="inner"`` drops those rows (from the whole workflow output, like
a row filter).

``fit`` stores the side table as parquet under the workflow's artifacts
(``side_tables/<sha256>.parquet``): a saved workflow carries it, workers read it from there
(once per process), and the operator's saved parameters name it by content hash. Two
operators are equal when their side tables hold the same data.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> items = pd.DataFrame({"item": [1, 2], "genre": ["rock", "jazz"]})
>>> wf = irs.Workflow(["item"] >> JoinExternal(items, on="item"))
>>> wf.fit_transform(pd.DataFrame({"item": [2, 3, 1]}))
   item genre
0     2  jazz
1     3   NaN
2     1  rock
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from interactive_recsys.backend import backend_of, get_backend
from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.ops._base import RowFilter, SavedParamError, StatOperator
from interactive_recsys.params import Param, param_error
from interactive_recsys.redact import redact_text
from interactive_recsys.schema import ColumnSchema, Schema, default_tags, dtype_name
from interactive_recsys.store import storage
from interactive_recsys.store._artifacts import resolve
from interactive_recsys.tables import _keyed_statistics as ks
from interactive_recsys.tables import _vocabulary as vocab
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._reduce import delayed_task

SIDE_DIR = "side_tables"


def table_sha256(table: pa.Table) -> str:
    """A content hash of an Arrow table (column names, types and values)."""
    table = table.replace_schema_metadata(None).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def _family(dtype: str) -> str:
    """Join keys match within a family: integers, floats, strings, booleans."""
    if dtype.startswith(("int", "uint")):
        return "integer"
    if dtype.startswith("float"):
        return "float"
    return dtype


class SideTable:
    """A JoinExternal's side table: the data (a parquet file is read when the operator is
    built), or a reference to it by content hash.

    ``describe()`` is what ``repr`` and saved workflows show: ``{"sha256", "rows",
    "columns"}`` (and ``"path"`` when read from a file). Equal hashes mean equal tables.
    Pickling (to Dask workers) leaves the data out: workers read the copy under the artifacts.
    """

    def __init__(self, *, table: pa.Table | None = None, path: str | None = None,
                 sha256: str | None = None, rows: int | None = None,
                 columns: dict[str, str] | None = None) -> None:
        self.table, self.path, self.sha256 = table, path, sha256
        self.rows, self.columns = rows, dict(columns or {})

    @classmethod
    def of(cls, value: Any) -> SideTable:
        if isinstance(value, SideTable):
            return value
        path = None
        if isinstance(value, dict) and {"sha256", "rows", "columns"} <= set(value) <= {
                "sha256", "rows", "columns", "path"}:
            sha, columns = value["sha256"], value["columns"]
            if not (isinstance(sha, str) and len(sha) == 64
                    and all(c in "0123456789abcdef" for c in sha)) or not (
                    isinstance(columns, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in columns.items())):
                raise param_error("df_ext", "JoinExternal", "describes a side "
                                  "table with a malformed 'sha256' or 'columns' "
                                  f"({str(value)[:120]}); save the workflow again.")
            return cls(sha256=sha, rows=value["rows"], columns=columns, path=value.get("path"))
        if isinstance(value, str | os.PathLike):
            path = os.fspath(value)
            try:
                table = pq.read_table(path)
            except (OSError, pa.ArrowInvalid) as exc:
                raise param_error("df_ext", "JoinExternal", f"names {path!r}, "
                                  f"which is not a readable parquet file ({exc}). Pass a "
                                  "parquet path or a DataFrame.") from None
        elif isinstance(value, pa.Table):
            table = value
        elif hasattr(value, "columns") and hasattr(value, "dtypes"):  # pandas or cuDF
            table = backend_of(value).to_arrow(value)
        else:
            raise param_error("df_ext", "JoinExternal", f"must be a DataFrame, "
                              f"an Arrow table or a parquet path. Got {type(value).__name__} "
                              "instead.")
        table = table.replace_schema_metadata(None)
        return cls(table=table, path=path, sha256=table_sha256(table), rows=table.num_rows,
                   columns={f.name: dtype_name(f.type) for f in table.schema})

    def describe(self) -> dict[str, Any]:
        out = {"sha256": self.sha256, "rows": self.rows, "columns": self.columns}
        return {"path": redact_text(self.path), **out} if self.path is not None else out

    def load(self, artifacts_dir: str | None, *more: str | None,
             storage_options: dict | None = None) -> pa.Table:
        """The data: in memory, else the copy under the artifacts (found by content hash;
        ``more`` artifacts folders are tried next, e.g. those of a loaded workflow)."""
        if self.table is not None:
            return self.table
        for folder in (artifacts_dir, *more):
            stored = storage.join(folder or "", SIDE_DIR, f"{self.sha256}.parquet")
            if storage.exists(stored, storage_options):
                break
        else:
            raise ParameterError(f"JoinExternal's side table (sha256 {self.sha256[:12]}...) is "
                                 f"not in the artifacts ({stored!r}); pass the DataFrame or "
                                 "parquet path again as df_ext.")
        return storage.read_table(stored, storage_options)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SideTable) and self.sha256 == other.sha256

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return repr(self.describe())

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "table": None}

    def __copy__(self) -> SideTable:  # immutable: copies (e.g. undo histories) share the data
        return self

    def __deepcopy__(self, memo: dict) -> SideTable:
        return self


class JoinExternal(StatOperator, RowFilter):
    """Join the columns of a side table by key, rows in order (see the module docstring)."""

    summary = "Join a side table (e.g. item metadata) by key; row order kept"

    @classmethod
    def saved_params(cls, params: dict[str, Any], functions: dict[str, Any] | None
                     ) -> dict[str, Any]:
        """A saved step holds its side table by content hash, never a file to read.

        >>> try:
        ...     JoinExternal.saved_params({"df_ext": "items.parquet"}, None)
        ... except SavedParamError as exc:
        ...     print(exc.param)
        df_ext
        """
        if not isinstance(params.get("df_ext"), dict):
            raise SavedParamError("df_ext", "must describe the side table by content hash (as "
                                  "Workflow.save writes it); a saved workflow never reads a "
                                  "file named in workflow.json.")
        return params
    state_shape = {"path": "str", "sha256": "str", "rows": "int"}
    category = "transform"
    df_ext = Param(kind="any", doc="The side table: a DataFrame, an Arrow table or a parquet "
                                   "path.")
    on = Param(kind="any", doc="Join key column(s), in the data and in the side table.")
    how = Param("left", choices=("left", "inner"),
                doc="left: nulls for unknown keys; inner: drop those rows.")
    columns_ext = Param(None, kind="strs", nullable=True,
                        doc="Side-table columns to add (None: all but the key).")

    def check_params(self) -> None:
        self._params["df_ext"] = SideTable.of(self.df_ext)
        on = self.on
        if not (isinstance(on, str) or (isinstance(on, list | tuple) and on
                                        and all(isinstance(c, str) for c in on))):
            raise param_error("on", "JoinExternal", f"must be a column name or "
                              f"a list of names. Got {on!r} instead.")
        side = self.df_ext.columns
        for c in [*self.keys, *(self.columns_ext or [])]:
            if c not in side:
                which = "on" if c in self.keys else "columns_ext"
                raise ParameterError(f"JoinExternal's side table has no column {c!r} (named by "
                                     f"'{which}'); its columns are {list(side)}.")

    @property
    def keys(self) -> list[str]:
        return [self.on] if isinstance(self.on, str) else list(self.on)

    @property
    def added_columns(self) -> list[str]:
        names = self.columns_ext if self.columns_ext is not None else list(self.df_ext.columns)
        return [c for c in names if c not in self.keys]

    def to_config(self) -> dict[str, Any]:
        config = super().to_config()
        config["params"]["df_ext"] = self.df_ext.describe()
        return config

    @property
    def changes_rows(self) -> bool:
        return self.how == "inner"

    # ---- schema ---------------------------------------------------------------------------
    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        side = self.df_ext.columns
        for c in self.keys:
            if c not in input_schema:
                raise SchemaError(f"JoinExternal joins on {c!r} (on) but it is not in its input; "
                                  f"select it, e.g. [{c!r}, ...] >> JoinExternal(...).")
            left, right = input_schema[c].dtype, side[c]
            if _family(left) != _family(right) or input_schema[c].is_list:
                raise SchemaError(f"JoinExternal cannot join on column {c!r}: it is {left} in "
                                  f"the data but {right} in the side table (df_ext). Cast one of "
                                  "them so both have the same kind of dtype.")
        cols = list(input_schema.values())
        for c in self.added_columns:
            if c in input_schema:
                raise SchemaError(f"JoinExternal would add the column {c!r}, which the input "
                                  "already has; rename it in the side table or leave it out "
                                  "with columns_ext.")
            cols.append(ColumnSchema(c, side[c], default_tags(side[c]), {"source": "df_ext"}))
        return Schema(cols)

    # ---- fit: store the side table under the artifacts --------------------------------------
    def fit_partition(self, df: Any, ctx: OpContext) -> dict[str, Any]:
        return {}  # nothing to learn from the data

    def fit_graph(self, partials: list[Any], ctx: OpContext) -> Any:
        """Write the side table (on this machine, which holds it) and return the state."""
        table = self.df_ext.load(ctx.artifacts_dir, ctx.run.previous_artifacts,
                                 storage_options=ctx.storage_options)
        sha = self.df_ext.sha256
        relative = os.path.join(SIDE_DIR, f"{sha}.parquet")
        keys = _side_keys(table, self.keys)
        valid = pc.is_valid(keys)
        unique = pc.count_distinct(pc.filter(keys, valid)).as_py()
        if unique != pc.sum(valid).as_py():
            raise SchemaError(f"JoinExternal needs unique keys {self.keys} (on) in the side "
                              f"table, but {pc.sum(valid).as_py() - unique} rows repeat a key "
                              f"(e.g. {_repeated(pc.filter(keys, valid), len(self.keys))}). "
                              "Deduplicate it (e.g. df.drop_duplicates(subset=on)).")
        path = storage.join(ctx.artifacts_dir or ".", relative)
        if not storage.exists(path, ctx.storage_options):
            storage.write_table(table, path, ctx.storage_options)
        state = {"path": relative, "sha256": sha, "rows": table.num_rows}
        return delayed_task(ctx.node_id, "side-table", dict, state)

    def merge_state(self, old: dict[str, Any], new: dict[str, Any], ctx: OpContext,
                    folders: Any) -> dict[str, Any]:
        """The side table does not depend on the data: the new fit's state (it wrote the
        table into the updated workflow's artifacts)."""
        return new

    def update_changes_seen_rows(self, old: dict[str, Any], merged: dict[str, Any]) -> bool:
        return old["sha256"] != merged["sha256"]

    # ---- transform ------------------------------------------------------------------------
    def _found(self, df: Any, state: dict[str, Any], ctx: OpContext) -> tuple[np.ndarray, Any]:
        b = ctx.backend
        path = resolve(ctx.artifacts_dir, state["path"], "side table path")
        options = json.dumps(ctx.storage_options or {}, sort_keys=True, default=str)
        positions, table = _side_lookup(path, storage.version(path, ctx.storage_options),
                                        tuple(self.keys), options)
        values = ks.key_values(df, self.keys, ctx)
        pos = b.lookup(values, positions, b.hash64(values))
        pos[b.null_mask(values)] = -1
        return pos, table

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        pos, table = self._found(df, state, ctx)
        index = pa.array(pos, mask=pos < 0)
        return b.with_columns(df, {c: b.from_arrow_array(table[c].take(index))
                                   for c in self.added_columns})

    def row_mask(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        """Rows whose key is in the side table (every row for ``how="left"``)."""
        if self.how == "left":
            return ctx.backend.from_numpy(np.ones(ctx.backend.num_rows(df), dtype=bool))
        pos, _ = self._found(df, state, ctx)
        return ctx.backend.from_numpy(pos >= 0)


def _side_keys(table: pa.Table, keys: list[str]) -> pa.ChunkedArray:
    """The side table's key per row, built like ``keyed_statistics.key_values`` on the data."""
    if len(keys) == 1:
        return table[keys[0]]
    joined = get_backend("cpu").join_as_strings([table[k] for k in keys])
    return joined if isinstance(joined, pa.ChunkedArray) else pa.chunked_array([joined])


def _repeated(keys: pa.ChunkedArray, columns: int, shown: int = 3) -> str:
    """Up to ``shown`` keys that occur more than once, with their counts, as people read
    them (a key of several columns as a tuple, a null part as None)."""
    counts = pc.value_counts(keys)
    many = counts.filter(pc.greater(counts.field("counts"), 1))[:shown].to_pylist()
    out = []
    for item in many:
        key = item["values"]
        if columns > 1:
            key = tuple(None if p == "\x00" else p for p in key.split("\x1f"))
        out.append(f"{key!r} ({item['counts']} rows)")
    return ", ".join(out)


@functools.lru_cache(maxsize=8)
def _side_lookup(path: str, version: Any, keys: tuple[str, ...],
                 options: str = "{}") -> tuple[Any, pa.Table]:
    """The side table's key index and columns, loaded once per process and file version."""
    table = storage.read_table(path, json.loads(options))
    values = _side_keys(table, list(keys)).combine_chunks()
    return vocab.VocabTable(values, np.arange(len(values))), table
