"""Top-K recommendations for many users, data-parallel over the cluster.

The model goes to the workers once, as NumPy arrays (``client.scatter(..., broadcast=True)``)
plus a plain dict of its parameters; never pickled code. Each user's rows (their seen items,
the model's input) are brought into one partition: parquet files sorted by user (their
statistics say so) keep their partitions, a user cut at a file boundary moving to the first
one (no shuffle); other data is shuffled by user. Each partition is one task: score a block
of users against every item, mask the seen items, keep the top K.

The top K of a row is selected in O(n_items) (a partition around the K-th largest score),
ties broken by the item's position in the model's catalogue (its ids in ascending order), so
the result equals a full stable sort by descending score.

Examples
--------
>>> import pandas as pd
>>> from interactive_recsys.models import Popularity
>>> train = pd.DataFrame({"user_id": [1, 1, 2, 3], "item_id": [7, 8, 7, 9]})
>>> model = Popularity().fit(train)
>>> top = predict_topk(model, train, k=2).compute()
>>> top[["user_id", "rank", "item_id"]].values.tolist()
[[1, 1, 9], [2, 1, 8], [2, 2, 9], [3, 1, 7], [3, 2, 8]]
>>> top["score"].tolist()
[1.0, 1.0, 1.0, 2.0, 1.0]

With the workflow that encoded the ids, the recommendations come as item keys:

>>> import interactive_recsys as irs
>>> from interactive_recsys import ops
>>> logs = pd.DataFrame({"user_id": ["ann", "ann", "bob", "cy"],
...                      "item_id": ["tea", "jam", "tea", "oat"]})
>>> wf = irs.Workflow(["user_id", "item_id"] >> ops.Categorify()).fit(logs)
>>> ids = wf.transform(logs)
>>> keys = predict_topk(Popularity().fit(ids), ids, k=1, workflow=wf).compute()
>>> keys[["user_id", "item_id"]].values.tolist()
[['ann', 'oat'], ['bob', 'jam'], ['cy', 'tea']]
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pyarrow as pa

from interactive_recsys.backend import get_backend
from interactive_recsys.errors import ParameterError
from interactive_recsys.io._dataset import Dataset, as_dataset
from interactive_recsys.models._base import MODELS
from interactive_recsys.models._data import Interactions
from interactive_recsys.params import Param, validate_params
from interactive_recsys.runtime.jobs import active_client
from interactive_recsys.schema import Schema
from interactive_recsys.store import storage

#: Bytes of scores held at once per task (users are scored in blocks of this size).
BLOCK_BYTES = 2**26


@validate_params({"k": Param(kind="int", low=1)}, owner="predict_topk")
def predict_topk(model: Any, users: Any, k: int = 100, *, exclude_seen: bool = True,
                 output: str | os.PathLike | None = None, overwrite: bool = False,
                 storage_options: dict[str, Any] | None = None, workflow: Any = None) -> Any:
    """The ``k`` best items of every user of ``users``, by a fitted model.

    Parameters
    ----------
    model : a fitted :mod:`~interactive_recsys.models` model.
    users : Dataset or DataFrame with the model's user column and, optionally, its item
        column: each user's items there are the model's input (their history) and, with
        ``exclude_seen``, never recommended. Pass the training split.
    k : items per user (fewer when a user has seen nearly every item).
    exclude_seen : leave each user's items in ``users`` out of their list.
    output : write the result as parquet there (atomically) and return the writer's
        summary; else return a lazy Dataset.
    overwrite : replace an existing ``output``.
    storage_options : fsspec options when ``output`` is a URL (default: those of ``users``).
    workflow : the fitted :class:`~interactive_recsys.Workflow` whose ``Categorify`` made the
        model's user and item ids: the result then holds their values (item keys) instead,
        read back by :meth:`~interactive_recsys.Workflow.inverse_transform` (an
        out-of-vocabulary item gives the column's marker, ``"<OOV>"`` or ``-1``); a column
        the workflow did not encode stays as it is.

    Returns
    -------
    Dataset with columns ``<user_col>, rank, <item_col>, score`` (rank 1 is the best; rows
    grouped by user, ranks ascending), or the write summary when ``output`` is given.
    """
    if not getattr(model, "fitted", False):
        raise ParameterError(f"predict_topk needs a fitted model; {model!r} is not fitted. Call "
                             "model.fit(train) or irs.models.load(path) first.")
    ds = as_dataset(users)
    user_col, item_col = model.user_col, model.item_col
    if user_col not in ds.schema.names:
        raise ParameterError(f"The users data has no column {user_col!r} (the model's "
                             f"user_col); its columns are {ds.schema.names}.")
    columns = [user_col] + ([item_col] if item_col in ds.schema.names else [])
    parts = user_partitions(ds, columns, user_col)
    arrays = {"__items__": model.items_, **model.arrays_}
    client = active_client()
    if client is not None:  # once per worker, not once per task
        names = list(arrays)  # a list: scattering a dict would use its names as keys
        futures = client.scatter([arrays[n] for n in names], broadcast=True, hash=False)
        arrays = dict(zip(names, futures, strict=True))
    config = {**model.config(), "k": int(k), "exclude_seen": bool(exclude_seen)}
    stamp = time.time_ns()
    schema = _schema(ds, user_col, item_col, model.items_)
    tasks = [dask.delayed(predict_partition)(part, config, arrays, ds.backend.name, schema,
                                             dask_key_name=f"predict-topk-{stamp}-{i}")
             for i, part in enumerate(parts)]
    meta = ds.backend.from_arrow(schema.empty_table())
    out = dd.from_delayed(tasks, meta=meta, verify_meta=False)
    # from_delayed hides the input's files: name them, so that output= cannot overwrite them
    result = Dataset.from_ddf(out, Schema.from_arrow(schema), ds.backend,
                              sources=ds.input_files())
    if workflow is not None:
        result = workflow.inverse_transform(result, columns=[user_col, item_col])
    if output is not None:
        return result.to_parquet(output, overwrite=overwrite, storage_options=storage_options
                                 if storage_options is not None
                                 else getattr(users, "storage_options", None))
    return result


def user_partitions(ds: Dataset, columns: list[str], user_col: str) -> list[Any]:
    """Delayed partitions of ``ds[columns]`` holding every row of a user in one partition.

    Parquet files whose row groups record each partition's smallest and largest user (their
    statistics) and whose ranges only touch at their ends (data sorted by user, e.g. written
    per user or by a sorted writer) need no shuffle: a user on a boundary goes to the first
    partition that has it, the next ones hand over their rows of it. Anything else (unsorted
    data, in-memory frames, missing statistics, null users) is shuffled by user.
    """
    ddf = ds.arrow_ddf(columns)
    if ddf.npartitions == 1:
        return ddf.to_delayed()
    ranges = _user_ranges(ds, user_col)
    if ranges is None:
        return ddf.shuffle(on=user_col).to_delayed()
    parts = ddf.to_delayed()
    order = sorted(range(len(parts)), key=lambda i: ranges[i])
    out = []
    for pos, i in enumerate(order):
        low, high = ranges[i]
        owned_before = pos > 0 and ranges[order[pos - 1]][1] == low
        followers = []  # the next partitions that start with this one's last user
        for j in order[pos + 1:] if not (owned_before and low == high) else ():
            if ranges[j][0] != high:
                break
            followers.append(parts[j])
        out.append(dask.delayed(_own_users)(parts[i], followers, user_col,
                                            low if owned_before else None, high,
                                            ds.backend.name))
    return out


def _user_ranges(ds: Dataset, user_col: str) -> list[tuple[Any, Any]] | None:
    """``(min, max)`` user of each partition from parquet statistics, when they prove the
    partitions sorted by user (ranges overlapping at most at their ends), else ``None``."""
    import pyarrow.parquet as pq


    pieces = getattr(ds, "_pieces", None)
    if not pieces or len(pieces) != ds.npartitions:
        return None
    ranges, metadata = [], {}
    for piece in pieces:
        if not piece.row_groups:
            return None
        if piece.path not in metadata:
            fs = getattr(ds, "_fs", None)
            if fs is None:
                metadata[piece.path] = pq.ParquetFile(piece.path).metadata
            else:
                with fs.open(storage.strip(piece.path), "rb") as f:
                    metadata[piece.path] = pq.ParquetFile(f).metadata
        md = metadata[piece.path]
        lows, highs = [], []
        for g in piece.row_groups:
            rg = md.row_group(g)
            cols = [rg.column(c) for c in range(rg.num_columns)
                    if rg.column(c).path_in_schema == user_col]
            stats = cols[0].statistics if cols else None
            if stats is None or not stats.has_min_max or stats.null_count != 0:
                return None
            lows.append(stats.min)
            highs.append(stats.max)
        ranges.append((min(lows), max(highs)))
    ordered = sorted(ranges)
    if any(a[1] > b[0] for a, b in itertools.pairwise(ordered)):
        return None
    return ranges


def _own_users(part: Any, followers: list[Any], user_col: str, drop: Any, high: Any,
               backend_name: str) -> Any:
    """The rows of ``part`` but those of user ``drop`` (an earlier partition's), plus the
    following partitions' rows of user ``high`` (this partition's last user)."""
    backend = get_backend(backend_name)
    if drop is not None:
        part = part[part[user_col] != drop]
    if not followers:
        return part
    return backend.concat([part] + [f[f[user_col] == high] for f in followers])


def _schema(ds: Dataset, user_col: str, item_col: str, items: np.ndarray) -> pa.Schema:
    user_type = ds.schema.to_arrow().field(user_col).type
    return pa.schema([(user_col, user_type), ("rank", pa.int32()),
                      (item_col, pa.array(items[:0]).type), ("score", pa.float32())])


def topk_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(columns, values)`` of the ``k`` largest scores of every row, best first; ties go to
    the lower column. Equal to a full stable sort of ``-scores``, in O(columns) per row.

    >>> cols, vals = topk_rows(np.array([[0.1, 0.5, 0.5, 0.9], [3.0, 1.0, 2.0, 0.0]]), 2)
    >>> cols.tolist(), vals.tolist()
    ([[3, 1], [0, 2]], [[0.9, 0.5], [3.0, 2.0]])
    """
    n = scores.shape[1]
    k = min(k, n)
    if k == 0 or scores.shape[0] == 0:
        return np.zeros((scores.shape[0], 0), np.int64), np.zeros((scores.shape[0], 0))
    threshold = np.partition(scores, n - k, axis=1)[:, n - k][:, None]
    above = scores > threshold
    equal = scores == threshold
    need = k - above.sum(axis=1, keepdims=True)
    chosen = above | (equal & (np.cumsum(equal, axis=1) <= need))
    cols = np.nonzero(chosen)[1].reshape(-1, k)
    vals = np.take_along_axis(scores, cols, axis=1)
    order = np.lexsort((cols, -vals), axis=1)
    return np.take_along_axis(cols, order, axis=1), np.take_along_axis(vals, order, axis=1)


