"""Hash categorical values into a fixed number of buckets."""

from __future__ import annotations

from typing import Any

import numpy as np

from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.ops._base import Operator
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema, Tags, element_dtype
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, MAX_BUCKETS, NULL_INDEX

INT32_MAX = 2**31 - 1


def check_index_dtype(op: Any, cardinality: int) -> None:
    """Raise when ids up to ``cardinality - 1`` do not fit the operator's output dtype."""
    if op.dtype == "int32" and cardinality - 1 > INT32_MAX:
        raise ParameterError(f"{type(op).__name__} ids reach {cardinality - 1:,}, more than "
                             "dtype='int32' holds; use dtype='int64' or fewer buckets.")


#: Element dtypes whose values can be hashed (and so encoded): see :mod:`..hashing`.
HASHABLE_PREFIXES = ("int", "uint", "float", "bool", "string", "binary", "large_binary", "null",
                     "timestamp", "date", "time", "duration", "decimal")


def require_hashable(op: Any, col: ColumnSchema) -> None:
    """Refuse (at ``compute_schema``) a column whose values cannot be hashed, e.g. a struct."""
    base = element_dtype(col.dtype)
    if not base.startswith(HASHABLE_PREFIXES):
        raise SchemaError(f"{type(op).__name__} cannot encode column {col.name!r} of dtype "
                          f"{col.dtype}: it encodes integers, floats, booleans, strings, "
                          "decimals and timestamps. Select the struct's fields as columns "
                          "first, or leave the column out.")


def encode_column(ctx: OpContext, col: Any, encode_values: Any) -> Any:
    """Apply ``encode_values(values) -> int64 ndarray`` to a plain or list column."""
    b = ctx.backend
    if b.dtype(col).startswith("list<"):
        values = b.list_values(col)
        return b.list_with_values(col, b.from_indices(encode_values(values)))
    return b.from_indices(encode_values(col))


class HashBucket(Operator):
    """Index = ``2 + hash(value) % num_buckets``; nulls get 1, 0 is padding.

    The hash is defined on the value (see :mod:`interactive_recsys.hashing`), so pandas
    and cuDF give the same buckets. Works on list columns element-wise.

    >>> import pandas as pd, interactive_recsys as irs
    >>> out = irs.Workflow(["c"] >> HashBucket(10)).fit_transform(pd.DataFrame({"c": ["a", None]}))
    >>> int(out["c"][1]), 2 <= int(out["c"][0]) < 12
    (1, True)
    """

    summary = "Hash values into num_buckets embedding rows"
    online = True
    category = "categorical"
    num_buckets = Param(kind="int", low=1, high=MAX_BUCKETS, doc="Number of hash buckets.")
    dtype = Param("int64", choices=("int32", "int64"), doc="Output index dtype.")

    def check_params(self) -> None:
        check_index_dtype(self, FIRST_FREE_INDEX + self.num_buckets)

    def column_schema(self, col: ColumnSchema, state: dict[str, Any] | None) -> ColumnSchema:
        require_hashable(self, col)
        props = {**col.properties, "cardinality": FIRST_FREE_INDEX + self.num_buckets}
        dtype = f"list<{self.dtype}>" if col.is_list else self.dtype
        return col.with_(dtype=dtype, properties=props).with_tags(
            add=[Tags.CATEGORICAL, Tags.HASHED], remove=[Tags.CONTINUOUS])

    def online_step(self, state: dict[str, Any] | None, column: str,
                    ctx: OpContext) -> tuple:
        return ("hash_bucket", self.num_buckets)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend

        def encode(values: Any) -> np.ndarray:
            idx = (b.hash64(values) % np.uint64(self.num_buckets)).astype(self.dtype)
            idx += FIRST_FREE_INDEX
            idx[b.null_mask(values)] = NULL_INDEX
            return idx

        return b.with_columns(df, {n: encode_column(ctx, b.column(df, n), encode)
                                   for n in df.columns})
