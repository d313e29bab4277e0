"""How the ids of ``irs criteo --to torchrec`` and ``--to parquet`` relate, column by column.

Both number a column's ids by descending frequency over all the files (ties by ascending
id), with the same frequency threshold. They differ in two ways:

* ``--to torchrec`` (TorchRec's convention) reads a missing id as the id ``0`` and ranks it
  among the others by its count; an infrequent id is 1, the kept ids are 2, 3, ...
* ``--to parquet`` (Categorify's layout) keeps a missing id in its fixed slot 1; an
  infrequent id is 2, the kept ids are 3, 4, ...

So, with ``z`` the contiguous id a missing id gets in that column (``missing_ids`` in the
torchrec output's ``_summary.json``; 1 when missing ids are below the threshold or absent),
the rows of the two outputs satisfy::

    parquet = 1          where the id is missing (sparse id 0)
    parquet = 2          where torchrec = 1 and the id is not missing
    parquet = t + 1      where torchrec = t >= 2 and (z = 1 or t < z)
    parquet = t          where torchrec = t > z >= 2

when each column's ids are written one way (the same number of hex digits and the same
case, as real Criteo's 8 lower-case digits) and none is zero (``00000000`` would be read as a
missing id by TorchRec's convention). The torchrec side needs the sparse ids to tell a
missing id from an infrequent one (both can be 1).

>>> import numpy as np
>>> sparse = np.array([[0], [7], [9], [5]])     # a missing id, then ids 7, 9, 5
>>> contig = np.array([[3], [2], [4], [1]])     # 7 most frequent, then missing, then 9
>>> parquet_ids_from_torchrec(sparse, contig, [3]).ravel().tolist()
[1, 3, 4, 2]
>>> torchrec_ids_from_parquet(np.array([[1], [3], [4], [2]]), [3]).ravel().tolist()
[3, 2, 4, 1]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from interactive_recsys.errors import ParameterError

__all__ = ["parquet_ids_from_torchrec", "torchrec_ids_from_parquet"]


def _missing(missing_ids: Mapping[str, int] | Sequence[int], columns: int) -> np.ndarray:
    """The summary's ``missing_ids`` (a ``{"cat_0": z, ...}`` mapping or a list) as an array."""
    if isinstance(missing_ids, Mapping):
        names = [f"cat_{j}" for j in range(columns)]
        absent = [n for n in names if n not in missing_ids]
        if absent:
            raise ParameterError(
                f"missing_ids has no {absent[0]!r}: pass the 'missing_ids' of "
                "the torchrec output's _summary.json (one per column)."
            )
        missing_ids = [missing_ids[n] for n in names]
    z = np.asarray(missing_ids)
    if z.shape != (columns,) or z.dtype.kind not in "iu" or (z < 1).any():
        raise ParameterError(
            f"missing_ids must hold one id >= 1 per column ({columns}); got "
            f"{list(np.ravel(missing_ids))[:30]!r}. Pass the 'missing_ids' of "
            "the torchrec output's _summary.json."
        )
    return z.astype(np.int64)


def _check(name: str, ids: np.ndarray, low: int) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.dtype.kind not in "iu":
        raise ParameterError(
            f"{name} must be a 2-D integer array (rows x columns); got "
            f"{ids.dtype} of shape {ids.shape}."
        )
    if ids.size and ids.min() < low:
        raise ParameterError(
            f"{name} holds {ids.min()}, below {low}: it is not "
            f"{'a sparse' if low == 0 else 'an id'} array of irs criteo's "
            "output."
        )
    return ids.astype(np.int64)


def parquet_ids_from_torchrec(
    sparse: np.ndarray, contig: np.ndarray, missing_ids: Mapping[str, int] | Sequence[int]
) -> np.ndarray:
    """The ids ``--to parquet`` gives the rows of a ``--to torchrec`` output file.

    Parameters
    ----------
    sparse : the file's ``STEM_sparse.npy`` (the raw ids, 0 where missing), rows x columns.
    contig : the file's ``STEM_sparse_contig_freq.npy``, the same shape.
    missing_ids : the output's ``_summary.json`` ``missing_ids`` (per column, the contiguous
        id of a missing id).

    Returns
    -------
    numpy.ndarray
        int64, the shape of ``contig``: Categorify's ids (1 missing, 2 infrequent, 3... kept).
    """
    sparse, contig = _check("sparse", sparse, 0), _check("contig", contig, 1)
    if sparse.shape != contig.shape:
        raise ParameterError(
            f"sparse {sparse.shape} and contig {contig.shape} must have the "
            "same shape: pass the two files of one STEM."
        )
    z = _missing(missing_ids, contig.shape[1])
    out = np.where((z == 1) | (contig < z), contig + 1, contig)
    out[contig == 1] = 2
    out[sparse == 0] = 1
    return out


def torchrec_ids_from_parquet(
    ids: np.ndarray, missing_ids: Mapping[str, int] | Sequence[int]
) -> np.ndarray:
    """The contiguous ids ``--to torchrec`` gives the rows of ``--to parquet`` output.

    Parameters
    ----------
    ids : the Categorified columns ``C1..C26`` of the parquet output, rows x columns.
    missing_ids : the torchrec output's ``_summary.json`` ``missing_ids``.

    Returns
    -------
    numpy.ndarray
        int64, the shape of ``ids``: TorchRec's contiguous ids (1 infrequent, 2... kept).
    """
    ids = _check("ids", ids, 1)
    z = _missing(missing_ids, ids.shape[1])
    out = np.where((z == 1) | (ids - 1 < z), ids - 1, ids)
    out[ids == 2] = 1
    out = np.where(ids == 1, z, out)
    return out
