"""NVTabular's ``ColumnSimilarity``: the similarity of two id columns' rows of a sparse
feature matrix (``tfidf``, ``cosine`` or ``inner`` product), on the CPU.

From NVTabular 23.08's ``nvtabular/ops/column_similarity.py`` (Apache-2.0): the features
are weighted once (``tfidf``: ``data * log(n_rows / document frequency of the column)``,
then each row scaled to unit length; ``cosine``: unit rows; ``inner``: as given), and each
output row is the inner product of row ``left`` of the left matrix with row ``right`` of
the right one (the left matrix when none is given). The output of a group
``[["a", "b"]]`` is ``a_b_sim`` (float64, continuous). Here a null id gives a null
similarity and an id past the matrix is an error naming the column, where NVTabular read
out of bounds. ``on_device`` has no effect: the matrices stay on the host (a cuDF
partition's ids are copied there).

>>> import numpy as np, pandas as pd, scipy.sparse
>>> from interactive_recsys.compat import nvtabular as nvt
>>> m = scipy.sparse.coo_matrix((np.ones(4), ([0, 0, 1, 1], [0, 1, 1, 2])))
>>> wf = nvt.Workflow([["a", "b"]] >> ColumnSimilarity(m, metric="inner"))
>>> wf.transform(pd.DataFrame({"a": [0, 0], "b": [0, 1]}))["a_b_sim"].tolist()
[2.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interactive_recsys.errors import ParameterError, SchemaError
from interactive_recsys.ops import OpContext, Operator, Param
from interactive_recsys.schema import ColumnSchema, Schema, Tags, is_integer_dtype

METRICS = ("tfidf", "cosine", "inner")


def _csr(features: Any, metric: str) -> Any:
    """The weighted feature matrix as a host CSR matrix (NVTabular's ``_convert_features``)."""
    import scipy.sparse  # only who passes sparse features needs it (the test extra has it)

    if type(features).__module__.startswith("cupyx"):
        features = features.get()
    coo = scipy.sparse.coo_matrix(features, dtype=np.float64)
    if metric == "tfidf":
        idf = np.log(coo.shape[0] / np.bincount(coo.col, minlength=coo.shape[1]).clip(1))
        coo = scipy.sparse.coo_matrix((coo.data * idf[coo.col], (coo.row, coo.col)), coo.shape)
    if metric in ("tfidf", "cosine"):
        norms = np.sqrt(np.bincount(coo.row, coo.data ** 2, minlength=coo.shape[0]))
        coo = scipy.sparse.coo_matrix((coo.data / norms[coo.row], (coo.row, coo.col)),
                                      coo.shape)
    return coo.tocsr()


class ColumnSimilarity(Operator, register=False):
    """Similarity of the rows of a sparse feature matrix named by two id columns."""

    summary = "Similarity of two id columns' rows of a sparse feature matrix"
    category = "features"
    left_features = Param(kind="any", doc="Sparse feature matrix (scipy or cupyx) of the "
                          "left column's ids.")
    right_features = Param(None, kind="any", nullable=True,
                           doc="Feature matrix of the right column's ids (None: the left).")
    metric = Param("tfidf", choices=METRICS, doc="tfidf, cosine or inner (product).")
    on_device = Param(True, kind="bool", doc="No effect: computed on the host.")

    def check_params(self) -> None:
        for name in ("left_features", "right_features"):
            value = getattr(self, name)
            if value is not None and not hasattr(value, "shape"):
                raise ParameterError(f"ColumnSimilarity's {name} must be a sparse matrix "
                                     f"(scipy.sparse or cupyx); got {type(value).__name__}.")

    def to_config(self) -> dict[str, Any]:
        raise ParameterError("A workflow with ColumnSimilarity cannot be saved: its sparse "
                             "feature matrices are not JSON. Save them with "
                             "scipy.sparse.save_npz and add the step again after loading.")

    def _matrices(self) -> tuple[Any, Any]:
        cache = self.__dict__.setdefault("_weighted", {})
        if not cache:
            left = _csr(self.left_features, self.metric)
            right = left if self.right_features is None else _csr(self.right_features,
                                                                  self.metric)
            width = max(left.shape[1], right.shape[1])
            left.resize(left.shape[0], width)
            right.resize(right.shape[0], width)
            cache.update(left=left, right=right)
        return cache["left"], cache["right"]

    def output_schema(self, input_schema: Schema, groups: Sequence[tuple[str, ...]],
                      state: dict[str, Any] | None = None) -> Schema:
        cols = []
        for group in groups:
            if len(group) != 2:
                raise SchemaError(f"ColumnSimilarity compares pairs of columns, selected as "
                                  f"[['a', 'b']]; got the group {list(group)}.")
            for n in group:
                if not is_integer_dtype(input_schema[n].dtype) or input_schema[n].is_list:
                    raise SchemaError(f"ColumnSimilarity needs integer row ids; column {n!r} "
                                      f"has dtype {input_schema[n].dtype}.")
            cols.append(ColumnSchema(f"{group[0]}_{group[1]}_sim", "float64",
                                     frozenset({Tags.CONTINUOUS.value})))
        return Schema(cols)

    def transform(self, df: Any, state: dict[str, Any] | None, ctx: OpContext) -> Any:
        b = ctx.backend
        left, right = self._matrices()
        out = {}
        for a, c in ctx.groups:
            ids, valid = [], None
            for name, matrix in ((a, left), (c, right)):
                arr = b.to_arrow_array(b.column(df, name))
                present = ~np.asarray(arr.is_null())
                values = np.asarray(arr.fill_null(0), dtype=np.int64)
                bad = present & ((values < 0) | (values >= matrix.shape[0]))
                if bad.any():
                    raise SchemaError(f"ColumnSimilarity: column {name!r} holds the id "
                                      f"{values[bad][0]}, outside the feature matrix's "
                                      f"{matrix.shape[0]} rows.")
                ids.append(values)
                valid = present if valid is None else valid & present
            sims = np.asarray(left[ids[0]].multiply(right[ids[1]]).sum(axis=1)).ravel()
            out[f"{a}_{c}_sim"] = b.from_numpy(sims.astype(np.float64), ~valid)
        return b.select(b.with_columns(df, out), list(out))