def predict_partition(df: Any, config: dict[str, Any], arrays: dict[str, np.ndarray],
                      backend_name: str, schema: pa.Schema | None = None) -> Any:
    """Top-K rows of the users of one partition (all rows of a user are in it)."""
    backend = get_backend(backend_name)
    frame = backend.to_pandas(df)
    items = arrays["__items__"]
    weights = {n: a for n, a in arrays.items() if n != "__items__"}
    user_col, item_col = config["user_col"], config["item_col"]
    if item_col in frame.columns:
        data = Interactions.from_frame(frame, user_col, item_col, items=items)
    else:
        users = np.unique(frame[user_col].to_numpy())
        data = Interactions(users, items, np.zeros(len(users) + 1, np.int64),
                            np.zeros(0, np.int64))
    cls, params, k = MODELS[config["model"]], config["params"], config["k"]
    block = max(1, BLOCK_BYTES // (8 * max(len(items), 1)))
    user_out, rank_out, item_out, score_out = [], [], [], []
    for start, stop in data.row_blocks(block):
        indptr = data.indptr[start:stop + 1] - data.indptr[start]
        indices = data.indices[data.indptr[start]:data.indptr[stop]]
        scores = np.array(cls.score_arrays(params, weights, indptr, indices), np.float64)
        if config["exclude_seen"]:
            rows = np.repeat(np.arange(stop - start), np.diff(indptr))
            scores[rows, indices] = -np.inf
        cols, vals = topk_rows(scores, k)
        valid = np.isfinite(vals)
        user_out.append(np.repeat(data.users[start:stop], valid.sum(axis=1)))
        rank_out.append(np.broadcast_to(np.arange(1, cols.shape[1] + 1, dtype=np.int32),
                                        cols.shape)[valid])
        item_out.append(items[cols[valid]])
        score_out.append(vals[valid].astype(np.float32))
    own = pa.schema([(user_col, pa.array(data.users[:0]).type), ("rank", pa.int32()),
                     (item_col, pa.array(items[:0]).type), ("score", pa.float32())])
    schema = schema or own
    if not user_out:
        return backend.from_arrow(schema.empty_table())
    table = pa.table([pa.array(np.concatenate(a)) for a in (user_out, rank_out, item_out,
                                                             score_out)], schema=own)
    return backend.from_arrow(table.cast(schema))
