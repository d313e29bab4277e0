"""``Categorify(vocabs=...)``: NVTabular's given vocabularies, as a lookup step.

A column with a given vocabulary is not fitted: value ``vocab[i]`` gets id ``3 + i``
(NVTabular's table: 0 padding, 1 null, 2 out of vocabulary, then the vocabulary in the
given order); any other value gets 2. The step is a :class:`~interactive_recsys.ops.LambdaOp`
whose function is a :class:`VocabularyLookup` (saved by name, like every function: pass it
back to ``Workflow.load(functions=[...])``), then the table's ``cardinality``.

>>> import pandas as pd
>>> lookup = VocabularyLookup(["b", "a"])
>>> lookup(pd.Series(["a", "b", "z", None])).tolist()
[4, 3, 2, 1]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from interactive_recsys import ops as _ops
from interactive_recsys.errors import ParameterError

NULL_ID, OOV_ID, FIRST_ID = 1, 2, 3


class VocabularyLookup:
    """``f(column) -> ids`` of a given vocabulary; list columns element by element."""

    def __init__(self, values: Sequence[Any], dtype: str = "int64") -> None:
        self.index = pd.Index(list(values), dtype=object)
        if self.index.has_duplicates or self.index.hasnans:
            raise ParameterError("Categorify(vocabs=...): a vocabulary must hold distinct, "
                                 f"non-null values; got {list(values)[:10]!r}.")
        self.dtype = dtype
        self.__qualname__ = f"VocabularyLookup[{len(self.index)} values]"

    def ids(self, values: np.ndarray) -> np.ndarray:
        found = self.index.get_indexer(values)
        out = np.where(found >= 0, found + FIRST_ID, OOV_ID)
        out[pd.isna(values)] = NULL_ID
        return out.astype(self.dtype)

    def __call__(self, col: Any) -> Any:
        if not isinstance(col, pd.Series):  # cuDF: the lookup runs on the host
            import cudf  # the column is cuDF: the GPU extra is installed

            return cudf.from_pandas(self(col.to_pandas()))
        arr = pa.chunked_array(pa.array(col, from_pandas=True))
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            chunks = [type(c).from_arrays(c.offsets, pa.array(self.ids(
                c.flatten().to_numpy(zero_copy_only=False))), mask=c.is_null())
                for c in arr.chunks]
            return pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(chunks)),
                             index=col.index)
        return pd.Series(self.ids(col.to_numpy(dtype=object, na_value=None)), index=col.index)


def vocabulary_steps(vocabs: Any, dtype: str | None) -> list[tuple[list[str], list[Any]]]:
    """``(columns, chain)`` of each column with a given vocabulary (the other columns of
    the selection are fitted as usual)."""
    if isinstance(vocabs, pd.DataFrame):
        vocabs = {c: vocabs[c].dropna() for c in vocabs.columns}
    if not isinstance(vocabs, Mapping):
        raise ParameterError("Categorify(vocabs=...) takes {column: values} or a DataFrame of "
                             f"one column per vocabulary; got {type(vocabs).__name__}.")
    steps = []
    for col, values in vocabs.items():
        values = list(values.tolist() if hasattr(values, "tolist") else values)
        lookup = VocabularyLookup(values, dtype or "int64")
        steps.append(([col], [_ops.LambdaOp(lookup, add_tags=["categorical"]),
                              _ops.AddProperties({"cardinality": FIRST_ID + len(values),
                                                  "domain": col})]))
    return steps


__all__ = ["VocabularyLookup", "vocabulary_steps"]
