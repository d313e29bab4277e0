"""HashedCross: hash the combination of several categorical columns into buckets.

Select column groups (``[["user", "item"], ["item", "hour"]]``): each group becomes one
column named like NVTabular's, ``user_X_item``. A selection of plain columns only
(``["user", "item"]``) is one group of all of them.

The index layout is :class:`~interactive_recsys.ops.HashBucket`'s: 0 padding, 1 for a row where any
crossed value is null, ``2 + hash % num_buckets`` otherwise. The row hash combines the
value-defined hashes of :mod:`interactive_recsys.hashing`, so pandas and cuDF give the same
bucket, and ``1`` crossed with ``"a"`` differs from ``"a"`` crossed with ``1``.

Examples
--------
>>> import pandas as pd, interactive_recsys as irs
>>> df = pd.DataFrame({"u": [1, 1, 2, None], "i": ["a", "a", "a", "b"]})
>>> out = irs.Workflow(["u", "i"] >> HashedCross(100)).fit_transform(df)
>>> ids = out["u_X_i"].tolist()
>>> ids[0] == ids[1] != ids[2], ids[3], all(2 <= x < 102 for x in ids[:3])
(True, 1, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interactive_recsys.errors import SchemaError
from interactive_recsys.hashing import fmix64
from interactive_recsys.ops._base import Operator, group_names
from interactive_recsys.ops._hash_bucket import check_index_dtype, require_hashable
from interactive_recsys.params import Param
from interactive_recsys.schema import ColumnSchema, Schema, Tags
from interactive_recsys.tables._context import OpContext
from interactive_recsys.tables._layout import FIRST_FREE_INDEX, MAX_BUCKETS, NULL_INDEX

_CROSS_SALT = np.uint64(0x3C6EF372FE94F82B)
_MIX = np.uint64(0x100000001B3)


def row_hash(df: Any, columns: Sequence[str], ctx: OpContext, salt: np.uint64) -> np.ndarray:
    """A uint64 per row combining the value-defined hashes of ``columns`` in order."""
    b = ctx.backend
    h = np.full(b.num_rows(df), salt, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in columns:
            h = fmix64(h * _MIX ^ b.hash64(b.column(df, name)))
    return h


class HashedCross(Operator):
    """Hash the combination of columns into ``num_buckets`` ids (see the module docstring)."""

    summary = "Hash combinations of columns (crosses) into num_buckets ids"
    category = "categorical"
    num_buckets = Param(kind="int", low=1, high=MAX_BUCKETS,
                        doc="Number of hash buckets of each cross.")
    dtype = Param("int64", choices=("int32", "int64"), doc="Output index dtype.")

    def check_params(self) -> None:
        check_index_dtype(self, FIRST_FREE_INDEX + self.num_buckets)

    def crosses(self, groups: Sequence[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        """Output column -> crossed columns."""
        groups = [tuple(g) for g in groups]
        multi = [g for g in groups if len(g) > 1]
        plain = [g[0] for g in groups if len(g) == 1]
        if not multi:
            if len(plain) < 2:
                raise SchemaError(f"HashedCross needs at least two columns to cross; got "
                                  f"{plain}. Select two or more, e.g. ['user', 'item'].")
            multi = [tuple(plain)]
        elif plain:
            raise SchemaError(f"HashedCross got the plain column {plain[0]!r} next to column "
                              "groups; put every crossed column in a group, e.g. "
                              "[['user', 'item'], ['item', 'hour']].")
        return group_names(self, multi, name="_X_".join)

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        cols = []
        for name, group in self.crosses(groups).items():
            for n in group:
                if input_schema[n].is_list:
                    raise SchemaError(f"HashedCross cannot cross the list column {n!r}; cross "
                                      "plain columns.")
                require_hashable(self, input_schema[n])
            cols.append(ColumnSchema(name, self.dtype, {Tags.CATEGORICAL, Tags.HASHED}, {
                "cardinality": FIRST_FREE_INDEX + self.num_buckets, "source": list(group)}))
        return Schema(cols)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        out = {}
        for name, group in self.crosses(ctx.groups).items():
            h = row_hash(df, group, ctx, _CROSS_SALT)
            ids = (FIRST_FREE_INDEX + h % np.uint64(self.num_buckets)).astype(np.int64)
            nulls = np.zeros(len(ids), dtype=bool)
            for n in group:
                nulls |= b.null_mask(b.column(df, n))
            ids[nulls] = NULL_INDEX
            out[name] = b.from_indices(ids.astype(self.dtype))
        return b.select(b.with_columns(df, out), list(out))
