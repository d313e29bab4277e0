"""``Categorify(vocabs=...)``: NVTabular's given vocabularies, as the core
``Categorify(vocabulary=...)`` (:mod:`interactive_recsys.ops._given_vocabulary`).

A column with a given vocabulary is not fitted: value ``vocab[i]`` gets id ``2 + B + i``,
where ``B`` is ``num_buckets`` (1 without: NVTabular's table is 0 padding, 1 null, the
out-of-vocabulary ids, then the vocabulary in the given order); any other value is out of
vocabulary (hashed into the ``B`` buckets with ``num_buckets``, else id 2). The other
columns of the selection are fitted as usual.

>>> import pandas as pd, interactive_recsys as irs
>>> (cols, (op,)), = vocabulary_steps({"c": pd.Series(["b", "a"])}, None, None)
>>> cols, op
(['c'], Categorify(vocabulary={'c': ['b', 'a']}))
>>> irs.Workflow(cols >> op).fit_transform(pd.DataFrame({"c": ["a", "b", "z", None]}))["c"].tolist()
[4, 3, 2, 1]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from interactive_recsys import ops as _ops
from interactive_recsys.errors import ParameterError


def vocabulary_steps(vocabs: Any, dtype: str | None,
                     num_buckets: int | Mapping[str, int] | None
                     ) -> list[tuple[list[str], list[Any]]]:
    """``(columns, chain)`` of the columns with a given vocabulary: a core ``Categorify``
    looking them up (one per column when ``num_buckets`` is per column); the other columns
    of the selection are fitted as usual."""
    if isinstance(vocabs, pd.DataFrame):
        vocabs = {c: vocabs[c].dropna() for c in vocabs.columns}
    if not isinstance(vocabs, Mapping):
        raise ParameterError("Categorify(vocabs=...) takes {column: values} or a DataFrame of "
                             f"one column per vocabulary; got {type(vocabs).__name__}.")
    extra: dict[str, Any] = {} if dtype is None else {"dtype": dtype}
    if isinstance(num_buckets, Mapping):
        return [([c], [_ops.Categorify(vocabulary={c: v}, num_buckets=num_buckets.get(c),
                                       **extra)]) for c, v in vocabs.items()]
    return [(list(vocabs), [_ops.Categorify(vocabulary=dict(vocabs), num_buckets=num_buckets,
                                            **extra)])]


__all__ = ["vocabulary_steps"]
